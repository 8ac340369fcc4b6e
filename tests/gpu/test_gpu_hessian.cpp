// Hessian accumulation with cuBLAS SYRK against the CPU's blocked f32 gram: within 1e-5 relative; its
// diagonal alone (a column sum of squares) bit for bit.
#include <gtest/gtest.h>

#include "qs/error.h"

#include "gpu_test_support.h"

namespace qs::gpu::test {
namespace {

class GpuHessian : public GpuParity {};

double relativeDifference(const MatrixF& a, const MatrixF& b) {
    return (a.cast<double>() - b.cast<double>()).norm() / b.cast<double>().norm();
}

TEST_F(GpuHessian, MatchesTheCpuOverSeveralChunks) {
    MatrixF x = gaussian(5000, 384, 11);
    x.col(7) *= 40.0f;   // an outlier channel
    x.col(9).setZero();  // a dead one
    auto gpu = cuda().hessian(384);
    auto cpu = this->cpu().hessian(384);
    gpu->add(x.topRows(3000), 1024);
    gpu->add(x.bottomRows(2000), 1024);
    cpu->add(x.topRows(3000), 1024);
    cpu->add(x.bottomRows(2000), 1024);
    EXPECT_EQ(gpu->samples(), 5000);
    const MatrixF hg = gpu->finalize(), hc = cpu->finalize();
    EXPECT_LT(relativeDifference(hg, hc), 1e-5);
    EXPECT_TRUE(hg.isApprox(hg.transpose(), 0.0f)) << "not symmetric";
    EXPECT_EQ(hg(9, 9), 0.0f);
    // mean |x| is summed in f64 in the same order on both: equal.
    EXPECT_EQ(gpu->meanAbs(), cpu->meanAbs());
}

TEST_F(GpuHessian, ReleaseReturnsHAndKeepsTheCountAndMeanAbs) {
    const MatrixF x = gaussian(3000, 256, 13);
    auto gpu = cuda().hessian(256);
    auto cpu = this->cpu().hessian(256);
    gpu->add(x, 1024);
    cpu->add(x, 1024);
    const MatrixF expected = cpu->finalize();
    EXPECT_FALSE(gpu->released());
    EXPECT_LT(relativeDifference(gpu->release(), expected), 1e-5);
    EXPECT_TRUE(gpu->released());
    EXPECT_EQ(gpu->samples(), 3000);
    EXPECT_EQ(gpu->meanAbs(), cpu->meanAbs());
    EXPECT_THROW(gpu->finalize(), Error);
    EXPECT_THROW(gpu->add(x), Error);
    auto discarded = cuda().hessian(256);
    discarded->add(x);
    discarded->discard();
    EXPECT_TRUE(discarded->released());
    EXPECT_EQ(discarded->meanAbs(), cpu->meanAbs());
}

TEST_F(GpuHessian, TakesColumnBlocksOfALargerMatrix) {
    const MatrixF wide = gaussian(700, 300, 12);
    auto gpu = cuda().hessian(200);
    auto cpu = this->cpu().hessian(200);
    gpu->add(wide.leftCols(200));  // a strided view: outer stride 300
    cpu->add(wide.leftCols(200));
    EXPECT_LT(relativeDifference(gpu->finalize(), cpu->finalize()), 1e-5);
}

// diag(H) alone: f64 sums of exact squares, column by column in row order, as the CPU sums them.
TEST_F(GpuHessian, DiagonalMatchesTheCpuBitForBitAndTheFullHessiansDiagonal) {
    MatrixF x = gaussian(3000, 384, 14);
    x.col(7) *= 40.0f;
    x.col(9).setZero();
    const MatrixF wide = gaussian(500, 500, 15);
    auto gpu = cuda().hessianDiagonal(384);
    auto cpu = this->cpu().hessianDiagonal(384);
    for (auto* sink : {gpu.get(), cpu.get()}) {
        sink->add(x.topRows(1000));
        sink->add(x.bottomRows(2000));
    }
    EXPECT_EQ(gpu->samples(), 3000);
    const VectorD dg = gpu->finalize();
    EXPECT_EQ(dg, cpu->finalize());
    EXPECT_EQ(dg(9), 0.0);
    auto full = this->cpu().hessian(384);
    full->add(x, 1024);
    EXPECT_LT((dg - full->finalize().diagonal().cast<double>()).norm() / dg.norm(), 1e-6);
    auto strided = cuda().hessianDiagonal(300);  // a column block of a wider matrix
    auto reference = this->cpu().hessianDiagonal(300);
    strided->add(wide.leftCols(300));
    reference->add(wide.leftCols(300));
    EXPECT_EQ(strided->finalize(), reference->finalize());
    EXPECT_THROW(strided->add(MatrixF::Ones(2, 299)), Error);
    EXPECT_THROW(cuda().hessianDiagonal(16)->finalize(), Error);
}

TEST_F(GpuHessian, RejectsWrongWidthsAndEmptyFinalize) {
    auto gpu = cuda().hessian(16);
    EXPECT_THROW(gpu->finalize(), Error);
    EXPECT_THROW(gpu->add(MatrixF::Ones(4, 15)), Error);
}

}  // namespace
}  // namespace qs::gpu::test
