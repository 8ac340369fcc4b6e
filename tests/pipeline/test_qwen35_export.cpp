// Qwen3.5 end to end on the tiny checkpoints (scripts/make-tiny-qwen35.py): the Job quantizes the Gated
// DeltaNet's in_proj_qkv, in_proj_z and out_proj, the gated attention's q/k/v/o and the MLP (MoE: the experts
// and the shared expert), and keeps in_proj_b / in_proj_a, the routers and the shared expert's gate dense; the
// exports (GPTQ, compressed-tensors FP8 / NVFP4) compute what the Job measured; the conv1d, A_log, dt_bias,
// the norms, the multi-token-prediction layer and the VLM's vision tower are copied byte for byte.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>
#include <string>

#include <unistd.h>

#include "qs/formats/linear_reader.h"
#include "qs/io/checkpoint.h"
#include "qs/io/dtype.h"
#include "qs/io/gguf_file.h"
#include "qs/io/tensor_name.h"
#include "qs/model/model_config.h"
#include "qs/model/model_config_fields.h"
#include "qs/model/transformer.h"
#include "qs/pipeline/decoded_weights.h"
#include "qs/pipeline/exporter.h"
#include "qs/pipeline/gguf_export.h"
#include "qs/pipeline/gguf_result_export.h"
#include "qs/pipeline/weight_only_quantize.h"

#include "tiny_checkpoint_job.h"

using namespace qs;
using namespace qs::pipeline;

