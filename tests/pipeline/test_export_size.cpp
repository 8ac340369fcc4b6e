// measureExport and measureGgufResult: the bytes an export will write, counted before writing, equal what
// exportCheckpoint (writeGgufResult) then writes, file by file, for every layout the demo's methods go to (a
// result in RAM and one read from a work folder); the report's checkpoint_bytes and linear_bytes are the
// written files' and the linears' stored tensors.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "qs/io/checkpoint.h"
#include "qs/io/safetensors_file.h"
#include "qs/pipeline/calibration_text.h"
#include "qs/pipeline/exporter.h"
#include "qs/pipeline/gguf_result_export.h"
#include "qs/pipeline/job.h"
#include "qs/pipeline/work_folder.h"

using namespace qs;
using namespace qs::pipeline;
namespace fs = std::filesystem;

namespace {

const fs::path kDemo = fs::path(QS_RESOURCES_DIR) / "demo";

fs::path freshPath(const std::string& name) {
    auto dir = fs::temp_directory_path() / ("qs_export_size_" + name + "_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    return dir;
}

JobPlan demoPlan(const std::string& method) {
    JobPlan plan;
    plan.checkpoint = kDemo;
    plan.methods = {parseMethod(method, 64)};
    const auto tokenizer = model::Tokenizer::fromFile(kDemo);
    plan.calibration = tokenWindows(tokenizer, loadTexts(kDemo / "calibration.txt"), 4, 32, "calibration.txt");
    return plan;
}

MethodResult quantizeDemo(JobPlan plan) {
    auto result = Job(std::move(plan)).run({}, CancelToken{});
    if (!result.methods.front().error.empty()) throw std::runtime_error(result.methods.front().error);
    return std::move(result.methods.front());
}

// The folder's files, the .safetensors apart from the others.
io::WrittenBytes filesOf(const fs::path& dir) {
    io::WrittenBytes bytes;
    for (const auto& entry : fs::directory_iterator(dir))
        (entry.path().extension() == ".safetensors" ? bytes.tensorFiles : bytes.otherFiles) += entry.file_size();
    return bytes;
}

// The stored bytes of the tensors of the quantized linears (every tensor under a linear's prefix but its bias).
std::uint64_t linearTensorBytes(const fs::path& dir, const MethodResult& result) {
    const auto file = io::SafetensorsFile::open(dir / "model.safetensors");
    std::uint64_t bytes = 0;
    for (const auto& t : file.tensors())
        for (std::size_t i = 0; i < layerCount(result); ++i)
            for (const auto& [module, q] : linearHeaders(result)[i]) {
                const std::string prefix = "model.layers." + std::to_string(i) + "." + module + ".";
                if (t.name.starts_with(prefix) && t.name != prefix + "bias") bytes += t.byteSize();
            }
    return bytes;
}

nlohmann::json readJson(const fs::path& file) {
    std::ifstream in(file);
    return nlohmann::json::parse(in);
}

void expectMeasuredAsWritten(const MethodResult& result, const std::string& format) {
    SCOPED_TRACE(result.label() + " as " + format);
    const fs::path dir = freshPath(format);
    const ExportRequest request{kDemo, dir, format, false, {{"calibration", "demo"}}};
    const io::WrittenBytes measured = measureExport(request, result);
    EXPECT_FALSE(fs::exists(dir));  // measuring writes nothing
    exportCheckpoint(request, result, {}, CancelToken{});
    const io::WrittenBytes written = filesOf(dir);
    EXPECT_EQ(measured.tensorFiles, written.tensorFiles);
    EXPECT_EQ(measured.otherFiles, written.otherFiles);
    const auto report = readJson(dir / "quantscope_report.json");
    EXPECT_EQ(report["checkpoint_bytes"].get<std::uint64_t>(), written.tensorFiles);
    EXPECT_EQ(report["linear_bytes"].get<std::uint64_t>(), linearTensorBytes(dir, result));
    fs::remove_all(dir);
}

TEST(ExportSize, MeasuredBeforeWritingIsWhatEachLayoutWrites) {
    for (const auto& [method, formats] : std::vector<std::pair<std::string, std::vector<std::string>>>{
             {"rtn4", {"gptq_v2"}},
             {"gptq4-sym", {"gptq", "gptq_v2"}},
             {"gptq4-act", {"gptq_v2"}},
             {"awq4", {"awq"}},
             {"fp8", {"fp8"}},
             {"nvfp4", {"ct-nvfp4", "modelopt-nvfp4"}},
             {"mxfp4", {"ct-mxfp4"}},
             {"nf4", {"bnb-nf4"}},
             {"trellis2", {"quantscope-trellis"}},
         }) {
        const MethodResult result = quantizeDemo(demoPlan(method));
        for (const auto& format : formats) expectMeasuredAsWritten(result, format);
    }
}

// A result in a work folder: its layers are not read back to be measured (stand-ins of each kind of linear).
TEST(ExportSize, AResultOnDiskMeasuresAsItWrites) {
    const fs::path work = freshPath("work");
    JobPlan plan = demoPlan("gptq4-act");
    plan.workDir = work;
    plan.resultsOnDisk = true;
    const MethodResult result = quantizeDemo(std::move(plan));
    ASSERT_TRUE(result.stored);
    expectMeasuredAsWritten(result, "gptq_v2");
    WorkFolder::discard(work);
}

// A GGUF method's file: measured without encoding (a ggml type's bytes follow from the shape), equal to the file
// written, for a result in RAM and one on disk.
TEST(ExportSize, AGgufFileMeasuresAsItIsWritten) {
    for (const bool onDisk : {false, true}) {
        SCOPED_TRACE(onDisk ? "on disk" : "in RAM");
        const fs::path work = freshPath("gguf_work");
        JobPlan plan = demoPlan("q4_k_m");
        if (onDisk) {
            plan.workDir = work;
            plan.resultsOnDisk = true;
        }
        const MethodResult result = quantizeDemo(std::move(plan));
        const io::Checkpoint source = io::Checkpoint::open(kDemo);
        const std::uint64_t measured = measureGgufResult(source, result, {});
        const fs::path file = freshPath("q4km") / "demo-Q4_K_M.gguf";
        fs::create_directories(file.parent_path());
        writeGgufResult(source, result, file, {}, {}, CancelToken{});
        EXPECT_EQ(measured, fs::file_size(file));
        fs::remove_all(file.parent_path());
        if (onDisk) WorkFolder::discard(work);
    }
}

// What the fix is for: the Job's own estimate counts the method's bits, not the layout's parts (GPTQ's
// g_idx and packed zeros), nor the safetensors header.
TEST(ExportSize, TheJobsEstimateIsNotTheLayoutsSize) {
    const MethodResult result = quantizeDemo(demoPlan("gptq4"));
    const ExportRequest request{kDemo, freshPath("unused"), "gptq_v2", false, {}};
    EXPECT_GT(measureExport(request, result).tensorFiles, result.checkpointBytes);
}

}  // namespace
