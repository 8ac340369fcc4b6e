// The pipeline end to end on small synthetic Llama-shaped checkpoints written by the test.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "qs/error.h"
#include "qs/model/tokenizer.h"
#include "qs/pipeline/job.h"

#include "counting_math.h"
#include "delegating_backend.h"
#include "synthetic_checkpoint.h"

using namespace qs;
using namespace qs::pipeline;

namespace {

std::filesystem::path tempDir(const std::string& name) {
    auto dir = std::filesystem::temp_directory_path() / ("qs_pipeline_" + name + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    return dir;
}

JobPlan planFor(const std::filesystem::path& dir, const std::string& methods, int groupSize = 32) {
    JobPlan plan;
    plan.checkpoint = dir;
    plan.methods = parseMethodList(methods, groupSize);
    plan.calibration = test::syntheticTokens(8, 64, 96, 11);
    plan.evaluation = test::syntheticTokens(4, 64, 96, 12);
    return plan;
}

const MethodResult& find(const JobResult& r, const std::string& name) {
    for (const auto& m : r.methods)
        if (m.method.name == name) return m;
    throw std::runtime_error("no result for " + name);
}

class JobTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir_ = tempDir("plain");
        test::writeSyntheticCheckpoint(dir_, {});
    }
    static void TearDownTestSuite() { std::filesystem::remove_all(dir_); }
    static std::filesystem::path dir_;
};
std::filesystem::path JobTest::dir_;

}  // namespace

TEST_F(JobTest, KlOrdersMethodsByPrecision) {
    Job job(planFor(dir_, "fp8,rtn4,rtn2,gptq4"));
    const JobResult r = job.run({}, CancelToken{});
    ASSERT_EQ(r.methods.size(), 4u);
    for (const auto& m : r.methods) {
        ASSERT_TRUE(m.error.empty()) << m.method.name << ": " << m.error;
        EXPECT_EQ(m.kl.count, 4u * 63u);
        EXPECT_GT(m.kl.meanKld.value, 0.0) << m.method.name;
        EXPECT_EQ(m.layers.size(), 2u);
        EXPECT_EQ(m.modules.size(), 14u);
    }
    const double fp8 = find(r, "fp8").kl.meanKld.value;
    const double rtn4 = find(r, "rtn4").kl.meanKld.value;
    const double rtn2 = find(r, "rtn2").kl.meanKld.value;
    const double gptq4 = find(r, "gptq4").kl.meanKld.value;
    EXPECT_LT(fp8, rtn4);
    EXPECT_LT(rtn4, rtn2);
    EXPECT_LT(gptq4, rtn4);
    // Bits per weight: 4-bit codes + an f16 scale and a 4-bit zero per 32 weights.
    EXPECT_NEAR(find(r, "rtn4").bitsPerWeight, 4.0 + 20.0 / 32.0, 1e-9);
    EXPECT_NEAR(find(r, "fp8").bitsPerWeight, 8.0, 0.1);
    EXPECT_EQ(r.calibrationTokens, 8u * 64u);
    // Every module carries its output error on the calibration inputs; 2 bits hurt more than 4.
    for (std::size_t i = 0; i < 14; ++i) {
        EXPECT_GT(find(r, "rtn2").modules[i].outputError, find(r, "rtn4").modules[i].outputError);
        EXPECT_LT(find(r, "rtn4").modules[i].outputError, 0.5);
    }
}

TEST_F(JobTest, PerLayerKlIsMeasuredForEveryLayer) {
    JobPlan plan = planFor(dir_, "rtn2,rtn4");
    plan.perLayerKl = true;
    const JobResult r = Job(std::move(plan)).run({}, CancelToken{});
    for (const auto& m : r.methods) {
        ASSERT_EQ(m.perLayerKl.size(), 2u);
        for (double kl : m.perLayerKl) EXPECT_GT(kl, 0.0);
        // Quantizing one layer does less damage than quantizing both.
        EXPECT_LT(m.perLayerKl[0], m.kl.meanKld.value * 1.5);
    }
    EXPECT_GT(find(r, "rtn2").perLayerKl[0], find(r, "rtn4").perLayerKl[0]);
}

