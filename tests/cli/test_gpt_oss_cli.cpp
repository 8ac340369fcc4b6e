// gpt-oss through the CLI, on a tiny BF16 checkpoint written byte by byte here: `quantize --method
// mxfp4` writes gpt-oss's own MXFP4 layout without a forward pass (and says there is no KL), `inspect`
// reads it, `dequantize` brings it back to BF16 with the same tensor names, and the methods that need
// the model to run are refused in one line. The arithmetic is tested in tests/pipeline/test_gpt_oss_mxfp4.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "qs/formats/linear_reader.h"
#include "qs/io/checkpoint.h"
#include "qs/io/gguf_file.h"

#include "cli_process.h"
#include "safetensors_builder.h"

namespace {

using namespace qs::test;

constexpr int kExperts = 2, kHidden = 64, kWidth = 32;

// BF16 bit patterns of small random values: sign, exponent 2^-8 .. 2^-5, random mantissa.
std::vector<std::byte> randomBf16(std::mt19937& rng, std::size_t count) {
    std::vector<std::uint16_t> bits(count);
    for (auto& b : bits)
        b = static_cast<std::uint16_t>(((rng() & 1u) << 15) | ((119u + rng() % 4u) << 7) | (rng() & 0x7Fu));
    return u16Bytes(bits);
}

void writeBf16GptOss(const std::filesystem::path& dir) {
    std::mt19937 rng(7);
    const auto t = [&](std::string name, std::vector<std::int64_t> shape) {
        std::size_t n = 1;
        for (auto d : shape) n *= static_cast<std::size_t>(d);
        return RawTensor{std::move(name), "BF16", std::move(shape), randomBf16(rng, n)};
    };
    const std::string p = "model.layers.0.";
    std::filesystem::create_directories(dir);
    writeFile(dir / "model.safetensors",
              safetensorsImage(
                  {t("model.embed_tokens.weight", {16, kHidden}), t(p + "self_attn.q_proj.weight", {kHidden, kHidden}),
                   t(p + "mlp.router.weight", {kExperts, kHidden}), t(p + "mlp.router.bias", {kExperts}),
                   t(p + "mlp.experts.gate_up_proj", {kExperts, kHidden, 2 * kWidth}),
                   t(p + "mlp.experts.gate_up_proj_bias", {kExperts, 2 * kWidth}),
                   t(p + "mlp.experts.down_proj", {kExperts, kWidth, kHidden}),
                   t(p + "mlp.experts.down_proj_bias", {kExperts, kHidden}), t("model.norm.weight", {kHidden})}));
    std::ofstream(dir / "config.json") << nlohmann::json{{"model_type", "gpt_oss"},       {"hidden_size", kHidden},
                                                         {"intermediate_size", kWidth},   {"num_hidden_layers", 1},
                                                         {"num_local_experts", kExperts}, {"vocab_size", 16}}
                                              .dump();
}

std::set<std::string> namesOf(const qs::io::Checkpoint& ck) {
    std::set<std::string> names;
    for (const auto& t : ck.tensors()) names.insert(t.info->name);
    return names;
}

TEST(GptOssCli, Mxfp4WithoutAForwardPassAndBackToBf16) {
    TempDir tmp;
    const auto source = tmp.path() / "bf16", mxfp4 = tmp.path() / "mxfp4", back = tmp.path() / "back";
    writeBf16GptOss(source);

    const auto q = runCli({"quantize", source.string(), "--method", "mxfp4", "--out", mxfp4.string()});
    ASSERT_EQ(q.exitCode, 0) << q.err;
    EXPECT_NE(q.out.find("gpt-oss MXFP4: 2 expert tensors"), std::string::npos) << q.out;
    EXPECT_NE(q.out.find("no KL"), std::string::npos) << q.out;
    const auto quantized = qs::io::Checkpoint::open(mxfp4);
    EXPECT_NE(quantized.find("model.layers.0.mlp.experts.gate_up_proj_blocks"), nullptr);
    EXPECT_NE(quantized.find("model.layers.0.mlp.experts.down_proj_scales"), nullptr);
    EXPECT_EQ(quantized.config().at("quantization_config").at("quant_method"), "mxfp4");
    EXPECT_EQ(qs::formats::LinearReader(quantized).format().layers.size(), 2u * kExperts);

    const auto i = runCli({"inspect", mxfp4.string()});
    ASSERT_EQ(i.exitCode, 0) << i.err;
    EXPECT_NE(i.out.find("mxfp4"), std::string::npos) << i.out;

    const auto d = runCli({"dequantize", mxfp4.string(), "--out", back.string()});
    ASSERT_EQ(d.exitCode, 0) << d.err;
    EXPECT_EQ(namesOf(qs::io::Checkpoint::open(back)), namesOf(qs::io::Checkpoint::open(source)));

    const auto refused =
        runCli({"quantize", source.string(), "--method", "gptq4", "--out", (tmp.path() / "x").string()});
    EXPECT_EQ(refused.exitCode, 2);
    EXPECT_NE(refused.err.find("only --method mxfp4"), std::string::npos) << refused.err;
    EXPECT_FALSE(std::filesystem::exists(tmp.path() / "x"));
}

// The tiny gpt-oss (tests/data/gptoss) through compare: the forward pass runs it, and each method
// quantizes the attention and every expert's fused gate_up_proj and down_proj, one linear each. 8-bit
// GPTQ must cost far less KL than 4-bit RTN, or the quantized experts were not what ran.
TEST(GptOssCli, CompareQuantizesEveryExpertAndMeasuresTheKl) {
    TempDir tmp;
    const std::string tiny = std::string(QS_TEST_DATA_DIR) + "/gptoss/gptoss-tiny",
                      json = (tmp.path() / "report.json").string();
    const auto r = runCli({"compare", tiny, "--methods", "rtn4,gptq4,fp8,nvfp4,gptq8", "--samples", "4", "--seq-len",
                           "128", "--eval-samples", "4", "--json", json});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    std::ifstream in(json);
    const nlohmann::json report = nlohmann::json::parse(in);
    ASSERT_EQ(report["methods"].size(), 5u);
    std::map<std::string, double> kl;
    for (const auto& m : report["methods"]) {
        EXPECT_EQ(m["modules"].size(), 4u * (4u + 4u * 2u))
            << m["method"];  // 4 layers: q, k, v, o and 4 experts x (gate_up, down)
        kl[m["method"].get<std::string>()] = m["kl"]["mean_kld"]["value"].get<double>();
    }
    for (const auto& [method, value] : kl) EXPECT_TRUE(std::isfinite(value) && value > 0.0) << method;
    EXPECT_LT(kl["gptq8"] * 20.0, kl["rtn4"]);
    EXPECT_LT(kl["gptq4"], kl["rtn4"]);
}

// A GGUF method on the tiny gpt-oss: the Job quantizes each expert, llama.cpp's layout takes its stacked
// tensors (gate_up_proj's rows split into ffn_gate_exps and ffn_up_exps), and the imatrix of the
// calibration has a row per expert. The safetensors methods stay refused in one line (above).
TEST(GptOssCli, AGgufMethodWritesItsStackedExpertsAndAnImatrix) {
    TempDir tmp;
    const std::string tiny = std::string(QS_TEST_DATA_DIR) + "/gptoss/gptoss-tiny";
    const auto out = tmp.path() / "q8.gguf", imatrix = tmp.path() / "q8.imatrix.gguf";
    const auto r = runCli({"quantize", tiny, "--method", "q8_0", "--samples", "4", "--seq-len", "64", "--eval-samples",
                           "2", "--out", out.string(), "--imatrix-out", imatrix.string()});
    ASSERT_EQ(r.exitCode, 0) << r.err;
    const auto written = qs::io::Checkpoint::open(out);
    ASSERT_NE(written.gguf(), nullptr);
    for (const char* name : {"blk.0.ffn_gate_exps.weight", "blk.0.ffn_up_exps.weight", "blk.3.ffn_down_exps.weight"}) {
        const qs::io::TensorInfo* info = written.gguf()->find(name);
        ASSERT_NE(info, nullptr) << name;
        EXPECT_EQ(*info->ggmlType, qs::io::GgmlType::Q8_0) << name;
    }
    const auto im = qs::io::GgufFile::open(imatrix);
    const qs::io::TensorInfo* sums = im.find("blk.2.ffn_up_exps.weight.in_sum2");
    ASSERT_NE(sums, nullptr);
    EXPECT_EQ(sums->shape.front(), 4);  // a row per expert
}

// A gpt-oss GGUF (the tiny checkpoint written as F16) opens with its experts' gate, up and down apart:
// compare measures the methods on it, a GGUF method writes a GGUF again, and a safetensors method is
// refused in one line before any work, since vLLM loads gpt-oss's experts only stacked.
TEST(GptOssCli, AGptOssGgufComparesAndRequantizesToGguf) {
    TempDir tmp;
    const std::string tiny = std::string(QS_TEST_DATA_DIR) + "/gptoss/gptoss-tiny";
    const auto f16 = tmp.path() / "f16.gguf", json = tmp.path() / "report.json";
    ASSERT_EQ(runCli({"quantize", tiny, "--method", "f16", "--out", f16.string()}).exitCode, 0);

    const auto compared = runCli({"compare", f16.string(), "--methods", "rtn4,gptq4,q4_k_m", "--samples", "4",
                                  "--seq-len", "64", "--eval-samples", "2", "--json", json.string()});
    ASSERT_EQ(compared.exitCode, 0) << compared.err;
    std::ifstream in(json);
    const nlohmann::json report = nlohmann::json::parse(in);
    ASSERT_EQ(report["methods"].size(), 3u);
    for (const auto& m : report["methods"]) {
        EXPECT_EQ(m["modules"].size(), 4u * (4u + 4u * 3u))
            << m["method"];  // q, k, v, o and 4 experts x (gate, up, down)
        const double kl = m["kl"]["mean_kld"]["value"].get<double>();
        EXPECT_TRUE(std::isfinite(kl) && kl > 0.0) << m["method"];
    }

    const auto refused =
        runCli({"quantize", f16.string(), "--method", "gptq4", "--out", (tmp.path() / "gptq").string()});
    EXPECT_NE(refused.exitCode, 0);
    EXPECT_NE(refused.err.find("gpt-oss GGUF"), std::string::npos) << refused.err;
    // The check before the Job words it so; the exporter's, after the work, says "cannot export: ...".
    EXPECT_NE(refused.err.find("cannot export gptq4 as"), std::string::npos) << refused.err;
    EXPECT_FALSE(std::filesystem::exists(tmp.path() / "gptq"));

    const auto q4 = tmp.path() / "q4.gguf";
    const auto requantized = runCli({"quantize", f16.string(), "--method", "q4_k_m", "--out", q4.string()});
    ASSERT_EQ(requantized.exitCode, 0) << requantized.err;
    const auto written = qs::io::Checkpoint::open(q4);
    ASSERT_NE(written.gguf(), nullptr);
    EXPECT_EQ(*written.gguf()->find("blk.0.ffn_up_exps.bias")->ggmlType, qs::io::GgmlType::F32);
    EXPECT_NE(written.find("model.layers.3.mlp.experts.2.down_proj.bias"), nullptr);
}
}  // namespace
