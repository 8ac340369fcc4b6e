// Resuming a Job from its work folder: the finished layers and the hidden states on disk, and a
// resumed run's result equal to an uninterrupted one's, bit for bit.
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <set>
#include <string>

#include <omp.h>

#include "qs/error.h"
#include "qs/formats/linear_encoder.h"
#include "qs/io/checkpoint_writer.h"
#include "qs/io/json_file.h"
#include "qs/pipeline/exporter.h"
#include "qs/pipeline/gguf_result_export.h"
#include "qs/pipeline/job.h"
#include "qs/pipeline/matmul_choice.h"
#include "qs/pipeline/quantized_linear_record.h"
#include "qs/pipeline/work_folder.h"
#include "qs/quant/bf16_gram.h"

#include "job_comparison.h"
#include "synthetic_checkpoint.h"

using namespace qs;
using namespace qs::pipeline;
namespace fs = std::filesystem;
using namespace qs::test;

namespace {

// A linear with every field away from its default (values that are not a real method's: the record
// must not care).
quant::QuantizedLinear everyFieldSet(unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-3.0f, 3.0f);
    quant::QuantizedLinear q;
    q.method = quant::Method::Trellis;
    q.codeKind = quant::CodeKind::Trellis;
    q.rows = 6, q.cols = 10, q.bits = 3, q.groupSize = 5, q.symmetric = true, q.blockRows = 2, q.blockCols = 5;
    for (int i = 0; i < 60; ++i) q.codes.push_back(std::uint8_t(rng() % 256));
    q.scales = MatrixF::NullaryExpr(3, 2, [&] { return u(rng); });
    q.zeros = MatrixF::NullaryExpr(3, 2, [&] { return std::round(u(rng)); });
    q.gIdx = {1, 0, 1, 0, 1, 1, 0, 0, 1, 0};
    q.globalScale = 0.1f + u(rng);
    q.inputScales.assign(10, 0.0f);
    for (auto& s : q.inputScales) s = u(rng);
    q.scaleCodes = {1, 2, 255};
    q.scaleScales = {0.25f, -7.5f};
    q.scaleOffset = 0.125f;
    q.trellis = {.L = 12, .K = 3, .groupSize = 5, .rotationSeed = 0xFEDCBA9876543210ull, .starts = {7, 4095, 0, 12}};
    q.input = {quant::ActivationFormat::Nvfp4, 3.5f};
    q.cacheScale = 0.0625f;
    q.ggmlType = io::GgmlType::Q4_K;
    q.blocks = {9, 8, 7};
    q.inputSumSquares = {1.5f, 2.5f};
    q.inputCount = 123456789012;
    q.outputError = 0.1 / 3.0;  // not a short decimal: the JSON must keep every bit
    q.gptqLoss = std::nan("");
    q.outputMse = 1e-300;
    q.dampPercent = 0.01;
    q.seconds = 2.0 / 7.0;
    return q;
}

// Writes `linears` as WorkFolder does and reads them back.
std::map<std::string, quant::QuantizedLinear> roundTrip(const fs::path& dir,
                                                        const std::map<std::string, quant::QuantizedLinear>& linears) {
    nlohmann::json headers;
    {
        io::CheckpointWriter writer(dir);
        const TensorSink sink = [&writer](const std::string& name, io::DType dtype,
                                          const std::vector<std::int64_t>& shape, std::span<const std::byte> bytes) {
            writer.addTensor(name, dtype, shape, bytes);
        };
        for (const auto& [key, q] : linears)
            headers[key] = nlohmann::json::parse(writeQuantizedLinear(q, key, sink).dump());
        writer.finish();
    }
    const io::SafetensorsFile file = io::SafetensorsFile::open(dir / "model.safetensors");
    std::map<std::string, quant::QuantizedLinear> out;
    for (const auto& [key, header] : headers.items()) out.emplace(key, readQuantizedLinear(header, file, key));
    return out;
}

}  // namespace

