// Random Hadamard rotations and the fast Walsh-Hadamard transform.
#include <gtest/gtest.h>

#include "qs/error.h"
#include "qs/quant/hadamard.h"

#include "quant_test_data.h"

namespace qs::quant {
namespace {

MatrixF sylvester(std::int64_t n) {
    MatrixF h = MatrixF::Ones(1, 1);
    while (h.rows() < n) {
        MatrixF next(2 * h.rows(), 2 * h.rows());
        next << h, h, h, -h;
        h = next;
    }
    return h;
}

TEST(Hadamard, FwhtIsTheSylvesterMatrix) {
    const MatrixF x = testing::gaussianMatrix(1, 64, 1);
    MatrixF y = x;
    fwht(y.data(), 64);
    EXPECT_LT((y - x * sylvester(64)).cwiseAbs().maxCoeff(), 1e-5f);
}

TEST(Hadamard, PowerOfTwoRotationIsOrthogonalAndInvertible) {
    for (std::size_t n : {1u, 2u, 128u, 256u}) {
        const RandomHadamard rotation(n, 1234);
        const MatrixF m = rotation.matrix();
        EXPECT_LT((m * m.transpose() - MatrixF::Identity(m.rows(), m.rows())).cwiseAbs().maxCoeff(), 1e-6f) << n;
        // M = H D / sqrt(n)
        MatrixF expected = sylvester(static_cast<std::int64_t>(n)) / std::sqrt(static_cast<float>(n));
        for (std::size_t j = 0; j < n; ++j) expected.col(static_cast<Eigen::Index>(j)) *= rotation.signs()[j];
        EXPECT_LT((m - expected).cwiseAbs().maxCoeff(), 1e-6f);
        // rotate is x M^T, unrotate undoes it
        const MatrixF x = testing::gaussianMatrix(1, static_cast<std::int64_t>(n), 2);
        MatrixF y = x;
        rotation.rotate(y.data());
        EXPECT_LT((y - x * m.transpose()).cwiseAbs().maxCoeff(), 1e-5f);
        EXPECT_NEAR(y.norm(), x.norm(), 1e-5f * x.norm());
        rotation.unrotate(y.data());
        EXPECT_LT((y - x).cwiseAbs().maxCoeff(), 1e-5f);
    }
}

TEST(Hadamard, SignsAreSeededAndMixed) {
    const RandomHadamard a(256, 7), b(256, 7), c(256, 8);
    EXPECT_EQ(a.signs(), b.signs());
    EXPECT_NE(a.signs(), c.signs());
    int negative = 0;
    for (float s : a.signs()) negative += s < 0;
    EXPECT_GT(negative, 96);  // ~128 of 256 (binomial sd 8)
    EXPECT_LT(negative, 160);
}

TEST(Hadamard, SpreadsAnOutlier) {
    // The lesson: one 0.3 outlier among N(0, 0.02^2) weights; after rotation the peak-to-RMS
    // ratio falls to that of a Gaussian sample.
    MatrixF x = testing::gaussianMatrix(1, 64, 3, 0.02f);
    x(0, 10) = 0.3f;
    const auto peakToRms = [](const MatrixF& v) {
        return v.cwiseAbs().maxCoeff() / std::sqrt(v.squaredNorm() / v.size());
    };
    EXPECT_GT(peakToRms(x), 6.0f);
    RandomHadamard(64, 0).rotate(x.data());
    EXPECT_LT(peakToRms(x), 3.0f);
}

TEST(Hadamard, RefusesSizeZeroAndOrdersNotBuilt) {
    EXPECT_THROW(RandomHadamard(0, 0), Error);
    EXPECT_THROW(hadamardMatrix(36), Error);  // 9 · 4: no order built
    EXPECT_THROW(hadamardMatrix(6), Error);   // 12 needs a factor of 4 beside its odd part
}

TEST(Hadamard, MatricesOfEveryBuiltOrderAreHadamardExactly) {
    for (std::size_t n : {1u, 2u, 4u, 12u, 20u, 28u, 24u, 40u, 56u, 64u, 96u, 160u, 224u, 448u, 640u}) {
        ASSERT_TRUE(isHadamardOrder(n)) << n;
        const HadamardMatrix h = hadamardMatrix(n);
        ASSERT_EQ(h.rows(), static_cast<Eigen::Index>(n));
        EXPECT_TRUE((h.array().abs() == 1).all()) << n;
        const HadamardMatrix gram = h * h.transpose();  // integers: exact
        EXPECT_TRUE(gram == static_cast<int>(n) * HadamardMatrix::Identity(h.rows(), h.rows())) << n;
    }
    // The power-of-two matrices are Sylvester's, which the fast transform applies.
    EXPECT_TRUE(hadamardMatrix(64).cast<float>() == sylvester(64));
}

TEST(Hadamard, BlockIsTheLargestBuiltOrderDividingTheSize) {
    EXPECT_EQ(hadamardBlock(960), 320u);  // 3 · 320 = 3 · 20 · 16
    EXPECT_EQ(hadamardBlock(896), 896u);  // 28 · 32
    EXPECT_EQ(hadamardBlock(36), 12u);
    EXPECT_EQ(hadamardBlock(7), 1u);
    for (std::size_t n : {64u, 128u, 256u, 2048u, 2560u, 3072u, 3584u, 4096u, 5120u, 7168u, 8192u})
        EXPECT_EQ(hadamardBlock(n), n) << n;  // real models' hidden sizes and head_dims: one block
}

// x Mᵀ = x D Hᵀ / sqrt(n), per block, from the integer matrix: an independent reference for the fast path.
MatrixF referenceRotation(const MatrixF& x, const RandomHadamard& rotation) {
    const auto b = static_cast<Eigen::Index>(rotation.block());
    const MatrixF h = hadamardMatrix(rotation.block()).cast<float>();
    MatrixF signed_ = x;
    for (Eigen::Index j = 0; j < x.cols(); ++j) signed_.col(j) *= rotation.signs()[static_cast<std::size_t>(j)];
    MatrixF y(x.rows(), x.cols());
    for (Eigen::Index at = 0; at < x.cols(); at += b)
        y.middleCols(at, b) = signed_.middleCols(at, b) * h.transpose() / std::sqrt(static_cast<float>(b));
    return y;
}

TEST(Hadamard, RotationOfAnySizeIsOrthogonalAndMatchesTheMatrix) {
    for (std::size_t n : {12u, 96u, 160u, 224u, 960u, 36u, 7u}) {
        const RandomHadamard rotation(n, 99);
        const MatrixF m = rotation.matrix();
        const auto size = static_cast<Eigen::Index>(n);
        EXPECT_LT((m * m.transpose() - MatrixF::Identity(size, size)).cwiseAbs().maxCoeff(), 1e-5f) << n;
        const MatrixF x = testing::gaussianMatrix(3, size, 5);
        MatrixF y = x;
        rotation.rotateRows(y);
        EXPECT_LT((y - referenceRotation(x, rotation)).cwiseAbs().maxCoeff(), 1e-4f) << n;
        EXPECT_LT((y - x * m.transpose()).cwiseAbs().maxCoeff(), 1e-4f) << n;
        rotation.unrotateRows(y);
        EXPECT_LT((y - x).cwiseAbs().maxCoeff(), 1e-5f) << n;
    }
}

TEST(Hadamard, RotatesRealModelSizes) {
    for (std::size_t n : {64u, 128u, 256u, 2048u, 2560u, 3072u, 3584u, 4096u, 5120u, 7168u, 8192u}) {
        const RandomHadamard rotation(n, 3);
        EXPECT_EQ(rotation.block(), n);
        const MatrixF x = testing::gaussianMatrix(2, static_cast<std::int64_t>(n), 6);
        MatrixF y = x;
        rotation.rotateRows(y);
        EXPECT_LT((y - referenceRotation(x, rotation)).cwiseAbs().maxCoeff(), 1e-4f) << n;
        EXPECT_NEAR(y.row(0).norm(), x.row(0).norm(), 1e-4f * x.row(0).norm()) << n;
        EXPECT_NEAR(y.row(0).dot(y.row(1)), x.row(0).dot(x.row(1)), 1e-3f * x.row(0).norm() * x.row(1).norm()) << n;
        rotation.unrotateRows(y);
        EXPECT_LT((y - x).cwiseAbs().maxCoeff(), 1e-5f) << n;
    }
}

}  // namespace
}  // namespace qs::quant
