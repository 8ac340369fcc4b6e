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

TEST(Hadamard, RotationIsOrthogonalAndInvertible) {
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

TEST(Hadamard, RejectsSizesThatAreNotPowersOfTwo) {
    EXPECT_THROW(RandomHadamard(0, 0), Error);
    EXPECT_THROW(RandomHadamard(96, 0), Error);
}

}  // namespace
}  // namespace qs::quant
