// io::ggmlBlockFields on blocks that ggml itself quantized (quantize_<type> with an imatrix-like
// importance, as llama-quantize writes them, the IQ types included, which QuantScope does not encode):
// the fields put back together with each type's formula (tests/io/ggml_recompose.h) must give the bits of
// ggml's own dequantize_row_<type>.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "qs/io/ggml_block_fields.h"
#include "qs/io/ggml_type.h"

#include "ggml_recompose.h"
#include "ggml_reference.h"
#include "ggml_test_rows.h"

namespace qs::interop {
namespace {

using io::GgmlType;

TEST(GgmlBlockFieldsInterop, FieldsOfGgmlsBlocksRecomposeToGgmlsDecodedWeights) {
    ASSERT_TRUE(GgmlReference::get().loaded()) << GgmlReference::get().error();
    using T = GgmlType;
    constexpr std::int64_t kRows = 4, kCols = 1024;
    const std::vector<float> importance = makeImportance(kCols, 99);
    std::vector<float> x;
    for (std::int64_t r = 0; r < kRows; ++r) {
        const auto row = makeRow(r % 2 ? RowKind::HeavyTailed : RowKind::Normal, kCols, static_cast<std::uint32_t>(r));
        x.insert(x.end(), row.begin(), row.end());
    }
    int checked = 0;
    for (const T type : {T::Q4_0,   T::Q4_1,  T::Q5_0,    T::Q5_1,   T::Q8_0,  T::Q2_K,  T::Q3_K,  T::Q4_K,
                         T::Q5_K,   T::Q6_K,  T::IQ4_NL,  T::IQ4_XS, T::MXFP4, T::TQ1_0, T::TQ2_0, T::IQ2_XXS,
                         T::IQ2_XS, T::IQ2_S, T::IQ3_XXS, T::IQ3_S,  T::IQ1_S, T::IQ1_M}) {
        const std::string name(io::ggmlTypeTraits(type).name);
        const std::int64_t n = kRows * kCols;
        std::vector<std::uint8_t> blocks(kRows * io::ggmlRowBytes(type, kCols));
        if (!GgmlReference::get().quantize(type, x.data(), blocks.data(), kRows, kCols, importance.data())) {
            ADD_FAILURE() << "ggml has no quantize_" << name;
            continue;
        }
        std::vector<float> theirs(static_cast<std::size_t>(n));
        ASSERT_TRUE(GgmlReference::get().dequantizeRow(type, blocks.data(), theirs.data(), n)) << name;
        const auto fields = io::ggmlBlockFields(type, blocks, n);
        EXPECT_EQ(test::bitMismatches(test::recompose(type, fields), theirs), 0) << name;
        // ggml's own blocks use more than one level of their codes (or codebook entries).
        const io::GgmlField* codes = fields.find(io::GgmlFieldRole::Codes);
        if (!codes) codes = fields.find(io::GgmlFieldRole::GridIndices);
        ASSERT_NE(codes, nullptr) << name;
        int used = 0;
        for (const std::uint64_t c : codes->usage()) used += c > 0;
        EXPECT_GT(used, 1) << name;
        ++checked;
    }
    EXPECT_EQ(checked, 22);
}

}  // namespace
}  // namespace qs::interop
