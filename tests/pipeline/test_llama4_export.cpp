// Llama 4 end to end on the tiny checkpoints (scripts/make-tiny-llama4.py): the Job quantizes every expert, the
// shared expert and the dense layers, and not the router; the exports (GPTQ, compressed-tensors FP8 / NVFP4)
// compute what the Job measured under Llama 4's names (the dense MLP as feed_forward.*, the experts one tensor
// each as vLLM's expert mapping reads them) with the router copied byte for byte; the VLM's vision tower and
// projector are copied byte for byte; a GGUF method writes llama.cpp's llama4 tensors with the Job's blocks; what
// llama.cpp's llama4 would run as another model is refused; an F32 GGUF reads back as the same model.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <string>

#include <unistd.h>

#include "qs/io/checkpoint.h"
#include "qs/io/dtype.h"
#include "qs/io/gguf_file.h"
#include "qs/model/model_config.h"
#include "qs/model/model_config_fields.h"
#include "qs/model/transformer.h"
#include "qs/pipeline/decoded_weights.h"
#include "qs/pipeline/dense_export.h"
#include "qs/pipeline/exporter.h"
#include "qs/pipeline/gguf_export.h"
#include "qs/pipeline/gguf_result_export.h"

#include "tiny_checkpoint_job.h"

using namespace qs;
using namespace qs::pipeline;