class BackendWithMath final : public test::DelegatingBackend {
public:
    std::shared_ptr<const model::LayerMath> layerMath() const override { return math; }
    std::unique_ptr<HessianSink> hessian(std::int64_t features) const override {
        ++sinks;
        return DelegatingBackend::hessian(features);
    }
    std::shared_ptr<test::CountingMath> math = std::make_shared<test::CountingMath>();
    mutable std::atomic<int> sinks = 0;
};

TEST_F(JobTest, ForwardPassesAndHessiansRunOnTheBackend) {
    const JobResult cpu = Job(planFor(dir_, "gptq4,awq4")).run({}, CancelToken{});
    JobPlan plan = planFor(dir_, "gptq4,awq4");
    auto backend = std::make_shared<BackendWithMath>();
    plan.backend = backend;
    const JobResult routed = Job(std::move(plan)).run({}, CancelToken{});
    for (const char* name : {"gptq4", "awq4"})
        EXPECT_EQ(find(routed, name).kl.meanKld.value, find(cpu, name).kl.meanKld.value) << name;
    // 2 layers x 7 linears per sequence: 8 calibration and 4 evaluation sequences through the
    // original, 4 evaluation ones through each of the two methods.
    EXPECT_GE(backend->math->linears.load(), 2 * 7 * (8 + 4 + 2 * 4));
    EXPECT_GT(backend->math->scopes.load(), 0);
    EXPECT_EQ(backend->math->live.load(), 0) << "a residency scope outlived its layer";
    // Each calibrating method's own statistics: 2 layers x 4 distinct linear inputs, in the backend's sinks.
    EXPECT_EQ(backend->sinks.load(), 2 * 2 * 4);
}

// A pass nobody reads is not run: a stream's observation skips the layer's down projections (its output
// is dropped), and past the last layer no calibration stream moves. Exact counts of the GEMMs on the
// backend's math, 2 layers of 7 linears, 8 calibration and 4 evaluation sequences.
TEST_F(JobTest, CalibrationRunsOnlyThePassesSomethingReads) {
    const int layers = 2, calibration = 8, evaluation = 4, run = 7, observed = 6;
    const int evaluations = layers * evaluation * run;  // the original's, and each method's
    // gptq4 and awq4 quantize from their own streams (true-sequential): each observed on every layer, then
    // moved past all but the last. rtn4 logs its output error on the original's stream: moved past the
    // first layer in the pass that observes it, only observed on the last.
    const int ownStream = layers * calibration * observed + (layers - 1) * calibration * run;
    const int originalStream = (layers - 1) * calibration * run + calibration * observed;
    const std::vector<std::pair<std::string, int>> cases{{"gptq4", 2 * evaluations + ownStream},
                                                         {"awq4", 2 * evaluations + ownStream},
                                                         {"rtn4", 2 * evaluations + originalStream}};
    for (const auto& [method, linears] : cases) {
        SCOPED_TRACE(method);
        JobPlan plan = planFor(dir_, method);
        auto backend = std::make_shared<BackendWithMath>();
        plan.backend = backend;
        const JobResult r = Job(std::move(plan)).run({}, CancelToken{});
        ASSERT_TRUE(r.methods.at(0).error.empty()) << r.methods.at(0).error;
        EXPECT_EQ(backend->math->linears.load(), linears);
    }
}

// A device with `free` bytes that predicts `peak` for any plan, and remembers the workload it was shown.
class SmallDevice final : public test::DelegatingBackend {
public:
    SmallDevice(std::int64_t peak, std::int64_t free) : peak_(peak), free_(free) {}
    std::int64_t freeMemoryBytes() const override { return free_; }
    std::int64_t peakDeviceBytes(const DeviceWorkload& w) const override {
        seen = w;
        return peak_;
    }
    mutable DeviceWorkload seen;

private:
    std::int64_t peak_, free_;
};

