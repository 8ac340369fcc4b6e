// docs/formats/compressed-tensors.md: pack-quantized int (sym/asym, group/channel, weight_g_idx, dense
// and 0.12-style 3-bit packing), nvfp4-pack-quantized (global scale divides), mxfp4-pack-quantized,
// float-quantized FP8 (channel, block).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "qs/error.h"
#include "qs/formats/linear_reader.h"

#include "expect_weight.h"
#include "fixture.h"

namespace qs::formats::test {
namespace {

const std::string kPrefix = "model.layers.2.self_attn.o_proj";

nlohmann::json ctConfig(const std::string& format, nlohmann::json weights) {
    return {{"quant_method", "compressed-tensors"},
            {"format", format},
            {"quantization_status", "compressed"},
            {"config_groups",
             {{"group_0", {{"targets", {"Linear"}}, {"weights", std::move(weights)}, {"input_activations", nullptr}}}}},
            {"ignore", {"lm_head"}}};
}

struct IntLayer {
    int n = 16, k = 64, bits = 4, groupSize = 16;  // groupSize -1: per channel
    bool sym = true;
    std::vector<std::vector<int>> q;    // [N][K] signed
    std::vector<std::vector<int>> zp;   // [N][groups] signed
    std::vector<std::vector<float>> s;  // [N][groups]
    std::vector<int> gIdx;              // empty: k / G
    int groups() const { return groupSize == -1 ? 1 : (k + groupSize - 1) / groupSize; }
    int groupOf(int c) const { return gIdx.empty() ? (groupSize == -1 ? 0 : c / groupSize) : gIdx[c]; }
};

IntLayer makeInt(int bits, int groupSize, bool sym, unsigned seed, int n = 16, int k = 64) {
    IntLayer l{n, k, bits, groupSize, sym, {}, {}, {}, {}};
    std::mt19937 rng(seed);
    const int lo = -(1 << (bits - 1)), span = 1 << bits;
    l.q.assign(n, std::vector<int>(k));
    for (auto& row : l.q)
        for (auto& v : row) v = lo + static_cast<int>(rng() % span);
    l.zp.assign(n, std::vector<int>(l.groups(), 0));
    l.s.assign(n, std::vector<float>(l.groups()));
    for (int r = 0; r < n; ++r)
        for (int g = 0; g < l.groups(); ++g) {
            if (!sym) l.zp[r][g] = lo + static_cast<int>(rng() % span);
            l.s[r][g] = static_cast<float>(1 + rng() % 100) / 1024.0f;  // exact in bf16
        }
    return l;
}

// Element i of a line at bits [i*b, i*b+b) of its little-endian word stream (docs/formats/compressed-tensors.md);
// `legacy` puts 32/b whole values in each word (compressed-tensors 0.12).
std::vector<std::uint32_t> packLine(const std::vector<std::uint32_t>& values, int bits, bool legacy) {
    if (legacy) {
        const int per = 32 / bits;
        std::vector<std::uint32_t> w((values.size() + per - 1) / per, 0u);
        for (std::size_t i = 0; i < values.size(); ++i) w[i / per] |= values[i] << (bits * (i % per));
        return w;
    }
    std::vector<std::uint32_t> w((values.size() * bits + 31) / 32, 0u);
    for (std::size_t i = 0; i < values.size(); ++i)
        for (int b = 0; b < bits; ++b)
            if ((values[i] >> b) & 1u) {
                const std::size_t pos = i * bits + b;
                w[pos / 32] |= 1u << (pos % 32);
            }
    return w;
}

void addInt(Fixture& f, const IntLayer& l, bool legacy = false) {
    const std::uint32_t offset = 1u << (l.bits - 1);
    std::vector<std::uint32_t> packed;
    std::size_t width = 0;
    for (const auto& row : l.q) {
        std::vector<std::uint32_t> u;
        for (const int v : row) u.push_back(static_cast<std::uint32_t>(v + static_cast<int>(offset)));
        const auto w = packLine(u, l.bits, legacy);
        width = w.size();
        packed.insert(packed.end(), w.begin(), w.end());
    }
    f.addWords(kPrefix + ".weight_packed", {l.n, static_cast<std::int64_t>(width)}, packed);
    std::vector<float> scales;
    for (const auto& row : l.s) scales.insert(scales.end(), row.begin(), row.end());
    f.addBF16(kPrefix + ".weight_scale", {l.n, l.groups()}, scales);
    f.addI64(kPrefix + ".weight_shape", {2}, {l.n, l.k});
    if (!l.gIdx.empty())
        f.addI32(kPrefix + ".weight_g_idx", {l.k}, std::vector<std::int32_t>(l.gIdx.begin(), l.gIdx.end()));
    if (l.sym) return;
    // Zero points packed along N (dim 0): column g's values down the rows form the stream.
    std::vector<std::vector<std::uint32_t>> columns;
    for (int g = 0; g < l.groups(); ++g) {
        std::vector<std::uint32_t> u;
        for (int r = 0; r < l.n; ++r) u.push_back(static_cast<std::uint32_t>(l.zp[r][g] + static_cast<int>(offset)));
        columns.push_back(packLine(u, l.bits, legacy));
    }
    const auto rows = static_cast<std::int64_t>(columns[0].size());
    std::vector<std::uint32_t> zp;
    for (std::int64_t r = 0; r < rows; ++r)
        for (int g = 0; g < l.groups(); ++g) zp.push_back(columns[g][r]);
    f.addWords(kPrefix + ".weight_zero_point", {rows, l.groups()}, zp);
}

nlohmann::json intArgs(const IntLayer& l) {
    nlohmann::json w = {{"num_bits", l.bits},
                        {"type", "int"},
                        {"symmetric", l.sym},
                        {"strategy", l.groupSize == -1 ? "channel" : "group"},
                        {"group_size", l.groupSize == -1 ? nlohmann::json(nullptr) : nlohmann::json(l.groupSize)}};
    if (!l.gIdx.empty()) w["actorder"] = "group";
    return w;
}

void expectInt(const IntLayer& l, const DecodedLinear& d) {
    expectWeight(
        d.weight, l.n, l.k,
        [&](std::int64_t r, std::int64_t c) {
            const int g = l.groupOf(static_cast<int>(c));
            return static_cast<float>(l.q[r][c] - l.zp[r][g]) * l.s[r][g];
        },
        0.0f);
    expectPartsReproduceWeight(d);
}

void runInt(const std::string& name, const IntLayer& l, bool legacy = false) {
    Fixture f(name);
    addInt(f, l, legacy);
    f.setQuantizationConfig(ctConfig("pack-quantized", intArgs(l)));
    const auto ck = f.open();
    const LinearReader reader(ck);
    EXPECT_EQ(reader.format().format, Format::CompressedTensors);
    EXPECT_EQ(reader.format().variant, "pack-quantized");
    expectInt(l, reader.decode(kPrefix));
    ASSERT_EQ(reader.format().layers.size(), 1u);
    const auto& info = reader.format().layers[0];
    EXPECT_EQ(info.bits, l.bits);
    EXPECT_EQ(info.symmetric, l.sym);
    EXPECT_EQ(info.actOrder, !l.gIdx.empty());
    EXPECT_EQ(info.groupSize, l.groupSize);
}

TEST(CompressedTensorsCodec, PackedInt4SymmetricGroupsSubtractTheOffsetEight) {
    runInt("ct_w4_sym", makeInt(4, 16, true, 41u));
}

TEST(CompressedTensorsCodec, PackedInt8PerChannel) { runInt("ct_w8_channel", makeInt(8, -1, true, 42u)); }

TEST(CompressedTensorsCodec, PackedInt4AsymmetricZeroPointsPackedAlongRows) {
    runInt("ct_w4_asym", makeInt(4, 32, false, 43u, 24, 64));
}

TEST(CompressedTensorsCodec, ActOrderGroupIndexChoosesTheScale) {
    auto l = makeInt(4, 16, true, 44u);
    std::mt19937 rng(7);
    for (int c = 0; c < l.k; ++c) l.gIdx.push_back(static_cast<int>(rng() % l.groups()));
    runInt("ct_gidx", l);
}

TEST(CompressedTensorsCodec, ThreeBitDensePackingStraddlesWords) {
    runInt("ct_w3_dense", makeInt(3, 32, false, 45u, 16, 64));
}

TEST(CompressedTensorsCodec, ThreeBitLegacyPackingWastesTheTopBits) {
    runInt("ct_w3_legacy", makeInt(3, 32, true, 46u, 16, 64), true);
}

// FP4: even element in the LOW nibble.
std::vector<std::uint8_t> packFp4(const std::vector<std::uint8_t>& codes) {
    std::vector<std::uint8_t> b(codes.size() / 2);
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<std::uint8_t>(codes[2 * i] | (codes[2 * i + 1] << 4));
    return b;
}

TEST(CompressedTensorsCodec, Nvfp4GlobalScaleDivides) {
    const int n = 8, k = 64;
    std::mt19937 rng(47);
    std::vector<std::uint8_t> codes(n * k), scaleCodes(n * k / 16);
    for (auto& c : codes) c = static_cast<std::uint8_t>(rng() % 16);
    for (auto& s : scaleCodes) s = e4m3Code(static_cast<float>(1 + rng() % 16) * 0.25f);
    codes[0] = 0x1;  // element 0: +0.5 ...
    codes[1] = 0xE;  // element 1: -4   -> byte 0 = 0xE1
    const float global = 448.0f * 6.0f / 3.5f;
    Fixture f("ct_nvfp4");
    f.add(kPrefix + ".weight_packed", "U8", {n, k / 2}, packFp4(codes));
    f.add(kPrefix + ".weight_scale", "F8_E4M3", {n, k / 16}, scaleCodes);
    f.addF32(kPrefix + ".weight_global_scale", {1}, {global});
    f.addI64(kPrefix + ".weight_shape", {2}, {n, k});
    f.setQuantizationConfig(ctConfig(
        "nvfp4-pack-quantized",
        {{"num_bits", 4}, {"type", "float"}, {"symmetric", true}, {"strategy", "tensor_group"}, {"group_size", 16}}));
    const auto ck = f.open();
    ASSERT_EQ(std::to_integer<int>(ck.tensor(kPrefix + ".weight_packed").bytes()[0]), 0xE1);
    const LinearReader reader(ck);
    const auto d = reader.decode(kPrefix);
    // Decoded as every FP4 weight is, e2m1 * (scale * (1 / divisor)) (fp4_weight.h); compressed-tensors'
    // own division differs in the last bit at most.
    expectWeight(
        d.weight, n, k,
        [&](std::int64_t r, std::int64_t c) {
            return e2m1Value(codes[r * k + c]) * (e4m3Value(scaleCodes[r * (k / 16) + c / 16]) * (1.0f / global));
        },
        0.0f);
    expectWeight(
        d.weight, n, k,
        [&](std::int64_t r, std::int64_t c) {
            return e2m1Value(codes[r * k + c]) * (e4m3Value(scaleCodes[r * (k / 16) + c / 16]) / global);
        },
        2.5e-7f);
    EXPECT_FLOAT_EQ(d.weight(0, 1), -4.0f * e4m3Value(scaleCodes[0]) / global);
    EXPECT_EQ(d.parts.method, quant::Method::Nvfp4);
    EXPECT_FLOAT_EQ(d.parts.globalScale, 1.0f / global);
    expectPartsReproduceWeight(d);
    EXPECT_EQ(reader.format().layers.at(0).scheme, "nvfp4");
}

TEST(CompressedTensorsCodec, Mxfp4ScalesAreE8m0WithBias127) {
    const int n = 4, k = 64;
    std::mt19937 rng(48);
    std::vector<std::uint8_t> codes(n * k), exps(n * k / 32);
    for (auto& c : codes) c = static_cast<std::uint8_t>(rng() % 16);
    for (auto& e : exps) e = static_cast<std::uint8_t>(120 + rng() % 12);
    Fixture f("ct_mxfp4");
    f.add(kPrefix + ".weight_packed", "U8", {n, k / 2}, packFp4(codes));
    f.add(kPrefix + ".weight_scale", "U8", {n, k / 32}, exps);
    f.setQuantizationConfig(ctConfig("mxfp4-pack-quantized",
                                     {{"num_bits", 4}, {"type", "float"}, {"strategy", "group"}, {"group_size", 32}}));
    const auto ck = f.open();
    const auto d = LinearReader(ck).decode(kPrefix);
    expectWeight(
        d.weight, n, k,
        [&](std::int64_t r, std::int64_t c) {
            return e2m1Value(codes[r * k + c]) * std::ldexp(1.0f, exps[r * 2 + c / 32] - 127);
        },
        0.0f);
    EXPECT_EQ(d.parts.method, quant::Method::Mxfp4);
    expectPartsReproduceWeight(d);
}

TEST(CompressedTensorsCodec, FloatQuantizedFp8PerChannelAndPerBlock) {
    const int n = 130, k = 256;
    std::mt19937 rng(49);
    std::vector<std::uint8_t> codes(n * k);
    for (auto& c : codes) do
            c = static_cast<std::uint8_t>(rng() & 0xFF);
        while ((c & 0x7F) == 0x7F);
    std::vector<float> channel(n), block(2 * 2);
    for (auto& s : channel) s = static_cast<float>(1 + rng() % 64) / 4096.0f;
    for (auto& s : block) s = static_cast<float>(1 + rng() % 64) / 4096.0f;
    const std::string other = "model.layers.2.mlp.up_proj";
    Fixture f("ct_fp8");
    f.add(kPrefix + ".weight", "F8_E4M3", {n, k}, codes);
    f.addBF16(kPrefix + ".weight_scale", {n, 1}, channel);
    f.add(other + ".weight", "F8_E4M3", {n, k}, codes);
    f.addBF16(other + ".weight_scale", {2, 2}, block);
    auto config = ctConfig("float-quantized", {{"num_bits", 8}, {"type", "float"}, {"strategy", "channel"}});
    config["config_groups"]["group_1"] = {
        {"targets", {"re:.*mlp\\.up_proj$"}},
        {"weights", {{"num_bits", 8}, {"type", "float"}, {"strategy", "block"}, {"block_structure", {128, 128}}}}};
    config["config_groups"]["group_0"]["targets"] = {"re:.*self_attn.*"};
    f.setQuantizationConfig(config);
    const auto ck = f.open();
    const LinearReader reader(ck);
    const auto d = reader.decode(kPrefix);
    expectWeight(
        d.weight, n, k, [&](std::int64_t r, std::int64_t c) { return e4m3Value(codes[r * k + c]) * channel[r]; }, 0.0f);
    const auto b = reader.decode(other);
    expectWeight(
        b.weight, n, k,
        [&](std::int64_t r, std::int64_t c) { return e4m3Value(codes[r * k + c]) * block[(r / 128) * 2 + c / 128]; },
        0.0f);
    expectPartsReproduceWeight(b);
    ASSERT_EQ(reader.format().layers.size(), 2u);
    EXPECT_EQ(reader.format().layers[0].granularity, "block");  // mlp.up_proj sorts first
    EXPECT_EQ(reader.format().layers[1].granularity, "channel");
}

TEST(CompressedTensorsCodec, ScalesOfTheWrongShapeAreAnErrorNamingThem) {
    auto l = makeInt(4, 16, true, 50u);
    Fixture f("ct_bad");
    addInt(f, l);
    auto args = intArgs(l);
    args["group_size"] = 32;  // scales hold 4 groups per row; group 32 needs 2
    f.setQuantizationConfig(ctConfig("pack-quantized", args));
    const auto ck = f.open();
    try {
        (void)LinearReader(ck).decode(kPrefix);
        FAIL() << "expected qs::Error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(kPrefix + ".weight_scale"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace qs::formats::test
