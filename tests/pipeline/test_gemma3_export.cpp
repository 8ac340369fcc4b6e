// Gemma 3 end to end: the Job quantizes the tiny Gemma 3 VLM's text tower (scripts/make-tiny-gemma3.py)
// and every export reads back through our reader as the Job's model computes: GPTQ, AWQ (its scales
// folded into the (1 + w) norms as (1 + w) / s - 1), FP8 and compressed-tensors NVFP4. The vision
// tower and the projector are copied byte for byte and named among the modules left dense, and
// config.json keeps text_config with quantization_config at the top, where vLLM's gemma3_mm reads it.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include <unistd.h>

#include "qs/error.h"
#include "qs/formats/detect.h"
#include "qs/io/checkpoint.h"
#include "qs/io/gguf_file.h"
#include "qs/io/tensor_name.h"
#include "qs/model/model_config.h"
#include "qs/model/tokenizer.h"
#include "qs/model/transformer.h"
#include "qs/pipeline/calibration_text.h"
#include "qs/pipeline/decoded_weights.h"
#include "qs/pipeline/exporter.h"
#include "qs/pipeline/gguf_export.h"
#include "qs/pipeline/gguf_result_export.h"
#include "qs/pipeline/job.h"

#include "tiny_checkpoint_job.h"

using namespace qs;
using namespace qs::pipeline;

namespace {

namespace fs = std::filesystem;

const fs::path kVlm = fs::path(QS_TEST_DATA_DIR) / "gemma3" / "gemma3-vlm-tiny";

std::string dump(const nlohmann::json& j) { return j.dump(); }

struct Case {
    const char* method;
    const char* format;
    float tolerance;  // of the largest logit: F16 scales (GPTQ, AWQ) and AWQ's norms folded in F32
};

}  // namespace

TEST(Gemma3Export, EveryFormatReadsBackAsTheJobsModelAndKeepsTheVisionTower) {
    const io::Checkpoint source = io::Checkpoint::open(kVlm);
    const model::ModelConfig config = model::ModelConfig::fromCheckpoint(source);
    const auto sequence = test::tinyTokens(kVlm, 1, 48).front();
    for (const Case& c : {Case{"gptq4", "gptq_v2", 2e-3f}, Case{"awq4", "awq", 2e-3f}, Case{"fp8", "fp8", 1e-4f},
                          Case{"nvfp4", "ct-nvfp4", 1e-4f}}) {
        SCOPED_TRACE(c.method);
        const MethodResult result = test::quantizeTiny(kVlm, c.method);
        const fs::path dir =
            fs::temp_directory_path() / ("qs_gemma3_" + std::string(c.format) + "_" + std::to_string(::getpid()));
        fs::remove_all(dir);
        exportCheckpoint({kVlm, dir, c.format, false, {}}, result, {}, CancelToken{});
        const io::Checkpoint exported = io::Checkpoint::open(dir);

        // The vision tower and the projector, byte for byte, and named among the modules left dense.
        int tower = 0;
        for (const io::CheckpointTensor& t : source.tensors()) {
            if (!io::isTowerTensor(t.info->name)) continue;
            ++tower;
            EXPECT_TRUE(test::sameBytes(source.tensor(t.info->name), exported.tensor(t.info->name))) << t.info->name;
        }
        EXPECT_EQ(tower, 17);  // 15 vision tower tensors, 2 of the projector
        const nlohmann::json written = exported.config();
        EXPECT_EQ(written.at("model_type"), "gemma3");
        EXPECT_EQ(written.at("text_config"), source.config().at("text_config"));
        EXPECT_NE(dump(written.at("quantization_config")).find("vision_tower"),
                  std::string::npos);  // GPTQ's as a regex
        // No text-tower linear is left out of the quantized set.
        EXPECT_EQ(dump(written.at("quantization_config")).find("language_model"), std::string::npos);

        // The export through our reader computes what the Job measured.
        model::Transformer readBack(config, std::make_shared<DecodedWeights>(exported, config));
        const MatrixF want = test::jobModel(kVlm, result).forward(sequence);
        const MatrixF got = readBack.forward(sequence);
        const float scale = want.cwiseAbs().maxCoeff();
        EXPECT_LT((got - want).cwiseAbs().maxCoeff(), c.tolerance * scale);

        if (std::string(c.method) == "awq4") {
            // The folded norms are (1 + w) / s - 1: read as w / s (Llama's fold) they give another model.
            const std::string norm = config.layerPrefix(0) + "input_layernorm.weight";
            const auto before = source.tensor(norm).toF32(), after = exported.tensor(norm).toF32();
            const auto& s = result.layers[0].at("self_attn.q_proj")->inputScales;
            ASSERT_EQ(s.size(), before.size());
            bool scaled = false;
            for (std::size_t i = 0; i < s.size(); ++i) {
                EXPECT_NEAR(after[i], (1.0f + before[i]) / s[i] - 1.0f, 1e-6f) << i;
                scaled = scaled || std::abs(s[i] - 1.0f) > 1e-3f;
            }
            EXPECT_TRUE(scaled);
            // Gemma's output norms take no scale.
            const std::string post = config.layerPrefix(0) + "post_attention_layernorm.weight";
            EXPECT_TRUE(test::sameBytes(source.tensor(post), exported.tensor(post)));
        }
        fs::remove_all(dir);
    }
}

