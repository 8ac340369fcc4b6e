// `quantize --weights-only`: the weight-only methods applied to every linear of a checkpoint whose
// architecture QuantScope does not run, on checkpoints written byte by byte here (a Gemma-3-style
// vision-language model, a Qwen2-MoE-style model with routers and a shared-expert gate). On the demo,
// which QuantScope does run, the export is byte for byte the one the Job's path writes.
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include "qs/formats/linear_reader.h"
#include "qs/io/checkpoint.h"
#include "qs/quant/nvfp4.h"

#include "cli_process.h"
#include "safetensors_builder.h"

namespace {

using namespace qs::test;

const std::string kDemo = std::string(QS_RESOURCES_DIR) + "/demo";

std::vector<std::byte> randomBf16(std::mt19937& rng, std::size_t count) {
    std::vector<std::uint16_t> bits(count);
    for (auto& b : bits)
        b = static_cast<std::uint16_t>(((rng() & 1u) << 15) | ((119u + rng() % 4u) << 7) | (rng() & 0x7Fu));
    return u16Bytes(bits);
}

struct Model {
    std::vector<RawTensor> tensors;
    std::mt19937 rng{11};
    void add(std::string name, std::vector<std::int64_t> shape) {
        std::size_t n = 1;
        for (auto d : shape) n *= static_cast<std::size_t>(d);
        tensors.push_back({std::move(name), "BF16", std::move(shape), randomBf16(rng, n)});
    }
    void write(const std::filesystem::path& dir, const nlohmann::json& config) const {
        std::filesystem::create_directories(dir);
        writeFile(dir / "model.safetensors", safetensorsImage(tensors));
        std::ofstream(dir / "config.json") << config.dump();
    }
};

// Gemma 3's layout: the text decoder under model.language_model, a SigLIP tower and a projector beside it.
void writeVisionLanguageModel(const std::filesystem::path& dir) {
    Model m;
    m.add("model.language_model.embed_tokens.weight", {32, 64});
    for (const char* p : {"q_proj", "k_proj", "v_proj", "o_proj"})
        m.add(std::string("model.language_model.layers.0.self_attn.") + p + ".weight", {64, 64});
    for (const char* p : {"gate_proj", "up_proj"})
        m.add(std::string("model.language_model.layers.0.mlp.") + p + ".weight", {128, 64});
    m.add("model.language_model.layers.0.mlp.down_proj.weight", {64, 128});
    m.add("model.language_model.layers.0.input_layernorm.weight", {64});
    m.add("model.language_model.norm.weight", {64});
    m.add("model.vision_tower.vision_model.encoder.layers.0.self_attn.q_proj.weight", {32, 32});
    m.add("model.vision_tower.vision_model.encoder.layers.0.mlp.fc1.weight", {64, 32});
    m.add("model.multi_modal_projector.mm_input_projection_weight", {32, 64});
    m.write(dir, {{"model_type", "gemma3"},
                  {"architectures", {"Gemma3ForConditionalGeneration"}},
                  {"text_config", {{"model_type", "gemma3_text"}, {"hidden_size", 64}, {"num_hidden_layers", 1}}}});
}

void writeMoeModel(const std::filesystem::path& dir) {
    Model m;
    m.add("model.embed_tokens.weight", {32, 64});
    m.add("model.layers.0.self_attn.q_proj.weight", {64, 64});
    m.add("model.layers.0.mlp.gate.weight", {4, 64});
    m.add("model.layers.0.mlp.shared_expert_gate.weight", {1, 64});
    for (int e = 0; e < 4; ++e)
        for (const char* p : {"gate_proj", "up_proj"})
            m.add("model.layers.0.mlp.experts." + std::to_string(e) + "." + p + ".weight", {32, 64});
    m.add("lm_head.weight", {32, 64});
    m.write(dir, {{"model_type", "qwen2_moe"}, {"hidden_size", 64}, {"num_hidden_layers", 1}, {"num_experts", 4}});
}

std::vector<std::byte> bytesOf(const qs::io::Checkpoint& ck, const std::string& name) {
    const auto b = ck.tensor(name).bytes();
    return {b.begin(), b.end()};
}

std::string fileText(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(WeightsOnlyCli, OnTheDemoItWritesWhatTheJobWrites) {
    TempDir tmp;
    for (const std::string method : {"fp8", "rtn4", "nf4"}) {
        const auto a = tmp.path() / (method + "-weights-only"), b = tmp.path() / (method + "-job");
        const auto r1 = runCli({"quantize", kDemo, "--method", method, "--weights-only", "--out", a.string()});
        ASSERT_EQ(r1.exitCode, 0) << r1.err;
        EXPECT_NE(r1.out.find("no KL"), std::string::npos) << r1.out;
        const auto r2 = runCli({"quantize", kDemo, "--method", method, "--out", b.string()});
        ASSERT_EQ(r2.exitCode, 0) << r2.err;
        EXPECT_EQ(fileText(a / "model.safetensors"), fileText(b / "model.safetensors")) << method;
        EXPECT_EQ(nlohmann::json::parse(fileText(a / "config.json")),
                  nlohmann::json::parse(fileText(b / "config.json")))
            << method;
        const auto report = nlohmann::json::parse(fileText(a / "quantscope_report.json"));
        EXPECT_EQ(report.at("forward_pass"), false);
        EXPECT_EQ(report.at("weight_error").size(), 14u);
    }
}

TEST(WeightsOnlyCli, AVisionLanguageModelGetsItsTextLinearsQuantizedAndItsTowerKept) {
    TempDir tmp;
    const auto source = tmp.path() / "vlm", out = tmp.path() / "nvfp4";
    writeVisionLanguageModel(source);

    const auto hint = runCli({"quantize", source.string(), "--method", "nvfp4", "--out", out.string()});
    EXPECT_EQ(hint.exitCode, 2);
    EXPECT_NE(hint.err.find("--weights-only"), std::string::npos) << hint.err;
    EXPECT_FALSE(std::filesystem::exists(out));

    const auto r = runCli({"quantize", source.string(), "--method", "nvfp4", "--weights-only", "--out", out.string()});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.out.find("7 linears"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("2 routers / tower linears kept dense"), std::string::npos) << r.out;
    const auto original = qs::io::Checkpoint::open(source), exported = qs::io::Checkpoint::open(out);
    for (const std::string name :
         {"model.vision_tower.vision_model.encoder.layers.0.self_attn.q_proj.weight",
          "model.vision_tower.vision_model.encoder.layers.0.mlp.fc1.weight",
          "model.multi_modal_projector.mm_input_projection_weight", "model.language_model.embed_tokens.weight"})
        EXPECT_EQ(bytesOf(exported, name), bytesOf(original, name)) << name;
    const auto ignore = exported.config().at("quantization_config").at("ignore");
    EXPECT_NE(std::find(ignore.begin(), ignore.end(), "model.vision_tower.vision_model.encoder.layers.0.mlp.fc1"),
              ignore.end())
        << ignore;
    const qs::formats::LinearReader reader(exported);
    const std::string down = "model.language_model.layers.0.mlp.down_proj";
    const qs::MatrixF expected = qs::quant::quantizeNvfp4(original.tensor(down + ".weight").toMatrix()).dequantize();
    // The reader forms scale x global scale x code in its own order: the same numbers to the last bits.
    EXPECT_LE((reader.decodeF32(down) - expected).cwiseAbs().maxCoeff(), 1e-6f * expected.cwiseAbs().maxCoeff());
}

TEST(WeightsOnlyCli, RoutersAndTheSharedExpertGateStayDense) {
    TempDir tmp;
    const auto source = tmp.path() / "moe", out = tmp.path() / "fp8";
    writeMoeModel(source);
    const auto r =
        runCli({"quantize", source.string(), "--method", "fp8-channel", "--weights-only", "--out", out.string()});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    EXPECT_NE(r.out.find("9 linears"), std::string::npos) << r.out;  // q_proj and eight expert projections
    const auto original = qs::io::Checkpoint::open(source), exported = qs::io::Checkpoint::open(out);
    for (const std::string name :
         {"model.layers.0.mlp.gate.weight", "model.layers.0.mlp.shared_expert_gate.weight", "lm_head.weight"})
        EXPECT_EQ(bytesOf(exported, name), bytesOf(original, name)) << name;
    EXPECT_NE(exported.find("model.layers.0.mlp.experts.3.up_proj.weight_scale"), nullptr);

    const auto refused = runCli(
        {"quantize", source.string(), "--method", "gptq4", "--weights-only", "--out", (tmp.path() / "x").string()});
    EXPECT_EQ(refused.exitCode, 2);
    EXPECT_NE(refused.err.find("needs a forward pass"), std::string::npos) << refused.err;
    EXPECT_FALSE(std::filesystem::exists(tmp.path() / "x"));
}

}  // namespace
