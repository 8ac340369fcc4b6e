// The Job's memory: what it frees as it goes and what it keeps more compactly must not change a result
// (LayerStatistics handing each input back, quantizeLayer freeing weights and statistics,
// CompactLinear), and its prediction follows that design.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <random>
#include <string_view>

#include "qs/error.h"
#include "qs/pipeline/compact_linear.h"
#include "qs/pipeline/layer_quantizer.h"
#include "qs/pipeline/layer_statistics.h"
#include "qs/pipeline/resource_estimate.h"
#include "qs/quant/gptq.h"
#include "qs/quant/hessian.h"

using namespace qs;
using namespace qs::pipeline;

namespace {

constexpr std::array<std::string_view, 3> kQkv{"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"};
constexpr std::array<std::string_view, 1> kO{"self_attn.o_proj"};
constexpr std::array<std::string_view, 2> kGateUp{"mlp.gate_proj", "mlp.up_proj"};
constexpr std::array<std::string_view, 1> kDown{"mlp.down_proj"};

MatrixF randomMatrix(std::int64_t rows, std::int64_t cols, std::mt19937& gen, float sigma) {
    std::normal_distribution<float> g(0.0f, sigma);
    MatrixF m(rows, cols);
    for (std::int64_t i = 0; i < m.size(); ++i) m.data()[i] = g(gen);
    return m;
}

// Inputs with a shared component, so that H is far from diagonal.
MatrixF inputs(std::int64_t tokens, std::int64_t features, std::mt19937& gen) {
    MatrixF x = randomMatrix(tokens, features, gen, 0.5f);
    const MatrixF shared = randomMatrix(tokens, 1, gen, 1.0f);
    x.colwise() += shared.col(0);
    return x;
}

// Statistics of a layer with hidden 48, q/o width 32, intermediate 80, from two batches of tokens.
LayerStatistics layerStatistics(std::mt19937& gen) {
    LayerStatistics stats;
    const auto hook = stats.hook();
    for (int batch = 0; batch < 2; ++batch) {
        hook({0, kQkv, inputs(70, 48, gen)});
        hook({0, kO, inputs(70, 32, gen)});
        hook({0, kGateUp, inputs(70, 48, gen)});
        hook({0, kDown, inputs(70, 80, gen)});
    }
    return stats;
}

model::LayerWeights layerWeights(std::mt19937& gen) {
    model::LayerWeights w;
    w.inputNorm = VectorF::Ones(48);
    w.postAttentionNorm = VectorF::Constant(48, 0.5f);
    w.q.weight = randomMatrix(32, 48, gen, 0.02f);
    w.k.weight = randomMatrix(16, 48, gen, 0.02f);
    w.v.weight = randomMatrix(16, 48, gen, 0.02f);
    w.v.bias = VectorF::Constant(16, 0.25f);
    w.o.weight = randomMatrix(48, 32, gen, 0.02f);
    w.gate.weight = randomMatrix(80, 48, gen, 0.02f);
    w.up.weight = randomMatrix(80, 48, gen, 0.02f);
    w.down.weight = randomMatrix(48, 80, gen, 0.02f);
    return w;
}

}  // namespace

