// Code usage: every code of the layer's kind counted against a count made here, its level against the
// published tables (E2M1: 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives), in increasing level order.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "qs/error.h"
#include "qs/quant/code_usage.h"

namespace qs::quant {
namespace {

std::vector<std::uint8_t> randomCodes(std::size_t count, int distinct, unsigned seed) {
    std::mt19937 rng(seed);
    std::vector<std::uint8_t> codes(count);
    for (auto& c : codes) c = static_cast<std::uint8_t>((rng() % 7u) * (rng() % 3u) % static_cast<unsigned>(distinct));
    return codes;
}

std::map<int, std::uint64_t> bruteForce(const std::vector<std::uint8_t>& codes) {
    std::map<int, std::uint64_t> counts;
    for (const std::uint8_t c : codes) ++counts[c];
    return counts;
}

TEST(CodeUsage, IntegerCodesAreCountedPerLevel) {
    QuantizedLinear q = QuantizedLinear::intGrid(Method::Gptq, 12, 40, 4, 8, false);
    q.allocateParts();
    q.codes = randomCodes(q.codes.size(), 16, 3u);
    const auto usage = codeUsage(q);
    ASSERT_EQ(usage.size(), 16u);
    const auto expected = bruteForce(q.codes);
    std::uint64_t total = 0;
    for (std::size_t i = 0; i < usage.size(); ++i) {
        EXPECT_EQ(usage[i].code, static_cast<int>(i));
        EXPECT_EQ(usage[i].level, static_cast<float>(i));
        const auto it = expected.find(usage[i].code);
        EXPECT_EQ(usage[i].count, it == expected.end() ? 0u : it->second) << "code " << i;
        total += usage[i].count;
    }
    EXPECT_EQ(total, 12u * 40u);
    EXPECT_EQ(codesUsed(usage), static_cast<int>(expected.size()));
    EXPECT_LT(codesUsed(usage), 16);  // products of 0..6 and 0..2 miss 7, 9, 11, 13, 14, 15
}

TEST(CodeUsage, E2m1CodesAreOrderedByTheirValue) {
    QuantizedLinear q = QuantizedLinear::fp4(Method::Nvfp4, 4, 32, 16);
    q.allocateParts();
    for (std::size_t i = 0; i < q.codes.size(); ++i) q.codes[i] = static_cast<std::uint8_t>(i % 16 == 3 ? 3 : i % 5);
    const auto usage = codeUsage(q);
    ASSERT_EQ(usage.size(), 16u);
    const std::vector<float> levels = {-6, -4, -3, -2, -1.5f, -1, -0.5f, -0.0f, 0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
    const std::vector<int> codes = {15, 14, 13, 12, 11, 10, 9, 8, 0, 1, 2, 3, 4, 5, 6, 7};
    const auto expected = bruteForce(q.codes);
    for (std::size_t i = 0; i < usage.size(); ++i) {
        EXPECT_EQ(usage[i].level, levels[i]) << i;
        EXPECT_EQ(usage[i].code, codes[i]) << i;
        const auto it = expected.find(usage[i].code);
        EXPECT_EQ(usage[i].count, it == expected.end() ? 0u : it->second) << "code " << usage[i].code;
    }
}

TEST(CodeUsage, E4m3HasAllBytesWithNanLast) {
    QuantizedLinear q = QuantizedLinear::fp8(2, 128, 1, 128, -1);
    q.allocateParts();
    q.codes = randomCodes(q.codes.size(), 256, 5u);
    q.codes[0] = 0x7E;  // 448
    q.codes[1] = 0xFE;  // -448
    const auto usage = codeUsage(q);
    ASSERT_EQ(usage.size(), 256u);
    EXPECT_EQ(usage.front().level, -448.0f);
    EXPECT_EQ(usage.front().count, 1u);
    EXPECT_EQ(usage[253].level, 448.0f);
    EXPECT_TRUE(std::isnan(usage[254].level));
    EXPECT_TRUE(std::isnan(usage[255].level));
    for (std::size_t i = 1; i < 254; ++i) EXPECT_LE(usage[i - 1].level, usage[i].level) << i;
}

TEST(CodeUsage, RefusesLayersWithoutOneCodePerWeight) {
    QuantizedLinear q = QuantizedLinear::intGrid(Method::Rtn, 2, 8, 3, -1, true);
    q.allocateParts();
    q.codes[3] = 8;  // beyond 3 bits
    EXPECT_THROW(codeUsage(q), Error);
    q.codes.pop_back();
    EXPECT_THROW(codeUsage(q), Error);
    QuantizedLinear t = QuantizedLinear::trellisCodes(2, 256, 16, 2, 256, 1u);
    EXPECT_THROW(codeUsage(t), Error);
}

// A GGUF tensor's Q8_0 codes (io::ggmlBlockFields): bytes that stand for int8 values, so the bars run
// from byte 128 (-128) to byte 127, each counted against a count of the bytes made here.
TEST(CodeUsage, GgmlFieldsAreCountedPerStoredIntegerInIncreasingLevel) {
    const std::int64_t n = 4 * 32;
    std::vector<std::uint8_t> blocks(static_cast<std::size_t>(4 * 34));
    std::mt19937 rng(5);
    for (auto& b : blocks) b = static_cast<std::uint8_t>(rng() % 256);
    const auto fields = io::ggmlBlockFields(io::GgmlType::Q8_0, blocks, n);
    const io::GgmlField& codes = *fields.find(io::GgmlFieldRole::Codes);
    const auto usage = fieldUsage(codes);
    ASSERT_EQ(usage.size(), 256u);
    EXPECT_EQ(usage.front().code, 128);
    EXPECT_EQ(usage.front().level, -128.0f);
    EXPECT_EQ(usage.back().code, 127);
    EXPECT_EQ(usage.back().level, 127.0f);
    std::map<int, std::uint64_t> expected;
    for (std::size_t b = 0; b < 4; ++b)
        for (std::size_t j = 0; j < 32; ++j) ++expected[blocks[34 * b + 2 + j]];
    std::uint64_t total = 0;
    for (std::size_t i = 0; i < usage.size(); ++i) {
        if (i > 0) {
            EXPECT_LT(usage[i - 1].level, usage[i].level);
        }
        EXPECT_EQ(usage[i].count, expected[usage[i].code]) << "byte " << usage[i].code;
        total += usage[i].count;
    }
    EXPECT_EQ(total, static_cast<std::uint64_t>(n));
    EXPECT_THROW(fieldUsage(*fields.find(io::GgmlFieldRole::Scales)), Error);  // F16 d: no levels
}

}  // namespace
}  // namespace qs::quant
