// FP8 checkpoints (quant_method "fp8"), docs/formats/fp8.md: 128x128 blocks with weight_scale_inv (F32 or
// UE8M0), per-tensor weight_scale (+ input_scale), per-channel weight_scale. Scales multiply.
#include <gtest/gtest.h>

#include <random>

#include "qs/error.h"
#include "qs/formats/detect.h"
#include "qs/formats/linear_reader.h"

#include "expect_weight.h"
#include "fixture.h"

namespace qs::formats::test {
namespace {

const std::string kPrefix = "model.layers.0.mlp.gate_proj";

std::vector<std::uint8_t> randomE4m3(std::size_t count, unsigned seed) {
    std::mt19937 rng(seed);
    std::vector<std::uint8_t> codes(count);
    for (auto& c : codes) {
        do c = static_cast<std::uint8_t>(rng() & 0xFF);
        while ((c & 0x7F) == 0x7F);  // no NaN
    }
    return codes;
}

TEST(Fp8Codec, BlocksOf128MultiplyByWeightScaleInvAndCropAtTheEdges) {
    const int n = 160, k = 200;  // 2 x 2 blocks, the last ones partial
    const auto codes = randomE4m3(n * k, 31u);
    const std::vector<float> scales = {0.5f, 0.003f, 2.25f, 1.0f / 448.0f};
    Fixture f("fp8_block");
    f.add(kPrefix + ".weight", "F8_E4M3", {n, k}, codes);
    f.addF32(kPrefix + ".weight_scale_inv", {2, 2}, scales);
    f.addBF16("model.layers.0.mlp.down_proj.weight", {4, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
    f.setQuantizationConfig({{"quant_method", "fp8"},
                             {"activation_scheme", "dynamic"},
                             {"fmt", "e4m3"},
                             {"weight_block_size", {128, 128}}});
    const auto ck = f.open();
    const LinearReader reader(ck);
    EXPECT_EQ(reader.format().format, Format::Fp8);
    EXPECT_EQ(reader.format().variant, "block");
    const auto d = reader.decode(kPrefix);
    expectWeight(
        d.weight, n, k,
        [&](std::int64_t r, std::int64_t c) { return e4m3Value(codes[r * k + c]) * scales[(r / 128) * 2 + c / 128]; },
        0.0f);
    EXPECT_EQ(d.parts.codeKind, quant::CodeKind::E4M3);
    EXPECT_EQ(d.parts.blockRows, 128);
    EXPECT_EQ(d.parts.blockCols, 128);
    EXPECT_EQ(d.parts.codes[5], codes[5]);
    expectPartsReproduceWeight(d);
    ASSERT_EQ(reader.format().layers.size(), 1u);
    EXPECT_EQ(reader.format().layers[0].summary(), "fp8 block 128x128 sym");
    ASSERT_EQ(reader.format().denseLinears.size(), 1u);
    EXPECT_EQ(reader.decode("model.layers.0.mlp.down_proj").weight(3, 1), 8.0f);
}

TEST(Fp8Codec, Ue8m0ScalesArePowersOfTwoWithBias127) {
    const int n = 128, k = 256;
    const auto codes = randomE4m3(n * k, 32u);
    const std::vector<std::uint8_t> exps = {127, 120};  // 1 and 2^-7
    Fixture f("fp8_ue8m0");
    f.add(kPrefix + ".weight", "F8_E4M3", {n, k}, codes);
    f.add(kPrefix + ".weight_scale_inv", "F8_E8M0", {1, 2}, exps);
    f.setQuantizationConfig({{"quant_method", "fp8"},
                             {"activation_scheme", "dynamic"},
                             {"weight_block_size", {128, 128}},
                             {"scale_fmt", "ue8m0"}});
    const auto ck = f.open();
    const auto d = LinearReader(ck).decode(kPrefix);
    expectWeight(
        d.weight, n, k,
        [&](std::int64_t r, std::int64_t c) { return e4m3Value(codes[r * k + c]) * (c < 128 ? 1.0f : 1.0f / 128.0f); },
        0.0f);
}

TEST(Fp8Codec, PerTensorWeightScaleWithStaticInputScale) {
    const int n = 24, k = 40;
    const auto codes = randomE4m3(n * k, 33u);
    Fixture f("fp8_tensor");
    f.add(kPrefix + ".weight", "F8_E4M3", {n, k}, codes);
    f.addF32(kPrefix + ".weight_scale", {}, {0.0125f});
    f.addF32(kPrefix + ".input_scale", {}, {0.5f});
    f.setQuantizationConfig({{"quant_method", "fp8"}, {"activation_scheme", "static"}});
    const auto ck = f.open();
    const LinearReader reader(ck);
    EXPECT_EQ(reader.format().variant, "tensor");
    const auto d = reader.decode(kPrefix);
    expectWeight(
        d.weight, n, k, [&](std::int64_t r, std::int64_t c) { return e4m3Value(codes[r * k + c]) * 0.0125f; }, 0.0f);
    EXPECT_EQ(d.parts.blockRows, n);
    EXPECT_EQ(d.parts.blockCols, k);
    EXPECT_EQ(reader.format().layers.at(0).granularity, "tensor");
    expectPartsReproduceWeight(d);
}

TEST(Fp8Codec, PerChannelWeightScale) {
    const int n = 16, k = 32;
    const auto codes = randomE4m3(n * k, 34u);
    std::vector<float> scales(n);
    for (int r = 0; r < n; ++r) scales[r] = 0.001f * static_cast<float>(r + 1);
    Fixture f("fp8_channel");
    f.add(kPrefix + ".weight", "F8_E4M3", {n, k}, codes);
    f.addF32(kPrefix + ".weight_scale", {n, 1}, scales);
    f.setQuantizationConfig({{"quant_method", "fp8"}, {"activation_scheme", "dynamic"}});
    const auto ck = f.open();
    const auto d = LinearReader(ck).decode(kPrefix);
    expectWeight(
        d.weight, n, k, [&](std::int64_t r, std::int64_t c) { return e4m3Value(codes[r * k + c]) * scales[r]; }, 0.0f);
    EXPECT_EQ(d.parts.blockCols, k);
}

TEST(Fp8Codec, BlockScalesOfTheWrongShapeAreAnErrorNamingThem) {
    Fixture f("fp8_bad");
    f.add(kPrefix + ".weight", "F8_E4M3", {256, 256}, randomE4m3(256 * 256, 35u));
    f.addF32(kPrefix + ".weight_scale_inv", {2, 3}, {1, 1, 1, 1, 1, 1});
    f.setQuantizationConfig(
        {{"quant_method", "fp8"}, {"activation_scheme", "dynamic"}, {"weight_block_size", {128, 128}}});
    const auto ck = f.open();
    const auto info = detect(ck);  // detection lists the layer and says what is wrong with it
    ASSERT_EQ(info.layers.size(), 1u);
    EXPECT_NE(info.layers[0].problem.find(kPrefix + ".weight_scale_inv"), std::string::npos) << info.layers[0].problem;
    try {
        (void)LinearReader(ck).decode(kPrefix);
        FAIL() << "expected qs::Error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(kPrefix + ".weight_scale_inv"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("[2, 2]"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace qs::formats::test