TEST(QuantizedLinearRecord, EveryFieldComesBackBitForBit) {
    const fs::path dir = tempDir("record");
    std::map<std::string, quant::QuantizedLinear> linears{{"0:self_attn.q_proj", everyFieldSet(1)},
                                                          {"1:mlp.experts.3.up_proj", everyFieldSet(2)}};
    linears.at("1:mlp.experts.3.up_proj").zeros.resize(0, 0);  // absent parts stay absent
    linears.at("1:mlp.experts.3.up_proj").gIdx.clear();
    const auto back = roundTrip(dir, linears);
    ASSERT_EQ(back.size(), 2u);
    for (const auto& [key, q] : linears) expectSameLinear(q, back.at(key), key);
    fs::remove_all(dir);
}

TEST(QuantizedLinearRecord, AMissingPartIsRefusedNamingTheLinear) {
    const fs::path dir = tempDir("record_missing");
    quant::QuantizedLinear q = everyFieldSet(3);
    nlohmann::json header;
    {
        io::CheckpointWriter writer(dir);
        header =
            writeQuantizedLinear(q, "0:mlp.down_proj",
                                 [&writer](const std::string& name, io::DType dtype,
                                           const std::vector<std::int64_t>& shape, std::span<const std::byte> bytes) {
                                     if (!name.ends_with(".codes")) writer.addTensor(name, dtype, shape, bytes);
                                 });
        writer.finish();
    }
    const io::SafetensorsFile file = io::SafetensorsFile::open(dir / "model.safetensors");
    try {
        (void)readQuantizedLinear(header, file, "0:mlp.down_proj");
        FAIL() << "a linear without its codes was read";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("'0:mlp.down_proj': its codes are missing"), std::string::npos)
            << e.what();
    }
    fs::remove_all(dir);
}

TEST(WorkFolder, ResumesFromTheNewestLayerWhoseStateIsComplete) {
    const fs::path dir = tempDir("folder");
    const nlohmann::json plan = {{"seed", 1}};
    WorkFolder folder = WorkFolder::start(dir, plan);
    LayerRecord record;
    record.facts["note"] = "layer";
    record.linears.emplace("0:mlp.up_proj", everyFieldSet(4));
    const HiddenSet hidden{{"evaluation", {MatrixF::Constant(3, 4, 0.5f), MatrixF::Constant(2, 4, -1.0f)}},
                           {"empty", {}}};
    folder.saveLayer(0, record, hidden);
    folder.saveLayer(1, record, hidden);
    EXPECT_FALSE(fs::exists(dir / "hidden-0000")) << "the older hidden states go once the newer are in place";
    // A kill while layer 2 was being saved: its record is in place, its hidden states are not; and
    // a writer's temporary folder is left behind.
    fs::copy(dir / "layer-0001", dir / "layer-0002", fs::copy_options::recursive);
    fs::create_directory(dir / ".tmp-hidden-0002-x");

    EXPECT_EQ(WorkFolder::interruptedLayers(dir), 2);
    EXPECT_EQ(WorkFolder::interruptedLayers(dir / "layer-0000"), std::nullopt) << "a folder without a run";
    const WorkFolder resumed = WorkFolder::resume(dir, plan);
    EXPECT_EQ(resumed.completeLayers(), 2);
    EXPECT_FALSE(fs::exists(dir / "layer-0002"));
    EXPECT_FALSE(fs::exists(dir / ".tmp-hidden-0002-x"));
    const HiddenSet back = resumed.loadHidden();
    ASSERT_EQ(back.size(), 2u);
    ASSERT_EQ(back.at("evaluation").size(), 2u);
    EXPECT_TRUE(sameMatrix(back.at("evaluation")[1], hidden.at("evaluation")[1]));
    EXPECT_TRUE(back.at("empty").empty());
    const LayerRecord layer = resumed.loadLayer(1);
    EXPECT_EQ(layer.facts, record.facts);
    expectSameLinear(layer.linears.at("0:mlp.up_proj"), record.linears.at("0:mlp.up_proj"), "layer 1");
    fs::remove_all(dir);
}

