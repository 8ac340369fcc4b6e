// DeepSeek-V3 and Kimi-K2 end to end on the tiny checkpoints (scripts/make-tiny-moe.py's deepseek-v3-tiny and
// kimi-k2-tiny): the Job quantizes the latent attention's linears (q_a / q_b or q_proj, kv_a_proj_with_mqa,
// kv_b_proj, o_proj), every expert, the shared expert and the dense first layer, and not the router or its
// correction bias; the exports (GPTQ, compressed-tensors FP8 / NVFP4, AWQ folded into the latents' norms)
// compute what the Job measured; the next-token-prediction layer is copied byte for byte; a GGUF method
// writes kv_b_proj as llama.cpp's attn_k_b / attn_v_b with the Job's values; a deepseek2 GGUF reads back as the
// same model (kv_b_proj joined again); the estimate for DeepSeek-V3's and Kimi-K2's own shapes.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <span>
#include <string>
#include <tuple>

#include <unistd.h>

#include "qs/error.h"
#include "qs/io/checkpoint.h"
#include "qs/io/dtype.h"
#include "qs/io/gguf_file.h"
#include "qs/io/gguf_writer.h"
#include "qs/model/model_config.h"
#include "qs/model/model_config_fields.h"
#include "qs/model/transformer.h"
#include "qs/pipeline/checkpoint_eval.h"
#include "qs/pipeline/decoded_weights.h"
#include "qs/pipeline/exporter.h"
#include "qs/pipeline/gguf_export.h"
#include "qs/pipeline/gguf_result_export.h"
#include "qs/pipeline/model_checkpoint.h"
#include "qs/pipeline/resource_estimate.h"

#include "tiny_checkpoint_job.h"

using namespace qs;
using namespace qs::pipeline;