// The GGUF of the text model as llama.cpp's gemma3 reads it (test_llama_interop runs it): norms stored as
// 1 + w, Gemma's output norms under llama.cpp's names, the window and both RoPE bases. Our reader maps
// them back to w under Hugging Face's names (test_gguf_read_back runs the model read back).
TEST(Gemma3Export, GgufStoresTheNormsAsLlamaCppMultipliesAndReadsThemBackAsW) {
    const fs::path text = fs::path(QS_TEST_DATA_DIR) / "gemma3" / "gemma3-text-tiny";
    const io::Checkpoint source = io::Checkpoint::open(text);
    const fs::path file = fs::temp_directory_path() / ("qs_gemma3_" + std::to_string(::getpid()) + ".gguf");
    fs::remove(file);
    GgufExportOptions options;
    options.chooser = uniformGgufType(io::GgmlType::F32);
    writeGguf(source, file, options, {}, CancelToken{});
    const io::Checkpoint gguf = io::Checkpoint::open(file);
    const io::GgufFile& g = *gguf.gguf();
    EXPECT_EQ(*g.metadata().string("general.architecture"), "gemma3");
    EXPECT_EQ(g.metadata().integer("gemma3.attention.sliding_window"), 16);
    EXPECT_EQ(g.metadata().number("gemma3.rope.freq_base"), 1e6);
    EXPECT_EQ(g.metadata().number("gemma3.rope.freq_base_swa"), 1e4);
    const auto stored = [&](const std::string& name) { return g.view(*g.find(name)).toF32(); };
    for (const auto& [ggufName, hf] :
         {std::pair<std::string, std::string>{"blk.2.attn_norm.weight", "model.layers.2.input_layernorm.weight"},
          {"blk.2.post_attention_norm.weight", "model.layers.2.post_attention_layernorm.weight"},
          {"blk.2.ffn_norm.weight", "model.layers.2.pre_feedforward_layernorm.weight"},
          {"blk.2.post_ffw_norm.weight", "model.layers.2.post_feedforward_layernorm.weight"},
          {"blk.2.attn_q_norm.weight", "model.layers.2.self_attn.q_norm.weight"},
          {"output_norm.weight", "model.norm.weight"}}) {
        SCOPED_TRACE(ggufName);
        const auto w = source.tensor(hf).toF32(), s = stored(ggufName);
        ASSERT_EQ(w.size(), s.size());
        const auto read = gguf.tensor(hf).toF32();
        for (std::size_t i = 0; i < w.size(); ++i) {
            EXPECT_EQ(s[i], 1.0f + w[i]);
            EXPECT_EQ(read[i], s[i] - 1.0f);
        }
    }
    EXPECT_EQ(g.find("output.weight"), nullptr);  // tied: llama.cpp uses token_embd
    EXPECT_EQ(model::ModelConfig::fromCheckpoint(gguf).arch.normOffset, 1.0f);
    fs::remove(file);
}

// A GGUF method's result on the VLM is written with the Job's own blocks (the text tower's linears are
// found under their prefixed names), not re-encoded from the dense weights.
TEST(Gemma3Export, GgufMethodOfTheVlmWritesTheJobsBlocks) {
    const MethodResult result = test::quantizeTiny(kVlm, "q8_0");
    const io::Checkpoint source = io::Checkpoint::open(kVlm);
    const fs::path file = fs::temp_directory_path() / ("qs_gemma3_vlm_q8_" + std::to_string(::getpid()) + ".gguf");
    fs::remove(file);
    writeGgufResult(source, result, file, {}, {}, CancelToken{});
    const io::Checkpoint gguf = io::Checkpoint::open(file);
    const io::GgufFile& g = *gguf.gguf();
    for (const auto& [module, name] : {std::pair<std::string, std::string>{"self_attn.v_proj", "blk.3.attn_v.weight"},
                                       {"mlp.down_proj", "blk.3.ffn_down.weight"}}) {
        const quant::QuantizedLinear& q = *result.layers[3].at(module);
        const auto stored = g.view(*g.find(name)).bytes();
        ASSERT_EQ(stored.size(), q.blocks.size()) << name;
        EXPECT_EQ(std::memcmp(stored.data(), q.blocks.data(), stored.size()), 0) << name;
    }
    fs::remove(file);
}