namespace {

namespace fs = std::filesystem;

const fs::path kData = fs::path(QS_TEST_DATA_DIR) / "qwen35";

fs::path scratch(const std::string& name) {
    const fs::path dir = fs::temp_directory_path() / ("qs_qwen35_" + name + "_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    return dir;
}

bool quantized(const MethodResult& result, int layer, const std::string& module) {
    return result.layers.at(static_cast<std::size_t>(layer)).contains(module);
}

// The Job on `checkpoint` with each method, exported to each format: what it quantizes, what it copies, and
// the export read back computing the Job's model.
void expectJobAndExports(const fs::path& checkpoint, const std::string& prefix, bool moe,
                         const std::vector<std::string>& copied) {
    const io::Checkpoint source = io::Checkpoint::open(checkpoint);
    const model::ModelConfig config = model::ModelConfig::fromCheckpoint(source);
    const auto sequence = test::tinyTokens(checkpoint, 1, 48).front();
    for (const auto& [method, format] :
         {std::pair{"gptq4", "gptq_v2"}, std::pair{"fp8", "fp8"}, std::pair{"nvfp4", "ct-nvfp4"}}) {
        SCOPED_TRACE(method);
        const MethodResult result = test::quantizeTiny(checkpoint, method);
        for (const char* module : {"linear_attn.in_proj_qkv", "linear_attn.in_proj_z", "linear_attn.out_proj"})
            EXPECT_TRUE(quantized(result, 0, module)) << module;
        for (const char* module : {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj"})
            EXPECT_TRUE(quantized(result, 1, module)) << module;
        for (const char* module : {"linear_attn.in_proj_b", "linear_attn.in_proj_a", "self_attn.q_proj"})
            EXPECT_FALSE(quantized(result, 2, module)) << module;
        if (moe) {
            EXPECT_TRUE(quantized(result, 2, "mlp.experts.7.up_proj"));
            EXPECT_TRUE(quantized(result, 3, "mlp.shared_expert.down_proj"));
            EXPECT_FALSE(quantized(result, 3, "mlp.gate"));
            EXPECT_FALSE(quantized(result, 3, "mlp.shared_expert_gate"));
        } else {
            EXPECT_TRUE(quantized(result, 2, "mlp.down_proj"));
        }
        const fs::path dir = scratch(method);
        exportCheckpoint({checkpoint, dir, format, false, {}}, result, {}, CancelToken{});
        const io::Checkpoint exported = io::Checkpoint::open(dir);
        if (std::string(format) == "ct-nvfp4") {  // vLLM merges in_proj_b / in_proj_a: both listed as dense
            const auto ignore =
                exported.config().at("quantization_config").at("ignore").get<std::vector<std::string>>();
            const auto listed = [&](const std::string& m) {
                return std::ranges::find(ignore, prefix + m) != ignore.end();
            };
            EXPECT_TRUE(listed("layers.0.linear_attn.in_proj_b"));
            EXPECT_TRUE(listed("layers.2.linear_attn.in_proj_a"));
            EXPECT_FALSE(listed("layers.2.linear_attn.in_proj_z"));
            EXPECT_EQ(listed("layers.1.mlp.shared_expert_gate"), moe);
        }
        for (const std::string& name : copied)
            EXPECT_TRUE(test::sameBytes(exported.tensor(name), source.tensor(name))) << name;
        for (const std::string name : {"layers.0.linear_attn.conv1d.weight", "layers.0.linear_attn.A_log",
                                       "layers.2.linear_attn.dt_bias", "layers.2.linear_attn.norm.weight",
                                       "layers.2.linear_attn.in_proj_b.weight", "layers.0.linear_attn.in_proj_a.weight",
                                       "layers.1.self_attn.q_norm.weight", "layers.3.post_attention_layernorm.weight"})
            EXPECT_TRUE(test::sameBytes(exported.tensor(prefix + name), source.tensor(prefix + name))) << name;
        // Each linear the export stores decodes to the Job's effective weight (GPTQ's scales are float16 on
        // disk, the Job's f32: a rounding of the scale's 11th bit).
        const DecodedWeights decoded(exported, config);
        for (std::size_t i = 0; i < result.layers.size(); ++i) {
            const model::LayerWeights stored = decoded.layer(static_cast<int>(i));
            for (const auto& [module, q] : result.layers[i]) {
                const MatrixF want = q->effectiveWeight();
                const MatrixF& got = stored.linear(module).weight;
                ASSERT_EQ(got.rows(), want.rows()) << module;
                EXPECT_LE((got - want).cwiseAbs().maxCoeff(), 1e-3f * want.cwiseAbs().maxCoeff()) << i << " " << module;
            }
        }
        model::Transformer readBack(config, std::make_shared<DecodedWeights>(exported, config));
        const MatrixF got = readBack.forward(sequence);
        if (std::string(method) == "gptq4") {
            // GPTQ's float16 scales move the logits of the sharp random model (and, in the MoE, a routing
            // choice) further than the weights: the export runs bit for bit as the source with its linears.
            model::Transformer stored = model::Transformer::fromCheckpoint(source);
            for (std::size_t i = 0; i < result.layers.size(); ++i)
                for (const auto& [module, q] : result.layers[i])
                    stored.overrideLinear(static_cast<int>(i), module, [&decoded, i, module] {
                        return decoded.layer(static_cast<int>(i)).linear(module).weight;
                    });
            EXPECT_EQ(got, stored.forward(sequence));
        } else {
            const MatrixF want = test::jobModel(checkpoint, result).forward(sequence);
            EXPECT_LT((got - want).cwiseAbs().maxCoeff(), 2e-3f * want.cwiseAbs().maxCoeff());
        }
        fs::remove_all(dir);
    }
}

}  // namespace

TEST(Qwen35Export, TheJobQuantizesTheDeltaNetAndAttentionLinearsAndTheExportsComputeWhatItMeasured) {
    expectJobAndExports(kData / "qwen35-tiny", "model.", false,
                        {"mtp.fc.weight", "mtp.layers.0.self_attn.q_proj.weight", "mtp.norm.weight"});
}

TEST(Qwen35Export, TheVisionLanguageCheckpointKeepsItsVisionTowerAndMtpLayer) {
    expectJobAndExports(kData / "qwen35-vl-tiny", "model.language_model.", false,
                        {"model.visual.blocks.0.attn.qkv.weight", "model.visual.merger.linear_fc2.weight",
                         "mtp.fc.weight", "mtp.layers.0.mlp.down_proj.weight"});
}

TEST(Qwen35Export, TheMoeJobQuantizesExpertsAndTheSharedExpertButNotItsGate) {
    expectJobAndExports(kData / "qwen35-moe-tiny", "model.", true,
                        {"model.layers.1.mlp.gate.weight", "model.layers.2.mlp.shared_expert_gate.weight",
                         "mtp.layers.0.mlp.shared_expert_gate.weight", "mtp.layers.0.mlp.gate.weight"});
}

// AWQ: the gated attention's q/k/v fold into the (1 + w) input norm, the MLP's gate/up into the norm before it
// (the MoE's experts too, with the router's and the shared-expert gate's columns taking the scales); the
// DeltaNet's linears keep α = 0 (in_proj_b / in_proj_a read the same norm and stay dense; out_proj reads the
// gated norm, one weight for every value head). The folded export computes what the Job measured (scales in F16).
namespace {

void expectAwqFolded(const fs::path& checkpoint, bool moe) {
    const MethodResult result = test::quantizeTiny(checkpoint, "awq4");
    const auto scaled = [&](int layer, const std::string& module) {
        const auto& s = result.layers.at(static_cast<std::size_t>(layer)).at(module)->inputScales;
        return std::any_of(s.begin(), s.end(), [](float v) { return v != 1.0f; });
    };
    EXPECT_TRUE(scaled(1, "self_attn.q_proj"));
    EXPECT_TRUE(scaled(2, moe ? "mlp.experts.3.gate_proj" : "mlp.gate_proj"));
    EXPECT_FALSE(scaled(0, "linear_attn.in_proj_qkv"));
    EXPECT_FALSE(scaled(0, "linear_attn.out_proj"));
    const fs::path dir = scratch("awq");
    exportCheckpoint({checkpoint, dir, "", false, {}}, result, {}, CancelToken{});
    const io::Checkpoint source = io::Checkpoint::open(checkpoint), exported = io::Checkpoint::open(dir);
    std::vector<std::string> folded{"model.layers.1.input_layernorm.weight",
                                    "model.layers.2.post_attention_layernorm.weight"};
    if (moe)
        folded.insert(folded.end(), {"model.layers.2.mlp.shared_expert_gate.weight", "model.layers.2.mlp.gate.weight"});
    for (const std::string& name : folded)
        EXPECT_FALSE(test::sameBytes(exported.tensor(name), source.tensor(name))) << name;
    for (const std::string name :
         {"model.layers.0.linear_attn.in_proj_b.weight", "model.layers.0.input_layernorm.weight"})
        EXPECT_TRUE(test::sameBytes(exported.tensor(name), source.tensor(name))) << name;
    MethodResult stored = result;  // the scales as the AWQ layout stores them, in F16
    for (auto& layer : stored.layers)
        for (auto& [module, q] : layer) {
            auto rounded = std::make_shared<quant::QuantizedLinear>(*q);
            rounded->scales = q->scales.unaryExpr([](float v) { return io::f16ToF32(io::f32ToF16(v)); });
            q = rounded;
        }
    const model::ModelConfig config = model::ModelConfig::fromCheckpoint(source);
    model::Transformer readBack(config, std::make_shared<DecodedWeights>(exported, config));
    const auto sequence = test::tinyTokens(checkpoint, 1, 48).front();
    const MatrixF want = test::jobModel(checkpoint, stored).forward(sequence);
    const MatrixF got = readBack.forward(sequence);
    // The first position (no recurrence, no attention to the past yet) shows the roundings' own size: the
    // export divides the norms by s and stores Q(W·s) where the Job multiplies Q(W·s)/s; the sharp random
    // model's recurrences, attention (and routing) carry that further at a few later positions.
    const float range = want.cwiseAbs().maxCoeff();
    EXPECT_LT((got.row(0) - want.row(0)).cwiseAbs().maxCoeff(), 1e-3f * range);
    EXPECT_LT((got - want).cwiseAbs().maxCoeff(), 6e-3f * range);
    fs::remove_all(dir);
}

}  // namespace

TEST(Qwen35Export, AwqFoldsIntoTheOffsetNormsAndLeavesTheDeltaNetUnscaled) {
    expectAwqFolded(kData / "qwen35-tiny", false);
}

TEST(Qwen35Export, AwqFoldsIntoTheRouterAndTheSharedExpertGate) { expectAwqFolded(kData / "qwen35-moe-tiny", true); }

// The GGUF methods write the Job's blocks with llama.cpp's tiled value-head order: in_proj_qkv's value rows,
// in_proj_z's rows, and out_proj's columns (whole Q8_0 blocks of each head's 32). The file's tensors decode to
// the Job's effective weights, reordered here by the grouped -> tiled map written out in the test.
TEST(Qwen35Export, GgufQ8_0TilesTheJobsBlocksByValueHead) {
    const fs::path checkpoint = kData / "qwen35-tiny";
    const MethodResult result = test::quantizeTiny(checkpoint, "q8_0");
    const fs::path dir = scratch("q8_0");
    fs::create_directories(dir);
    const fs::path file =
        writeGgufResult(io::Checkpoint::open(checkpoint), result, dir / "tiny.gguf", {}, {}, CancelToken{});
    const io::GgufFile gguf = io::GgufFile::open(file);
    const auto decoded = [&](const std::string& name) {
        const io::TensorInfo& t = *gguf.find(name);
        EXPECT_EQ(t.ggmlType, io::GgmlType::Q8_0) << name;
        const std::vector<float> values = gguf.view(t).toF32();
        return MatrixF(Eigen::Map<const MatrixF>(values.data(), t.shape[0], t.shape[1]));
    };
    constexpr int keyHeads = 2, valueHeads = 8, perKey = 4, dim = 32;
    const auto tiled = [&](int grouped) { return (grouped % perKey) * keyHeads + grouped / perKey; };
    const auto& layer = result.layers.at(0);
    const MatrixF qkv = layer.at("linear_attn.in_proj_qkv")->effectiveWeight(),
                  z = layer.at("linear_attn.in_proj_z")->effectiveWeight(),
                  out = layer.at("linear_attn.out_proj")->effectiveWeight();
    MatrixF wantQkv = qkv, wantZ = z, wantOut = out;
    const int v0 = 2 * keyHeads * dim;  // q and k rows stay
    for (int h = 0; h < valueHeads; ++h) {
        wantQkv.middleRows(v0 + tiled(h) * dim, dim) = qkv.middleRows(v0 + h * dim, dim);
        wantZ.middleRows(tiled(h) * dim, dim) = z.middleRows(h * dim, dim);
        wantOut.middleCols(tiled(h) * dim, dim) = out.middleCols(h * dim, dim);
    }
    EXPECT_EQ(decoded("blk.0.attn_qkv.weight"), wantQkv);
    EXPECT_EQ(decoded("blk.0.attn_gate.weight"), wantZ);
    EXPECT_EQ(decoded("blk.0.ssm_out.weight"), wantOut);
    EXPECT_NE(wantOut, out);  // the reorder moved something
    fs::remove_all(dir);
}

// A K-quant's 256-wide blocks hold several value heads' columns of out_proj: no reorder keeps them, and the
// GGUF method is refused saying so (the Job's KL stays measured; the dense GGUF export reorders before encoding).
TEST(Qwen35Export, GgufKQuantRefusesToReorderOutProjsBlocks) {
    const fs::path checkpoint = kData / "qwen35-tiny";
    const MethodResult result = test::quantizeTiny(checkpoint, "q4_k_m");
    ASSERT_EQ(result.layers.at(0).at("linear_attn.out_proj")->ggmlType, io::GgmlType::Q4_K);
    const fs::path dir = scratch("q4_k_m");
    fs::create_directories(dir);
    try {
        writeGgufResult(io::Checkpoint::open(checkpoint), result, dir / "tiny.gguf", {}, {}, CancelToken{});
        ADD_FAILURE() << "written";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("no whole blocks of q4_K"), std::string::npos) << e.what();
    }
    fs::remove_all(dir);
}

// The multi-token-prediction layer (mtp.layers.0.…) is no decoder layer 0: not quantized, not in the
// Overview's layer 0, counted among the tensors every export keeps.
TEST(Qwen35Export, TheMtpLayerIsNoDecoderLayer) {
    const io::TensorName mtp = io::parseTensorName("mtp.layers.0.self_attn.q_proj.weight");
    EXPECT_EQ(mtp.layer, -1);
    EXPECT_EQ(mtp.role, io::TensorRole::Linear);
    EXPECT_EQ(io::parseTensorName("model.language_model.layers.2.linear_attn.in_proj_b.weight").layer, 2);
    EXPECT_EQ(io::parseTensorName("model.layers.2.linear_attn.in_proj_b.weight").role, io::TensorRole::Linear);
    EXPECT_EQ(io::parseTensorName("model.layers.2.linear_attn.A_log").role, io::TensorRole::Other);
}

// --weights-only picks the linears the Job quantizes: the DeltaNet's in_proj_qkv / in_proj_z / out_proj and the
// attention's; in_proj_b / in_proj_a and the shared-expert gate stay dense, the MTP layer is no decoder layer.
TEST(Qwen35Export, WeightsOnlyQuantizesWhatTheJobQuantizes) {
    const io::Checkpoint checkpoint = io::Checkpoint::open(kData / "qwen35-moe-tiny");
    const formats::LinearReader reader(checkpoint);
    const WeightOnlySelection s = selectWeightOnlyLinears(reader);
    const auto in = [](const std::vector<std::string>& list, const std::string& prefix) {
        return std::ranges::find(list, prefix) != list.end();
    };
    for (const std::string module :
         {"layers.0.linear_attn.in_proj_qkv", "layers.0.linear_attn.in_proj_z", "layers.0.linear_attn.out_proj",
          "layers.1.self_attn.q_proj", "layers.1.mlp.experts.3.down_proj", "layers.1.mlp.shared_expert.up_proj"})
        EXPECT_TRUE(in(s.quantized, "model." + module)) << module;
    for (const std::string module : {"layers.0.linear_attn.in_proj_b", "layers.2.linear_attn.in_proj_a",
                                     "layers.1.mlp.shared_expert_gate", "layers.1.mlp.gate"})
        EXPECT_TRUE(in(s.keptDense, "model." + module)) << module;
    EXPECT_FALSE(in(s.quantized, "mtp.layers.0.self_attn.q_proj"));
}

// What is not offered yet is refused before any work, in one line: an FP8 KV cache and a mix of methods.
TEST(Qwen35Export, RefusesAnFp8KvCacheAndMixesBeforeAnyWork) {
    JobPlan plan;
    plan.checkpoint = kData / "qwen35-tiny";
    plan.methods = {parseMethod("fp8", 16)};
    plan.methods.front().kvCacheFp8 = true;
    plan.calibration = test::tinyTokens(plan.checkpoint, 1, 16);
    try {
        (void)Job(plan).estimate();
        ADD_FAILURE() << "estimated";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("FP8 KV cache is not offered"), std::string::npos) << e.what();
    }
    plan.methods.front().kvCacheFp8 = false;
    plan.perGroupKl = true;
    try {
        (void)Job(plan).estimate();
        ADD_FAILURE() << "estimated";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("a mix of methods is not offered"), std::string::npos) << e.what();
    }
}