namespace {

namespace fs = std::filesystem;

const fs::path kDeepseek = fs::path(QS_TEST_DATA_DIR) / "moe" / "deepseek-v3-tiny";
const fs::path kKimi = fs::path(QS_TEST_DATA_DIR) / "moe" / "kimi-k2-tiny";

fs::path scratch(const std::string& name) {
    const fs::path dir = fs::temp_directory_path() / ("qs_deepseek_" + name + "_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    return dir;
}

bool quantized(const MethodResult& result, int layer, const std::string& module) {
    return result.layers.at(static_cast<std::size_t>(layer)).contains(module);
}

// `q` with its scales as an F16 export stores them (GPTQ's and AWQ's layouts: docs/limits.md).
std::shared_ptr<const quant::QuantizedLinear> withF16Scales(const quant::QuantizedLinear& q) {
    auto rounded = std::make_shared<quant::QuantizedLinear>(q);
    rounded->scales = q.scales.unaryExpr([](float v) { return io::f16ToF32(io::f32ToF16(v)); });
    return rounded;
}

// The export of `result` read back through the format readers runs as the Job's model of it, with the scales
// in the precision the layout stores (`f16Scales`): the tiny model's routing and sharp attention turn the
// rounding of GPTQ's scales to F16 into a flipped expert here and there.
void expectExportComputesWhatTheJobMeasured(const fs::path& source, const MethodResult& result, const fs::path& dir,
                                            bool f16Scales = false) {
    const model::ModelConfig config = model::ModelConfig::fromCheckpoint(io::Checkpoint::open(source));
    const io::Checkpoint exported = io::Checkpoint::open(dir);
    model::Transformer readBack(config, std::make_shared<DecodedWeights>(exported, config));
    const auto sequence = test::tinyTokens(source, 1, 48).front();
    MethodResult stored = result;
    if (f16Scales)
        for (auto& layer : stored.layers)
            for (auto& [module, q] : layer) q = withF16Scales(*q);
    const MatrixF want = test::jobModel(source, stored).forward(sequence);
    const MatrixF got = readBack.forward(sequence);
    EXPECT_LT((got - want).cwiseAbs().maxCoeff(), 2e-3f * want.cwiseAbs().maxCoeff());
}

}  // namespace

TEST(DeepseekV3Config, ReadsTheLatentAttentionTheRouterAndTheNextTokenLayer) {
    const model::ModelConfig c = model::ModelConfig::fromCheckpoint(io::Checkpoint::open(kDeepseek));
    EXPECT_EQ(c.modelType, "deepseek_v3");
    EXPECT_EQ(c.attentionLayout(), model::AttentionLayout::LatentLowRankQuery);
    EXPECT_EQ(c.mla.qLoraRank, 32);
    EXPECT_EQ(c.mla.kvLoraRank, 32);
    EXPECT_EQ(c.headDim, 24);
    EXPECT_EQ(c.valueHeadDim(), 16);
    EXPECT_EQ(c.numLayers, 3);  // model.layers.3, the next-token-prediction layer, is not run
    EXPECT_EQ(c.moe.numGroups, 4);
    EXPECT_EQ(c.moe.topkGroups, 2);
    EXPECT_EQ(c.moe.sharedExpertIntermediateSize, 16);
    EXPECT_FALSE(c.isMoeLayer(0));
    EXPECT_TRUE(c.isMoeLayer(1));
    EXPECT_EQ(model::ModelConfig::fromCheckpoint(io::Checkpoint::open(kKimi)).attentionLayout(),
              model::AttentionLayout::Latent);
}

TEST(DeepseekV3Export, TheJobQuantizesTheLatentAttentionAndTheExportsComputeWhatItMeasured) {
    const io::Checkpoint source = io::Checkpoint::open(kDeepseek);
    for (const auto& [method, format] :
         {std::pair{"gptq4", "gptq_v2"}, std::pair{"fp8", "fp8"}, std::pair{"nvfp4", "ct-nvfp4"}}) {
        SCOPED_TRACE(method);
        const MethodResult result = test::quantizeTiny(kDeepseek, method);
        for (const std::string module : {"self_attn.q_a_proj", "self_attn.q_b_proj", "self_attn.kv_a_proj_with_mqa",
                                         "self_attn.kv_b_proj", "self_attn.o_proj"})
            EXPECT_TRUE(quantized(result, 1, module)) << module;
        EXPECT_TRUE(quantized(result, 0, "mlp.down_proj"));
        EXPECT_TRUE(quantized(result, 1, "mlp.experts.7.up_proj"));
        EXPECT_TRUE(quantized(result, 2, "mlp.shared_experts.gate_proj"));
        EXPECT_FALSE(quantized(result, 1, "mlp.gate"));
        EXPECT_FALSE(quantized(result, 1, "self_attn.k_proj"));
        const fs::path dir = scratch(method);
        exportCheckpoint({kDeepseek, dir, format, false, {}}, result, {}, CancelToken{});
        const io::Checkpoint exported = io::Checkpoint::open(dir);
        // The router, its correction bias, the latents' norms and the MTP layer (model.layers.3) as they are.
        for (const std::string name :
             {"model.layers.1.mlp.gate.weight", "model.layers.2.mlp.gate.e_score_correction_bias",
              "model.layers.1.self_attn.kv_a_layernorm.weight", "model.layers.3.eh_proj.weight",
              "model.layers.3.self_attn.kv_b_proj.weight", "model.layers.3.mlp.experts.5.down_proj.weight",
              "model.layers.3.shared_head.head.weight", "model.layers.3.embed_tokens.weight"})
            EXPECT_TRUE(test::sameBytes(exported.tensor(name), source.tensor(name))) << name;
        expectExportComputesWhatTheJobMeasured(kDeepseek, result, dir, format == std::string("gptq_v2"));
        fs::remove_all(dir);
    }
}

// Kimi-K2's model_type with q_proj: the same path.
TEST(DeepseekV3Export, KimiK2WithQProjQuantizesAndExports) {
    const MethodResult result = test::quantizeTiny(kKimi, "gptq4");
    EXPECT_TRUE(quantized(result, 2, "self_attn.q_proj"));
    EXPECT_FALSE(quantized(result, 2, "self_attn.q_a_proj"));
    const fs::path dir = scratch("kimi");
    exportCheckpoint({kKimi, dir, "gptq_v2", false, {}}, result, {}, CancelToken{});
    expectExportComputesWhatTheJobMeasured(kKimi, result, dir, true);
    fs::remove_all(dir);
}

// AWQ scales q_a / kv_a into input_layernorm, q_b into q_a_layernorm and kv_b into kv_a_layernorm; o_proj
// keeps α = 0. The folded export computes what the Job measured.
TEST(DeepseekV3Export, AwqFoldsIntoTheLatentsNorms) {
    const MethodResult result = test::quantizeTiny(kDeepseek, "awq4");
    const auto& layer = result.layers.at(1);
    const auto scaled = [&](const std::string& module) {
        const auto& s = layer.at(module)->inputScales;
        return std::any_of(s.begin(), s.end(), [](float v) { return v != 1.0f; });
    };
    EXPECT_TRUE(scaled("self_attn.q_b_proj"));
    EXPECT_TRUE(scaled("self_attn.kv_b_proj"));
    EXPECT_FALSE(scaled("self_attn.o_proj"));
    const fs::path dir = scratch("awq");
    exportCheckpoint({kDeepseek, dir, "", false, {}}, result, {}, CancelToken{});
    const io::Checkpoint source = io::Checkpoint::open(kDeepseek), exported = io::Checkpoint::open(dir);
    EXPECT_FALSE(test::sameBytes(exported.tensor("model.layers.1.self_attn.q_a_layernorm.weight"),
                                 source.tensor("model.layers.1.self_attn.q_a_layernorm.weight")));
    expectExportComputesWhatTheJobMeasured(kDeepseek, result, dir, true);
    fs::remove_all(dir);
}

// q4_k_m: kv_b_proj in F16, written as attn_k_b (each head's key rows transposed) and attn_v_b holding the
// very values the Job measured; the other linears' blocks as the Job encoded them.
TEST(DeepseekV3Export, GgufMethodWritesKvBAsLlamaCppsSplitWithTheJobsValues) {
    const MethodResult result = test::quantizeTiny(kDeepseek, "q4_k_m");
    const quant::QuantizedLinear& kvB = *result.layers.at(1).at("self_attn.kv_b_proj");
    ASSERT_EQ(kvB.ggmlType, io::GgmlType::F16);
    const fs::path dir = scratch("q4_k_m");
    fs::create_directories(dir);
    const fs::path file =
        writeGgufResult(io::Checkpoint::open(kDeepseek), result, dir / "tiny.gguf", {}, {}, CancelToken{});
    const io::GgufFile gguf = io::GgufFile::open(file);
    const MatrixF values = kvB.dequantize();  // [4 heads * (16 + 16), 32]
    const io::TensorInfo& kB = *gguf.find("blk.1.attn_k_b.weight");
    const io::TensorInfo& vB = *gguf.find("blk.1.attn_v_b.weight");
    ASSERT_EQ(kB.ggmlType, io::GgmlType::F16);
    ASSERT_EQ(kB.shape, (std::vector<std::int64_t>{4, 32, 16}));
    ASSERT_EQ(vB.shape, (std::vector<std::int64_t>{4, 16, 32}));
    const std::vector<float> k = gguf.view(kB).toF32(), v = gguf.view(vB).toF32();
    for (int h = 0; h < 4; ++h)
        for (int j = 0; j < 32; ++j)
            for (int i = 0; i < 16; ++i) {
                EXPECT_EQ(k[std::size_t((h * 32 + j) * 16 + i)], values(h * 32 + i, j));
                EXPECT_EQ(v[std::size_t((h * 16 + i) * 32 + j)], values(h * 32 + 16 + i, j));
            }
    const quant::QuantizedLinear& qB = *result.layers.at(1).at("self_attn.q_b_proj");
    const auto stored = gguf.view(*gguf.find("blk.1.attn_q_b.weight")).bytes();
    ASSERT_EQ(stored.size(), qB.blocks.size());
    EXPECT_EQ(std::memcmp(stored.data(), qB.blocks.data(), stored.size()), 0);
    fs::remove_all(dir);
}

// What llama.cpp's deepseek2 would run as another model is refused before a byte is written: Kimi-K2's own
// YaRN betas (1 and 1; deepseek2 fixes 32 and 1), an attention factor other than 1 (mscale != mscale_all_dim),
// attention biases, rotate_half's layout.
TEST(DeepseekV3Export, TheGgufExportRefusesWhatDeepseek2WouldRunAsAnotherModel) {
    const nlohmann::json original = io::Checkpoint::open(kDeepseek).config();
    const auto refused = [&](const std::function<void(nlohmann::json&)>& edit, const std::string& why) {
        const fs::path dir = scratch("refused");
        fs::create_directories(dir);
        for (const char* file : {"model.safetensors", "tokenizer.json", "tokenizer_config.json"})
            fs::create_symlink(fs::absolute(kDeepseek / file), dir / file);
        nlohmann::json config = original;
        edit(config);
        std::ofstream(dir / "config.json") << config.dump();
        try {
            (void)writeGguf(io::Checkpoint::open(dir), dir / "out.gguf", {}, {}, CancelToken{});
            ADD_FAILURE() << why << " was written";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
        }
        EXPECT_FALSE(fs::exists(dir / "out.gguf"));
        fs::remove_all(dir);
    };
    refused([](nlohmann::json& c) { c["rope_scaling"]["beta_fast"] = 1.0, c["rope_scaling"]["beta_slow"] = 1.0; },
            "beta_fast 1");
    refused([](nlohmann::json& c) { c["rope_scaling"]["mscale"] = 0.707; }, "attention factor");
    refused([](nlohmann::json& c) { c["rope_scaling"].erase("mscale_all_dim"); }, "mscale_all_dim 0");
    refused([](nlohmann::json& c) { c["attention_bias"] = true; }, "attention_bias");
    refused([](nlohmann::json& c) { c["rope_interleave"] = false; }, "rope_interleave");
}

// A deepseek2 GGUF written with `chooser` from `source`, in a scratch folder of its own.
fs::path deepseek2Gguf(const fs::path& source, const std::string& name, GgufTypeChooser chooser) {
    const fs::path dir = scratch(name);
    fs::create_directories(dir);
    GgufExportOptions options;
    options.chooser = std::move(chooser);
    return writeGguf(io::Checkpoint::open(source), dir / (name + ".gguf"), options, {}, CancelToken{});
}

// Our F32 deepseek2 GGUF reads back as the same model: kv_b_proj joined from attn_k_b and attn_v_b byte for byte,
// the config from the metadata (q_lora_rank, the heads' widths, YaRN's mscale, the router), the same logits exactly;
// with q_a / q_b (deepseek-v3-tiny) and q_proj (kimi-k2-tiny, which reads back as DeepSeek-V3: the same model).
TEST(DeepseekV3Gguf, AnF32GgufReadsBackAsTheSameModelBitForBit) {
    for (const fs::path& source : {kDeepseek, kKimi}) {
        SCOPED_TRACE(source.filename().string());
        const fs::path gguf = deepseek2Gguf(source, "f32", uniformGgufType(io::GgmlType::F32));
        const io::Checkpoint original = io::Checkpoint::open(source), back = io::Checkpoint::open(gguf);
        const model::ModelConfig want = model::ModelConfig::fromCheckpoint(original);
        const model::ModelConfig read = model::ModelConfig::fromCheckpoint(back);
        EXPECT_EQ(read.modelType, "deepseek_v3");
        EXPECT_EQ(model::forwardPassDifferences(want, read), std::vector<std::string>{});
        EXPECT_EQ(back.find("blk.1.attn_k_b.weight"), nullptr);
        EXPECT_EQ(back.find("blk.1.attn_v_b.weight"), nullptr);
        for (int layer = 0; layer < want.numLayers; ++layer) {
            const std::string kvB = "model.layers." + std::to_string(layer) + ".self_attn.kv_b_proj.weight";
            ASSERT_NE(back.find(kvB), nullptr) << kvB;
            EXPECT_TRUE(test::sameBytes(back.tensor(kvB), original.tensor(kvB))) << kvB;
        }
        const auto sequence = test::tinyTokens(source, 1, 48).front();
        const MatrixF logits = model::Transformer::fromCheckpoint(original).forward(sequence);
        EXPECT_EQ((model::Transformer::fromCheckpoint(back).forward(sequence) - logits).cwiseAbs().maxCoeff(), 0.0f);
        fs::remove_all(gguf.parent_path());
    }
}

// F16 halves move back into kv_b_proj as they are; a block type (attn_v_b in Q8_0) or two types are decoded, and
// kv_b_proj is the F32 of what the file holds.
TEST(DeepseekV3Gguf, KvBIsRebuiltFromF16BytesAndFromDecodedBlocks) {
    const io::Checkpoint original = io::Checkpoint::open(kDeepseek);
    const std::string kvB = "model.layers.1.self_attn.kv_b_proj.weight";
    const std::vector<float> source = original.tensor(kvB).toF32();
    {
        const fs::path gguf = deepseek2Gguf(kDeepseek, "f16", uniformGgufType(io::GgmlType::F16));
        const io::Checkpoint back = io::Checkpoint::open(gguf);
        const io::TensorView joined = back.tensor(kvB);
        EXPECT_EQ(joined.dtype(), io::DType::F16);
        EXPECT_EQ(joined.shape(), (std::vector<std::int64_t>{4 * (16 + 16), 32}));
        const std::vector<float> values = joined.toF32();
        ASSERT_EQ(values.size(), source.size());
        for (std::size_t i = 0; i < values.size(); ++i)
            ASSERT_EQ(values[i], io::f16ToF32(io::f32ToF16(source[i]))) << i;
        fs::remove_all(gguf.parent_path());
    }
    const fs::path gguf = deepseek2Gguf(kDeepseek, "q8_0", [](const GgufTensorChoice& c) {
        return c.ggufName.ends_with("attn_v_b.weight") ? io::GgmlType::Q8_0 : io::GgmlType::F16;
    });
    const io::GgufFile file = io::GgufFile::open(gguf);
    ASSERT_EQ(file.find("blk.1.attn_v_b.weight")->ggmlType, io::GgmlType::Q8_0);
    const std::vector<float> k = file.view(*file.find("blk.1.attn_k_b.weight")).toF32();
    const std::vector<float> v = file.view(*file.find("blk.1.attn_v_b.weight")).toF32();
    const io::Checkpoint back = io::Checkpoint::open(gguf);
    const io::TensorView joined = back.tensor(kvB);
    EXPECT_EQ(joined.dtype(), io::DType::F32);
    const std::vector<float> values = joined.toF32();
    ASSERT_EQ(values.size(), source.size());
    for (int h = 0; h < 4; ++h)
        for (int j = 0; j < 32; ++j)
            for (int i = 0; i < 16; ++i) {
                EXPECT_EQ(values[std::size_t((h * 32 + i) * 32 + j)], k[std::size_t((h * 32 + j) * 16 + i)]);
                EXPECT_EQ(values[std::size_t((h * 32 + 16 + i) * 32 + j)], v[std::size_t((h * 16 + i) * 32 + j)]);
            }
    // The model runs from it.
    const auto sequence = test::tinyTokens(kDeepseek, 1, 16).front();
    EXPECT_TRUE(model::Transformer::fromCheckpoint(back).forward(sequence).allFinite());
    fs::remove_all(gguf.parent_path());
}

// A GGUF method's file (kv_b_proj in F16, the other linears and the embeddings in the mix's blocks) reads back as
// the model the Job measured: evaluated as any downloaded GGUF, it gives the Job's KL (q4_k_m of deepseek-v3-tiny,
// q8_0 of kimi-k2-tiny).
TEST(DeepseekV3Gguf, AGgufMethodsFileEvaluatesToTheKlTheJobMeasured) {
    for (const auto& [source, method] : {std::pair{kDeepseek, "q4_k_m"}, std::pair{kKimi, "q8_0"}}) {
        SCOPED_TRACE(method);
        JobPlan plan;
        plan.checkpoint = source;
        plan.methods = {parseMethod(method, 16)};
        plan.calibration = test::tinyTokens(source, 8, 64);
        plan.evaluation = test::tinyTokens(source, 2, 64);
        const JobResult job = Job(plan).run({}, CancelToken{});
        const MethodResult& result = job.methods.front();
        ASSERT_TRUE(result.error.empty()) << result.error;
        const fs::path dir = scratch(method);
        fs::create_directories(dir);
        const fs::path file =
            writeGgufResult(io::Checkpoint::open(source), result, dir / "tiny.gguf", {}, {}, CancelToken{});
        const io::Checkpoint back = io::Checkpoint::open(file);
        EXPECT_EQ(back.quantizationConfig().value("quant_method", ""), "gguf");
        EXPECT_EQ(model::forwardPassDifferences(model::ModelConfig::fromCheckpoint(io::Checkpoint::open(source)),
                                                model::ModelConfig::fromCheckpoint(back)),
                  std::vector<std::string>{});
        const CheckpointEvalResult e = evaluateCheckpoints({source, file, plan.evaluation}, {}, CancelToken{});
        EXPECT_GT(result.kl.meanKld.value, 0.0);
        EXPECT_EQ(e.kl.meanKld.value, result.kl.meanKld.value);
        fs::remove_all(dir);
    }
}

// A file as an older llama.cpp converter wrote it (kv_b_proj whole, as attn_kv_b; key_length / value_length the
// heads' widths, no *_mla keys) reads back too: here, ours with the split undone in the metadata and the tensors.
TEST(DeepseekV3Gguf, AnOlderConvertersWholeAttnKvBReadsBack) {
    const fs::path split = deepseek2Gguf(kDeepseek, "older", uniformGgufType(io::GgmlType::F32));
    const io::Checkpoint original = io::Checkpoint::open(kDeepseek);
    const model::ModelConfig config = model::ModelConfig::fromCheckpoint(original);
    const io::GgufFile file = io::GgufFile::open(split);
    const fs::path older = split.parent_path() / "older" / "older.gguf";
    fs::create_directories(older.parent_path());
    io::GgufWriter writer(older);
    for (const auto& [key, value] : file.metadata().entries()) {
        if (key.ends_with("_mla")) continue;
        if (key == "deepseek2.attention.key_length")
            writer.set(key, io::GgufValue::u32(16 + 8));
        else if (key == "deepseek2.attention.value_length")
            writer.set(key, io::GgufValue::u32(16));
        else if (key == "deepseek2.attention.head_count_kv")
            writer.set(key, io::GgufValue::u32(4));
        else
            writer.set(key, value);
    }
    for (const io::TensorInfo& t : file.tensors()) {
        if (t.name.ends_with("attn_v_b.weight")) continue;
        if (t.name.ends_with("attn_k_b.weight")) {
            const std::string layer = t.name.substr(4, t.name.find('.', 4) - 4);
            const io::TensorView kvB = original.tensor("model.layers." + layer + ".self_attn.kv_b_proj.weight");
            writer.addTensor("blk." + layer + ".attn_kv_b.weight", io::GgmlType::F32, kvB.shape(), kvB.bytes());
            continue;
        }
        writer.addTensor(t.name, *t.ggmlType, t.shape, file.view(t).bytes());
    }
    writer.finish();
    const io::Checkpoint back = io::Checkpoint::open(older);
    EXPECT_EQ(model::forwardPassDifferences(config, model::ModelConfig::fromCheckpoint(back)),
              std::vector<std::string>{});
    const auto sequence = test::tinyTokens(kDeepseek, 1, 48).front();
    const MatrixF logits = model::Transformer::fromCheckpoint(original).forward(sequence);
    EXPECT_EQ((model::Transformer::fromCheckpoint(back).forward(sequence) - logits).cwiseAbs().maxCoeff(), 0.0f);
    fs::remove_all(split.parent_path());
}

// A converter that keeps the next-token-prediction layer (llama.cpp's nextn_predict_layers, counted in block_count
// after the decoder's, with its nextn.* tensors): it is the checkpoint's trailing layer, stored and not run.
TEST(DeepseekV3Gguf, ANextTokenPredictionLayerInBlockCountIsNotRun) {
    const fs::path plain = deepseek2Gguf(kDeepseek, "nextn", uniformGgufType(io::GgmlType::F32));
    const io::GgufFile file = io::GgufFile::open(plain);
    const fs::path withMtp = plain.parent_path() / "mtp" / "mtp.gguf";
    fs::create_directories(withMtp.parent_path());
    io::GgufWriter writer(withMtp);
    for (const auto& [key, value] : file.metadata().entries())
        writer.set(key, key == "deepseek2.block_count" ? io::GgufValue::u32(4) : value);
    writer.set("deepseek2.nextn_predict_layers", io::GgufValue::u32(1));
    for (const io::TensorInfo& t : file.tensors()) {
        writer.addTensor(t.name, *t.ggmlType, t.shape, file.view(t).bytes());
        if (t.name.starts_with("blk.2."))
            writer.addTensor("blk.3." + t.name.substr(6), *t.ggmlType, t.shape, file.view(t).bytes());
    }
    const std::vector<float> eh(32 * 64, 0.5f);
    writer.addTensor("blk.3.nextn.eh_proj.weight", io::GgmlType::F32, {32, 64}, std::as_bytes(std::span(eh)));
    writer.finish();
    const io::Checkpoint original = io::Checkpoint::open(kDeepseek), back = openModelCheckpoint(withMtp, false);
    const model::ModelConfig read = model::ModelConfig::fromCheckpoint(back);
    EXPECT_EQ(read.numLayers, 3);
    EXPECT_EQ(model::forwardPassDifferences(model::ModelConfig::fromCheckpoint(original), read),
              std::vector<std::string>{});
    const auto sequence = test::tinyTokens(kDeepseek, 1, 48).front();
    const MatrixF logits = model::Transformer::fromCheckpoint(original).forward(sequence);
    EXPECT_EQ((model::Transformer::fromCheckpoint(back).forward(sequence) - logits).cwiseAbs().maxCoeff(), 0.0f);
    fs::remove_all(plain.parent_path());
}

namespace {

// DeepSeek-V3's config.json as its Hugging Face repository ships it (671B; the FP8 quantization_config left
// out), and Kimi-K2-Instruct's differences (1T: 384 experts, 64 heads, one expert group, one dense layer).
nlohmann::json deepseekV3Config() {
    return {{"model_type", "deepseek_v3"},
            {"architectures", {"DeepseekV3ForCausalLM"}},
            {"hidden_size", 7168},
            {"intermediate_size", 18432},
            {"moe_intermediate_size", 2048},
            {"num_hidden_layers", 61},
            {"num_attention_heads", 128},
            {"num_key_value_heads", 128},
            {"n_routed_experts", 256},
            {"n_shared_experts", 1},
            {"num_experts_per_tok", 8},
            {"n_group", 8},
            {"topk_group", 4},
            {"routed_scaling_factor", 2.5},
            {"norm_topk_prob", true},
            {"first_k_dense_replace", 3},
            {"num_nextn_predict_layers", 1},
            {"q_lora_rank", 1536},
            {"kv_lora_rank", 512},
            {"qk_nope_head_dim", 128},
            {"qk_rope_head_dim", 64},
            {"v_head_dim", 128},
            {"topk_method", "noaux_tc"},
            {"scoring_func", "sigmoid"},
            {"max_position_embeddings", 163840},
            {"rms_norm_eps", 1e-6},
            {"rope_theta", 10000},
            {"rope_scaling",
             {{"beta_fast", 32},
              {"beta_slow", 1},
              {"factor", 40},
              {"mscale", 1.0},
              {"mscale_all_dim", 1.0},
              {"original_max_position_embeddings", 4096},
              {"type", "yarn"}}},
            {"vocab_size", 129280},
            {"torch_dtype", "bfloat16"}};
}

nlohmann::json kimiK2Config() {
    nlohmann::json j = deepseekV3Config();
    j.update({{"model_type", "kimi_k2"},
              {"num_attention_heads", 64},
              {"num_key_value_heads", 64},
              {"n_routed_experts", 384},
              {"n_group", 1},
              {"topk_group", 1},
              {"first_k_dense_replace", 1},
              {"num_nextn_predict_layers", 0},
              {"routed_scaling_factor", 2.827},
              {"rope_theta", 50000.0},
              {"max_position_embeddings", 131072},
              {"vocab_size", 163840}});
    j["rope_scaling"].update({{"beta_fast", 1.0}, {"beta_slow", 1.0}, {"factor", 32.0}});
    return j;
}

// A MoE layer's weights counted from the published shapes: the latent attention (q_a, q_b, kv_a, kv_b, o),
// every expert, the shared expert and the router.
double moeLayerParameters(double heads, double experts) {
    const double h = 7168, qLora = 1536, kvLora = 512, nope = 128, rope = 64, v = 128, width = 2048;
    const double attention =
        qLora * h + heads * (nope + rope) * qLora + (kvLora + rope) * h + heads * (nope + v) * kvLora + h * heads * v;
    return attention + experts * 3 * h * width + 3 * h * width + experts * h;
}

}  // namespace

// What one machine needs for the largest releases, GPTQ with a work folder (results on disk) and 128
// windows of 2048 calibration tokens: the Job holds one decoder layer at a time, so the estimate is a
// MoE layer's f32 weights (46 GB for DeepSeek-V3, 68 GB for Kimi-K2), its statistics and GPTQ's working set,
// the hidden states between layers, and the finished layers' scales and zeros, which stay in memory with
// the codes on disk (f32 per group of 128: 1/16 byte per weight, 44 GB for DeepSeek-V3's 61 layers).
TEST(DeepseekV3Estimate, OneMachineNeedsADecoderLayerAtATime) {
    for (const auto& [name, json, heads, experts] : {std::tuple{"DeepSeek-V3", deepseekV3Config(), 128.0, 256.0},
                                                     std::tuple{"Kimi-K2", kimiK2Config(), 64.0, 384.0}}) {
        SCOPED_TRACE(name);
        WorkloadShape shape;
        shape.config = model::ModelConfig::fromJson(json);
        shape.methods = 1;
        shape.sequentialMethods = 1;
        shape.resultsOnDisk = true;
        shape.keptBytesPerWeight = 8.0 / 128;  // int4 with group 128, codes in the work folder
        shape.calibrationTokens = 128 * 2048;
        shape.moeAllExperts = true;
        const ResourceEstimate e = estimateResources(shape);
        const double layer = moeLayerParameters(heads, experts) * sizeof(float);
        EXPECT_NEAR(double(e.layerWeightBytes), layer, 1.0);
        const double hidden = 128.0 * 2048 * 7168 * sizeof(float);           // the calibration stream between layers
        const double scales = 61 * moeLayerParameters(heads, experts) / 16;  // every layer counted as a MoE one
        EXPECT_GT(double(e.peakBytes), layer + hidden + scales);
        // The statistics (256 or 384 experts' own down_proj inputs) and GPTQ add less than half a layer.
        EXPECT_LT(double(e.peakBytes), 1.5 * layer + hidden + scales);
        std::printf("%s, gptq4 with a work folder, 128 x 2048 calibration tokens: %s\n", name, e.describe().c_str());
        // A GGUF method's blocks stay in the work folder whole: nothing of the finished layers in memory.
        WorkloadShape gguf = shape;
        gguf.sequentialMethods = 0;
        gguf.calibrationTokens = 0;
        gguf.keptBytesPerWeight = 0.0;
        const ResourceEstimate q4 = estimateResources(gguf);
        EXPECT_GT(double(q4.peakBytes), layer);
        EXPECT_LT(double(q4.peakBytes), 1.5 * layer);
        std::printf("%s, q4_k_m with a work folder: %s\n", name, q4.describe().c_str());
    }
}
