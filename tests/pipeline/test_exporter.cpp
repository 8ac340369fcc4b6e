// exportCheckpoint on the bundled demo Qwen3: what it writes reads back through the format readers as
// the job's quantized weights (bit for bit for GPTQ and FP8), everything else is copied, config.json
// gains the encoder's quantization_config, refused exports leave nothing behind, and an AWQ export
// (scales folded into the norms and v/up rows) computes the same logits as the in-memory model.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include <unistd.h>

#include "qs/error.h"
#include "qs/formats/detect.h"
#include "qs/formats/linear_reader.h"
#include "qs/io/checkpoint.h"
#include "qs/model/model_config.h"
#include "qs/model/tokenizer.h"
#include "qs/model/transformer.h"
#include "qs/pipeline/calibration_text.h"
#include "qs/pipeline/exporter.h"
#include "qs/pipeline/job.h"
#include "qs/pipeline/mixed_methods.h"

using namespace qs;
using namespace qs::pipeline;

namespace {

const std::filesystem::path kDemo = std::filesystem::path(QS_RESOURCES_DIR) / "demo";

std::filesystem::path freshPath(const std::string& name) {
    auto dir = std::filesystem::temp_directory_path() / ("qs_export_" + name + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    return dir;
}

TokenSequences demoTokens(int samples, int length) {
    const auto tokenizer = model::Tokenizer::fromFile(kDemo);
    return tokenWindows(tokenizer, loadTexts(kDemo / "calibration.txt"), samples, length, "calibration.txt");
}

MethodResult quantizeDemo(const std::string& method, bool calibrate) {
    JobPlan plan;
    plan.checkpoint = kDemo;
    plan.methods = {parseMethod(method, 64)};
    if (calibrate) plan.calibration = demoTokens(8, 64);
    auto result = Job(std::move(plan)).run({}, CancelToken{});
    if (!result.methods.front().error.empty()) throw std::runtime_error(result.methods.front().error);
    return std::move(result.methods.front());
}

nlohmann::json readJson(const std::filesystem::path& file) {
    std::ifstream in(file);
    return nlohmann::json::parse(in);
}

MatrixF withF16Scales(quant::QuantizedLinear q) {
    for (Eigen::Index i = 0; i < q.scales.size(); ++i)
        q.scales.data()[i] = io::f16ToF32(io::f32ToF16(q.scales.data()[i]));
    return q.dequantize();
}

bool sameBits(const MatrixF& a, const MatrixF& b) {
    return a.rows() == b.rows() && a.cols() == b.cols() &&
           std::memcmp(a.data(), b.data(), sizeof(float) * a.size()) == 0;
}

std::string prefixOf(std::size_t layer, const std::string& module) {
    return "model.layers." + std::to_string(layer) + "." + module;
}

// Every quantized linear reads back as `expected(q)`; every source tensor outside them is copied as is.
void expectExported(const std::filesystem::path& dir, const MethodResult& result,
                    const std::function<MatrixF(const quant::QuantizedLinear&)>& expected) {
    const auto exported = io::Checkpoint::open(dir);
    const formats::LinearReader reader(exported);
    for (std::size_t i = 0; i < result.layers.size(); ++i)
        for (const auto& [module, q] : result.layers[i])
            EXPECT_TRUE(sameBits(reader.decodeF32(prefixOf(i, module)), expected(*q))) << prefixOf(i, module);
    const auto source = io::Checkpoint::open(kDemo);
    int copied = 0;
    for (const auto& t : source.tensors()) {
        if (t.naming.role == io::TensorRole::Linear) continue;
        const auto a = source.tensor(t.info->name), b = exported.tensor(t.info->name);
        EXPECT_EQ(a.dtype(), b.dtype()) << t.info->name;
        EXPECT_TRUE(a.bytes().size() == b.bytes().size() &&
                    std::memcmp(a.bytes().data(), b.bytes().data(), a.bytes().size()) == 0)
            << t.info->name;
        ++copied;
    }
    EXPECT_GT(copied, 5);
}

TEST(Exporter, Gptq4OnTheDemoReadsBackAsTheJobsWeights) {
    const auto result = quantizeDemo("gptq4-sym", true);
    const auto dir = freshPath("gptq4");
    std::vector<Progress> reports;
    ExportRequest request{kDemo, dir, "", false, {{"calibration", "demo"}}};
    EXPECT_EQ(exportCheckpoint(
                  request, result, [&](const Progress& p) { reports.push_back(p); }, CancelToken{}),
              dir);
    expectExported(dir, result, [](const quant::QuantizedLinear& q) { return withF16Scales(q); });

    const auto config = readJson(dir / "config.json");
    EXPECT_EQ(config["quantization_config"]["quant_method"], "gptq");
    EXPECT_EQ(config["quantization_config"]["checkpoint_format"], "gptq");  // symmetric: v1, the default
    EXPECT_EQ(config["quantization_config"]["group_size"], 64);
    EXPECT_EQ(config["torch_dtype"], "bfloat16");
    EXPECT_EQ(config["architectures"][0], "Qwen3ForCausalLM");
    EXPECT_TRUE(std::filesystem::exists(dir / "quantize_config.json"));
    EXPECT_TRUE(std::filesystem::exists(dir / "tokenizer.json"));
    EXPECT_TRUE(std::filesystem::exists(dir / "generation_config.json"));
    const auto report = readJson(dir / "quantscope_report.json");
    EXPECT_EQ(report["format"], "gptq");
    EXPECT_EQ(report["settings"]["calibration"], "demo");
    ASSERT_EQ(report["linears"].size(), 14u);
    EXPECT_EQ(report["linears"][0]["bits"], 4);
    EXPECT_TRUE(report["linears"][0]["output_error"].is_number());
    ASSERT_EQ(reports.size(), 14u);
    EXPECT_EQ(reports.back().stage, "export");
    EXPECT_DOUBLE_EQ(reports.back().fraction, 1.0);
    const auto info = formats::detect(io::Checkpoint::open(dir));
    EXPECT_EQ(info.format, formats::Format::Gptq);
    EXPECT_EQ(info.layers.size(), 14u);
    std::filesystem::remove_all(dir);
}

TEST(Exporter, Fp8OnTheDemoReadsBackBitForBit) {
    const auto result = quantizeDemo("fp8", false);
    const auto dir = freshPath("fp8");
    exportCheckpoint({kDemo, dir, "", false, {}}, result, {}, CancelToken{});
    expectExported(dir, result, [](const quant::QuantizedLinear& q) { return q.dequantize(); });
    const auto config = readJson(dir / "config.json")["quantization_config"];
    EXPECT_EQ(config["quant_method"], "fp8");
    EXPECT_EQ(config["weight_block_size"], nlohmann::json({128, 128}));
    EXPECT_EQ(formats::detect(io::Checkpoint::open(dir)).format, formats::Format::Fp8);
    std::filesystem::remove_all(dir);
}

TEST(Exporter, PerChannelFp8GoesToCompressedTensors) {
    const auto result = quantizeDemo("fp8-channel", false);
    const auto dir = freshPath("fp8ch");
    exportCheckpoint({kDemo, dir, "", false, {}}, result, {}, CancelToken{});
    expectExported(dir, result, [](const quant::QuantizedLinear& q) { return q.dequantize(); });
    EXPECT_EQ(readJson(dir / "config.json")["quantization_config"]["quant_method"], "compressed-tensors");
    std::filesystem::remove_all(dir);
}

TEST(Exporter, RefusedExportWritesNothing) {
    const auto result = quantizeDemo("rtn4", false);  // asymmetric: v1 refuses it
    const auto dir = freshPath("refused");
    try {
        exportCheckpoint({kDemo, dir, "gptq", false, {}}, result, {}, CancelToken{});
        FAIL() << "exported";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("model.layers.0."), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("gptq_v2"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(std::filesystem::exists(dir));
    EXPECT_THROW(exportCheckpoint({kDemo, dir, "exl2", false, {}}, result, {}, CancelToken{}), Error);
    EXPECT_FALSE(std::filesystem::exists(dir));
    CancelToken cancelled;
    cancelled.cancel();
    EXPECT_THROW(exportCheckpoint({kDemo, dir, "gptq_v2", false, {}}, result, {}, cancelled), Cancelled);
    EXPECT_FALSE(std::filesystem::exists(dir));
    for (const auto& entry : std::filesystem::directory_iterator(dir.parent_path()))
        EXPECT_EQ(entry.path().filename().string().find(dir.filename().string()), std::string::npos) << entry.path();
}

// The forward pass over the exported AWQ checkpoint: norms and embeddings as stored, linears decoded.
model::ModelWeights exportedWeights(const io::Checkpoint& ck, const model::ModelConfig& config) {
    const formats::LinearReader reader(ck);
    const auto vec = [&](const std::string& name) {
        const auto v = ck.tensor(name).toF32();
        return VectorF(Eigen::Map<const VectorF>(v.data(), static_cast<Eigen::Index>(v.size())));
    };
    model::ModelWeights w;
    w.embedding = ck.tensor("model.embed_tokens.weight").toMatrix();
    w.norm = vec("model.norm.weight");
    for (int i = 0; i < config.numLayers; ++i) {
        model::LayerWeights l;
        const std::string p = "model.layers." + std::to_string(i) + ".";
        l.inputNorm = vec(p + "input_layernorm.weight");
        l.postAttentionNorm = vec(p + "post_attention_layernorm.weight");
        l.qNorm = vec(p + "self_attn.q_norm.weight");
        l.kNorm = vec(p + "self_attn.k_norm.weight");
        for (auto module : model::LayerWeights::kLinearModules)
            l.linear(module).weight = reader.decodeF32(p + std::string(module));
        w.layers.push_back(std::move(l));
    }
    return w;
}

TEST(Exporter, AwqFoldedExportGivesTheInMemoryLogits) {
    const auto result = quantizeDemo("awq4", true);
    bool scaled = false;  // the search must have chosen scales somewhere, or the test shows nothing
    for (const auto& layer : result.layers)
        for (const auto& [module, q] : layer)
            for (float s : q->inputScales) scaled = scaled || s != 1.0f;
    ASSERT_TRUE(scaled);
    const auto dir = freshPath("awq");
    exportCheckpoint({kDemo, dir, "awq", false, {}}, result, {}, CancelToken{});
    const auto exported = io::Checkpoint::open(dir);
    EXPECT_EQ(formats::detect(exported).format, formats::Format::Awq);

    const auto source = io::Checkpoint::open(kDemo);
    const auto config = model::ModelConfig::fromJson(source.config());
    auto reference = model::Transformer::fromCheckpoint(source);
    for (std::size_t i = 0; i < result.layers.size(); ++i)
        for (const auto& [module, q] : result.layers[i])
            reference.overrideLinear(static_cast<int>(i), module, [q] { return q->effectiveWeight(); });
    model::Transformer folded(config, std::make_shared<model::ModelWeights>(exportedWeights(exported, config)));

    const auto tokens = demoTokens(1, 48).front();
    const MatrixF want = reference.forward(tokens);
    const MatrixF got = folded.forward(tokens);
    const float scale = want.cwiseAbs().maxCoeff();
    const float diff = (got - want).cwiseAbs().maxCoeff();
    // BF16 norms (2^-9 relative) and F16 scales (2^-12) through two layers: well under 2 %.
    EXPECT_LT(diff, 0.02f * scale) << "max |logit difference| " << diff << " of " << scale;
    RecordProperty("max_logit_difference", std::to_string(diff));
    RecordProperty("max_logit", std::to_string(scale));

    // Without the folding (source norms), the same linears compute something else.
    model::ModelWeights unfolded = exportedWeights(exported, config);
    auto plain = model::Transformer::fromCheckpoint(source);
    for (int i = 0; i < config.numLayers; ++i) {
        const auto& src = plain.layerWeights(i);
        unfolded.layers[static_cast<std::size_t>(i)].inputNorm = src.inputNorm;
        unfolded.layers[static_cast<std::size_t>(i)].postAttentionNorm = src.postAttentionNorm;
    }
    model::Transformer wrong(config, std::make_shared<model::ModelWeights>(std::move(unfolded)));
    const float unfoldedDiff = (wrong.forward(tokens) - want).cwiseAbs().maxCoeff();
    EXPECT_GT(unfoldedDiff, 5.0f * diff);
    RecordProperty("max_logit_difference_unfolded", std::to_string(unfoldedDiff));
    std::filesystem::remove_all(dir);
}

}  // namespace

namespace {

// The demo quantized with a method per linear: `base` everywhere, `other` on layer 1's gate/up, layer 0's down_proj dense.
MethodResult mixedDemo(const std::string& base, const std::string& other) {
    MixedMethods mix;
    mix.name = "mixed";
    mix.layers.resize(2);
    for (int l = 0; l < 2; ++l)
        for (auto module : model::LayerWeights::kLinearModules)
            mix.layers[std::size_t(l)].emplace(module, parseMethod(base, 64));
    mix.layers[1].at("mlp.gate_proj") = mix.layers[1].at("mlp.up_proj") = parseMethod(other, 64);
    mix.layers[0].erase("mlp.down_proj");
    JobPlan plan;
    plan.checkpoint = kDemo;
    plan.mixed = {mix};
    plan.calibration = demoTokens(8, 64);
    auto result = Job(std::move(plan)).run({}, CancelToken{});
    if (!result.methods.front().error.empty()) throw std::runtime_error(result.methods.front().error);
    return std::move(result.methods.front());
}

std::string exportRefusal(const MethodResult& result, const std::string& format) {
    const auto dir = freshPath("refused_mix");
    try {
        exportCheckpoint({kDemo, dir, format, false, {}}, result, {}, CancelToken{});
    } catch (const Error& e) {
        EXPECT_FALSE(std::filesystem::exists(dir));
        return e.what();
    }
    std::filesystem::remove_all(dir);
    return "";
}

}  // namespace

// GPTQModel's `dynamic` (FORMATS.md): the base scheme is the one most weights use, every other linear a
// "+:" override matched with re.match, keyed on the linear and on vLLM's fused qkv_proj / gate_up_proj;
// a decoder linear left dense is a "-:" key. Our reader applies the overrides: bit for bit.
TEST(Exporter, AMixOfGptqBitsIsGptqWithDynamicOverrides) {
    const auto result = mixedDemo("gptq4-sym", "gptq8-sym");
    EXPECT_TRUE(result.mixed);
    EXPECT_EQ(result.label(), "mixed");
    const auto dir = freshPath("gptq_dynamic");
    exportCheckpoint({kDemo, dir, "gptq", false, {}}, result, {}, CancelToken{});
    expectExported(dir, result, [](const quant::QuantizedLinear& q) { return withF16Scales(q); });
    const auto config = readJson(dir / "config.json")["quantization_config"];
    EXPECT_EQ(config["bits"], 4);
    const nlohmann::json expected = {{"+:^model\\.layers\\.1\\.mlp\\.(gate_proj|gate_up_proj)$",
                                      {{"bits", 8}, {"group_size", 64}, {"desc_act", false}, {"sym", true}}},
                                     {"+:^model\\.layers\\.1\\.mlp\\.(up_proj|gate_up_proj)$",
                                      {{"bits", 8}, {"group_size", 64}, {"desc_act", false}, {"sym", true}}},
                                     {"-:^model\\.layers\\.0\\.mlp\\.down_proj$", nlohmann::json::object()}};
    EXPECT_EQ(config["dynamic"], expected) << config.dump(1);
    EXPECT_EQ(readJson(dir / "quantize_config.json")["dynamic"], expected);
    const auto exported = io::Checkpoint::open(dir);
    const formats::LinearReader reader(exported);
    EXPECT_EQ(reader.decode("model.layers.1.mlp.up_proj").parts.bits, 8);
    EXPECT_EQ(reader.decode("model.layers.1.mlp.down_proj").parts.bits, 4);
    EXPECT_FALSE(reader.decode("model.layers.0.mlp.down_proj").quantized);
    std::filesystem::remove_all(dir);
}

TEST(Exporter, AMixReadsBackFromCtMixedBitForBit) {
    const auto result = mixedDemo("gptq4-sym", "nvfp4");
    const auto dir = freshPath("ct_mixed_mix");
    exportCheckpoint({kDemo, dir, "ct-mixed", false, {}}, result, {}, CancelToken{});
    // Bit for bit in the parts (NVFP4's weight is decoded with the consumers' divisor, test_ct_nvfp4_encoder).
    const auto exported = io::Checkpoint::open(dir);
    const formats::LinearReader reader(exported);
    for (std::size_t i = 0; i < result.layers.size(); ++i)
        for (const auto& [module, q] : result.layers[i]) {
            const auto d = reader.decode(prefixOf(i, module));
            EXPECT_EQ(d.parts.codes, q->codes) << prefixOf(i, module);
            EXPECT_TRUE(sameBits(d.parts.dequantize(), q->dequantize())) << prefixOf(i, module);
        }
    EXPECT_FALSE(reader.decode("model.layers.0.mlp.down_proj").quantized);
    const auto config = readJson(dir / "config.json")["quantization_config"];
    EXPECT_EQ(config["format"], "mixed-precision");
    EXPECT_EQ(config["config_groups"]["group_1"]["targets"],
              nlohmann::json({"model.layers.1.mlp.gate_proj", "model.layers.1.mlp.up_proj"}));
    EXPECT_NE(config["ignore"].dump().find("model.layers.0.mlp.down_proj"), std::string::npos)
        << config["ignore"].dump();
    std::filesystem::remove_all(dir);
}

TEST(Exporter, AMixAFormatCannotExpressIsRefusedNamingTheModule) {
    // GPTQ holds integer grids only.
    const auto nvfp4 = mixedDemo("gptq4-sym", "nvfp4");
    EXPECT_NE(exportRefusal(nvfp4, "gptq").find("model.layers.1.mlp.gate_proj"), std::string::npos)
        << exportRefusal(nvfp4, "gptq");
    // Shards of one fused linear quantized differently: `dynamic` keyed for vLLM's gate_up_proj cannot say it.
    MethodResult split = mixedDemo("gptq4-sym", "gptq8-sym");
    split.layers[1].at("mlp.up_proj") = split.layers[0].at("mlp.up_proj");  // 4-bit beside an 8-bit gate_proj
    const std::string why = exportRefusal(split, "gptq");
    EXPECT_NE(why.find("model.layers.1.mlp.up_proj"), std::string::npos) << why;
    EXPECT_NE(why.find("gate_up_proj"), std::string::npos) << why;
}

// pipeline::exportRefusal asks beforehand what exportCheckpoint refuses (the GUI's Export panel offers
// a mix every layout and says why one cannot hold it): the same line for a linear the layout cannot
// store and for what only its config states for the whole (a fused pair split in two schemes), and
// nothing for a mix the layout holds.
TEST(Exporter, AMixsRefusalIsKnownBeforeExporting) {
    const auto nvfp4 = mixedDemo("gptq4-sym", "nvfp4");
    MethodResult split = mixedDemo("gptq4-sym", "gptq8-sym");
    EXPECT_EQ(exportRefusal(split, formats::encoderNamed("gptq")), "");
    EXPECT_EQ(exportRefusal(nvfp4, formats::encoderNamed("ct-mixed")), "");
    split.layers[1].at("mlp.up_proj") = split.layers[0].at("mlp.up_proj");
    for (const auto& [result, format] :
         {std::pair<const MethodResult*, const char*>{&nvfp4, "gptq"}, {&split, "gptq"}, {&nvfp4, "fp8"}}) {
        const std::string thrown = exportRefusal(*result, std::string(format));
        ASSERT_FALSE(thrown.empty()) << format;
        const std::string asked = exportRefusal(*result, formats::encoderNamed(format));
        EXPECT_TRUE(asked == thrown || asked == "cannot export as " + std::string(format) + ": " + thrown)
            << asked << "\n"
            << thrown;
        EXPECT_EQ(asked.find('\n'), std::string::npos);
    }
}
