#pragma once
// Runs the built quantscope-cli (path from the QS_CLI_PATH compile definition, or the environment
// variable of that name when set) as a child process and captures its exit code, stdout and stderr.
#include <string>
#include <vector>

#include <sys/types.h>

namespace qs::test {

struct CliResult {
    int exitCode = -1;  // 128 + signal when the process was killed by a signal
    std::string out;
    std::string err;
};

CliResult runCli(const std::vector<std::string>& args);
// As runCli, but a process still running after `seconds` is killed: its exitCode is then 128 + SIGKILL
// and `timedOut` is set, so that a hang fails the test instead of the suite.
struct TimedCliResult : CliResult {
    bool timedOut = false;
};
TimedCliResult runCliWithin(const std::vector<std::string>& args, double seconds);

// For tests that interact with a running process (Ctrl-C): start, then wait.
class CliProcess {
public:
    explicit CliProcess(const std::vector<std::string>& args);
    ~CliProcess();
    CliProcess(const CliProcess&) = delete;
    CliProcess& operator=(const CliProcess&) = delete;

    pid_t pid() const { return pid_; }
    std::string currentErr() const;  // what it has written to stderr so far
    bool finished();                 // has it exited (without blocking)?
    CliResult wait();

private:
    std::string outPath_;
    std::string errPath_;
    pid_t pid_ = -1;
    bool waited_ = false;
    int status_ = 0;
};

}  // namespace qs::test