// A config shaped as the Qwen3.5-9B release writes it (Qwen3_5ForConditionalGeneration, text_config with
// transformers' defaults for the 9B: 32 layers, every 4th full, head_dim 256 with a rotary quarter and M-RoPE
// sections [11, 11, 10], 16 key and 32 value heads of 128): read as the text tower, with the GGUF plan
// llama.cpp's qwen35 loads (value heads tiled, the MTP layer and the vision tower left out).
TEST(Qwen35Export, AReleaseShapedConfigReadsAndPlansItsGguf) {
    nlohmann::json layerTypes = nlohmann::json::array();
    for (int i = 0; i < 32; ++i) layerTypes.push_back((i + 1) % 4 == 0 ? "full_attention" : "linear_attention");
    const nlohmann::json j = {{"architectures", {"Qwen3_5ForConditionalGeneration"}},
                              {"model_type", "qwen3_5"},
                              {"tie_word_embeddings", false},
                              {"text_config",
                               {{"model_type", "qwen3_5_text"},
                                {"hidden_size", 4096},
                                {"intermediate_size", 12288},
                                {"num_hidden_layers", 32},
                                {"num_attention_heads", 16},
                                {"num_key_value_heads", 4},
                                {"head_dim", 256},
                                {"vocab_size", 248320},
                                {"max_position_embeddings", 262144},
                                {"rms_norm_eps", 1e-6},
                                {"hidden_act", "silu"},
                                {"attention_bias", false},
                                {"layer_types", layerTypes},
                                {"full_attention_interval", 4},
                                {"linear_conv_kernel_dim", 4},
                                {"linear_key_head_dim", 128},
                                {"linear_value_head_dim", 128},
                                {"linear_num_key_heads", 16},
                                {"linear_num_value_heads", 32},
                                {"mtp_num_hidden_layers", 1},
                                {"dtype", "bfloat16"},
                                {"rope_parameters",
                                 {{"rope_type", "default"},
                                  {"rope_theta", 10000000},
                                  {"partial_rotary_factor", 0.25},
                                  {"mrope_section", {11, 11, 10}},
                                  {"mrope_interleaved", true}}}}},
                              {"vision_config", {{"model_type", "qwen3_5"}, {"depth", 27}, {"hidden_size", 1152}}}};
    const model::ModelConfig c = model::ModelConfig::fromJson(j);
    EXPECT_EQ(c.modelType, "qwen3_5");
    EXPECT_EQ(c.arch.tensorPrefix, "model.language_model.");
    EXPECT_EQ(c.rotaryDims(), 64);
    EXPECT_EQ(c.mropeSection, (std::vector<int>{11, 11, 10}));
    EXPECT_TRUE(c.isLinearAttentionLayer(30));
    EXPECT_FALSE(c.isLinearAttentionLayer(31));
    EXPECT_EQ(c.linearAttention.convDim(), 2 * 16 * 128 + 32 * 128);
    std::set<std::string> names;
    for (const GgufTensorChoice& t : ggufTensorPlan(c)) names.insert(t.ggufName);
    for (const char* name : {"blk.0.attn_qkv.weight", "blk.0.attn_gate.weight", "blk.0.ssm_a", "blk.0.ssm_dt.bias",
                             "blk.0.ssm_conv1d.weight", "blk.0.ssm_norm.weight", "blk.0.ssm_out.weight",
                             "blk.0.ssm_alpha.weight", "blk.0.ssm_beta.weight", "blk.3.attn_q.weight",
                             "blk.3.attn_q_norm.weight", "blk.3.post_attention_norm.weight", "output.weight"})
        EXPECT_TRUE(names.contains(name)) << name;
    EXPECT_FALSE(names.contains("blk.0.attn_q.weight"));
    EXPECT_FALSE(names.contains("blk.32.attn_norm.weight"));  // the MTP layer is left out
}