TEST(WorkFolder, RefusesAnotherPlanAFolderInUseAndAFolderWithoutARun) {
    const fs::path dir = tempDir("refusals");
    (void)WorkFolder::start(dir, {{"seed", 1}, {"methods", "gptq4"}});
    const auto message = [](const auto& call) {
        try {
            call();
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_NE(message([&] {
                  (void)WorkFolder::resume(dir, {{"seed", 2}, {"methods", "gptq4"}});
              }).find("'seed' was 1, now 2"),
              std::string::npos);
    EXPECT_NE(message([&] {
                  (void)WorkFolder::start(dir, {{"seed", 1}});
              }).find("holds an interrupted run"),
              std::string::npos);
    const fs::path other = tempDir("refusals_other");
    fs::create_directories(other / "mine");
    EXPECT_NE(message([&] { (void)WorkFolder::start(other, {}); }).find("is not an empty folder"), std::string::npos);
    EXPECT_NE(message([&] { (void)WorkFolder::resume(other, {}); }).find("holds no interrupted run"),
              std::string::npos);
    WorkFolder::discard(other);
    EXPECT_TRUE(fs::exists(other / "mine")) << "a folder without a run is never deleted";
    WorkFolder::discard(dir);
    EXPECT_FALSE(fs::exists(dir));
    fs::remove_all(other);
}

// A run cancelled after its second layer (as a kill would leave it, minus the layer in progress),
// resumed: the same codes, logs and KLs as a run that was never interrupted.
TEST(WorkFolder, AResumedJobEqualsAnUninterruptedOneBitForBit) {
    const fs::path checkpoint = tempDir("model");
    test::SyntheticModel model;
    model.layers = 4;
    model.hidden = 256;  // the trellis's groups of 256
    model.intermediate = 256;
    model.outlierChannels = {3};
    test::writeSyntheticCheckpoint(checkpoint, model);
    const std::string methods = "gptq4-act,awq4,nvfp4,nf4,trellis2,q4_k_m,fp8-w8a8,gptaq4";
    const JobResult reference = Job(planFor(checkpoint, methods)).run({}, CancelToken{});

    const fs::path work = tempDir("work");
    JobPlan interrupted = planFor(checkpoint, methods);
    interrupted.workDir = work;
    CancelToken cancel;
    const auto stopAtLayer3 = [&cancel](const Progress& p) {
        if (p.stage == "calibrate" && p.step == 3) cancel.cancel();
    };
    EXPECT_THROW((void)Job(interrupted).run(stopAtLayer3, cancel), Cancelled);
    ASSERT_TRUE(fs::exists(work / "layer-0001"));
    EXPECT_FALSE(fs::exists(work / "layer-0003"));

    JobPlan resumed = planFor(checkpoint, methods);
    resumed.workDir = work;
    resumed.resume = true;
    std::vector<std::string> stages;
    const JobResult result = Job(resumed).run(
        [&stages](const Progress& p) { stages.push_back(p.stage + " " + std::to_string(p.step)); }, CancelToken{});
    EXPECT_NE(std::find(stages.begin(), stages.end(), "resume 2"), stages.end());
    EXPECT_EQ(std::find(stages.begin(), stages.end(), "calibrate 1"), stages.end()) << "layer 1 was not redone";
    expectSameResult(reference, result);

    JobPlan otherSeed = resumed;
    otherSeed.seed = 5;
    EXPECT_THROW((void)Job(otherSeed).run({}, CancelToken{}), Error) << "a changed plan is refused";
    fs::remove_all(work);
    fs::remove_all(checkpoint);
}

// The same with the calibration in BF16 (its GEMMs and its Hessians' products on oneDNN): a resumed run
// is that setting's uninterrupted run, bit for bit.
TEST(WorkFolder, ABf16RunResumedEqualsAnUninterruptedOneBitForBit) {
    if (!quant::bf16GramAvailable()) GTEST_SKIP() << "oneDNN has no BF16 matmul kernel on this CPU";
    const fs::path checkpoint = tempDir("bf16_model");
    test::SyntheticModel model;
    model.layers = 4;
    test::writeSyntheticCheckpoint(checkpoint, model);
    const auto plan = [&checkpoint] {
        JobPlan p = planFor(checkpoint, "gptq4,gptaq4,awq4");
        p.matmul = MatmulChoice::Bf16;
        p.device = DeviceChoice::Cpu;
        return p;
    };
    const JobResult reference = Job(plan()).run({}, CancelToken{});
    ASSERT_TRUE(reference.bf16Calibration);
    JobPlan f32 = plan();
    f32.matmul = MatmulChoice::F32;
    EXPECT_NE(Job(f32).run({}, CancelToken{}).methods.front().kl.meanKld.value,
              reference.methods.front().kl.meanKld.value);

    const fs::path work = tempDir("bf16_work");
    JobPlan interrupted = plan();
    interrupted.workDir = work;
    CancelToken cancel;
    EXPECT_THROW((void)Job(interrupted)
                     .run(
                         [&cancel](const Progress& p) {
                             if (p.stage == "calibrate" && p.step == 3) cancel.cancel();
                         },
                         cancel),
                 Cancelled);
    JobPlan resumed = plan();
    resumed.workDir = work;
    resumed.resume = true;
    expectSameResult(reference, Job(resumed).run({}, CancelToken{}));
    fs::remove_all(work);
    fs::remove_all(checkpoint);
}

namespace {

std::string fileBytes(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The bytes of every tensor file and the config an export wrote (not its report, which holds timings).
void expectSameExport(const fs::path& a, const fs::path& b) {
    for (const char* file : {"model.safetensors", "config.json"}) {
        SCOPED_TRACE(file);
        ASSERT_TRUE(fs::exists(a / file));
        EXPECT_TRUE(fileBytes(a / file) == fileBytes(b / file));
    }
}

}  // namespace

// Results on disk: a run with a work folder keeps each finished layer's codes only there, is killed
// after its second layer and resumed; its result equals the in-RAM run's bit for bit, holds no code
// in memory, and exports the same bytes reading the layers back.
TEST(ResultsOnDisk, AResultOnDiskEqualsTheOneInRamAndExportsTheSameBytes) {
    const fs::path checkpoint = fourLayerCheckpoint("disk_model");
    const std::string methods = "nvfp4,gptq4-act,awq4,q4_k_m";  // the first also quantizes the KV cache (planFor)
    const JobResult inRam = Job(planFor(checkpoint, methods)).run({}, CancelToken{});

    const fs::path work = tempDir("disk_work");
    JobPlan plan = planFor(checkpoint, methods);
    plan.workDir = work;
    plan.resultsOnDisk = true;
    CancelToken cancel;
    const auto stopAtLayer3 = [&cancel](const Progress& p) {
        if (p.stage == "calibrate" && p.step == 3) cancel.cancel();
    };
    EXPECT_THROW((void)Job(plan).run(stopAtLayer3, cancel), Cancelled);
    plan.resume = true;
    const JobResult onDisk = Job(plan).run({}, CancelToken{});
    expectSameResult(inRam, onDisk);

    for (const MethodResult& r : onDisk.methods) {
        SCOPED_TRACE(r.label());
        ASSERT_NE(r.stored, nullptr);
        EXPECT_TRUE(r.layers.empty());
        ASSERT_EQ(layerCount(r), 4u);
        for (const auto& layer : linearHeaders(r))
            for (const auto& [module, q] : layer) {
                EXPECT_TRUE(q->codes.empty() && q->blocks.empty()) << module << ": the codes stay on disk";
                EXPECT_GT(q->rows * q->cols, 0);
            }
    }

    const fs::path out = tempDir("disk_exports");
    fs::create_directories(out);
    for (std::size_t m = 0; m < 3;
         ++m) {  // each in its default layout: compressed-tensors NVFP4, GPTQ, AWQ (scales folded)
        SCOPED_TRACE(inRam.methods[m].label());
        const fs::path a = out / (std::to_string(m) + "_ram"), b = out / (std::to_string(m) + "_disk");
        (void)exportCheckpoint({checkpoint, a, "", false, nlohmann::json::object()}, inRam.methods[m], {},
                               CancelToken{});
        (void)exportCheckpoint({checkpoint, b, "", false, nlohmann::json::object()}, onDisk.methods[m], {},
                               CancelToken{});
        expectSameExport(a, b);
    }

    WorkFolder::discard(work);  // the CLI removes it after the export: the result cannot be read any more
    try {
        (void)layerAt(onDisk.methods[0], 0);
        FAIL() << "a layer was read from a removed work folder";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("the finished layer is not there"), std::string::npos) << e.what();
    }
    fs::remove_all(out);
    fs::remove_all(checkpoint);
}

// A result on disk is checked as the export reads each linear back, not in a pass of its own before:
// a layout that cannot hold it is refused naming the linear, and leaves no destination.
TEST(ResultsOnDisk, ALayoutThatCannotHoldTheResultIsRefusedAndLeavesNoDestination) {
    const fs::path checkpoint = fourLayerCheckpoint("refused_model");
    const fs::path work = tempDir("refused_work");
    JobPlan plan = planFor(checkpoint, "gptq4-act");
    plan.workDir = work;
    plan.resultsOnDisk = true;
    const JobResult result = Job(plan).run({}, CancelToken{});
    ASSERT_NE(result.methods[0].stored, nullptr);
    const fs::path out = tempDir("refused_out");
    try {
        (void)exportCheckpoint({checkpoint, out, "awq", false, nlohmann::json::object()}, result.methods[0], {},
                               CancelToken{});
        FAIL() << "AWQ's layout took an act-order result";
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()).rfind("cannot export as awq: model.layers.0.", 0), 0u) << e.what();
    }
    EXPECT_FALSE(fs::exists(out));
    EXPECT_NE(exportRefusal(result.methods[0], formats::encoderNamed("awq"), CancelToken{}), "")
        << "the panel's check still reads it";
    WorkFolder::discard(work);
    fs::remove_all(checkpoint);
}

