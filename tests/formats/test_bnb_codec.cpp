// bitsandbytes NF4 / FP4 (with double quantisation) and LLM.int8, docs/formats/bitsandbytes.md.
#include <gtest/gtest.h>

#include <random>

#include "qs/formats/linear_reader.h"

#include "expect_weight.h"
#include "fixture.h"

namespace qs::formats::test {
namespace {

const std::string kPrefix = "model.layers.0.self_attn.v_proj";

const std::vector<float> kNf4 = {-1.0f,
                                 -0.6961928009986877f,
                                 -0.5250730514526367f,
                                 -0.39491748809814453f,
                                 -0.28444138169288635f,
                                 -0.18477343022823334f,
                                 -0.09105003625154495f,
                                 0.0f,
                                 0.07958029955625534f,
                                 0.16093020141124725f,
                                 0.24611230194568634f,
                                 0.33791524171829224f,
                                 0.44070982933044434f,
                                 0.5626170039176941f,
                                 0.7229568362236023f,
                                 1.0f};

std::vector<float> bnbFp4Map() {
    const float base[8] = {0.0f, 0.0625f, 8.0f, 12.0f, 4.0f, 6.0f, 2.0f, 3.0f};
    std::vector<float> m;
    for (int i = 0; i < 16; ++i) m.push_back((i < 8 ? 1.0f : -1.0f) * base[i % 8] / 12.0f);
    return m;
}

// FIRST element in the HIGH nibble; an odd count is padded with a zero code.
std::vector<std::uint8_t> packHighFirst(const std::vector<std::uint8_t>& codes) {
    std::vector<std::uint8_t> b((codes.size() + 1) / 2, 0);
    for (std::size_t i = 0; i < codes.size(); ++i)
        b[i / 2] |= static_cast<std::uint8_t>(i % 2 == 0 ? codes[i] << 4 : codes[i]);
    return b;
}

void addQuantState(Fixture& f, const std::string& type, const nlohmann::json& state) {
    const std::string text = state.dump();
    f.add(kPrefix + ".weight.quant_state.bitsandbytes__" + type, "U8", {static_cast<std::int64_t>(text.size())},
          std::vector<std::uint8_t>(text.begin(), text.end()));
}

nlohmann::json bnbConfig(const std::string& type, bool doubleQuant) {
    return {{"quant_method", "bitsandbytes"},
            {"_load_in_4bit", true},
            {"_load_in_8bit", false},
            {"load_in_4bit", true},
            {"load_in_8bit", false},
            {"bnb_4bit_quant_type", type},
            {"bnb_4bit_use_double_quant", doubleQuant},
            {"bnb_4bit_compute_dtype", "bfloat16"},
            {"bnb_4bit_quant_storage", "uint8"}};
}

TEST(Bnb4BitCodec, Nf4WithDoubleQuantisation) {
    const int n = 48, k = 192, blocksize = 32, blocks = n * k / blocksize;  // 288 blocks -> 2 nested scales
    std::mt19937 rng(81);
    std::vector<std::uint8_t> codes(n * k), absCodes(blocks);
    for (auto& c : codes) c = static_cast<std::uint8_t>(rng() % 16);
    for (auto& a : absCodes) a = static_cast<std::uint8_t>(rng() % 256);
    codes[0] = 0xA;
    codes[1] = 0x3;  // byte 0 = 0xA3
    std::vector<float> nestedMap(256);
    for (int i = 0; i < 256; ++i) nestedMap[i] = static_cast<float>(i - 128) / 128.0f;
    const std::vector<float> nestedAbsmax = {0.02f, 0.05f};
    const float offset = 0.03125f;
    Fixture f("bnb_nf4");
    f.add(kPrefix + ".weight", "U8", {n * k / 2, 1}, packHighFirst(codes));
    f.add(kPrefix + ".weight.absmax", "U8", {blocks}, absCodes);
    f.addF32(kPrefix + ".weight.quant_map", {16}, kNf4);
    f.addF32(kPrefix + ".weight.nested_absmax", {2}, nestedAbsmax);
    f.addF32(kPrefix + ".weight.nested_quant_map", {256}, nestedMap);
    addQuantState(f, "nf4",
                  {{"quant_type", "nf4"},
                   {"blocksize", blocksize},
                   {"dtype", "bfloat16"},
                   {"shape", {n, k}},
                   {"nested_blocksize", 256},
                   {"nested_dtype", "float32"},
                   {"nested_offset", offset}});
    f.setQuantizationConfig(bnbConfig("nf4", true));
    const auto ck = f.open();
    ASSERT_EQ(std::to_integer<int>(ck.tensor(kPrefix + ".weight").bytes()[0]), 0xA3);
    const LinearReader reader(ck);
    EXPECT_EQ(reader.format().format, Format::Bitsandbytes);
    EXPECT_EQ(reader.format().variant, "nf4");
    const auto d = reader.decode(kPrefix);
    const auto absmax = [&](std::int64_t b) { return nestedMap[absCodes[b]] * nestedAbsmax[b / 256] + offset; };
    expectWeight(
        d.weight, n, k,
        [&](std::int64_t r, std::int64_t c) {
            const auto i = r * k + c;
            return kNf4[codes[i]] * absmax(i / blocksize);
        },
        0.0f);
    EXPECT_EQ(d.parts.codes[0], 0xA);
    EXPECT_EQ(d.parts.codes[1], 0x3);
    EXPECT_EQ(d.parts.codeKind, quant::CodeKind::Nf4);
    EXPECT_EQ(d.parts.scaleCodes, absCodes);
    EXPECT_EQ(d.parts.scaleScales, nestedAbsmax);
    EXPECT_EQ(d.parts.scaleOffset, offset);
    expectPartsReproduceWeight(d);
    ASSERT_EQ(reader.format().layers.size(), 1u);
    EXPECT_EQ(reader.format().layers[0].summary(), "nf4 g32 sym");
}

TEST(Bnb4BitCodec, Fp4UsesTheStoredMapAndBlocksMayStraddleRows) {
    const int n = 5, k = 41, blocksize = 64;  // 205 codes: odd, and blocks cross rows
    std::mt19937 rng(82);
    std::vector<std::uint8_t> codes(n * k);
    for (auto& c : codes) c = static_cast<std::uint8_t>(rng() % 16);
    const std::vector<float> absmax = {0.5f, 1.25f, 2.0f, 0.75f};
    const auto map = bnbFp4Map();
    Fixture f("bnb_fp4");
    f.add(kPrefix + ".weight", "U8", {(n * k + 1) / 2, 1}, packHighFirst(codes));
    f.addF32(kPrefix + ".weight.absmax", {4}, absmax);
    f.addF32(kPrefix + ".weight.quant_map", {16}, map);
    addQuantState(f, "fp4", {{"quant_type", "fp4"}, {"blocksize", blocksize}, {"dtype", "float16"}, {"shape", {n, k}}});
    f.setQuantizationConfig(bnbConfig("fp4", false));
    const auto ck = f.open();
    const auto d = LinearReader(ck).decode(kPrefix);
    expectWeight(
        d.weight, n, k,
        [&](std::int64_t r, std::int64_t c) {
            const auto i = r * k + c;
            return map[codes[i]] * absmax[i / blocksize];
        },
        0.0f);
    EXPECT_FALSE(d.partsExact);  // no per-row scale grid exists for straddling blocks
}

TEST(Bnb4BitCodec, Fp4PartsAreE2m1OverAbsmaxOverSix) {
    const int n = 4, k = 64, blocksize = 64;
    std::mt19937 rng(83);
    std::vector<std::uint8_t> codes(n * k);
    for (auto& c : codes) do
            c = static_cast<std::uint8_t>(rng() % 16);
        while ((c & 7) == 1);  // 0.0625/12 has no E2M1 twin
    const std::vector<float> absmax = {0.5f, 1.5f, 3.0f, 0.375f};
    const auto map = bnbFp4Map();
    Fixture f("bnb_fp4_parts");
    f.add(kPrefix + ".weight", "U8", {n * k / 2, 1}, packHighFirst(codes));
    f.addF32(kPrefix + ".weight.absmax", {4}, absmax);
    f.addF32(kPrefix + ".weight.quant_map", {16}, map);
    addQuantState(f, "fp4", {{"quant_type", "fp4"}, {"blocksize", blocksize}, {"dtype", "float16"}, {"shape", {n, k}}});
    f.setQuantizationConfig(bnbConfig("fp4", false));
    const auto ck = f.open();
    const auto d = LinearReader(ck).decode(kPrefix);
    expectWeight(
        d.weight, n, k, [&](std::int64_t r, std::int64_t c) { return map[codes[r * k + c]] * absmax[r]; }, 0.0f);
    EXPECT_EQ(d.parts.codeKind, quant::CodeKind::E2M1);
    expectPartsReproduceWeight(d);
}

TEST(BnbInt8Codec, RowsScaleBySCBOver127) {
    const int n = 6, k = 10;
    std::mt19937 rng(84);
    std::vector<std::uint8_t> q(n * k);
    for (auto& v : q) v = static_cast<std::uint8_t>(rng() & 0xFF);
    const std::vector<float> scb = {1.0f, 2.5f, 0.125f, 127.0f, 3.0f, 0.5f};
    Fixture f("bnb_int8");
    f.add(kPrefix + ".weight", "I8", {n, k}, q);
    f.addF32(kPrefix + ".SCB", {n}, scb);
    f.add(kPrefix + ".weight_format", "U8", {}, {0});
    f.setQuantizationConfig({{"quant_method", "bitsandbytes"},
                             {"load_in_8bit", true},
                             {"load_in_4bit", false},
                             {"llm_int8_threshold", 6.0}});
    const auto ck = f.open();
    const LinearReader reader(ck);
    EXPECT_EQ(reader.format().variant, "int8");
    const auto d = reader.decode(kPrefix);
    expectWeight(
        d.weight, n, k,
        [&](std::int64_t r, std::int64_t c) {
            return static_cast<float>(static_cast<std::int8_t>(q[r * k + c])) * scb[r] / 127.0f;
        },
        0.0f);
    // The weight follows bitsandbytes (v * SCB / 127); the parts hold SCB / 127 as the row's one scale,
    // so they may differ in the last bit. QuantScope writes no int8 layout: no Job result has to
    // evaluate to this reader's weights.
    expectPartsReproduceWeight(d, 2.5e-7f);
}

}  // namespace
}  // namespace qs::formats::test
