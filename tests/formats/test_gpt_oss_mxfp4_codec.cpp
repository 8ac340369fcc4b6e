// gpt-oss MXFP4 (docs/formats/gpt-oss-mxfp4.md): *_blocks [E, N, K/32, 16] and *_scales [E, N, K/32], per expert.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "qs/error.h"
#include "qs/formats/linear_reader.h"

#include "expect_weight.h"
#include "fixture.h"

namespace qs::formats::test {
namespace {

const std::string kPrefix = "model.layers.0.mlp.experts.gate_up_proj";

TEST(GptOssMxfp4Codec, DecodesEachExpertFromBlocksAndE8m0Scales) {
    const int e = 3, n = 6, k = 64;
    std::mt19937 rng(71);
    std::vector<std::uint8_t> codes(e * n * k), exps(e * n * k / 32);
    for (auto& c : codes) c = static_cast<std::uint8_t>(rng() % 16);
    for (auto& x : exps) x = static_cast<std::uint8_t>(118 + rng() % 16);
    codes[0] = 0x2;  // expert 0, row 0: element 0 = +1 in the low nibble,
    codes[1] = 0xF;  // element 1 = -6 in the high nibble -> byte 0xF2
    exps[0] = 127;   // 2^0
    std::vector<std::uint8_t> blocks(codes.size() / 2);
    for (std::size_t i = 0; i < blocks.size(); ++i)
        blocks[i] = static_cast<std::uint8_t>(codes[2 * i] | (codes[2 * i + 1] << 4));
    std::vector<float> bias(e * n);
    for (int i = 0; i < e * n; ++i) bias[i] = static_cast<float>(i) * 0.5f;
    Fixture f("gptoss");
    f.add(kPrefix + "_blocks", "U8", {e, n, k / 32, 16}, blocks);
    f.add(kPrefix + "_scales", "U8", {e, n, k / 32}, exps);
    f.addBF16(kPrefix + "_bias", {e, n}, bias);
    f.addBF16("model.layers.0.mlp.router.weight", {e, k}, std::vector<float>(e * k, 0.25f));
    f.setQuantizationConfig({{"quant_method", "mxfp4"},
                             {"modules_to_not_convert", {"model.layers.*.self_attn", "model.layers.*.mlp.router"}}});
    const auto ck = f.open();
    ASSERT_EQ(std::to_integer<int>(ck.tensor(kPrefix + "_blocks").bytes()[0]), 0xF2);
    const LinearReader reader(ck);
    EXPECT_EQ(reader.format().format, Format::Mxfp4);
    ASSERT_EQ(reader.format().layers.size(), 3u);
    EXPECT_EQ(reader.format().layers[2].ref.label(), kPrefix + "[2]");
    EXPECT_EQ(reader.format().layers[2].rows, n);
    EXPECT_EQ(reader.format().layers[2].cols, k);
    for (int x = 0; x < e; ++x) {
        const auto d = reader.decode(kPrefix, x);
        expectWeight(
            d.weight, n, k,
            [&](std::int64_t r, std::int64_t c) {
                const auto row = static_cast<std::int64_t>(x) * n + r;
                return e2m1Value(codes[row * k + c]) * std::ldexp(1.0f, exps[row * (k / 32) + c / 32] - 127);
            },
            0.0f);
        ASSERT_EQ(d.bias.size(), static_cast<std::size_t>(n));
        EXPECT_EQ(d.bias[1], bias[x * n + 1]);
        expectPartsReproduceWeight(d);
    }
    const auto first = reader.decode(kPrefix, 0);
    EXPECT_EQ(first.weight(0, 0), 1.0f);
    EXPECT_EQ(first.weight(0, 1), -6.0f);
    EXPECT_THROW((void)reader.decode(kPrefix, 3), Error);
    EXPECT_FALSE(reader.decode("model.layers.0.mlp.router").quantized);
}

TEST(GptOssMxfp4Codec, ScalesOfTheWrongShapeAreAnErrorNamingThem) {
    Fixture f("gptoss_bad");
    f.add(kPrefix + "_blocks", "U8", {2, 4, 2, 16}, std::vector<std::uint8_t>(2 * 4 * 2 * 16, 0x11));
    f.add(kPrefix + "_scales", "U8", {2, 4, 1}, std::vector<std::uint8_t>(8, 127));
    f.setQuantizationConfig({{"quant_method", "mxfp4"}});
    const auto ck = f.open();
    try {
        (void)LinearReader(ck).decode(kPrefix, 1);
        FAIL() << "expected qs::Error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(kPrefix + "_scales"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace qs::formats::test