TEST(LayerStatistics, InputsAreFreedWhenTheirModulesAreDone) {
    std::mt19937 gen(1);
    LayerStatistics stats = layerStatistics(gen);
    const std::size_t all = stats.bytes();
    const MatrixF qkv = stats.hessian("self_attn.q_proj");  // cached now
    EXPECT_EQ(stats.bytes(), all + std::size_t(48 * 48) * sizeof(float));
    EXPECT_FALSE(stats.lastOfInput("self_attn.k_proj"));
    stats.done("self_attn.q_proj");
    stats.done("self_attn.q_proj");  // idempotent
    EXPECT_FALSE(stats.lastOfInput("self_attn.k_proj"));
    stats.done("self_attn.k_proj");
    EXPECT_TRUE(stats.lastOfInput("self_attn.v_proj"));
    EXPECT_THROW(stats.takeHessian("mlp.gate_proj"), Error);  // up_proj still reads it
    const MatrixF taken = stats.takeHessian("self_attn.v_proj");
    EXPECT_EQ(taken, qkv);
    EXPECT_THROW(stats.hessian("self_attn.q_proj"), Error);
    EXPECT_EQ(stats.input("self_attn.q_proj").hessian->samples(), 140);  // the count and mean |x| stay
    EXPECT_EQ(stats.input("self_attn.v_proj").hessian->meanAbs().size(), 48);
    // The sums of q/k/v are gone; the other three inputs' remain.
    const std::size_t qkvSums = [] {
        quant::HessianAccumulator a(48);
        return std::size_t(a.bytes()) - 48 * sizeof(double);
    }();
    EXPECT_EQ(stats.bytes(), all - qkvSums);
    // down_proj is alone on its input: its H can be taken at once, and equals a fresh finalize.
    std::mt19937 again(1);
    LayerStatistics fresh = layerStatistics(again);
    EXPECT_TRUE(stats.lastOfInput("mlp.down_proj"));
    EXPECT_EQ(stats.takeHessian("mlp.down_proj"), fresh.hessian("mlp.down_proj"));
    EXPECT_FALSE(stats.lastOfInput("mlp.down_proj"));
}

// Freeing the weights and statistics as quantizeLayer goes (GPTQ taking each input's last H) changes
// nothing in the results: codes, scales and the measured errors bit for bit.
TEST(LayerRelease, QuantizeLayerGivesTheSameResults) {
    for (const char* name : {"gptq4", "gptq4-act", "rtn4", "awq4", "fp8"}) {
        const MethodSpec method = parseMethod(name, 16);
        std::mt19937 gen(2), genKept(2);
        LayerStatistics kept = layerStatistics(gen), freed = layerStatistics(genKept);
        const model::LayerWeights weights = layerWeights(gen);
        model::LayerWeights consumed = layerWeights(genKept);
        const QuantizedLayer a = quantizeLayer(method, weights, kept, 7, CancelToken{});
        const QuantizedLayer b =
            quantizeLayer(method, consumed, freed, 7, CancelToken{}, nullptr, LayerRelease{true, true});
        ASSERT_EQ(a.size(), 7u) << name;
        ASSERT_EQ(b.size(), 7u) << name;
        for (const auto& [module, qa] : a) {
            const quant::QuantizedLinear& qb = *b.at(module);
            EXPECT_EQ(qa->codes, qb.codes) << name << " " << module;
            EXPECT_EQ(qa->scales, qb.scales) << name << " " << module;
            EXPECT_EQ(qa->zeros, qb.zeros) << name << " " << module;
            EXPECT_EQ(qa->inputScales, qb.inputScales) << name << " " << module;
            EXPECT_EQ(qa->outputError, qb.outputError) << name << " " << module;
            EXPECT_EQ(qa->outputMse, qb.outputMse) << name << " " << module;
            EXPECT_EQ(consumed.linear(module).weight.size(), 0) << name << " " << module;
        }
        EXPECT_TRUE(std::isfinite(a.at("mlp.down_proj")->outputError)) << name;
        EXPECT_EQ(consumed.v.bias, weights.v.bias);  // biases and norms stay
        EXPECT_EQ(consumed.postAttentionNorm, weights.postAttentionNorm);
        EXPECT_EQ(freed.bytes(), std::size_t(48 + 32 + 48 + 80) * sizeof(double)) << name;  // each input's Σ|x|
        EXPECT_GT(kept.bytes(), freed.bytes());
    }
}

