// QuantScope's ggml encoders against ggml's own: the reference quantizers must match byte for byte;
// the K-quant and IQ4 encoders must not be less accurate than ggml's quantize_* (RMSE, weighted by the
// importance when given, over many rows, at most 0.5 % worse).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

#include "qs/io/ggml_type.h"
#include "qs/quant/ggml_encode.h"

#include "ggml_reference.h"
#include "ggml_test_rows.h"

namespace qs::interop {
namespace {

using io::GgmlType;

class GgmlEncode : public ::testing::TestWithParam<GgmlType> {
protected:
    void SetUp() override { ASSERT_TRUE(GgmlReference::get().loaded()) << GgmlReference::get().error(); }
};

class GgmlEncodeExact : public GgmlEncode {};
class GgmlEncodeAccuracy : public GgmlEncode {};

std::string typeName(const ::testing::TestParamInfo<GgmlType>& info) {
    return std::string(io::ggmlTypeTraits(info.param).name);
}

TEST_P(GgmlEncodeExact, RowsEncodeAsGgmlReference) {
    const GgmlType type = GetParam();
    const auto& traits = io::ggmlTypeTraits(type);
    constexpr std::int64_t kN = 4096;
    for (RowKind kind : allRowKinds()) {
        for (std::uint32_t seed = 0; seed < 8; ++seed) {
            const std::vector<float> x = makeRow(kind, kN, 77 * seed + static_cast<std::uint32_t>(kind));
            std::vector<std::uint8_t> ours(io::ggmlRowBytes(type, kN)), theirs(ours.size());
            quant::ggmlEncodeRow(type, x.data(), ours.data(), kN);
            ASSERT_TRUE(GgmlReference::get().quantizeRowRef(type, x.data(), theirs.data(), kN)) << traits.name;
            for (std::size_t i = 0; i < ours.size(); ++i)
                if (ours[i] != theirs[i]) {
                    ADD_FAILURE() << traits.name << ", " << rowKindName(kind) << " row, seed " << seed << ": byte " << i
                                  << " (block " << i / traits.blockBytes << ", offset " << i % traits.blockBytes
                                  << ") is " << int(ours[i]) << ", ggml wrote " << int(theirs[i]);
                    break;
                }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(ReferenceQuantizers, GgmlEncodeExact,
                         ::testing::Values(GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1,
                                           GgmlType::Q8_0, GgmlType::MXFP4, GgmlType::NVFP4),
                         typeName);

// Rows like a checkpoint's: mostly Gaussian, some heavy-tailed, some with an outlier, each row with
// its own spread.
std::vector<float> weightMatrix(std::int64_t rows, std::int64_t cols) {
    std::vector<float> w(static_cast<std::size_t>(rows * cols));
    const RowKind kinds[3] = {RowKind::Normal, RowKind::HeavyTailed, RowKind::SingleOutlier};
    for (std::int64_t r = 0; r < rows; ++r) {
        const std::vector<float> row = makeRow(kinds[r % 3], cols, static_cast<std::uint32_t>(5000 + r));
        const float spread = 0.5f + static_cast<float>(r % 7) * 0.25f;
        for (std::int64_t c = 0; c < cols; ++c)
            w[static_cast<std::size_t>(r * cols + c)] = spread * row[static_cast<std::size_t>(c)];
    }
    return w;
}

// sqrt(sum_i imp_i (x_i - xhat_i)^2 / sum_i imp_i), imp = 1 without importance.
double weightedRmse(GgmlType type, const std::vector<float>& x, const std::vector<std::uint8_t>& q, std::int64_t rows,
                    std::int64_t cols, const float* importance) {
    const std::size_t rowBytes = io::ggmlRowBytes(type, cols);
    std::vector<float> xhat(static_cast<std::size_t>(cols));
    double num = 0, den = 0;
    for (std::int64_t r = 0; r < rows; ++r) {
        io::ggmlDecodeRow(type, q.data() + r * rowBytes, xhat.data(), cols);
        for (std::int64_t c = 0; c < cols; ++c) {
            const double w = importance ? importance[c] : 1.0;
            const double e = double(x[static_cast<std::size_t>(r * cols + c)]) - xhat[static_cast<std::size_t>(c)];
            num += w * e * e;
            den += w;
        }
    }
    return std::sqrt(num / den);
}

void compareAccuracy(GgmlType type, bool withImportance) {
    const auto& traits = io::ggmlTypeTraits(type);
    constexpr std::int64_t kRows = 2000, kCols = 4096;
    const std::vector<float> x = weightMatrix(kRows, kCols);
    const std::vector<float> importance = makeImportance(kCols, 4242);
    const float* imp = withImportance ? importance.data() : nullptr;
    const std::size_t rowBytes = io::ggmlRowBytes(type, kCols);
    std::vector<std::uint8_t> ours(rowBytes * kRows), theirs(rowBytes * kRows);
    // Timed for information only (printed, never asserted: bench/quant/bench_ggml measures speed).
    const auto t0 = std::chrono::steady_clock::now();
    for (std::int64_t r = 0; r < kRows; ++r)
        quant::ggmlEncodeRow(type, x.data() + r * kCols, ours.data() + r * rowBytes, kCols, imp);
    const auto t1 = std::chrono::steady_clock::now();
    ASSERT_TRUE(GgmlReference::get().quantize(type, x.data(), theirs.data(), kRows, kCols, imp)) << traits.name;
    const auto t2 = std::chrono::steady_clock::now();
    const double rmseOurs = weightedRmse(type, x, ours, kRows, kCols, imp);
    const double rmseGgml = weightedRmse(type, x, theirs, kRows, kCols, imp);
    std::printf("%-7s %-18s RMSE ours %.6g, ggml %.6g, ratio %.4f; time ours %.2f s, ggml %.2f s\n",
                std::string(traits.name).c_str(), withImportance ? "with importance" : "without importance", rmseOurs,
                rmseGgml, rmseOurs / rmseGgml, std::chrono::duration<double>(t1 - t0).count(),
                std::chrono::duration<double>(t2 - t1).count());
    EXPECT_LE(rmseOurs, rmseGgml * 1.005) << traits.name << (withImportance ? " with" : " without") << " importance";
}

TEST_P(GgmlEncodeAccuracy, RmseNoWorseThanGgmlWithoutImportance) { compareAccuracy(GetParam(), false); }
TEST_P(GgmlEncodeAccuracy, WeightedRmseNoWorseThanGgmlWithImportance) { compareAccuracy(GetParam(), true); }

INSTANTIATE_TEST_SUITE_P(SearchingQuantizers, GgmlEncodeAccuracy,
                         ::testing::Values(GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K,
                                           GgmlType::Q6_K, GgmlType::IQ4_NL, GgmlType::IQ4_XS, GgmlType::Q4_0,
                                           GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1),
                         typeName);

}  // namespace
}  // namespace qs::interop
