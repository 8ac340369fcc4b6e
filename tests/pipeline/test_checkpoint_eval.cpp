// Checkpoint evaluation (two checkpoints side by side, linears decoded per layer) against the
// Job's own evaluation, on the bundled demo and on synthetic checkpoints written by the test.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "qs/error.h"
#include "qs/io/checkpoint.h"
#include "qs/io/checkpoint_writer.h"
#include "qs/model/checkpoint_weights.h"
#include "qs/model/tokenizer.h"
#include "qs/pipeline/checkpoint_eval.h"
#include "qs/pipeline/decoded_weights.h"
#include "qs/pipeline/job.h"

#include "synthetic_checkpoint.h"

using namespace qs;
using namespace qs::pipeline;

namespace {

const std::filesystem::path kDemo = std::filesystem::path(QS_RESOURCES_DIR) / "demo";

std::filesystem::path tempDir(const std::string& name) {
    auto dir = std::filesystem::temp_directory_path() / ("qs_eval_" + name + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    return dir;
}

TokenSequences demoEvaluation(int samples, int seqLen) {
    const io::Checkpoint demo = io::Checkpoint::open(kDemo);
    return sharedTokenWindows(demo, demo, loadTexts(kDemo / "eval.txt"), samples, seqLen, "eval.txt");
}

// A dense F32 checkpoint holding `method`'s effective weights in place of the original's linears;
// every other tensor is copied byte for byte.
void writeEffectiveCheckpoint(const std::filesystem::path& original, const MethodResult& method,
                              const std::filesystem::path& destination) {
    const io::Checkpoint source = io::Checkpoint::open(original);
    io::CheckpointWriter writer(destination, {.overwrite = true}, source.root());
    writer.setConfig(source.config());
    for (const auto& t : source.tensors())
        if (!(t.naming.role == io::TensorRole::Linear && t.naming.layer >= 0))
            writer.addTensor(t.info->name, t.info->dtype, t.info->shape, source.tensor(t.info->name).bytes());
    for (std::size_t layer = 0; layer < method.layers.size(); ++layer)
        for (const auto& [module, q] : method.layers[layer]) {
            const MatrixF w = q->effectiveWeight();
            writer.addTensorF32("model.layers." + std::to_string(layer) + "." + module + ".weight", io::DType::F32,
                                {w.rows(), w.cols()}, std::span<const float>(w.data(), std::size_t(w.size())));
        }
    writer.copyAuxiliaryFiles(source.root());
    writer.finish();
}

}  // namespace

TEST(DecodedWeights, DenseLayersMatchCheckpointWeights) {
    const io::Checkpoint demo = io::Checkpoint::open(kDemo);
    const auto config = model::ModelConfig::fromJson(demo.config());
    const model::CheckpointWeights dense(demo, config);
    const DecodedWeights decoded(demo, config);
    EXPECT_EQ(decoded.format().format, formats::Format::Dense);
    for (int layer = 0; layer < config.numLayers; ++layer) {
        const model::LayerWeights a = dense.layer(layer), b = decoded.layer(layer);
        for (const auto module : model::LayerWeights::kLinearModules)
            EXPECT_EQ(a.linear(module).weight, b.linear(module).weight) << module;
        EXPECT_EQ(a.inputNorm, b.inputNorm);
        EXPECT_EQ(a.qNorm, b.qNorm);
    }
}

TEST(CheckpointEval, DemoAgainstItselfIsExactlyZero) {
    CheckpointEvalPlan plan{kDemo, kDemo, demoEvaluation(4, 128)};
    int reports = 0;
    const CheckpointEvalResult r = evaluateCheckpoints(
        plan, [&](const Progress&) { ++reports; }, CancelToken{});
    EXPECT_EQ(r.kl.count, 4u * 127u);
    EXPECT_EQ(r.kl.meanKld.value, 0.0);
    EXPECT_EQ(r.kl.kld.maximum, 0.0);
    EXPECT_EQ(r.kl.kld.minimum, 0.0);
    EXPECT_EQ(r.kl.pplRatio.value, 1.0);
    EXPECT_EQ(r.kl.sameTop.value, 1.0);
    EXPECT_EQ(r.kl.rmsDeltaP.value, 0.0);
    EXPECT_GT(r.kl.pplBase.value, 1.0);  // the model was scored, not skipped
    EXPECT_EQ(r.originalFormat, "dense");
    EXPECT_EQ(r.evaluationTokens, 4u * 128u);
    EXPECT_GE(reports, 2 + 4);  // every layer and every scored sequence
}

TEST(CheckpointEval, EffectiveWeightsGiveTheJobsKl) {
    // Two independent paths to one number: the Job's quantized stream (overrides in memory) and a
    // checkpoint of the same effective weights evaluated from disk.
    const auto dir = tempDir("synthetic");
    test::writeSyntheticCheckpoint(dir, {});
    JobPlan plan;
    plan.checkpoint = dir;
    plan.methods = parseMethodList("gptq4,rtn2", 32);
    plan.calibration = test::syntheticTokens(8, 64, 96, 11);
    plan.evaluation = test::syntheticTokens(4, 64, 96, 12);
    const JobResult job = Job(plan).run({}, CancelToken{});
    for (const auto& method : job.methods) {
        ASSERT_TRUE(method.error.empty()) << method.error;
        const auto effective = tempDir("effective_" + method.method.name);
        writeEffectiveCheckpoint(dir, method, effective);
        const CheckpointEvalResult r = evaluateCheckpoints({dir, effective, plan.evaluation}, {}, CancelToken{});
        EXPECT_EQ(r.kl.count, method.kl.count);
        EXPECT_GT(r.kl.meanKld.value, 1e-4) << method.method.name;
        EXPECT_EQ(r.kl.meanKld.value, method.kl.meanKld.value) << method.method.name;
        EXPECT_EQ(r.kl.pplRatio.value, method.kl.pplRatio.value);
        EXPECT_EQ(r.kl.sameTop.value, method.kl.sameTop.value);
        std::filesystem::remove_all(effective);
    }
    EXPECT_GT(job.methods[1].kl.meanKld.value, job.methods[0].kl.meanKld.value);  // 2 bits hurt more
    std::filesystem::remove_all(dir);
}

TEST(CheckpointEval, DifferentModelsAreRefusedWithTheirDifferences) {
    const auto a = tempDir("shape_a"), b = tempDir("shape_b");
    test::writeSyntheticCheckpoint(a, {});
    test::SyntheticModel smaller;
    smaller.hidden = 32;
    smaller.vocab = 80;
    test::writeSyntheticCheckpoint(b, smaller);
    try {
        evaluateCheckpoints({a, b, test::syntheticTokens(2, 16, 80, 3)}, {}, CancelToken{});
        FAIL() << "a pair of different models was evaluated";
    } catch (const Error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("hidden_size 64 vs 32"), std::string::npos) << what;
        EXPECT_NE(what.find("vocab_size 96 vs 80"), std::string::npos) << what;
        EXPECT_EQ(what.find("num_hidden_layers"), std::string::npos) << what;  // the same in both
    }
    std::filesystem::remove_all(a);
    std::filesystem::remove_all(b);
}

TEST(CheckpointEval, CancelStopsTheEvaluation) {
    CancelToken cancel;
    cancel.cancel();
    EXPECT_THROW(evaluateCheckpoints({kDemo, kDemo, demoEvaluation(2, 64)}, {}, cancel), Cancelled);
}