// A qwen35 / qwen35moe GGUF reads back as the model it was written from: the config from the metadata (layer_types
// from full_attention_interval, the linear attention's sizes from ssm.*, the rotary part, the shared expert's
// width), and each converter transform undone (the norms' 1 + w less 1, which gives the same 1 + w in f32; A_log as
// the float whose -exp is ssm_a; conv1d's unit dim; the value heads tiled back to grouped). The F32 file computes
// the checkpoint's logits bit for bit, and written again from the read-back it is the same file tensor for tensor.
namespace {

void expectF32GgufReadsBack(const fs::path& checkpoint, const std::vector<std::string>& present) {
    const fs::path dir = scratch("readback");
    fs::create_directories(dir);
    GgufExportOptions options;
    options.chooser = uniformGgufType(io::GgmlType::F32);
    const fs::path gguf = writeGguf(io::Checkpoint::open(checkpoint), dir / "a.gguf", options, {}, CancelToken{});
    const io::Checkpoint source = io::Checkpoint::open(checkpoint), back = io::Checkpoint::open(gguf);
    const model::ModelConfig original = model::ModelConfig::fromCheckpoint(source);
    const model::ModelConfig read = model::ModelConfig::fromCheckpoint(back);
    EXPECT_EQ(model::forwardPassDifferences(original, read), std::vector<std::string>{});
    for (const std::string& name : present) EXPECT_NE(back.find(name), nullptr) << name;
    // What no float rounding touches reads back byte for byte: the reordered linears and vectors, the conv.
    for (const std::string name :
         {"model.layers.0.linear_attn.in_proj_qkv.weight", "model.layers.0.linear_attn.in_proj_z.weight",
          "model.layers.2.linear_attn.out_proj.weight", "model.layers.0.linear_attn.in_proj_b.weight",
          "model.layers.2.linear_attn.in_proj_a.weight", "model.layers.0.linear_attn.dt_bias",
          "model.layers.0.linear_attn.conv1d.weight", "model.layers.2.linear_attn.norm.weight"}) {
        const io::TensorView got = back.tensor(name), want = source.tensor(name);
        EXPECT_EQ(got.shape(), want.shape()) << name;
        EXPECT_EQ(got.toF32(), want.toF32()) << name;
    }
    const auto sequence = test::tinyTokens(checkpoint, 1, 48).front();
    const MatrixF want = model::Transformer::fromCheckpoint(source).forward(sequence);
    EXPECT_EQ(model::Transformer::fromCheckpoint(back).forward(sequence), want);
    // Written again from the read-back, every tensor is the first file's (ssm_a and the 1 + w norms included).
    const fs::path again = writeGguf(back, dir / "b.gguf", options, {}, CancelToken{});
    const io::GgufFile first = io::GgufFile::open(gguf), second = io::GgufFile::open(again);
    ASSERT_EQ(first.tensors().size(), second.tensors().size());
    for (const io::TensorInfo& t : first.tensors()) {
        const io::TensorInfo* u = second.find(t.name);
        ASSERT_NE(u, nullptr) << t.name;
        EXPECT_EQ(first.view(t).toF32(), second.view(*u).toF32()) << t.name;
    }
    fs::remove_all(dir);
}

}  // namespace