namespace {

namespace fs = std::filesystem;

const fs::path kLlama4 = fs::path(QS_TEST_DATA_DIR) / "moe" / "llama4-tiny";
const fs::path kLlama4Vlm = fs::path(QS_TEST_DATA_DIR) / "moe" / "llama4-vlm-tiny";

fs::path scratch(const std::string& name) {
    const fs::path dir = fs::temp_directory_path() / ("qs_llama4_" + name + "_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    return dir;
}

bool quantized(const MethodResult& result, int layer, const std::string& module) {
    return result.layers.at(static_cast<std::size_t>(layer)).contains(module);
}

// The tensor names an export's files store (not the names QuantScope reads them under).
std::set<std::string> storedNames(const io::Checkpoint& c) {
    std::set<std::string> names;
    for (const auto& shard : c.shards())
        for (const auto& t : shard.tensors()) names.insert(t.name);
    return names;
}

bool anyStartsWith(const std::set<std::string>& names, const std::string& prefix) {
    const auto it = names.lower_bound(prefix);
    return it != names.end() && it->starts_with(prefix);
}

}  // namespace

TEST(Llama4Export, TheJobQuantizesExpertsSharedExpertAndDenseLayersAndTheExportsComputeWhatItMeasured) {
    const io::Checkpoint source = io::Checkpoint::open(kLlama4);
    const model::ModelConfig config = model::ModelConfig::fromCheckpoint(source);
    const auto sequence = test::tinyTokens(kLlama4, 1, 48).front();
    for (const auto& [method, format] :
         {std::pair{"gptq4", "gptq_v2"}, std::pair{"fp8", "fp8"}, std::pair{"nvfp4", "ct-nvfp4"}}) {
        SCOPED_TRACE(method);
        const MethodResult result = test::quantizeTiny(kLlama4, method);
        EXPECT_TRUE(quantized(result, 0, "mlp.down_proj"));  // the dense feed_forward, read as mlp.*
        EXPECT_TRUE(quantized(result, 2, "mlp.gate_proj"));
        EXPECT_TRUE(quantized(result, 1, "feed_forward.experts.3.up_proj"));
        EXPECT_TRUE(quantized(result, 3, "feed_forward.experts.0.down_proj"));
        EXPECT_TRUE(quantized(result, 3, "feed_forward.shared_expert.gate_proj"));
        EXPECT_FALSE(quantized(result, 1, "feed_forward.router"));
        const fs::path dir = scratch(method);
        exportCheckpoint({kLlama4, dir, format, false, {}}, result, {}, CancelToken{});
        const io::Checkpoint exported = io::Checkpoint::open(dir);
        const std::set<std::string> stored = storedNames(exported);
        // Llama 4's names: the dense MLP under feed_forward, one tensor per expert, the router as it was.
        EXPECT_TRUE(anyStartsWith(stored, "model.layers.0.feed_forward.down_proj."));
        EXPECT_FALSE(anyStartsWith(stored, "model.layers.0.mlp."));
        EXPECT_TRUE(anyStartsWith(stored, "model.layers.1.feed_forward.experts.2.gate_proj."));
        EXPECT_TRUE(anyStartsWith(stored, "model.layers.3.feed_forward.shared_expert.down_proj."));
        for (const std::string name :
             {"model.layers.1.feed_forward.router.weight", "model.layers.3.feed_forward.router.weight",
              "model.layers.3.input_layernorm.weight"})
            EXPECT_TRUE(test::sameBytes(exported.tensor(name), source.tensor(name))) << name;
        model::Transformer readBack(config, std::make_shared<DecodedWeights>(exported, config));
        const MatrixF want = test::jobModel(kLlama4, result).forward(sequence);
        const MatrixF got = readBack.forward(sequence);
        EXPECT_LT((got - want).cwiseAbs().maxCoeff(), 2e-3f * want.cwiseAbs().maxCoeff());
        fs::remove_all(dir);
    }
}

// AWQ folds 1/s into the norm before the MLP, which the router reads too: the router's columns take s (the
// router stays dense and its logits unchanged), and the export with its F16 scales computes what the Job measured.
TEST(Llama4Export, AwqFoldsIntoTheNormBeforeTheRouterAndTheExperts) {
    const MethodResult result = test::quantizeTiny(kLlama4, "awq4");
    const auto& s = result.layers.at(1).at("feed_forward.experts.2.gate_proj")->inputScales;
    EXPECT_TRUE(std::any_of(s.begin(), s.end(), [](float v) { return v != 1.0f; }));
    const fs::path dir = scratch("awq");
    exportCheckpoint({kLlama4, dir, "", false, {}}, result, {}, CancelToken{});
    const io::Checkpoint exported = io::Checkpoint::open(dir);
    const model::ModelConfig config = model::ModelConfig::fromCheckpoint(io::Checkpoint::open(kLlama4));
    MethodResult stored = result;
    for (auto& layer : stored.layers)
        for (auto& [module, q] : layer) {
            auto rounded = std::make_shared<quant::QuantizedLinear>(*q);
            rounded->scales = q->scales.unaryExpr([](float v) { return io::f16ToF32(io::f32ToF16(v)); });
            q = rounded;
        }
    model::Transformer readBack(config, std::make_shared<DecodedWeights>(exported, config));
    const auto sequence = test::tinyTokens(kLlama4, 1, 48).front();
    const MatrixF want = test::jobModel(kLlama4, stored).forward(sequence);
    const MatrixF got = readBack.forward(sequence);
    EXPECT_LT((got - want).cwiseAbs().maxCoeff(), 2e-3f * want.cwiseAbs().maxCoeff());
    fs::remove_all(dir);
}

// Llama4ForConditionalGeneration: the text tower quantized, the vision tower and the projector copied as they are.
TEST(Llama4Export, TheVisionLanguageModelsVisionTowerAndProjectorAreCopiedByteForByte) {
    const io::Checkpoint source = io::Checkpoint::open(kLlama4Vlm);
    const MethodResult result = test::quantizeTiny(kLlama4Vlm, "fp8");
    EXPECT_TRUE(quantized(result, 1, "feed_forward.experts.1.gate_proj"));
    const fs::path dir = scratch("vlm");
    exportCheckpoint({kLlama4Vlm, dir, "fp8", false, {}}, result, {}, CancelToken{});
    const io::Checkpoint exported = io::Checkpoint::open(dir);
    int copied = 0;
    for (const io::CheckpointTensor& t : source.tensors()) {
        const std::string& name = t.info->name;
        if (!name.starts_with("vision_model.") && !name.starts_with("multi_modal_projector.")) continue;
        EXPECT_TRUE(test::sameBytes(exported.tensor(name), source.view(t))) << name;
        ++copied;
    }
    EXPECT_EQ(copied, 7);
    EXPECT_TRUE(anyStartsWith(storedNames(exported), "language_model.model.layers.2.feed_forward.up_proj."));
    EXPECT_EQ(exported.config().at("model_type"), "llama4");
    EXPECT_EQ(exported.config().at("text_config").at("model_type"), "llama4_text");
    fs::remove_all(dir);
}

// q4_k_m: llama.cpp's llama4 tensors (the experts stacked, the shared expert as *_shexp, the dense layers' MLP as
// ffn_*), interleave_moe_layer_step, and the Job's blocks in the file.
TEST(Llama4Export, GgufMethodWritesLlamaCppsLlama4TensorsWithTheJobsBlocks) {
    const MethodResult result = test::quantizeTiny(kLlama4, "q4_k_m");
    const fs::path dir = scratch("q4_k_m");
    fs::create_directories(dir);
    const fs::path file =
        writeGgufResult(io::Checkpoint::open(kLlama4), result, dir / "tiny.gguf", {}, {}, CancelToken{});
    const io::GgufFile gguf = io::GgufFile::open(file);
    for (const char* name : {"blk.0.ffn_gate.weight", "blk.1.ffn_gate_exps.weight", "blk.1.ffn_down_exps.weight",
                             "blk.3.ffn_up_shexp.weight", "blk.3.ffn_gate_inp.weight", "rope_freqs.weight"})
        EXPECT_NE(gguf.find(name), nullptr) << name;
    EXPECT_EQ(gguf.find("blk.0.ffn_gate_inp.weight"), nullptr);
    EXPECT_EQ(gguf.metadata().integer("llama4.interleave_moe_layer_step"), 2);
    EXPECT_EQ(gguf.metadata().integer("llama4.feed_forward_length"), 48);
    EXPECT_EQ(gguf.metadata().integer("llama4.expert_feed_forward_length"), 16);
    for (const auto& [layer, module, ggufName] :
         {std::tuple{0, "mlp.down_proj", "blk.0.ffn_down.weight"},
          std::tuple{3, "feed_forward.shared_expert.gate_proj", "blk.3.ffn_gate_shexp.weight"},
          std::tuple{2, "self_attn.q_proj", "blk.2.attn_q.weight"}}) {
        const quant::QuantizedLinear& q = *result.layers.at(layer).at(module);
        const auto stored = gguf.view(*gguf.find(ggufName)).bytes();
        ASSERT_EQ(stored.size(), q.blocks.size()) << ggufName;
        EXPECT_EQ(std::memcmp(stored.data(), q.blocks.data(), stored.size()), 0) << ggufName;
    }
    fs::remove_all(dir);
}

// What llama.cpp's llama4 would run as another model is refused before a byte is written.
TEST(Llama4Export, TheGgufExportRefusesWhatLlama4WouldRunAsAnotherModel) {
    const nlohmann::json original = io::Checkpoint::open(kLlama4).config();
    const auto refused = [&](const std::function<void(nlohmann::json&)>& edit, const std::string& why) {
        const fs::path dir = scratch("refused");
        fs::create_directories(dir);
        for (const char* file : {"model.safetensors", "tokenizer.json", "tokenizer_config.json"})
            fs::create_symlink(fs::absolute(kLlama4 / file), dir / file);
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
    refused([](nlohmann::json& c) { c["attention_chunk_size"] = 16; }, "chunks by 8192");
    refused([](nlohmann::json& c) { c["use_qk_norm"] = false; }, "use_qk_norm is false");
    refused([](nlohmann::json& c) { c["no_rope_layers"] = {1, 0, 1, 1}; }, "layer 1 is NoPE");
    refused([](nlohmann::json& c) { c["floor_scale"] = 64; }, "floor_scale 64");
    refused([](nlohmann::json& c) { c["moe_layers"] = {1, 2}; }, "moe_layers are not every 2th layer");
}

// llama4 needs no q/k permutation and stores every tensor as it is: the F32 file reads back as the same model, its
// config synthesized from the metadata and what llama.cpp's llama4 fixes (NoPE every 4th layer, chunks of 8192, the
// temperature's constants, the q/k norm for other than 128 experts, Scout's llama3 scaling from rope_freqs).
TEST(Llama4Export, F32GgufReadsBackAsTheSameModel) {
    const fs::path dir = scratch("gguf");
    fs::create_directories(dir);
    GgufExportOptions options;
    options.chooser = uniformGgufType(io::GgmlType::F32);
    const fs::path gguf = writeGguf(io::Checkpoint::open(kLlama4), dir / "l4.gguf", options, {}, CancelToken{});
    const io::Checkpoint back = io::Checkpoint::open(gguf);
    const model::ModelConfig original = model::ModelConfig::fromCheckpoint(io::Checkpoint::open(kLlama4));
    const model::ModelConfig read = model::ModelConfig::fromCheckpoint(back);
    EXPECT_EQ(model::forwardPassDifferences(original, read), std::vector<std::string>{});
    ASSERT_NE(back.find("model.layers.1.feed_forward.router.weight"), nullptr);
    ASSERT_NE(back.find("model.layers.1.feed_forward.experts.3.up_proj.weight"), nullptr);
    ASSERT_NE(back.find("model.layers.3.feed_forward.shared_expert.down_proj.weight"), nullptr);
    ASSERT_NE(back.find("model.layers.2.mlp.gate_proj.weight"), nullptr);
    const auto sequence = test::tinyTokens(kLlama4, 1, 48).front();
    const MatrixF want = model::Transformer::fromCheckpoint(io::Checkpoint::open(kLlama4)).forward(sequence);
    const MatrixF got = model::Transformer::fromCheckpoint(back).forward(sequence);
    EXPECT_EQ((got - want).cwiseAbs().maxCoeff(), 0.0f);
    // Dequantized back to safetensors, it is Llama 4's layout again: the dense MLP under feed_forward.
    const fs::path dense = exportDense({gguf, dir / "dense", io::DType::F32}, {}, CancelToken{});
    const io::Checkpoint again = io::Checkpoint::open(dense);
    const std::set<std::string> stored = storedNames(again);
    EXPECT_TRUE(stored.contains("model.layers.2.feed_forward.gate_proj.weight"));
    EXPECT_FALSE(anyStartsWith(stored, "model.layers.2.mlp."));
    EXPECT_EQ(model::Transformer::fromCheckpoint(again).forward(sequence), want);
    fs::remove_all(dir);
}
