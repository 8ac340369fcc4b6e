// io::ggmlBlockFields: the fields it extracts, put back together with each type's formula (written in
// ggml_recompose.h from docs/formats/gguf-types.md), must give the very bits io::ggmlDecodeRow gives,
// on blocks our encoders wrote and on random bytes (every bit pattern is a block). A field read from the
// wrong bits breaks the equality: the negative controls swap Q4_K's scales and mins, and Q6_K's halves.
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "qs/error.h"
#include "qs/io/ggml_block_fields.h"
#include "qs/io/ggml_type.h"
#include "qs/quant/ggml_encode.h"

#include "ggml_recompose.h"

namespace {

using qs::io::GgmlFieldRole;
using qs::io::GgmlType;

constexpr std::int64_t kRows = 3;
constexpr std::int64_t kCols = 512;  // two super-blocks, sixteen 32-blocks, eight NVFP4 blocks per row

const std::vector<GgmlType>& allBlockTypes() {
    using T = GgmlType;
    static const std::vector<GgmlType> types = {
        T::Q4_0,    T::Q4_1,   T::Q5_0,  T::Q5_1,    T::Q8_0,   T::Q1_0,  T::Q2_0,  T::Q2_K,  T::Q3_K,
        T::Q4_K,    T::Q5_K,   T::Q6_K,  T::IQ4_NL,  T::IQ4_XS, T::MXFP4, T::NVFP4, T::TQ1_0, T::TQ2_0,
        T::IQ2_XXS, T::IQ2_XS, T::IQ2_S, T::IQ3_XXS, T::IQ3_S,  T::IQ1_S, T::IQ1_M};
    return types;
}

std::string nameOf(GgmlType type) { return std::string(qs::io::ggmlTypeTraits(type).name); }

std::vector<float> decodeAll(GgmlType type, const std::vector<std::uint8_t>& bytes, std::int64_t n) {
    std::vector<float> out(static_cast<std::size_t>(n));
    qs::io::ggmlDecodeRow(type, bytes.data(), out.data(), n);
    return out;
}

std::vector<std::uint8_t> randomBytes(GgmlType type, std::uint32_t seed) {
    std::vector<std::uint8_t> bytes(kRows * qs::io::ggmlRowBytes(type, kCols));
    std::mt19937 rng(seed);
    for (auto& b : bytes) b = static_cast<std::uint8_t>(rng());
    return bytes;
}

std::vector<std::uint8_t> encodedGaussian(GgmlType type, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 0.02f);
    std::vector<float> w(static_cast<std::size_t>(kRows * kCols));
    for (float& x : w) x = normal(rng);
    w[7] = 0.3f;  // an outlier, so that some scales differ
    std::vector<std::uint8_t> bytes(kRows * qs::io::ggmlRowBytes(type, kCols));
    qs::quant::ggmlEncodeRows(type, w.data(), bytes.data(), kRows, kCols);
    return bytes;
}

// Each field has one value per weightsPerValue weights, integer values within their levels, and counts
// that sum to its size.
void expectWellFormed(const qs::io::GgmlBlockFields& f) {
    ASSERT_FALSE(f.fields.empty());
    for (const qs::io::GgmlField& field : f.fields) {
        EXPECT_EQ(static_cast<std::int64_t>(field.size()) * field.weightsPerValue, f.weights) << field.what;
        if (!field.isInteger()) continue;
        const auto usage = field.usage();
        EXPECT_EQ(std::accumulate(usage.begin(), usage.end(), std::uint64_t{0}), field.size()) << field.what;
    }
}

void expectRecomposes(GgmlType type, const std::vector<std::uint8_t>& bytes, const char* source) {
    const std::int64_t n = kRows * kCols;
    const auto fields = qs::io::ggmlBlockFields(type, bytes, n);
    expectWellFormed(fields);
    EXPECT_EQ(qs::test::bitMismatches(qs::test::recompose(type, fields), decodeAll(type, bytes, n)), 0)
        << nameOf(type) << " from " << source;
}

TEST(GgmlBlockFields, RandomBlocksRecomposeToTheDecodedWeights) {
    std::uint32_t seed = 1;
    for (const GgmlType type : allBlockTypes()) expectRecomposes(type, randomBytes(type, seed++), "random bytes");
}

TEST(GgmlBlockFields, EncodedBlocksRecomposeToTheDecodedWeights) {
    int encoded = 0;
    for (const GgmlType type : allBlockTypes()) {
        if (!qs::quant::ggmlEncodes(type)) continue;
        expectRecomposes(type, encodedGaussian(type, 7), "our encoder");
        ++encoded;
    }
    EXPECT_GE(encoded, 14);  // Q4_0 … Q8_0, Q2_K … Q6_K, IQ4_NL, IQ4_XS, MXFP4, NVFP4 at least
}

