#include "cli_process.h"

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace qs::test {
namespace {

// Output goes to files rather than pipes so that a chatty child can never block on a full pipe.
std::string makeTempFile(const char* tag) {
    std::string pattern = std::string("/tmp/qs_cli_") + tag + "_XXXXXX";
    const int fd = mkstemp(pattern.data());
    if (fd < 0) throw std::runtime_error("mkstemp failed");
    close(fd);
    return pattern;
}

std::string readFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace

CliProcess::CliProcess(const std::vector<std::string>& args)
    : outPath_(makeTempFile("out")), errPath_(makeTempFile("err")) {
    // QS_CLI_PATH in the environment tests another binary (e.g. an installed one) with the same suite.
    const char* override = std::getenv("QS_CLI_PATH");
    std::vector<std::string> argv{override != nullptr && *override != '\0' ? override : QS_CLI_PATH};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> cargv;
    for (std::string& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);

    pid_ = fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
        const int out = open(outPath_.c_str(), O_WRONLY | O_TRUNC);
        const int err = open(errPath_.c_str(), O_WRONLY | O_TRUNC);
        if (out < 0 || err < 0 || dup2(out, STDOUT_FILENO) < 0 || dup2(err, STDERR_FILENO) < 0) _exit(127);
        execv(cargv[0], cargv.data());
        _exit(127);
    }
}

CliProcess::~CliProcess() {
    if (!waited_ && pid_ > 0) {
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
    }
    std::remove(outPath_.c_str());
    std::remove(errPath_.c_str());
}

std::string CliProcess::currentErr() const { return readFile(errPath_); }

bool CliProcess::finished() {
    if (!waited_ && waitpid(pid_, &status_, WNOHANG) == pid_) waited_ = true;
    return waited_;
}

CliResult CliProcess::wait() {
    if (!waited_ && waitpid(pid_, &status_, 0) != pid_) throw std::runtime_error("waitpid failed");
    waited_ = true;
    CliResult result;
    if (WIFEXITED(status_)) result.exitCode = WEXITSTATUS(status_);
    if (WIFSIGNALED(status_)) result.exitCode = 128 + WTERMSIG(status_);
    result.out = readFile(outPath_);
    result.err = readFile(errPath_);
    return result;
}

CliResult runCli(const std::vector<std::string>& args) { return CliProcess(args).wait(); }

TimedCliResult runCliWithin(const std::vector<std::string>& args, double seconds) {
    CliProcess process(args);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    TimedCliResult result;
    while (!process.finished()) {
        if (std::chrono::steady_clock::now() > deadline) {
            kill(process.pid(), SIGKILL);
            result.timedOut = true;
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    static_cast<CliResult&>(result) = process.wait();
    return result;
}

}  // namespace qs::test