TEST(Qwen35Export, F32GgufReadsBackAsTheSameModel) {
    expectF32GgufReadsBack(kData / "qwen35-tiny", {"model.layers.3.self_attn.q_norm.weight"});
}

TEST(Qwen35Export, MoeF32GgufReadsBackAsTheSameModel) {
    expectF32GgufReadsBack(
        kData / "qwen35-moe-tiny",
        {"model.layers.1.mlp.gate.weight", "model.layers.2.mlp.experts.7.up_proj.weight",
         "model.layers.3.mlp.shared_expert.down_proj.weight", "model.layers.0.mlp.shared_expert_gate.weight"});
}

// The VLM's GGUF is its text tower under qwen35: it reads back as qwen35-tiny's model.
TEST(Qwen35Export, TheVisionLanguageGgufReadsBackAsItsTextTower) {
    const fs::path dir = scratch("vlgguf");
    fs::create_directories(dir);
    GgufExportOptions options;
    options.chooser = uniformGgufType(io::GgmlType::F32);
    const fs::path vl = kData / "qwen35-vl-tiny";
    const fs::path gguf = writeGguf(io::Checkpoint::open(vl), dir / "vl.gguf", options, {}, CancelToken{});
    const io::Checkpoint back = io::Checkpoint::open(gguf);
    EXPECT_EQ(model::ModelConfig::fromCheckpoint(back).modelType, "qwen3_5_text");
    const auto sequence = test::tinyTokens(vl, 1, 48).front();
    EXPECT_EQ(model::Transformer::fromCheckpoint(back).forward(sequence),
              model::Transformer::fromCheckpoint(io::Checkpoint::open(vl)).forward(sequence));
    fs::remove_all(dir);
}