TEST(CompactLinear, FourBitCodesArePackedAndComeBackBitForBit) {
    std::mt19937 gen(3);
    const MatrixF x = inputs(200, 45, gen);
    const MatrixF w = randomMatrix(7, 45, gen, 0.02f);  // 315 codes: an odd count
    const quant::QuantizedLinear q = quant::quantizeGptq(w, quant::hessian(x), {.bits = 4, .groupSize = 15});
    const CompactLinear c(q);
    EXPECT_TRUE(c.packed());
    EXPECT_EQ(c.heldBytes(), 158u);
    EXPECT_TRUE(c.parts().codes.empty());
    EXPECT_EQ(c.parts().scales, q.scales);
    const quant::QuantizedLinear back = c.unpack();
    EXPECT_EQ(back.codes, q.codes);
    EXPECT_EQ(back.scales, q.scales);
    EXPECT_EQ(back.zeros, q.zeros);
    EXPECT_EQ(back.outputError, q.outputError);
    EXPECT_EQ(c.effectiveWeight(), q.effectiveWeight());

    quant::QuantizedLinear wide = q;  // a code above 15 (8-bit grids, FP8) is kept a byte per code
    wide.bits = 8;
    wide.codes[100] = 200;
    const CompactLinear kept(wide);
    EXPECT_FALSE(kept.packed());
    EXPECT_EQ(kept.heldBytes(), 315u);
    EXPECT_EQ(kept.unpack().codes, wide.codes);
}

// A decoder shape for the estimate's tests.
static model::ModelConfig decoderShape(int hidden, int intermediate, int layers, int heads, int kvHeads, int headDim,
                                       int vocab) {
    model::ModelConfig c;
    c.hiddenSize = hidden;
    c.intermediateSize = intermediate;
    c.numLayers = layers;
    c.numHeads = heads;
    c.numKvHeads = kvHeads;
    c.headDim = headDim;
    c.vocabSize = vocab;
    return c;
}

// The prediction on bench/peak_rss.sh's shape (8 layers, 4096 wide, intermediate 14336, 32/8 heads,
// 16 x 512 calibration tokens, gptq4 g128): what cannot be avoided is in it, it fits the 4 GB target,
// and it moves with the design's choices.
TEST(ResourceEstimate, FollowsTheJobsDesign) {
    const model::ModelConfig c = decoderShape(4096, 14336, 8, 32, 8, 128, 32000);
    WorkloadShape gptq;
    gptq.config = c;
    gptq.methods = 1;
    gptq.sequentialMethods = 1;
    gptq.keptBytesPerWeight = 0.5 + 8.0 / 128;
    gptq.calibrationTokens = 16 * 512;
    gptq.evaluationTokens = 512;
    gptq.evaluationSequenceLength = 512;
    const double params = 8 * (2 * 4096.0 * 4096 + 2 * 4096.0 * 1024 + 3 * 4096.0 * 14336);
    const double hDown = 14336.0 * 14336 * sizeof(float);
    const double one = double(predictedJobBytes(gptq));
    EXPECT_GT(one, 2 * hDown + 0.5 * params + 8192.0 * 4096 * sizeof(float));  // H and its factor, packed codes, hidden
    EXPECT_LT(one, 4e9);

    // A method quantizing from the original stream brings that stream: its hidden states, every
    // input's running sums and cached H, and a decoded layer beside the original.
    WorkloadShape withRtn = gptq;
    withRtn.methods = 2;
    withRtn.keptBytesPerWeight += 0.5 + 8.0 / 128;
    double statistics = 0;
    for (double n : {4096.0, 4096.0, 4096.0, 14336.0}) statistics += n * n / 2 * sizeof(double) + n * n * sizeof(float);
    EXPECT_GT(double(predictedJobBytes(withRtn)) - one, statistics);

    // Codes a byte each (no packing) cost half a byte per weight more.
    WorkloadShape unpacked = gptq;
    unpacked.keptBytesPerWeight = 1.0 + 8.0 / 128;
    EXPECT_NEAR(double(predictedJobBytes(unpacked)) - one, 0.5 * params, 1e6);

    // Without calibration no statistics and no GPTQ: far less.
    WorkloadShape rtn = gptq;
    rtn.sequentialMethods = 0;
    rtn.calibrationTokens = 0;
    EXPECT_LT(double(predictedJobBytes(rtn)), one - 2 * hDown + 0.5e9);
}

