// AWQ gemm (interleaved nibble order) and gemv (plain order), docs/formats/awq.md.
#include <gtest/gtest.h>

#include <random>

#include "qs/error.h"
#include "qs/formats/linear_reader.h"

#include "expect_weight.h"
#include "fixture.h"

namespace qs::formats::test {
namespace {

const std::string kPrefix = "model.layers.1.mlp.up_proj";
constexpr int kAwqOrder[8] = {0, 2, 4, 6, 1, 3, 5, 7};  // slot i holds logical column 8c + kAwqOrder[i]

struct AwqLayer {
    int k = 64, n = 32, groupSize = 32;
    std::vector<std::vector<int>> q;    // [K][N]
    std::vector<std::vector<int>> z;    // [groups][N]
    std::vector<std::vector<float>> s;  // [groups][N]
    int groups() const { return k / groupSize; }
};

AwqLayer makeLayer(unsigned seed, int k = 64, int n = 32, int groupSize = 32) {
    AwqLayer l{k, n, groupSize, {}, {}, {}};
    std::mt19937 rng(seed);
    l.q.assign(k, std::vector<int>(n));
    for (auto& row : l.q)
        for (auto& v : row) v = static_cast<int>(rng() % 16);
    l.z.assign(l.groups(), std::vector<int>(n));
    l.s.assign(l.groups(), std::vector<float>(n));
    for (int g = 0; g < l.groups(); ++g)
        for (int c = 0; c < n; ++c) {
            l.z[g][c] = static_cast<int>(rng() % 16);
            l.s[g][c] = static_cast<float>(1 + rng() % 128) / 512.0f;
        }
    return l;
}

std::uint32_t packAwqWord(const std::function<int(int)>& logical) {
    std::uint32_t w = 0;
    for (int slot = 0; slot < 8; ++slot) w |= static_cast<std::uint32_t>(logical(kAwqOrder[slot])) << (4 * slot);
    return w;
}

void addGemm(Fixture& f, const AwqLayer& l) {
    std::vector<std::uint32_t> qweight, qzeros;
    for (int k = 0; k < l.k; ++k)
        for (int c = 0; c < l.n / 8; ++c) qweight.push_back(packAwqWord([&](int j) { return l.q[k][8 * c + j]; }));
    for (int g = 0; g < l.groups(); ++g)
        for (int c = 0; c < l.n / 8; ++c) qzeros.push_back(packAwqWord([&](int j) { return l.z[g][8 * c + j]; }));
    std::vector<float> scales;
    for (const auto& row : l.s) scales.insert(scales.end(), row.begin(), row.end());
    f.addWords(kPrefix + ".qweight", {l.k, l.n / 8}, qweight);
    f.addWords(kPrefix + ".qzeros", {l.groups(), l.n / 8}, qzeros);
    f.addF16(kPrefix + ".scales", {l.groups(), l.n}, scales);
}

void expectDecodes(const AwqLayer& l, const DecodedLinear& d) {
    expectWeight(
        d.weight, l.n, l.k,
        [&](std::int64_t r, std::int64_t c) {
            const auto g = c / l.groupSize;
            return static_cast<float>(l.q[c][r] - l.z[g][r]) * l.s[g][r];
        },
        0.0f);
    EXPECT_EQ(d.parts.method, quant::Method::Awq);
    EXPECT_EQ(d.parts.blockCols, l.groupSize);
    expectPartsReproduceWeight(d);
}

TEST(AwqCodec, LogicalColumnOneLivesInBits16To19) {
    ASSERT_EQ(packAwqWord([](int j) { return j == 1 ? 0xF : 0; }), 0x000F0000u);  // the test's packing is awq.md's
    AwqLayer l = makeLayer(1u, 32, 8, 32);
    for (auto& row : l.q) std::fill(row.begin(), row.end(), 0);
    l.q[0][1] = 9;  // only output 1 of input 0 is non-zero
    Fixture f("awq_pin");
    addGemm(f, l);
    f.setQuantizationConfig(
        {{"quant_method", "awq"}, {"bits", 4}, {"group_size", 32}, {"zero_point", true}, {"version", "gemm"}});
    const auto ck = f.open();
    std::uint32_t word0;
    std::memcpy(&word0, ck.tensor(kPrefix + ".qweight").bytes().data(), 4);
    ASSERT_EQ(word0, 0x00090000u);
    const auto d = LinearReader(ck).decode(kPrefix);
    EXPECT_EQ(d.parts.codes[1 * 32 + 0], 9);  // output 1, input 0
    EXPECT_EQ(d.parts.codes[2 * 32 + 0], 0);
    expectDecodes(l, d);
}

TEST(AwqCodec, GemmDecodesEveryElement) {
    const auto l = makeLayer(21u, 128, 64, 64);
    Fixture f("awq_gemm");
    addGemm(f, l);
    f.setQuantizationConfig({{"quant_method", "awq"},
                             {"bits", 4},
                             {"group_size", 64},
                             {"zero_point", true},
                             {"version", "gemm"},
                             {"modules_to_not_convert", nullptr}});
    const auto ck = f.open();
    const LinearReader reader(ck);
    EXPECT_EQ(reader.format().format, Format::Awq);
    EXPECT_EQ(reader.format().variant, "gemm");
    expectDecodes(l, reader.decode(kPrefix));
    ASSERT_EQ(reader.format().layers.size(), 1u);
    EXPECT_EQ(reader.format().layers[0].summary(), "int4 g64 asym");
}

TEST(AwqCodec, GemvDecodesEveryElement) {
    const auto l = makeLayer(22u, 256, 16, 64);  // 4 groups -> zeros width ceil(4/8) = 1, scales width 8 (padding)
    Fixture f("awq_gemv");
    std::vector<std::uint32_t> qweight, qzeros;
    for (int n = 0; n < l.n; ++n)
        for (int w = 0; w < l.k / 8; ++w) {
            std::uint32_t word = 0;
            for (int i = 0; i < 8; ++i) word |= static_cast<std::uint32_t>(l.q[8 * w + i][n]) << (4 * i);
            qweight.push_back(word);
        }
    std::vector<float> scales;
    for (int n = 0; n < l.n; ++n) {
        std::uint32_t word = 0;
        for (int g = 0; g < l.groups(); ++g) word |= static_cast<std::uint32_t>(l.z[g][n]) << (4 * g);
        qzeros.push_back(word);
        for (int g = 0; g < 8; ++g) scales.push_back(g < l.groups() ? l.s[g][n] : 0.0f);
    }
    f.addWords(kPrefix + ".qweight", {l.n, l.k / 8}, qweight);
    f.addWords(kPrefix + ".qzeros", {l.n, 1}, qzeros);
    f.addF16(kPrefix + ".scales", {l.n, 8}, scales);
    f.setQuantizationConfig(
        {{"quant_method", "awq"}, {"bits", 4}, {"group_size", 64}, {"zero_point", true}, {"version", "gemv"}});
    const auto ck = f.open();
    const LinearReader reader(ck);
    EXPECT_EQ(reader.format().variant, "gemv");
    expectDecodes(l, reader.decode(kPrefix));
}

TEST(AwqCodec, ZerosOfTheWrongShapeAreAnErrorNamingThem) {
    const auto l = makeLayer(23u);
    Fixture f("awq_bad");
    addGemm(f, l);
    f.setQuantizationConfig(
        {{"quant_method", "awq"}, {"bits", 4}, {"group_size", 16}, {"zero_point", true}, {"version", "gemm"}});
    const auto ck = f.open();
    try {
        (void)LinearReader(ck).decode(kPrefix);
        FAIL() << "expected qs::Error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(kPrefix + ".qzeros"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace qs::formats::test
