// Activation and KV-cache quantization end to end on the bundled demo Qwen3: calibrated scales equal
// the maxima of the inputs recomputed here from the model's pieces; quantizing the inputs or the
// cache costs KL on top of the weights; the exports carry the scales and the config keys the
// consumers read (docs/formats/activation-scales.md), read back bit for bit, and evaluate from disk
// to the KL the job measured; bad scales in a checkpoint are refused with one line naming the tensor.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>

#include <unistd.h>

#include "qs/error.h"
#include "qs/formats/detect.h"
#include "qs/formats/serving_quantization.h"
#include "qs/io/checkpoint.h"
#include "qs/io/checkpoint_writer.h"
#include "qs/model/rms_norm.h"
#include "qs/model/rope.h"
#include "qs/model/tokenizer.h"
#include "qs/model/transformer.h"
#include "qs/pipeline/calibration_text.h"
#include "qs/pipeline/checkpoint_eval.h"
#include "qs/pipeline/exporter.h"
#include "qs/pipeline/job.h"
#include "qs/pipeline/model_checkpoint.h"
#include "qs/quant/fp8.h"

using namespace qs;
using namespace qs::pipeline;

namespace {

const std::filesystem::path kDemo = std::filesystem::path(QS_RESOURCES_DIR) / "demo";

std::filesystem::path freshPath(const std::string& name) {
    auto dir = std::filesystem::temp_directory_path() / ("qs_serving_" + name + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    return dir;
}

TokenSequences demoTokens(const char* file, int samples, int length) {
    const auto tokenizer = model::Tokenizer::fromFile(kDemo);
    return tokenWindows(tokenizer, loadTexts(kDemo / file), samples, length, file);
}

// One job on the demo, every method with the FP8 KV cache when `kvCache`.
JobResult runDemo(const std::string& methods, bool kvCache, ActivationCalibration calibration = {}) {
    JobPlan plan;
    plan.checkpoint = kDemo;
    plan.methods = parseMethodList(methods, 64);
    for (auto& m : plan.methods) m.kvCacheFp8 = kvCache;
    plan.calibration = demoTokens("calibration.txt", 8, 64);
    plan.evaluation = demoTokens("eval.txt", 4, 128);
    plan.activationCalibration = calibration;
    JobResult result = Job(std::move(plan)).run({}, CancelToken{});
    for (const auto& m : result.methods) EXPECT_TRUE(m.error.empty()) << m.method.name << ": " << m.error;
    return result;
}

const quant::QuantizedLinear& linearOf(const MethodResult& r, std::size_t layer, const std::string& module) {
    return *r.layers.at(layer).at(module);
}

// The largest |x| of layer 0's q/k/v input and of its rotated keys and values over the calibration
// sequences, recomputed from the model's pieces (embedding, RMSNorm, k/v projections, q/k norm, RoPE).
struct Layer0Maxima {
    float input = 0, keys = 0, values = 0;
};

Layer0Maxima layer0Maxima(const TokenSequences& sequences) {
    const io::Checkpoint demo = io::Checkpoint::open(kDemo);
    model::Transformer model = model::Transformer::fromCheckpoint(demo);
    const auto& c = model.config();
    const model::LayerWeights& w = model.layerWeights(0);
    const model::RotaryEmbedding rope(c);
    Layer0Maxima m;
    for (const auto& tokens : sequences) {
        const MatrixF normed = model::rmsNorm(model.embed(tokens), w.inputNorm, c.rmsNormEps);
        MatrixF k = normed * w.k.weight.transpose();
        const MatrixF v = normed * w.v.weight.transpose();
        if (w.kNorm.size() > 0) model::rmsNormHeadsInPlace(k, w.kNorm, c.rmsNormEps);
        rope.apply(k, c.numKvHeads, 0);
        m.input = std::max(m.input, normed.cwiseAbs().maxCoeff());
        m.keys = std::max(m.keys, k.cwiseAbs().maxCoeff());
        m.values = std::max(m.values, v.cwiseAbs().maxCoeff());
    }
    return m;
}

nlohmann::json readJson(const std::filesystem::path& file) {
    std::ifstream in(file);
    return nlohmann::json::parse(in);
}

}  // namespace

TEST(ServingQuantization, CalibratedScalesAreTheInputsMaxima) {
    const JobResult r = runDemo("fp8-w8a8,nvfp4-w4a4", true);
    const Layer0Maxima m = layer0Maxima(demoTokens("calibration.txt", 8, 64));
    const auto& fp8 = r.methods[0];
    for (const char* module : {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"}) {
        EXPECT_EQ(linearOf(fp8, 0, module).input.format, quant::ActivationFormat::Fp8Tensor);
        EXPECT_FLOAT_EQ(linearOf(fp8, 0, module).input.scale, m.input / 448.0f) << module;
    }
    const auto& nvfp4 = r.methods[1];
    EXPECT_EQ(linearOf(nvfp4, 0, "mlp.down_proj").input.format, quant::ActivationFormat::Nvfp4);
    EXPECT_FLOAT_EQ(linearOf(nvfp4, 0, "self_attn.q_proj").input.scale, m.input / (448.0f * 6.0f));
    EXPECT_FLOAT_EQ(linearOf(fp8, 0, "self_attn.k_proj").cacheScale, m.keys / 448.0f);
    EXPECT_FLOAT_EQ(linearOf(fp8, 0, "self_attn.v_proj").cacheScale, m.values / 448.0f);
    EXPECT_EQ(linearOf(fp8, 0, "self_attn.q_proj").cacheScale, 0.0f);  // only k and v are cached
    EXPECT_EQ(linearOf(nvfp4, 1, "self_attn.k_proj").cacheScale, linearOf(fp8, 1, "self_attn.k_proj").cacheScale);
}

TEST(ServingQuantization, APercentileClipsBelowTheMaximum) {
    const JobResult max = runDemo("fp8-w8a8", false);
    const JobResult p99 = runDemo("fp8-w8a8", false, parseActivationCalibration("p99"));
    const float atMax = linearOf(max.methods[0], 0, "mlp.down_proj").input.scale;
    const float atP99 = linearOf(p99.methods[0], 0, "mlp.down_proj").input.scale;
    EXPECT_LT(atP99, atMax);
    EXPECT_GT(atP99, 0.0f);
}

TEST(ServingQuantization, QuantizedInputsAndCacheCostKlOnTopOfTheWeights) {
    const JobResult r = runDemo("fp8-tensor,fp8-w8a8,fp8-channel,fp8-w8a8-dynamic,nvfp4,nvfp4-w4a4", true);
    const auto kl = [&](std::size_t i) { return r.methods[i].kl.meanKld.value; };
    EXPECT_GT(kl(1), kl(0));  // W8A8 static vs W8A16, the same per-tensor weights
    EXPECT_GT(kl(3), kl(2));  // W8A8 per token vs W8A16, per-channel weights
    EXPECT_GT(kl(5), kl(4));  // W4A4 vs W4A16
    ASSERT_TRUE(r.kvCacheOnlyKl.has_value());
    EXPECT_GT(r.kvCacheOnlyKl->meanKld.value, 0.0);
    EXPECT_LT(r.kvCacheOnlyKl->meanKld.value, kl(5));
    EXPECT_EQ(r.methods[1].method.label(), "FP8 W8A8, per-tensor weights, static inputs, KV cache FP8");
}

TEST(ServingQuantization, ExportsCarryTheScalesAndEvaluateToTheJobsKl) {
    const JobResult fp8 = runDemo("fp8-w8a8", true);
    const JobResult nvfp4 = runDemo("nvfp4-w4a4", true);
    const TokenSequences evaluation = demoTokens("eval.txt", 4, 128);
    struct Case {
        const MethodResult* result;
        const char* format;
    };
    for (const Case& c :
         {Case{&fp8.methods[0], "fp8"}, Case{&fp8.methods[0], "ct-fp8"}, Case{&fp8.methods[0], "modelopt-fp8"},
          Case{&nvfp4.methods[0], "ct-nvfp4"}, Case{&nvfp4.methods[0], "modelopt-nvfp4"}}) {
        SCOPED_TRACE(c.format);
        const auto dir = freshPath(c.format);
        exportCheckpoint({kDemo, dir, c.format, false, {}}, *c.result, {}, CancelToken{});
        const io::Checkpoint exported = io::Checkpoint::open(dir);
        const formats::FormatInfo info = formats::detect(exported);
        for (std::size_t layer = 0; layer < c.result->layers.size(); ++layer)
            for (const auto& [module, q] : c.result->layers[layer]) {
                const std::string prefix = "model.layers." + std::to_string(layer) + "." + module;
                const auto serving =
                    formats::readServingQuantization(exported, info, prefix, q->method == quant::Method::Nvfp4);
                EXPECT_EQ(serving.input, q->input) << prefix;
                EXPECT_EQ(serving.cacheScale, q->cacheScale) << prefix;
            }
        const CheckpointEvalResult e = evaluateCheckpoints({kDemo, dir, evaluation}, {}, CancelToken{});
        // Every reader decodes the weights through the function the Job's come from, and the forward
        // passes are the same code on the same shapes: bit for bit, whichever BLAS kernel runs them.
        EXPECT_EQ(e.kl.meanKld.value, c.result->kl.meanKld.value);
        std::filesystem::remove_all(dir);
    }
}

TEST(ServingQuantization, ConfigsSayWhatTheConsumersRead) {
    const JobResult r = runDemo("fp8-w8a8,nvfp4-w4a4", true);
    const auto exportAs = [&](std::size_t method, const char* format) {
        const auto dir = freshPath(std::string("config_") + format);
        exportCheckpoint({kDemo, dir, format, false, {}}, r.methods[method], {}, CancelToken{});
        return dir;
    };
    {
        const auto dir = exportAs(0, "fp8");
        const auto q = readJson(dir / "config.json")["quantization_config"];
        EXPECT_EQ(q["quant_method"], "fp8");
        EXPECT_EQ(q["activation_scheme"], "static");
        const io::Checkpoint c = io::Checkpoint::open(dir);
        EXPECT_NE(c.find("model.layers.0.self_attn.q_proj.input_scale"), nullptr);
        EXPECT_NE(c.find("model.layers.0.self_attn.k_scale"), nullptr);  // vLLM: self_attn.attn.k_scale
        EXPECT_NE(c.find("model.layers.1.self_attn.v_scale"), nullptr);
        std::filesystem::remove_all(dir);
    }
    {
        const auto dir = exportAs(0, "ct-fp8");
        const auto q = readJson(dir / "config.json")["quantization_config"];
        const auto inputs = q["config_groups"]["group_0"]["input_activations"];
        EXPECT_EQ(inputs["strategy"], "tensor");
        EXPECT_EQ(inputs["dynamic"], false);
        EXPECT_EQ(inputs["num_bits"], 8);
        EXPECT_EQ(q["kv_cache_scheme"]["strategy"], "tensor");
        EXPECT_EQ(q["kv_cache_scheme"]["type"], "float");
        std::filesystem::remove_all(dir);
    }
    {
        const auto dir = exportAs(1, "modelopt-nvfp4");
        EXPECT_EQ(readJson(dir / "hf_quant_config.json")["quantization"]["quant_algo"], "NVFP4");
        EXPECT_EQ(readJson(dir / "hf_quant_config.json")["quantization"]["kv_cache_quant_algo"], "FP8");
        const auto q = readJson(dir / "config.json")["quantization_config"];
        EXPECT_EQ(q["config_groups"]["group_0"]["input_activations"]["num_bits"], 4);
        EXPECT_EQ(q["kv_cache_scheme"]["num_bits"], 8);
        const io::Checkpoint c = io::Checkpoint::open(dir);
        EXPECT_NE(c.find("model.layers.0.mlp.down_proj.input_scale"), nullptr);
        EXPECT_NE(c.find("model.layers.0.self_attn.k_proj.k_scale"), nullptr);  // ModelOpt's name
        std::filesystem::remove_all(dir);
    }
    {
        const auto dir = exportAs(1, "ct-nvfp4");
        const auto q = readJson(dir / "config.json")["quantization_config"];
        EXPECT_EQ(q["config_groups"]["group_0"]["input_activations"]["dynamic"], "local");
        const io::Checkpoint c = io::Checkpoint::open(dir);
        const float divisor = c.tensor("model.layers.0.mlp.up_proj.input_global_scale").toF32()[0];
        EXPECT_EQ(1.0f / divisor, linearOf(r.methods[1], 0, "mlp.up_proj").input.scale);
        std::filesystem::remove_all(dir);
    }
}

TEST(ServingQuantization, LayoutsThatCannotStateItAreRefused) {
    const JobResult r = runDemo("fp8-w8a8,nvfp4", true);
    for (const auto& [method, format] :
         {std::pair{0, "ct-fp8-dynamic"}, std::pair{1, "ct-mixed"}, std::pair{0, "ct-mixed"}}) {
        const auto dir = freshPath(std::string("refused_") + format);
        try {
            exportCheckpoint({kDemo, dir, format, false, {}}, r.methods[std::size_t(method)], {}, CancelToken{});
            ADD_FAILURE() << format << " accepted what it cannot state";
        } catch (const Error& e) {
            const std::string what = e.what();
            EXPECT_TRUE(what.find("cannot") != std::string::npos) << what;
        }
        EXPECT_FALSE(std::filesystem::exists(dir)) << format;
    }
}

TEST(ServingQuantization, BadScalesInACheckpointAreRefusedNamingTheTensor) {
    const JobResult r = runDemo("fp8-w8a8", false);
    const auto good = freshPath("good");
    exportCheckpoint({kDemo, good, "modelopt-fp8", false, {}}, r.methods[0], {}, CancelToken{});
    const std::string name = "model.layers.1.mlp.gate_proj.input_scale";
    for (const float bad : {0.0f, -1.0f, std::nanf(""), INFINITY}) {
        const auto dir = freshPath("bad");
        const io::Checkpoint source = io::Checkpoint::open(good);
        io::CheckpointWriter writer(dir);
        for (const auto& t : source.tensors()) {
            const io::TensorView v = source.view(t);
            std::vector<std::byte> bytes(v.bytes().begin(), v.bytes().end());
            if (t.info->name == name) std::memcpy(bytes.data(), &bad, sizeof bad);
            writer.addTensor(t.info->name, t.info->dtype, t.info->shape, bytes);
        }
        writer.setConfig(source.config());
        writer.copyAuxiliaryFiles(good);
        writer.addJsonFile("hf_quant_config.json", readJson(good / "hf_quant_config.json"));
        writer.finish();
        try {
            openModelCheckpoint(dir, false);
            ADD_FAILURE() << "scale " << bad << " accepted";
        } catch (const Error& e) {
            const std::string what = e.what();
            EXPECT_NE(what.find(name), std::string::npos) << what;
            EXPECT_EQ(what.find('\n'), std::string::npos);
        }
        std::filesystem::remove_all(dir);
    }
    std::filesystem::remove_all(good);
}

TEST(ServingQuantization, PercentilesAreNearestRankOfTheTokenMaxima) {
    std::vector<float> maxima;
    for (int i = 1; i <= 1000; ++i) maxima.push_back(static_cast<float>(1001 - i));  // 1000 .. 1, unsorted order
    EXPECT_EQ(calibratedAmax(maxima, 100.0), 1000.0f);
    EXPECT_EQ(calibratedAmax(maxima, 99.9), 999.0f);  // the smallest value with 99.9 % at or below it
    EXPECT_EQ(calibratedAmax(maxima, 50.0), 500.0f);
    EXPECT_EQ(calibratedAmax(maxima, 0.01), 1.0f);
    EXPECT_EQ(calibratedAmax({}, 99.0), 0.0f);
    EXPECT_THROW(calibratedAmax(maxima, 0.0), Error);
    EXPECT_THROW(calibratedAmax(std::vector<float>{1.0f, NAN}, 100.0), Error);
    EXPECT_EQ(parseActivationCalibration("p99.9").percentile, 99.9);
    EXPECT_EQ(parseActivationCalibration("max").label(), "max");
    for (const char* bad : {"p0", "p101", "99", "pmax", "p", ""})
        EXPECT_THROW(parseActivationCalibration(bad), Error) << bad;
}