TEST_F(JobTest, APlanThatDoesNotFitOnTheDeviceIsRefusedBeforeItStarts) {
    JobPlan plan = planFor(dir_, "rtn4,gptq4-act");
    auto device = std::make_shared<SmallDevice>(std::int64_t{3} << 30, std::int64_t{1} << 30);
    plan.backend = device;
    std::vector<std::string> lines, stages;
    try {
        Job(plan).run([&](const Progress& p) { stages.push_back(p.stage); }, CancelToken{});
        FAIL() << "a plan needing 3 GiB ran on a device with 1 GiB free";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("does not fit on the device: device memory: about 3.00 GiB at the peak, "
                                             "1.00 GiB free"),
                  std::string::npos)
            << e.what();
    }
    for (const auto& stage : stages) EXPECT_EQ(stage, "plan") << "work started before the refusal";
    EXPECT_TRUE(device->seen.statistics && device->seen.gptq && !device->seen.awq);
    EXPECT_EQ(device->seen.sequenceLength, 64);
    EXPECT_EQ(device->seen.groupSize, 32);
    EXPECT_EQ(device->seen.config.numLayers, 2);
    // Forced, it runs; and a plan that fits says what it will use.
    EXPECT_EQ(Job(plan).run({}, CancelToken{}, {}, true).methods.size(), 2u);
    plan.backend = std::make_shared<SmallDevice>(std::int64_t{1} << 29, std::int64_t{1} << 30);
    lines.clear();
    Job(plan).run([&](const Progress& p) { lines.push_back(p.message); }, CancelToken{});
    EXPECT_NE(std::find(lines.begin(), lines.end(), "device memory: about 512.00 MiB at the peak, 1.00 GiB free"),
              lines.end());
}

TEST_F(JobTest, EightBitRtnIsNearLossless) {
    // 255 levels per group of 32 leave an error ~60x smaller than 4 levels: KL scales with its square.
    const JobResult r = Job(planFor(dir_, "rtn8,rtn2", 32)).run({}, CancelToken{});
    EXPECT_LT(find(r, "rtn8").kl.meanKld.value, 1e-3 * find(r, "rtn2").kl.meanKld.value + 1e-6);
    EXPECT_GT(find(r, "rtn8").kl.sameTop.value, 0.97);
}

TEST_F(JobTest, ProgressIsReportedAndCancelStopsQuickly) {
    Job job(planFor(dir_, "rtn4,gptq4,fp8"));
    CancelToken cancel;
    std::atomic<int> reports{0};
    auto cancelledAt = std::chrono::steady_clock::now();
    auto progress = [&](const Progress& p) {
        if (++reports == 3) {
            cancel.cancel();
            cancelledAt = std::chrono::steady_clock::now();
        }
        EXPECT_GE(p.fraction, 0.0);
        EXPECT_LE(p.fraction, 1.0);
    };
    EXPECT_THROW(job.run(progress, cancel), Cancelled);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - cancelledAt).count();
    EXPECT_LT(seconds, 1.0);
    EXPECT_GE(reports.load(), 3);
}

// Inside a layer, each calibration pass reports every sequence it has run (the original stream's for
// rtn4's statistics, gptq4's own true-sequential one), so a large model's status moves within a layer.
// GPTQ's own stream and GPTAQ's paired one alike: a layer's calibration of an 8B model takes minutes.
TEST_F(JobTest, CalibrationReportsEachSequenceOfEachLayer) {
    for (const char* method : {"gptq4", "gptaq4"}) {
        SCOPED_TRACE(method);
        JobPlan plan = planFor(dir_, method);
        const std::size_t sequences = plan.calibration.size();
        std::vector<std::string> messages;
        Job(plan).run(
            [&](const Progress& p) {
                if (p.stage == "calibrate") messages.push_back(p.message);
            },
            CancelToken{});
        for (int layer = 1; layer <= 2; ++layer)
            for (std::size_t i = 1; i <= sequences; ++i) {
                const std::string said = "sequence " + std::to_string(i) + "/" + std::to_string(sequences) +
                                         ", layer " + std::to_string(layer) + "/2";
                EXPECT_NE(std::find_if(messages.begin(), messages.end(),
                                       [&](const std::string& m) { return m.ends_with(said); }),
                          messages.end())
                    << said;
            }
    }
}