// A GGUF method's result on disk (its ggml blocks stay there) writes the same file as in RAM. On the
// demo, which has the tokenizer a GGUF file needs.
TEST(ResultsOnDisk, AGgufResultOnDiskWritesTheSameFile) {
    const fs::path demo = fs::path(QS_RESOURCES_DIR) / "demo";
    JobPlan plan;
    plan.checkpoint = demo;
    plan.methods = parseMethodList("q4_k_m", 32);
    plan.calibration = test::syntheticTokens(2, 64, 96, 31);  // the imatrix weighting too
    const JobResult inRam = Job(plan).run({}, CancelToken{});
    const fs::path work = tempDir("gguf_work");
    plan.workDir = work;
    plan.resultsOnDisk = true;
    const JobResult onDisk = Job(plan).run({}, CancelToken{});
    ASSERT_NE(onDisk.methods[0].stored, nullptr);
    EXPECT_TRUE(sameBits(inRam.methods[0].bitsPerWeight, onDisk.methods[0].bitsPerWeight))
        << "sized from the headers alone";

    const fs::path out = tempDir("gguf_out");
    fs::create_directories(out);
    const io::Checkpoint source = io::Checkpoint::open(demo);
    const fs::path a = writeGgufResult(source, inRam.methods[0], out / "ram.gguf", {}, {}, CancelToken{});
    const fs::path b = writeGgufResult(source, onDisk.methods[0], out / "disk.gguf", {}, {}, CancelToken{});
    EXPECT_GT(fs::file_size(a), 100000u);
    EXPECT_TRUE(fileBytes(a) == fileBytes(b));
    WorkFolder::discard(work);
    fs::remove_all(out);
}

