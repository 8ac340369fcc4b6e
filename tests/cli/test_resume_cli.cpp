// --work-dir / --resume: a quantize run killed from outside (SIGKILL) in the middle of its layers or
// after its last layer, resumed, writes the same tensors as a run that was never interrupted.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include <signal.h>
#include <unistd.h>

#include "cli_process.h"

namespace {

namespace fs = std::filesystem;
using qs::test::CliProcess;
using qs::test::runCli;

const std::string kDemo = std::string(QS_RESOURCES_DIR) + "/demo";

fs::path freshPath(const std::string& name) {
    auto p = fs::temp_directory_path() / ("qs_cli_resume_" + name + "_" + std::to_string(::getpid()));
    fs::remove_all(p);
    return p;
}

std::string bytesOf(const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<std::string> quantizeArgs(const fs::path& out) {
    return {"quantize", kDemo, "--method", "gptq4-act", "--out", out.string()};
}

std::vector<std::string> with(std::vector<std::string> args, const std::string& option, const fs::path& value) {
    args.push_back(option);
    args.push_back(value.string());
    return args;
}

// Waits until `path` exists while the process runs; then stops it at once (SIGSTOP), so what it had
// done at that moment can be looked at before it is killed. False when it ended first.
bool stopWhenExists(CliProcess& process, const fs::path& path) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (!fs::exists(path)) {
        if (process.finished() || std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
    return kill(process.pid(), SIGSTOP) == 0;
}

class Resume : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        reference_ = freshPath("reference");
        const auto r = runCli(quantizeArgs(reference_));
        ASSERT_EQ(r.exitCode, 0) << r.err;
    }
    static void TearDownTestSuite() { fs::remove_all(reference_); }

    // Kills a --work-dir run once `marker` (relative to the work folder) exists, resumes it, and
    // compares the export with the uninterrupted run's; `extra` options go to both runs.
    static void killAndResume(const std::string& name, const std::string& marker,
                              const std::vector<std::string>& extra = {}) {
        const fs::path out = freshPath(name + "_out");
        const fs::path work = freshPath(name + "_work");
        {
            std::vector<std::string> args = with(quantizeArgs(out), "--work-dir", work);
            args.insert(args.end(), extra.begin(), extra.end());
            CliProcess run(args);
            ASSERT_TRUE(stopWhenExists(run, work / marker)) << "the run ended before " << marker << " was written";
            EXPECT_FALSE(fs::exists(out)) << "killed before its export was in place";
            ASSERT_EQ(kill(run.pid(), SIGKILL), 0);
            EXPECT_EQ(run.wait().exitCode, 128 + SIGKILL);
        }
        std::vector<std::string> args = with(quantizeArgs(out), "--resume", work);
        args.insert(args.end(), extra.begin(), extra.end());
        const auto resumed = runCli(args);
        ASSERT_EQ(resumed.exitCode, 0) << resumed.err;
        EXPECT_NE(resumed.err.find("resum"), std::string::npos) << resumed.err;
        for (const char* file : {"model.safetensors", "config.json", "quantize_config.json", "tokenizer.json"})
            EXPECT_TRUE(bytesOf(out / file) == bytesOf(reference_ / file))
                << file << " differs from the uninterrupted run's";
        EXPECT_FALSE(fs::exists(work)) << "the work folder is removed once the export is in place";
        fs::remove_all(out);
    }

    static fs::path reference_;
};
fs::path Resume::reference_;

}  // namespace

TEST_F(Resume, KilledInTheMiddleOfItsLayersItResumesToTheSameTensors) {
    killAndResume("middle", "hidden-0000/record.json");
}

// The calibration stream beyond --max-memory lives in the work folder: killed while the second layer
// writes it there, the run resumes from the first layer's file.
TEST_F(Resume, KilledWhileItsSpilledHiddenStatesStreamItResumesToTheSameTensors) {
    killAndResume("spilled", ".tmp-hidden-0001/s0.calibration.f32", {"--max-memory", "1K", "--force"});
}

TEST_F(Resume, KilledAfterItsLastLayerItResumesIntoTheExport) { killAndResume("export", "hidden-0001/record.json"); }

TEST_F(Resume, AChangedPlanOrAFolderInUseIsRefusedInOneLine) {
    const fs::path out = freshPath("refused_out");
    const fs::path work = freshPath("refused_work");
    {
        CliProcess run(with(quantizeArgs(out), "--work-dir", work));
        ASSERT_TRUE(stopWhenExists(run, work / "plan.json"));
        ASSERT_EQ(kill(run.pid(), SIGKILL), 0);
        (void)run.wait();
    }
    auto changed = with(quantizeArgs(out), "--resume", work);
    changed.insert(changed.end(), {"--seed", "3"});
    const auto refused = runCli(changed);
    EXPECT_EQ(refused.exitCode, 2);
    EXPECT_NE(refused.err.find("'seed' was 0, now 3"), std::string::npos) << refused.err;
    EXPECT_EQ(std::count(refused.err.begin(), refused.err.end(), '\n'), 1) << refused.err;

    const auto inUse = runCli(with(quantizeArgs(out), "--work-dir", work));
    EXPECT_EQ(inUse.exitCode, 2);
    EXPECT_NE(inUse.err.find("holds an interrupted run: continue it with --resume"), std::string::npos) << inUse.err;

    auto weightsOnly = with(quantizeArgs(out), "--work-dir", freshPath("refused_other"));
    weightsOnly.push_back("--weights-only");
    const auto notKept = runCli(weightsOnly);
    EXPECT_EQ(notKept.exitCode, 2);
    EXPECT_NE(notKept.err.find("--work-dir and --resume keep the layers of one method"), std::string::npos)
        << notKept.err;
    EXPECT_FALSE(fs::exists(out));
    fs::remove_all(work);
}