TEST_F(JobTest, MethodThatCannotApplyIsReportedAndOthersGoOn) {
    // Trellis needs groups of 256 columns; this model is 64 wide.
    const JobResult r = Job(planFor(dir_, "trellis2,rtn4")).run({}, CancelToken{});
    EXPECT_FALSE(find(r, "trellis2").error.empty());
    EXPECT_TRUE(find(r, "rtn4").error.empty());
    EXPECT_GT(find(r, "rtn4").kl.meanKld.value, 0.0);
}

TEST_F(JobTest, CalibratedMethodsNeedCalibrationText) {
    JobPlan plan = planFor(dir_, "gptq4");
    plan.calibration.clear();
    EXPECT_THROW(Job{std::move(plan)}, Error);
}

TEST_F(JobTest, EstimateGrowsWithTheWork) {
    const ResourceEstimate one = Job(planFor(dir_, "rtn4")).estimate();
    const ResourceEstimate many = Job(planFor(dir_, "rtn4,rtn2,fp8,gptq4,nf4")).estimate();
    EXPECT_GT(many.peakBytes, one.peakBytes);
    EXPECT_GT(many.seconds, one.seconds);
    EXPECT_GT(one.availableBytes, 0u);
    EXPECT_NE(one.describe().find("predicted peak memory"), std::string::npos);
}

TEST(JobOutliers, AwqBeatsRtnOnOutlierChannels) {
    // A few input channels 8x larger than the rest, as real LLMs develop: AWQ's per-channel scales
    // protect the weights that meet them.
    const auto dir = tempDir("outliers");
    test::SyntheticModel model;
    model.outlierChannels = {3, 17, 40, 51};
    model.outlierScale = 8.0f;
    test::writeSyntheticCheckpoint(dir, model);
    const JobResult r = Job(planFor(dir, "rtn4,awq4", 32)).run({}, CancelToken{});
    std::filesystem::remove_all(dir);
    const double rtn = find(r, "rtn4").kl.meanKld.value;
    const double awq = find(r, "awq4").kl.meanKld.value;
    EXPECT_LT(awq, 0.7 * rtn) << "AWQ " << awq << " vs RTN " << rtn;
}

// The reference KL table's comparison (docs/reference-algorithms.md), run on the bundled demo: the orderings it
// reports must hold on a real trained model, not only on random weights.
TEST(JobDemo, ReproducesTheSeedsOrdering) {
    const std::filesystem::path demo = std::filesystem::path(QS_RESOURCES_DIR) / "demo";
    const model::Tokenizer tokenizer = model::Tokenizer::fromFile(demo);
    JobPlan plan;
    plan.checkpoint = demo;
    plan.methods = parseMethodList("rtn4,gptq4,gptq4-act,fp8,mxfp4,nvfp4,rtn2", 64);
    plan.calibration = tokenWindows(tokenizer, loadTexts(demo / "calibration.txt"), 16, 128, "calibration.txt");
    plan.evaluation = tokenWindows(tokenizer, loadTexts(demo / "eval.txt"), 16, 128, "eval.txt");
    const JobResult r = Job(std::move(plan)).run({}, CancelToken{});
    const auto kl = [&](const std::string& name) { return find(r, name).kl.meanKld.value; };
    EXPECT_LT(kl("gptq4"), 0.5 * kl("rtn4"));
    EXPECT_LE(kl("gptq4-act"), kl("gptq4") * 1.1);
    EXPECT_LT(kl("fp8"), kl("rtn4"));
    EXPECT_LT(kl("nvfp4"), kl("mxfp4"));
    EXPECT_LT(kl("rtn4"), kl("rtn2"));
    EXPECT_NEAR(find(r, "mxfp4").bitsPerWeight, 4.25, 1e-9);
    EXPECT_NEAR(find(r, "nvfp4").bitsPerWeight, 4.5, 0.01);
}
