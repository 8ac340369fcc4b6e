// GPTQ v1/v2, 2/3/4/8-bit, act-order, group -1, dynamic overrides (docs/formats/gptq.md). The
// packing here is written from that page's text, independently of the codec.
#include <gtest/gtest.h>

#include <numeric>
#include <ostream>
#include <random>

#include "qs/error.h"
#include "qs/formats/detect.h"
#include "qs/formats/linear_reader.h"

#include "expect_weight.h"
#include "fixture.h"

namespace qs::formats::test {
namespace {

const std::string kPrefix = "model.layers.0.self_attn.q_proj";

struct GptqLayer {
    int bits = 4, groupSize = 32, k = 64, n = 32;
    bool descAct = false, sym = true, v2 = false;
    std::vector<std::vector<int>> q;    // [K][N]
    std::vector<std::vector<int>> z;    // [groups][N]
    std::vector<std::vector<float>> s;  // [groups][N]
    std::vector<int> gIdx;              // [K]
    int groups() const { return (k + g() - 1) / g(); }
    int g() const { return groupSize == -1 ? k : groupSize; }
};

GptqLayer makeLayer(int bits, int groupSize, bool descAct, bool sym, bool v2, unsigned seed, int k = 64, int n = 32) {
    GptqLayer l{bits, groupSize, k, n, descAct, sym, v2, {}, {}, {}, {}};
    std::mt19937 rng(seed);
    const int maxq = (1 << bits) - 1;
    l.q.assign(k, std::vector<int>(n));
    for (auto& row : l.q)
        for (auto& v : row) v = static_cast<int>(rng() % (maxq + 1));
    l.z.assign(l.groups(), std::vector<int>(n));
    l.s.assign(l.groups(), std::vector<float>(n));
    for (int g = 0; g < l.groups(); ++g)
        for (int c = 0; c < n; ++c) {
            l.z[g][c] = sym ? (maxq + 1) / 2 : static_cast<int>(1 + rng() % maxq);  // 1..maxq: v1-safe
            l.s[g][c] = static_cast<float>(1 + rng() % 64) / 256.0f;                // exact in f16
        }
    std::vector<int> perm(k);
    std::iota(perm.begin(), perm.end(), 0);
    if (descAct) std::shuffle(perm.begin(), perm.end(), rng);
    l.gIdx.resize(k);
    for (int i = 0; i < k; ++i) l.gIdx[perm[i]] = i / l.g();  // invperm[k] // G
    return l;
}

// 3-bit: 32 values in 3 words, word by word as docs/formats/gptq.md describes.
std::array<std::uint32_t, 3> pack3(const std::array<std::uint32_t, 32>& v) {
    std::array<std::uint32_t, 3> w{0, 0, 0};
    for (int i = 0; i < 10; ++i) w[0] |= v[i] << (3 * i);
    w[0] |= (v[10] & 3u) << 30;
    w[1] |= v[10] >> 2;
    for (int i = 11; i < 21; ++i) w[1] |= v[i] << (1 + 3 * (i - 11));
    w[1] |= (v[21] & 1u) << 31;
    w[2] |= v[21] >> 1;
    for (int i = 22; i < 32; ++i) w[2] |= v[i] << (2 + 3 * (i - 22));
    return w;
}

// Packs `count` values along the packed axis (value(i)) into words (word(w) gets the result).
std::vector<std::uint32_t> packLine(int bits, int count, const std::function<std::uint32_t(int)>& value) {
    std::vector<std::uint32_t> words;
    if (bits == 3) {
        for (int b = 0; b < count / 32; ++b) {
            std::array<std::uint32_t, 32> v{};
            for (int i = 0; i < 32; ++i) v[i] = value(32 * b + i);
            for (const auto w : pack3(v)) words.push_back(w);
        }
        return words;
    }
    const int pf = 32 / bits;
    words.assign(count / pf, 0u);
    for (int i = 0; i < count; ++i) words[i / pf] |= value(i) << (bits * (i % pf));
    return words;
}

void addLayer(Fixture& f, const GptqLayer& l, const std::string& prefix = kPrefix) {
    const int packedRows = l.k * l.bits / 32, zeroCols = l.n * l.bits / 32;
    std::vector<std::uint32_t> qweight(packedRows * l.n), qzeros(l.groups() * zeroCols);
    for (int c = 0; c < l.n; ++c) {
        const auto col = packLine(l.bits, l.k, [&](int k) { return static_cast<std::uint32_t>(l.q[k][c]); });
        for (int r = 0; r < packedRows; ++r) qweight[r * l.n + c] = col[r];
    }
    const std::uint32_t mask = (1u << l.bits) - 1u;
    for (int g = 0; g < l.groups(); ++g) {
        const auto row = packLine(l.bits, l.n, [&](int c) {
            return l.v2 ? static_cast<std::uint32_t>(l.z[g][c]) : (static_cast<std::uint32_t>(l.z[g][c] - 1) & mask);
        });
        std::copy(row.begin(), row.end(), qzeros.begin() + g * zeroCols);
    }
    std::vector<float> scales;
    for (const auto& row : l.s) scales.insert(scales.end(), row.begin(), row.end());
    f.addWords(prefix + ".qweight", {packedRows, l.n}, qweight);
    f.addWords(prefix + ".qzeros", {l.groups(), zeroCols}, qzeros);
    f.addF16(prefix + ".scales", {l.groups(), l.n}, scales);
    f.addI32(prefix + ".g_idx", {l.k}, std::vector<std::int32_t>(l.gIdx.begin(), l.gIdx.end()));
}

nlohmann::json configOf(const GptqLayer& l) {
    return {{"quant_method", "gptq"}, {"bits", l.bits}, {"group_size", l.groupSize},
            {"desc_act", l.descAct},  {"sym", l.sym},   {"checkpoint_format", l.v2 ? "gptq_v2" : "gptq"}};
}

void expectDecodes(const GptqLayer& l, const DecodedLinear& d) {
    ASSERT_TRUE(d.quantized);
    expectWeight(
        d.weight, l.n, l.k,
        [&](std::int64_t r, std::int64_t c) {
            const int g = l.gIdx[c];
            return l.s[g][r] * static_cast<float>(l.q[c][r] - l.z[g][r]);
        },
        0.0f);
    for (int c = 0; c < l.n; ++c)
        for (int k = 0; k < l.k; ++k) ASSERT_EQ(d.parts.codes[c * l.k + k], l.q[k][c]);
    for (int c = 0; c < l.n; ++c)
        for (int g = 0; g < l.groups(); ++g) {
            ASSERT_EQ(d.parts.zeros(c, g), static_cast<float>(l.z[g][c]));
            ASSERT_EQ(d.parts.scales(c, g), l.s[g][c]);
        }
    EXPECT_EQ(d.parts.bits, l.bits);
    EXPECT_EQ(d.parts.method, quant::Method::Gptq);
    expectPartsReproduceWeight(d);
}

struct Case {
    int bits, groupSize;
    bool descAct, sym, v2;
};

// The case as ctest names it: readable and the same in every build (gtest would print the struct's bytes,
// padding included).
void PrintTo(const Case& c, std::ostream* os) {
    *os << c.bits << "bit_g" << c.groupSize << (c.descAct ? "_act" : "") << (c.sym ? "_sym" : "_asym")
        << (c.v2 ? "_v2" : "_v1");
}

class GptqRoundTrip : public ::testing::TestWithParam<Case> {};

TEST_P(GptqRoundTrip, DecodesEveryElementFromTheDefinition) {
    const auto p = GetParam();
    const auto l = makeLayer(p.bits, p.groupSize, p.descAct, p.sym, p.v2, 17u + p.bits);
    Fixture f("gptq_" + std::to_string(p.bits) + "_" + std::to_string(p.groupSize) + (p.descAct ? "_act" : "") +
              (p.sym ? "_sym" : "_asym") + (p.v2 ? "_v2" : "_v1"));
    addLayer(f, l);
    f.setQuantizationConfig(configOf(l));
    const auto ck = f.open();
    const LinearReader reader(ck);
    EXPECT_EQ(reader.format().format, Format::Gptq);
    EXPECT_EQ(reader.format().variant, p.v2 ? "gptq_v2" : "gptq");
    const auto d = reader.decode(kPrefix);
    expectDecodes(l, d);
    EXPECT_EQ(d.parts.gIdx.empty(), !p.descAct || p.groupSize == -1);
    ASSERT_EQ(reader.format().layers.size(), 1u);
    const auto& info = reader.format().layers[0];
    EXPECT_EQ(info.bits, p.bits);
    EXPECT_EQ(info.groupSize, p.groupSize);
    EXPECT_EQ(info.actOrder, p.descAct && p.groupSize != -1);
    EXPECT_EQ(info.symmetric, p.sym);
    EXPECT_EQ(info.rows, l.n);
    EXPECT_EQ(info.cols, l.k);
}

INSTANTIATE_TEST_SUITE_P(Layouts, GptqRoundTrip,
                         ::testing::Values(Case{4, 32, false, true, false}, Case{4, 32, false, false, false},
                                           Case{4, 16, true, false, false}, Case{4, 32, false, false, true},
                                           Case{2, 32, false, false, false}, Case{3, 32, false, false, false},
                                           Case{3, 16, true, true, true}, Case{8, 32, false, true, false},
                                           Case{8, -1, false, false, true}, Case{4, -1, true, true, false}));

TEST(GptqCodec, SymmetricV1FourBitZerosAreTheWord0x77777777) {
    const auto l = makeLayer(4, 32, false, true, false, 3u);
    Fixture f("gptq_word");
    addLayer(f, l);
    f.setQuantizationConfig(configOf(l));
    const auto ck = f.open();
    const auto zeros = ck.tensor(kPrefix + ".qzeros");
    std::uint32_t first;
    std::memcpy(&first, zeros.bytes().data(), 4);
    ASSERT_EQ(first, 0x77777777u);  // the test's own packing follows docs/formats/gptq.md
    const auto d = LinearReader(ck).decode(kPrefix);
    EXPECT_EQ(d.parts.zeros(0, 0), 8.0f);
    EXPECT_EQ(d.parts.zeros(l.n - 1, 1), 8.0f);
}

TEST(GptqCodec, V1StoredFieldFifteenIsZeroPointZero) {
    // AutoGPTQ writes zero 0 as (0 - 1) & 0xF; the reader keeps zeros within 0..15.
    auto l = makeLayer(4, 32, false, false, false, 5u);
    l.z[0][3] = 0;
    Fixture f("gptq_zero0");
    addLayer(f, l);
    f.setQuantizationConfig(configOf(l));
    const auto ck = f.open();
    const auto d = LinearReader(ck).decode(kPrefix);
    EXPECT_EQ(d.parts.zeros(3, 0), 0.0f);
    EXPECT_FLOAT_EQ(d.weight(3, 0), l.s[0][3] * static_cast<float>(l.q[0][3]));
}

TEST(GptqCodec, DynamicOverridesGiveLayersTheirOwnBits) {
    const auto q = makeLayer(4, 32, false, true, false, 7u);
    const auto down = makeLayer(8, 32, false, true, false, 8u);
    Fixture f("gptq_dynamic");
    addLayer(f, q);
    addLayer(f, down, "model.layers.0.mlp.down_proj");
    auto config = configOf(q);
    config["dynamic"] = {{"-:.*lm_head", nlohmann::json::object()}, {"+:.*\\.down_proj", {{"bits", 8}}}};
    f.setQuantizationConfig(config);
    f.addF32("lm_head.weight", {2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
    const auto ck = f.open();
    const LinearReader reader(ck);
    expectDecodes(q, reader.decode(kPrefix));
    expectDecodes(down, reader.decode("model.layers.0.mlp.down_proj"));
    const auto layers = describeLayers(ck);
    ASSERT_EQ(layers.size(), 2u);
    EXPECT_EQ(layers[0].ref.prefix, "model.layers.0.mlp.down_proj");
    EXPECT_EQ(layers[0].bits, 8);
    EXPECT_EQ(layers[1].bits, 4);
    EXPECT_FALSE(reader.format().uniformScheme().has_value());
    ASSERT_EQ(reader.format().denseLinears.size(), 1u);
    EXPECT_EQ(reader.format().denseLinears[0], "lm_head");
    const auto head = reader.decode("lm_head");
    EXPECT_FALSE(head.quantized);
    EXPECT_EQ(head.weight(1, 2), 7.0f);
}

TEST(GptqCodec, WithoutAConfigTheTensorsSayGptqAndItsBits) {
    const auto l = makeLayer(2, 16, false, false, false, 9u);
    Fixture f("gptq_noconfig");
    addLayer(f, l);
    const auto ck = f.open();
    const LinearReader reader(ck);
    EXPECT_EQ(reader.format().format, Format::Gptq);
    ASSERT_EQ(reader.format().layers.size(), 1u);
    EXPECT_EQ(reader.format().layers[0].bits, 2);
    EXPECT_EQ(reader.format().layers[0].groupSize, 16);
    // v1 is assumed, as AutoGPTQ writes it; asymmetric zeros then decode exactly.
    expectDecodes(l, reader.decode(kPrefix));
}

TEST(GptqCodec, ScalesThatDoNotFitQweightAreAnErrorNamingTheTensor) {
    const auto l = makeLayer(4, 32, false, true, false, 11u);
    Fixture f("gptq_bad");
    addLayer(f, l);
    auto config = configOf(l);
    config["group_size"] = 16;  // qweight holds 64 inputs -> 4 groups, but scales has 2 rows
    f.setQuantizationConfig(config);
    const auto ck = f.open();
    try {
        (void)LinearReader(ck).decode(kPrefix);
        FAIL() << "expected qs::Error";
    } catch (const Error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find(kPrefix + ".scales"), std::string::npos) << what;
        EXPECT_NE(what.find("model.safetensors"), std::string::npos) << what;
        EXPECT_NE(what.find("[2, 32]"), std::string::npos) << what;
    }
}

TEST(GptqCodec, MarlinCheckpointsAreDetectedButNotDecoded) {
    const auto l = makeLayer(4, 32, false, true, false, 12u);
    Fixture f("gptq_marlin");
    addLayer(f, l);
    auto config = configOf(l);
    config["checkpoint_format"] = "marlin";
    f.setQuantizationConfig(config);
    const auto ck = f.open();
    const auto info = detect(ck);
    EXPECT_EQ(info.format, Format::Gptq);
    EXPECT_FALSE(info.decodable);
    EXPECT_THROW((void)LinearReader(ck).decode(kPrefix), Error);
}

}  // namespace
}  // namespace qs::formats::test