// The team's size is recorded when a run starts, and a resumed run runs on it again, whatever the
// free cores are now (OpenBLAS's threaded SGEMM rounds by the team's size with some kernels), and still
// writes the bits of an uninterrupted run. The caller's team is given back.
TEST(WorkFolder, AResumedJobRunsOnTheTeamItStartedOn) {
    const int callerTeam = omp_get_max_threads();
    const fs::path checkpoint = tempDir("team_model");
    test::SyntheticModel model;
    model.layers = 4;
    model.hidden = 256;
    model.intermediate = 512;
    test::writeSyntheticCheckpoint(checkpoint, model);
    omp_set_num_threads(2);
    const JobResult reference = Job(planFor(checkpoint, "gptq4")).run({}, CancelToken{});

    const fs::path work = tempDir("team_work");
    JobPlan plan = planFor(checkpoint, "gptq4");
    plan.workDir = work;
    CancelToken cancel;
    EXPECT_THROW((void)Job(plan).run(
                     [&cancel](const Progress& p) {
                         if (p.stage == "calibrate" && p.step == 3) cancel.cancel();
                     },
                     cancel),
                 Cancelled);
    EXPECT_EQ(io::readJsonFile(work / "thread_team.json").at("threads"), 2);

    omp_set_num_threads(1);  // the machine is busier now
    plan.resume = true;
    std::set<int> teams;
    std::string resumeMessage;
    const JobResult resumed = Job(plan).run(
        [&](const Progress& p) {
            if (p.stage == "resume") resumeMessage = p.message;
            if (p.stage == "calibrate") teams.insert(omp_get_max_threads());
        },
        CancelToken{});
    EXPECT_EQ(teams, std::set<int>{2});
    EXPECT_NE(resumeMessage.find("on the 2 threads it started on (not 1)"), std::string::npos) << resumeMessage;
    EXPECT_EQ(omp_get_max_threads(), 1) << "the caller's team is given back";
    expectSameResult(reference, resumed);

    omp_set_num_threads(callerTeam);
    fs::remove_all(work);
    fs::remove_all(checkpoint);
}