// The Job's Q8_0 file (the value heads tiled inside whole rows and whole 32-column blocks) reads back with its blocks
// moved back as they are, still Q8_0: it decodes to the Job's weights and runs as the Job's model.
TEST(Qwen35Export, TheJobsQ8_0GgufReadsBackAsTheJobsModel) {
    const fs::path checkpoint = kData / "qwen35-tiny";
    const MethodResult result = test::quantizeTiny(checkpoint, "q8_0");
    const fs::path dir = scratch("q8_0_back");
    fs::create_directories(dir);
    const fs::path file =
        writeGgufResult(io::Checkpoint::open(checkpoint), result, dir / "tiny.gguf", {}, {}, CancelToken{});
    const io::Checkpoint back = io::Checkpoint::open(file);
    const model::ModelConfig config = model::ModelConfig::fromCheckpoint(back);
    const DecodedWeights decoded(back, config);
    for (std::size_t i = 0; i < result.layers.size(); ++i) {
        const model::LayerWeights stored = decoded.layer(static_cast<int>(i));
        for (const auto& [module, q] : result.layers[i]) {
            EXPECT_EQ(back.tensor("model.layers." + std::to_string(i) + "." + module + ".weight").info().ggmlType,
                      q->ggmlType)
                << module;
            EXPECT_EQ(stored.linear(module).weight, q->effectiveWeight()) << i << " " << module;
        }
    }
    const auto sequence = test::tinyTokens(checkpoint, 1, 48).front();
    const MatrixF want = test::jobModel(checkpoint, result).forward(sequence);
    const MatrixF got = model::Transformer::fromCheckpoint(back).forward(sequence);
    // The Job keeps token_embd and output dense where the file holds them in Q8_0 (the sharp random model's logits
    // move by up to ~0.1 of their range from that alone): every other tensor is the Job's model's.
    const io::Checkpoint source = io::Checkpoint::open(checkpoint);
    std::set<std::string> linears{"model.embed_tokens.weight", "lm_head.weight"};
    for (std::size_t i = 0; i < result.layers.size(); ++i)
        for (const auto& [module, q] : result.layers[i])
            linears.insert("model.layers." + std::to_string(i) + "." + module + ".weight");
    for (const io::CheckpointTensor& t : back.tensors()) {
        const std::string& name = t.info->name;
        if (linears.contains(name)) continue;
        const std::vector<float> got = back.tensor(name).toF32(), want = source.tensor(name).toF32();
        ASSERT_EQ(got.size(), want.size()) << name;
        for (std::size_t k = 0; k < got.size(); ++k) {
            if (name.ends_with("A_log"))
                EXPECT_EQ(-std::exp(got[k]), -std::exp(want[k])) << name;
            else if (name.ends_with("norm.weight") && !name.ends_with("linear_attn.norm.weight"))
                EXPECT_EQ(1.0f + got[k], 1.0f + want[k]) << name;
            else
                EXPECT_EQ(got[k], want[k]) << name;
        }
    }
    // The blocks moved whole compute what the F32 path (decoded, then tiled back) computes: the read-back written
    // as an F32 GGUF and read again gives the same logits bit for bit.
    GgufExportOptions options;
    options.chooser = uniformGgufType(io::GgmlType::F32);
    const fs::path f32 = writeGguf(back, dir / "f32.gguf", options, {}, CancelToken{});
    EXPECT_EQ(model::Transformer::fromCheckpoint(io::Checkpoint::open(f32)).forward(sequence), got);
    EXPECT_LT((got - want).cwiseAbs().maxCoeff(), 0.15f * want.cwiseAbs().maxCoeff());
    fs::remove_all(dir);
}

