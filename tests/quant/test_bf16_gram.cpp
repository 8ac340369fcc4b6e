// The Hessians of BF16 inputs (--matmul bf16): each chunk's products read the inputs rounded to bfloat16
// (to nearest even) and accumulate in f32. Checked against 2 XᵀX / n of the inputs rounded by the test
// itself and summed in double; the f32 accumulator is the negative control.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <tuple>

#include <omp.h>

#include "qs/quant/bf16_gram.h"
#include "qs/quant/hessian.h"

#include "bf16_rounding.h"
#include "hessian_inputs.h"

using namespace qs;
using namespace qs::quant;

namespace {

using qs::quant::testing::roundedToBf16;

using qs::quant::testing::correlatedInputs;

// 2 XᵀX / n in double, and its entries' scale 2 |X|ᵀ|X| / n (what f32 sums of the products can be off by).
std::pair<MatrixD, MatrixD> referenceHessian(const MatrixF& x) {
    const MatrixD xd = x.cast<double>();
    const double n = static_cast<double>(x.rows());
    return {2.0 * xd.transpose() * xd / n, 2.0 * xd.cwiseAbs().transpose() * xd.cwiseAbs() / n};
}

MatrixF accumulate(const MatrixF& x, GramInputs inputs, std::int64_t chunkRows) {
    HessianAccumulator acc(x.cols(), inputs);
    const std::int64_t half = x.rows() / 2;
    acc.add(x.topRows(half), chunkRows);
    acc.add(x.bottomRows(x.rows() - half), chunkRows);
    return acc.finalize();
}

// Whether every entry of h is within `relative` of the reference's scale.
bool within(const MatrixF& h, const std::pair<MatrixD, MatrixD>& reference, double relative) {
    return ((h.cast<double>() - reference.first).cwiseAbs().array() <= relative * reference.second.array() + 1e-30)
        .all();
}

class Bf16Hessian : public ::testing::Test {
protected:
    void SetUp() override {
        if (!bf16GramAvailable()) GTEST_SKIP() << "oneDNN has no BF16 matmul kernel on this CPU";
    }
};

}  // namespace

TEST_F(Bf16Hessian, IsTheF32SumOfTheInputsRoundedToBf16) {
    // 300 features: a 256 tile and a partial one; 256: one tile; 768 three (an MLP's down_proj input).
    for (const auto& [rows, features, chunk] :
         {std::tuple{1300, 300, 2048}, std::tuple{1300, 300, 512}, std::tuple{1300, 300, 97},
          std::tuple{256, 256, 2048}, std::tuple{256, 768, 2048}, std::tuple{60, 256, 2048}}) {
        SCOPED_TRACE(std::to_string(rows) + " x " + std::to_string(features) + " in chunks of " +
                     std::to_string(chunk));
        const MatrixF x = correlatedInputs(rows, features, 1);
        const MatrixF rounded = x.unaryExpr(&roundedToBf16);
        const auto ofRounded = referenceHessian(rounded);
        const auto ofInputs = referenceHessian(x);
        const MatrixF bf16 = accumulate(x, GramInputs::Bf16, chunk);
        EXPECT_EQ(bf16, bf16.transpose());
        // Products of two bfloat16 are exact in f32; only a chunk's f32 sums round.
        EXPECT_TRUE(within(bf16, ofRounded, 2e-6));
        EXPECT_FALSE(within(bf16, ofInputs, 2e-6)) << "the inputs were not rounded";
        // The negative control: the f32 accumulator is the unrounded inputs' H, not the rounded ones'.
        const MatrixF f32 = accumulate(x, GramInputs::F32, chunk);
        EXPECT_TRUE(within(f32, ofInputs, 2e-6));
        EXPECT_FALSE(within(f32, ofRounded, 2e-6));
        // Inputs that bfloat16 holds exactly give the f32 accumulator's H, to the f32 sums' rounding.
        EXPECT_TRUE(within(accumulate(rounded, GramInputs::F32, chunk), ofRounded, 2e-6));
    }
}

TEST_F(Bf16Hessian, GivesTheSameBitsOnOneAndTwoThreadsAndRunAfterRun) {
    const MatrixF x = correlatedInputs(900, 600, 2);
    const int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    const MatrixF one = accumulate(x, GramInputs::Bf16, 2048);
    omp_set_num_threads(2);
    const MatrixF two = accumulate(x, GramInputs::Bf16, 2048);
    omp_set_num_threads(threads);
    EXPECT_EQ(one, two);
    EXPECT_EQ(accumulate(x, GramInputs::Bf16, 2048), accumulate(x, GramInputs::Bf16, 2048));
}

TEST_F(Bf16Hessian, ReadsItsInputsStrideAndAnEmptyChunkIsZero) {
    const MatrixF wide = correlatedInputs(64, 520, 3);
    const Eigen::Ref<const MatrixF> left = wide.leftCols(300);  // rows 520 floats apart
    const MatrixF copy = left;
    const quant::Bf16Gram strided(left, 256), contiguous(copy, 256);
    MatrixF a, b;
    for (std::int64_t i = 0; i < 2; ++i)
        for (std::int64_t j = 0; j <= i; ++j) {
            strided.product(i, j, a);
            contiguous.product(i, j, b);
            EXPECT_EQ(a, b) << i << ", " << j;
        }
    const MatrixF none(0, 300);
    const quant::Bf16Gram empty(none, 256);
    empty.product(1, 0, a);
    EXPECT_EQ(a.rows(), 44);
    EXPECT_EQ(a.cols(), 256);
    EXPECT_TRUE(a.isZero(0.0f));
}