// What the stored integers stand for (the bars' labels in the GUI), from the formulas of gguf-types.md.
TEST(GgmlBlockFields, LevelsSayWhatTheFormulaUses) {
    const auto levelsOf = [](GgmlType type, GgmlFieldRole role) {
        const auto f = qs::io::ggmlBlockFields(type, randomBytes(type, 3), kRows * kCols);
        return qs::test::fieldOf(f, role).levels;
    };
    const auto q4_0 = levelsOf(GgmlType::Q4_0, GgmlFieldRole::Codes);
    ASSERT_EQ(q4_0.size(), 16u);
    EXPECT_EQ(q4_0.front(), -8.0f);
    EXPECT_EQ(q4_0.back(), 7.0f);
    EXPECT_EQ(levelsOf(GgmlType::Q4_K, GgmlFieldRole::Codes).size(), 16u);
    EXPECT_EQ(levelsOf(GgmlType::Q4_K, GgmlFieldRole::Scales).size(), 64u);
    EXPECT_EQ(levelsOf(GgmlType::Q2_K, GgmlFieldRole::Mins).size(), 16u);
    const auto q3 = levelsOf(GgmlType::Q3_K, GgmlFieldRole::Codes);
    EXPECT_EQ(q3.front(), -4.0f);
    EXPECT_EQ(q3.back(), 3.0f);
    EXPECT_EQ(levelsOf(GgmlType::Q3_K, GgmlFieldRole::Scales).front(), -32.0f);
    EXPECT_EQ(levelsOf(GgmlType::Q6_K, GgmlFieldRole::Codes).front(), -32.0f);
    EXPECT_EQ(levelsOf(GgmlType::Q6_K, GgmlFieldRole::Scales)[255], -1.0f);
    EXPECT_EQ(levelsOf(GgmlType::Q8_0, GgmlFieldRole::Codes)[128], -128.0f);
    EXPECT_EQ(levelsOf(GgmlType::IQ4_NL, GgmlFieldRole::Codes)[0], -127.0f);
    EXPECT_EQ(levelsOf(GgmlType::MXFP4, GgmlFieldRole::Codes)[15], -6.0f);
    EXPECT_EQ(levelsOf(GgmlType::MXFP4, GgmlFieldRole::Scales)[127], 0.0f);
    EXPECT_EQ(levelsOf(GgmlType::NVFP4, GgmlFieldRole::Scales)[0x38], 1.0f);  // exponent 7, mantissa 0
    EXPECT_EQ(levelsOf(GgmlType::TQ1_0, GgmlFieldRole::Codes).size(), 3u);
    EXPECT_EQ(levelsOf(GgmlType::IQ2_XS, GgmlFieldRole::GridIndices).size(), 512u);
    EXPECT_EQ(levelsOf(GgmlType::IQ1_M, GgmlFieldRole::GridIndices).size(), 2048u);
    for (const GgmlType type : allBlockTypes()) {
        const auto f = qs::io::ggmlBlockFields(type, randomBytes(type, 4), kRows * kCols);
        const qs::io::GgmlField* codes = f.find(GgmlFieldRole::Codes);
        if (!codes) codes = f.find(GgmlFieldRole::GridIndices);
        ASSERT_NE(codes, nullptr) << nameOf(type);
        for (std::size_t i = 0; i < codes->stored.size(); i += 97)
            EXPECT_LT(codes->stored[i], codes->levels.size()) << nameOf(type);
    }
}

// The sub-block counts the GUI's histograms must add up to: one scale (and min) per 32 of Q4_K's weights,
// one d per 256.
TEST(GgmlBlockFields, Q4_KHasAScaleAndMinPer32AndDPer256) {
    const auto f = qs::io::ggmlBlockFields(GgmlType::Q4_K, encodedGaussian(GgmlType::Q4_K, 2), kRows * kCols);
    EXPECT_EQ(qs::test::fieldOf(f, GgmlFieldRole::Codes).stored.size(), static_cast<std::size_t>(kRows * kCols));
    EXPECT_EQ(qs::test::fieldOf(f, GgmlFieldRole::Scales).stored.size(), static_cast<std::size_t>(kRows * kCols / 32));
    EXPECT_EQ(qs::test::fieldOf(f, GgmlFieldRole::Mins).stored.size(), static_cast<std::size_t>(kRows * kCols / 32));
    EXPECT_EQ(qs::test::fieldOf(f, GgmlFieldRole::SuperScale).values.size(), static_cast<std::size_t>(kRows * 2));
    EXPECT_EQ(qs::test::fieldOf(f, GgmlFieldRole::SuperMin).values.size(), static_cast<std::size_t>(kRows * 2));
}