// A K-quant's 256-wide blocks of ssm_out hold several value heads' columns (as in a published Q4_K_M): no block
// move undoes the tiling, so the tensor is decoded to F32 and its columns moved back (the F16 tensors' rows and
// columns move as they are). qwen35-tiny as a dense Q4_K GGUF (matrices whose rows are whole 256-blocks, ssm_out, in Q4_K, the others
// F16) reads back with ssm_out the file's decoded columns in grouped order.
TEST(Qwen35Export, AKQuantSsmOutReadsBackDecodedWithItsColumnsGrouped) {
    const fs::path checkpoint = kData / "qwen35-tiny";
    const fs::path dir = scratch("q4_k_back");
    fs::create_directories(dir);
    GgufExportOptions options;
    options.chooser = uniformGgufType(io::GgmlType::Q4_K);
    const fs::path file = writeGguf(io::Checkpoint::open(checkpoint), dir / "q4k.gguf", options, {}, CancelToken{});
    const io::GgufFile gguf = io::GgufFile::open(file);
    const io::TensorInfo& stored = *gguf.find("blk.0.ssm_out.weight");
    ASSERT_EQ(stored.ggmlType, io::GgmlType::Q4_K);
    const std::vector<float> tiled = gguf.view(stored).toF32();
    const io::Checkpoint back = io::Checkpoint::open(file);
    const io::TensorView out = back.tensor("model.layers.0.linear_attn.out_proj.weight");
    EXPECT_EQ(out.info().ggmlType, io::GgmlType::F32);
    ASSERT_EQ(out.shape(), stored.shape);
    const std::vector<float> grouped = out.toF32();
    constexpr int keyHeads = 2, perKey = 4, dim = 32;
    const std::int64_t cols = stored.shape[1];
    for (std::int64_t r = 0; r < stored.shape[0]; ++r)
        for (int h = 0; h < keyHeads * perKey; ++h)
            for (int c = 0; c < dim; ++c)
                ASSERT_EQ(grouped[r * cols + h * dim + c],
                          tiled[r * cols + ((h % perKey) * keyHeads + h / perKey) * dim + c]);
    // The F16 in_proj_qkv's value rows come back grouped, still F16: the source's, rounded to F16.
    EXPECT_EQ(back.tensor("model.layers.0.linear_attn.in_proj_qkv.weight").info().ggmlType, io::GgmlType::F16);
    const std::vector<float> qkv = back.tensor("model.layers.0.linear_attn.in_proj_qkv.weight").toF32();
    const std::vector<float> want =
        io::Checkpoint::open(checkpoint).tensor("model.layers.0.linear_attn.in_proj_qkv.weight").toF32();
    ASSERT_EQ(qkv.size(), want.size());
    for (std::size_t k = 0; k < qkv.size(); ++k) ASSERT_EQ(qkv[k], io::f16ToF32(io::f32ToF16(want[k]))) << k;
    const auto sequence = test::tinyTokens(checkpoint, 1, 48).front();
    const MatrixF logits = model::Transformer::fromCheckpoint(back).forward(sequence);
    EXPECT_TRUE(logits.allFinite());
    fs::remove_all(dir);
}
