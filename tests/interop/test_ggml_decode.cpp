// Every quantized ggml type QuantScope decodes, against ggml's own dequantize_row_*: random blocks and
// blocks that ggml's quantizer made from rows of every shape must decode to the same f32 bytes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "qs/io/ggml_type.h"

#include "ggml_reference.h"
#include "ggml_test_rows.h"

namespace qs::interop {
namespace {

using io::GgmlType;

std::vector<GgmlType> decodedQuantTypes() {
    std::vector<GgmlType> out;
    for (std::uint32_t t = 0; t < 64; ++t) {
        const io::GgmlTypeTraits* traits = io::ggmlTypeTraits(t);
        if (traits && traits->decodes && !traits->isFloat) out.push_back(traits->type);
    }
    return out;
}

// Bitwise equality of two f32 arrays; the message names the first difference.
::testing::AssertionResult sameBits(const std::vector<float>& ours, const std::vector<float>& theirs) {
    if (ours.size() != theirs.size()) return ::testing::AssertionFailure() << "sizes differ";
    for (std::size_t i = 0; i < ours.size(); ++i) {
        std::uint32_t a, b;
        std::memcpy(&a, &ours[i], 4);
        std::memcpy(&b, &theirs[i], 4);
        if (a != b)
            return ::testing::AssertionFailure() << "element " << i << ": ours " << ours[i] << " (0x" << std::hex << a
                                                 << "), ggml " << theirs[i] << " (0x" << b << ")";
    }
    return ::testing::AssertionSuccess();
}

bool allFinite(const float* v, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i)
        if (!std::isfinite(v[i])) return false;
    return true;
}

class GgmlDecode : public ::testing::TestWithParam<GgmlType> {
protected:
    void SetUp() override { ASSERT_TRUE(GgmlReference::get().loaded()) << GgmlReference::get().error(); }
};

// Random bytes exercise every code, grid entry and scale bit pattern. A block whose F16 scale bits
// happen to be Inf or NaN (ggml decodes it to non-finite values) is drawn again: the comparison is of
// finite results, and NaN payloads are not part of ggml's contract.
TEST_P(GgmlDecode, RandomBlocksDecodeAsGgml) {
    const GgmlType type = GetParam();
    const auto& traits = io::ggmlTypeTraits(type);
    const GgmlReference& ggml = GgmlReference::get();
    constexpr int kBlocks = 512;
    std::mt19937 rng(1234u + static_cast<std::uint32_t>(type));
    std::uniform_int_distribution<int> byte(0, 255);
    std::vector<std::uint8_t> blocks(static_cast<std::size_t>(kBlocks) * traits.blockBytes);
    std::vector<float> one(static_cast<std::size_t>(traits.blockElements));
    for (int b = 0; b < kBlocks; ++b) {
        std::uint8_t* block = blocks.data() + static_cast<std::size_t>(b) * traits.blockBytes;
        do {
            for (int i = 0; i < traits.blockBytes; ++i) block[i] = static_cast<std::uint8_t>(b == 0 ? 0 : byte(rng));
            ASSERT_TRUE(ggml.dequantizeRow(type, block, one.data(), traits.blockElements)) << traits.name;
        } while (!allFinite(one.data(), traits.blockElements));
    }
    const std::int64_t n = std::int64_t{kBlocks} * traits.blockElements;
    std::vector<float> ours(static_cast<std::size_t>(n)), theirs(static_cast<std::size_t>(n));
    io::ggmlDecodeRow(type, blocks.data(), ours.data(), n);
    ggml.dequantizeRow(type, blocks.data(), theirs.data(), n);
    EXPECT_TRUE(sameBits(ours, theirs)) << traits.name;
}

// Blocks as a quantizer writes them, from rows of each shape (ggml's quantize_*, with importance
// weights for the types whose quantizer needs them).
TEST_P(GgmlDecode, QuantizedRowsDecodeAsGgml) {
    const GgmlType type = GetParam();
    const auto& traits = io::ggmlTypeTraits(type);
    const GgmlReference& ggml = GgmlReference::get();
    constexpr std::int64_t kN = 1024;
    const std::vector<float> importance = makeImportance(kN, 99);
    const bool iq =
        traits.name.substr(0, 3) == "iq1" || traits.name.substr(0, 3) == "iq2" || traits.name.substr(0, 3) == "iq3";
    for (RowKind kind : allRowKinds()) {
        // ggml's IQ1-IQ3 quantizers search their grids slowly: one row of each shape is enough there.
        for (std::uint32_t seed = 0; seed < (iq ? 1u : 4u); ++seed) {
            const std::vector<float> x = makeRow(kind, kN, 1000 * seed + static_cast<std::uint32_t>(kind));
            std::vector<std::uint8_t> q(io::ggmlRowBytes(type, kN));
            ASSERT_TRUE(ggml.quantize(type, x.data(), q.data(), 1, kN, iq ? importance.data() : nullptr))
                << traits.name;
            std::vector<float> ours(kN), theirs(kN);
            io::ggmlDecodeRow(type, q.data(), ours.data(), kN);
            ggml.dequantizeRow(type, q.data(), theirs.data(), kN);
            EXPECT_TRUE(sameBits(ours, theirs)) << traits.name << ", " << rowKindName(kind) << " row, seed " << seed;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, GgmlDecode, ::testing::ValuesIn(decodedQuantTypes()),
                         [](const ::testing::TestParamInfo<GgmlType>& info) {
                             return std::string(io::ggmlTypeTraits(info.param).name);
                         });

// The types QuantScope cannot decode are refused by name, not decoded to garbage.
TEST(GgmlDecodeCoverage, EveryQuantizedTypeOfGgmlDecodes) {
    for (std::uint32_t t = 0; t < 64; ++t) {
        const io::GgmlTypeTraits* traits = io::ggmlTypeTraits(t);
        if (!traits || traits->isFloat) continue;
        const bool integer = traits->name[0] == 'i' && traits->name.size() <= 3;  // i8 .. i64
        const bool dotProductOnly = traits->type == GgmlType::Q8_1 || traits->type == GgmlType::Q8_K;
        if (integer || dotProductOnly) {
            EXPECT_FALSE(traits->decodes) << traits->name;
            std::vector<std::uint8_t> block(static_cast<std::size_t>(traits->blockBytes));
            std::vector<float> out(static_cast<std::size_t>(traits->blockElements));
            try {
                io::ggmlDecodeRow(traits->type, block.data(), out.data(), traits->blockElements);
                ADD_FAILURE() << traits->name << " decoded";
            } catch (const std::exception& e) {
                EXPECT_NE(std::string(e.what()).find(std::string(traits->name)), std::string::npos) << e.what();
            }
        } else {
            EXPECT_TRUE(traits->decodes) << traits->name;
        }
    }
}

}  // namespace
}  // namespace qs::interop
