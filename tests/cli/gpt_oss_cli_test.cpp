// gpt-oss through the CLI, on a tiny BF16 checkpoint written byte by byte here: `quantize --method
// mxfp4` writes gpt-oss's own MXFP4 layout without a forward pass (and says there is no KL), `inspect`
// reads it, `dequantize` brings it back to BF16 with the same tensor names, and the methods that need
// the model to run are refused in one line. The arithmetic is tested in tests/pipeline/test_gpt_oss_mxfp4.
#include <algorithm>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_process.h"
#include "qs/formats/linear_reader.h"
#include "qs/io/checkpoint.h"
#include "safetensors_builder.h"

namespace {

using namespace qs::test;

constexpr int kExperts = 2, kHidden = 64, kWidth = 32;

// BF16 bit patterns of small random values: sign, exponent 2^-8 .. 2^-5, random mantissa.
std::vector<std::byte> randomBf16(std::mt19937& rng, std::size_t count) {
    std::vector<std::uint16_t> bits(count);
    for (auto& b : bits) b = static_cast<std::uint16_t>(((rng() & 1u) << 15) | ((119u + rng() % 4u) << 7) | (rng() & 0x7Fu));
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
              safetensorsImage({t("model.embed_tokens.weight", {16, kHidden}), t(p + "self_attn.q_proj.weight", {kHidden, kHidden}),
                                t(p + "mlp.router.weight", {kExperts, kHidden}), t(p + "mlp.router.bias", {kExperts}),
                                t(p + "mlp.experts.gate_up_proj", {kExperts, kHidden, 2 * kWidth}),
                                t(p + "mlp.experts.gate_up_proj_bias", {kExperts, 2 * kWidth}),
                                t(p + "mlp.experts.down_proj", {kExperts, kWidth, kHidden}),
                                t(p + "mlp.experts.down_proj_bias", {kExperts, kHidden}), t("model.norm.weight", {kHidden})}));
    std::ofstream(dir / "config.json") << nlohmann::json{{"model_type", "gpt_oss"}, {"hidden_size", kHidden},
                                                         {"intermediate_size", kWidth}, {"num_hidden_layers", 1},
                                                         {"num_local_experts", kExperts}, {"vocab_size", 16}}.dump();
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

    const auto refused = runCli({"quantize", source.string(), "--method", "gptq4", "--out", (tmp.path() / "x").string()});
    EXPECT_EQ(refused.exitCode, 2);
    EXPECT_NE(refused.err.find("only --method mxfp4"), std::string::npos) << refused.err;
    EXPECT_FALSE(std::filesystem::exists(tmp.path() / "x"));
}

// The tiny gpt-oss runs (tests/data/gptoss), but the calibrated methods cannot address its stacked experts
// yet: compare says so in one line before any work, and writes nothing.
TEST(GptOssCli, CompareRefusesTheStackedExpertsInOneLine) {
    const std::string tiny = std::string(QS_TEST_DATA_DIR) + "/gptoss/gptoss-tiny";
    const auto r = runCli({"compare", tiny, "--methods", "rtn4", "--samples", "2", "--seq-len", "64", "--eval-samples", "2"});
    EXPECT_EQ(r.exitCode, 2) << r.out << r.err;
    const auto error = r.err.find("error: ");
    ASSERT_NE(error, std::string::npos) << r.err;
    EXPECT_NE(r.err.find("gpt-oss's experts are stacked tensors", error), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin() + static_cast<std::ptrdiff_t>(error), r.err.end(), '\n'), 1) << r.err;   // one line
}

}  // namespace