TEST(WorkFolder, AnEditedThreadTeamIsRefusedNamingTheFile) {
    const fs::path dir = tempDir("team_edited");
    const WorkFolder folder = WorkFolder::start(dir, {{"seed", 1}});
    EXPECT_EQ(folder.threadTeam(), std::nullopt) << "a run that recorded no team";
    folder.recordThreadTeam(3);
    EXPECT_EQ(folder.threadTeam(), 3);
    for (const char* edited : {R"({"threads": "two"})", R"({"threads": 2.5})", R"({"threads": 0})", R"({"team": 2})"}) {
        std::ofstream(dir / "thread_team.json") << edited;
        try {
            (void)folder.threadTeam();
            ADD_FAILURE() << edited << " was read as a team";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("thread_team.json"), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find("threads"), std::string::npos) << e.what();
        }
    }
    fs::remove_all(dir);
}

// The cache opens a layer's record once for its many linears; going to another layer and back reads
// the right one each time, and a key the layer does not hold is refused naming the layer.
TEST(StoredLinearCache, ReadsEachLayersOwnLinears) {
    const fs::path dir = tempDir("cache");
    WorkFolder folder = WorkFolder::start(dir, {{"seed", 1}});
    for (int layer = 0; layer < 2; ++layer) {
        LayerRecord record;
        record.linears.emplace("0:mlp.experts.0.up_proj", everyFieldSet(10 + unsigned(layer)));
        record.linears.emplace("0:mlp.experts.1.up_proj", everyFieldSet(20 + unsigned(layer)));
        folder.saveLayer(layer, record, HiddenSet{});
    }
    StoredLinearCache cache(dir);
    for (const int layer : {0, 1, 0}) {
        for (const char* key : {"0:mlp.experts.0.up_proj", "0:mlp.experts.1.up_proj"}) {
            SCOPED_TRACE(std::to_string(layer) + " " + key);
            expectSameLinear(cache.load(layer, key), folder.loadLayer(layer).linears.at(key), key);
        }
    }
    expectSameLinear(cache.load(1, "0:mlp.experts.1.up_proj"), everyFieldSet(21), "layer 1, expert 1");
    try {
        (void)cache.load(1, "1:self_attn.q_proj");
        FAIL() << "a linear the layer does not hold was read";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("layer-0001: no stored linear '1:self_attn.q_proj'"), std::string::npos)
            << e.what();
    }
    fs::remove_all(dir);
}