// Negative controls: read the wrong bits, and the weights no longer come back.
TEST(GgmlBlockFields, SwappedFieldsDoNotRecompose) {
    const std::int64_t n = kRows * kCols;
    const auto bytes = encodedGaussian(GgmlType::Q4_K, 5);
    auto fields = qs::io::ggmlBlockFields(GgmlType::Q4_K, bytes, n);
    auto& scales = const_cast<qs::io::GgmlField&>(qs::test::fieldOf(fields, GgmlFieldRole::Scales));
    auto& mins = const_cast<qs::io::GgmlField&>(qs::test::fieldOf(fields, GgmlFieldRole::Mins));
    std::swap(scales.stored, mins.stored);
    const auto decoded = decodeAll(GgmlType::Q4_K, bytes, n);
    EXPECT_GT(qs::test::bitMismatches(qs::test::recompose(GgmlType::Q4_K, fields), decoded), n / 2);

    // d and dmin swapped.
    fields = qs::io::ggmlBlockFields(GgmlType::Q4_K, bytes, n);
    auto& d = const_cast<qs::io::GgmlField&>(qs::test::fieldOf(fields, GgmlFieldRole::SuperScale));
    auto& dmin = const_cast<qs::io::GgmlField&>(qs::test::fieldOf(fields, GgmlFieldRole::SuperMin));
    std::swap(d.values, dmin.values);
    EXPECT_GT(qs::test::bitMismatches(qs::test::recompose(GgmlType::Q4_K, fields), decoded), n / 2);

    // Q6_K's codes of the first and second 128 weights of each super-block exchanged.
    const auto q6 = encodedGaussian(GgmlType::Q6_K, 6);
    fields = qs::io::ggmlBlockFields(GgmlType::Q6_K, q6, n);
    auto& codes = const_cast<qs::io::GgmlField&>(qs::test::fieldOf(fields, GgmlFieldRole::Codes));
    for (std::size_t b = 0; b < codes.stored.size(); b += 256)
        std::swap_ranges(codes.stored.begin() + static_cast<std::ptrdiff_t>(b),
                         codes.stored.begin() + static_cast<std::ptrdiff_t>(b + 128),
                         codes.stored.begin() + static_cast<std::ptrdiff_t>(b + 128));
    EXPECT_GT(qs::test::bitMismatches(qs::test::recompose(GgmlType::Q6_K, fields), decodeAll(GgmlType::Q6_K, q6, n)),
              n / 4);
}

// A tensor read a slice of rows at a time gives the counts and values of the whole tensor read at once
// (4100 rows of 256: more than one slice of about a million weights).
TEST(GgmlBlockFields, CountsOfATensorReadInSlicesAreThoseOfTheWhole) {
    constexpr std::int64_t rows = 4100, n = 256;
    std::uint32_t seed = 30;
    for (const GgmlType type : allBlockTypes()) {
        std::vector<std::uint8_t> bytes(static_cast<std::size_t>(rows) * qs::io::ggmlRowBytes(type, n));
        std::mt19937 rng(seed++);
        for (auto& b : bytes) b = static_cast<std::uint8_t>(rng());
        const auto whole = qs::io::ggmlBlockFields(type, bytes, rows * n);
        const auto counted = qs::io::ggmlBlockFieldCounts(type, bytes, rows, n);
        EXPECT_EQ(counted.weights, rows * n);
        ASSERT_EQ(counted.fields.size(), whole.fields.size()) << nameOf(type);
        for (std::size_t i = 0; i < whole.fields.size(); ++i) {
            const auto& a = whole.fields[i];
            const auto& b = counted.fields[i];
            EXPECT_EQ(a.role, b.role);
            EXPECT_EQ(a.what, b.what);
            EXPECT_TRUE(b.stored.empty()) << nameOf(type) << " " << b.what;
            EXPECT_EQ(a.size(), b.size()) << nameOf(type) << " " << b.what;
            if (a.isInteger())
                EXPECT_EQ(a.usage(), b.usage()) << nameOf(type) << " " << b.what;
            else
                EXPECT_EQ(qs::test::bitMismatches(a.values, b.values), 0) << nameOf(type) << " " << b.what;
        }
    }
    qs::CancelToken cancelled;
    cancelled.cancel();
    std::vector<std::uint8_t> bytes(static_cast<std::size_t>(rows) * qs::io::ggmlRowBytes(GgmlType::Q4_K, n));
    EXPECT_THROW(qs::io::ggmlBlockFieldCounts(GgmlType::Q4_K, bytes, rows, n, cancelled), qs::Cancelled);
    EXPECT_THROW(qs::io::ggmlBlockFieldCounts(GgmlType::Q4_K, std::span(bytes).first(100), rows, n), qs::Error);
}

TEST(GgmlBlockFields, RefusesPlainTypesPartialBlocksAndShortBuffers) {
    std::vector<std::uint8_t> bytes(4096);
    EXPECT_FALSE(qs::io::ggmlHasBlockFields(GgmlType::F16));
    EXPECT_FALSE(qs::io::ggmlHasBlockFields(GgmlType::Q8_K));
    EXPECT_TRUE(qs::io::ggmlHasBlockFields(GgmlType::IQ1_M));
    EXPECT_THROW(qs::io::ggmlBlockFields(GgmlType::F16, bytes, 16), qs::Error);
    EXPECT_THROW(qs::io::ggmlBlockFields(GgmlType::Q4_K, bytes, 100), qs::Error);
    EXPECT_THROW(qs::io::ggmlBlockFields(GgmlType::Q4_K, std::span(bytes).first(143), 256), qs::Error);
}

}  // namespace
