// A job's result says which checkpoint it was quantized from (path and header fingerprint), and the
// exporter writes it only over that checkpoint: a copy of the demo elsewhere (what a fine-tune of the
// same base looks like to a shape check) or the demo with another config.json is refused, in one line
// naming both, and nothing is written. A cancel that arrives after the last module still cancels.
#include <gtest/gtest.h>

#include <fstream>

#include <unistd.h>

#include "qs/error.h"
#include "qs/formats/linear_encoder.h"
#include "qs/io/checkpoint.h"
#include "qs/io/checkpoint_fingerprint.h"
#include "qs/pipeline/exporter.h"
#include "qs/pipeline/gguf_result_export.h"
#include "qs/pipeline/job.h"

using namespace qs;
using namespace qs::pipeline;

namespace {

const std::filesystem::path kDemo = std::filesystem::path(QS_RESOURCES_DIR) / "demo";

class ScratchDir {
public:
    explicit ScratchDir(const std::string& name)
        : path_(std::filesystem::temp_directory_path() / ("qs_source_" + name + "_" + std::to_string(::getpid()))) {
        std::filesystem::remove_all(path_);
        std::filesystem::create_directories(path_);
    }
    ~ScratchDir() { std::filesystem::remove_all(path_); }
    const std::filesystem::path& path() const { return path_; }

private:
    std::filesystem::path path_;
};

JobResult quantizeDemo(const std::string& method) {
    JobPlan plan;
    plan.checkpoint = kDemo;
    plan.methods = {parseMethod(method, 64)};
    return Job(std::move(plan)).run({}, CancelToken{});
}

std::string exportError(const ExportRequest& request, const MethodResult& result) {
    try {
        exportCheckpoint(request, result, {}, CancelToken{});
    } catch (const Error& e) {
        return e.what();
    }
    return "(exported)";
}

TEST(ResultSource, TheJobStampsItsResultWithTheCheckpointItRead) {
    const JobResult result = quantizeDemo("rtn4");
    const io::CheckpointFingerprint demo = io::fingerprintOf(io::Checkpoint::open(kDemo));
    EXPECT_EQ(result.source, demo);
    EXPECT_EQ(result.source.path, std::filesystem::canonical(kDemo));
    ASSERT_EQ(result.methods.size(), 1u);
    EXPECT_EQ(result.methods.front().source, demo);
}

TEST(ResultSource, ExportRefusesACopyOfTheSourceAndWritesNothing) {
    const JobResult result = quantizeDemo("fp8");
    ScratchDir scratch("copy");
    const auto copy = scratch.path() / "finetune";
    std::filesystem::copy(kDemo, copy, std::filesystem::copy_options::recursive);
    const auto out = scratch.path() / "out";
    const std::string why = exportError({copy, out, "", false, {}}, result.methods.front());
    EXPECT_EQ(why.find('\n'), std::string::npos) << why;
    EXPECT_NE(why.find("was quantized from " + std::filesystem::canonical(kDemo).string() + " (headers "),
              std::string::npos)
        << why;
    EXPECT_NE(why.find("not from " + std::filesystem::canonical(copy).string() + " (headers "), std::string::npos)
        << why;
    EXPECT_FALSE(std::filesystem::exists(out));
    // Over the checkpoint it came from, by another spelling of its path, it exports.
    EXPECT_EQ(exportCheckpoint({kDemo / ".." / "demo", out, "", false, {}}, result.methods.front(), {}, CancelToken{}),
              out);
}

TEST(ResultSource, ExportRefusesTheSourceRewrittenWithAnotherConfig) {
    ScratchDir scratch("rewritten");
    const auto model = scratch.path() / "model";
    std::filesystem::copy(kDemo, model, std::filesystem::copy_options::recursive);
    JobPlan plan;
    plan.checkpoint = model;
    plan.methods = {parseMethod("rtn4", 64)};
    const JobResult result = Job(std::move(plan)).run({}, CancelToken{});
    auto config = io::Checkpoint::open(model).config();
    config["_name_or_path"] = "a fine-tune written over the base";
    std::ofstream(model / "config.json") << config.dump(2);
    const auto out = scratch.path() / "out";
    const std::string why = exportError({model, out, "", false, {}}, result.methods.front());
    EXPECT_NE(why.find("was quantized from " + result.source.describe()), std::string::npos) << why;
    EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(ResultSource, AResultThatNamesNoCheckpointIsRefused) {
    MethodResult result = quantizeDemo("rtn4").methods.front();
    result.source = {};
    ScratchDir scratch("anonymous");
    const std::string why = exportError({kDemo, scratch.path() / "out", "", false, {}}, result);
    EXPECT_NE(why.find("does not say which checkpoint"), std::string::npos) << why;
    EXPECT_FALSE(std::filesystem::exists(scratch.path() / "out"));
}

// The GGUF writer of a GGUF method's result refuses another checkpoint the same way.
TEST(ResultSource, GgufExportRefusesACopyOfTheSourceAndWritesNothing) {
    const JobResult result = quantizeDemo("q8_0");
    ScratchDir scratch("gguf");
    const auto copy = scratch.path() / "finetune";
    std::filesystem::copy(kDemo, copy, std::filesystem::copy_options::recursive);
    const auto out = scratch.path() / "out.gguf";
    std::string why = "(exported)";
    try {
        writeGgufResult(io::Checkpoint::open(copy), result.methods.front(), out, {}, {}, CancelToken{});
    } catch (const Error& e) {
        why = e.what();
    }
    EXPECT_NE(why.find("not from " + std::filesystem::canonical(copy).string() + " (headers "), std::string::npos)
        << why;
    EXPECT_FALSE(std::filesystem::exists(out));
    EXPECT_EQ(writeGgufResult(io::Checkpoint::open(kDemo), result.methods.front(), out, {}, {}, CancelToken{}), out);
    EXPECT_TRUE(std::filesystem::exists(out));
}

// Without calibration or evaluation text nothing polls after the last module but the unpacking of
// the finished layers and the summary: a cancel arriving then must still stop the job.
// Two single-file checkpoints in one folder (no model.safetensors, no index): the folder opens as
// neither, so the result must name its file for the Export panel's check to open its source again.
TEST(ResultSource, AFileBesideAnotherInOneFolderIsCheckedAndExportedFromItself) {
    ScratchDir scratch("two_files");
    const auto folder = scratch.path() / "two";
    std::filesystem::copy(kDemo, folder, std::filesystem::copy_options::recursive);
    std::filesystem::rename(folder / "model.safetensors", folder / "a.safetensors");
    std::filesystem::copy_file(folder / "a.safetensors", folder / "b.safetensors");
    JobPlan plan;
    plan.checkpoint = folder / "b.safetensors";
    plan.methods = {parseMethod("rtn4", 64)};
    const JobResult result = Job(std::move(plan)).run({}, CancelToken{});
    ASSERT_EQ(result.methods.size(), 1u);
    const MethodResult& rtn = result.methods.front();
    ASSERT_TRUE(rtn.error.empty()) << rtn.error;
    EXPECT_EQ(rtn.source.path, std::filesystem::canonical(folder / "b.safetensors"));
    EXPECT_EQ(exportRefusal(rtn, formats::encoderNamed("gptq_v2")), "");
    const auto out = scratch.path() / "out";
    // Over the other file of the folder (same tensors, another name) it is refused; over its own it exports.
    EXPECT_NE(exportError({folder / "a.safetensors", out, "", false, {}}, rtn).find("a.safetensors"),
              std::string::npos);
    EXPECT_FALSE(std::filesystem::exists(out));
    EXPECT_EQ(exportCheckpoint({folder / "b.safetensors", out, "", false, {}}, rtn, {}, CancelToken{}), out);
}

TEST(ResultSource, ACancelAfterTheLastModuleStillCancels) {
    JobPlan plan;
    plan.checkpoint = kDemo;
    plan.methods = {parseMethod("rtn4", 64)};
    CancelToken cancel;
    int modules = 0;
    const auto onModule = [&](const ModuleLog&) {
        if (++modules == 2 * 7) cancel.cancel();  // the demo's last linear
    };
    EXPECT_THROW(Job(std::move(plan)).run({}, cancel, onModule), Cancelled);
    EXPECT_EQ(modules, 2 * 7);
}

}  // namespace