// Results on disk (a work folder): of a finished layer only its scales and zeros stay in memory
// (8 bytes per group of 128 for gptq4), so that is all a deeper model adds; in RAM the result holds
// a byte per code at the end.
TEST(ResourceEstimate, ResultsOnDiskGrowOnlyByTheScales) {
    const auto peakOf = [](int layers, bool onDisk) {
        WorkloadShape s;
        s.config = decoderShape(4096, 14336, layers, 32, 8, 128, 32000);
        s.methods = 1;
        s.sequentialMethods = 1;
        s.keptBytesPerWeight = (onDisk ? 0.0 : 0.5) + 8.0 / 128;  // as Job::estimate counts gptq4 g128
        s.resultsOnDisk = onDisk;
        s.calibrationTokens = 16 * 512;
        s.evaluationTokens = 512;
        s.evaluationSequenceLength = 512;
        return double(predictedJobBytes(s));
    };
    const double layerWeights = 2 * 4096.0 * 4096 + 2 * 4096.0 * 1024 + 3 * 4096.0 * 14336;
    EXPECT_NEAR(peakOf(32, true) - peakOf(8, true), 24 * layerWeights * 8.0 / 128, 1e6);
    EXPECT_GT(peakOf(32, false), 32 * layerWeights) << "a byte per code at the end";
    EXPECT_LT(peakOf(32, true), 0.5 * peakOf(32, false));
}

// Per-layer KL keeps the original evaluation states at every layer's input: in RAM a stream per layer;
// with results on disk they stay in the layers' records, and one layer's is read back at a time
// beside each method's copy, so a deeper model adds nothing for them.
TEST(ResourceEstimate, PerLayerKlInputsOnDiskDoNotGrowWithDepth) {
    const auto peakOf = [](int layers, bool onDisk, bool perLayerKl) {
        WorkloadShape s;
        s.config = decoderShape(4096, 14336, layers, 32, 8, 128, 32000);
        s.methods = 2;
        s.keptBytesPerWeight = onDisk ? 2 * 8.0 / 128 : 2 * (0.5 + 8.0 / 128);
        s.resultsOnDisk = onDisk;
        s.evaluationTokens = 4 * 2048;
        s.evaluationSequenceLength = 2048;
        s.perLayerKl = perLayerKl;
        return double(predictedJobBytes(s));
    };
    const double stream = 4 * 2048 * 4096.0 * sizeof(float);
    EXPECT_NEAR(peakOf(32, false, true) - peakOf(32, false, false), 32 * stream, 1e3);
    EXPECT_NEAR(peakOf(32, true, true) - peakOf(32, true, false), 3 * stream, 1e3)
        << "the input read back and two copies";
    EXPECT_NEAR(peakOf(80, true, true) - peakOf(80, true, false), 3 * stream, 1e3);
}

// The time estimate of one plan is the same at every call, and more calibration or evaluation
// tokens, more methods or per-layer KL never predict less time (it moved 4.9 s to 49 s between
// calls, and fell from 4.1 s to 0.6 s when the samples went from 16 to 64).
TEST(ResourceEstimate, TimeIsStableAndGrowsWithTheWork) {
    const model::ModelConfig c = decoderShape(256, 768, 2, 4, 2, 64, 320);
    WorkloadShape plan;
    plan.config = c;
    plan.methods = 2;
    plan.sequentialMethods = 1;
    plan.calibrationTokens = 16 * 128;
    plan.evaluationTokens = 8 * 128;
    plan.evaluationSequenceLength = 128;
    const ResourceEstimate first = estimateResources(plan);
    ASSERT_GT(first.seconds, 0.0);
    for (int call = 0; call < 3; ++call) EXPECT_EQ(estimateResources(plan).seconds, first.seconds);
    EXPECT_EQ(first.gemmFlopsPerSecond, machineGemmRate());

    double previous = first.seconds;
    for (std::size_t samples : {32u, 64u, 256u}) {
        WorkloadShape more = plan;
        more.calibrationTokens = samples * 128;
        const double seconds = estimateResources(more).seconds;
        EXPECT_GT(seconds, previous) << samples << " samples";
        previous = seconds;
    }
    WorkloadShape evaluated = plan;
    evaluated.evaluationTokens *= 4;
    EXPECT_GT(estimateResources(evaluated).seconds, first.seconds);
    WorkloadShape perLayer = plan;
    perLayer.perLayerKl = true;
    EXPECT_GT(estimateResources(perLayer).seconds, first.seconds);
}
