// The Hessian accumulator against a double-precision XᵀX, the reference vectors' H, and the output-error identity.
#include <gtest/gtest.h>

#include <random>

#include <omp.h>

#include "qs/error.h"
#include "qs/io/safetensors_file.h"
#include "qs/quant/hessian.h"
#include "qs/quant/output_error.h"

#include "hessian_inputs.h"

using namespace qs;
using namespace qs::quant;

using qs::quant::testing::correlatedInputs;

TEST(Hessian, MatchesDoublePrecisionForAnyChunking) {
    const MatrixF x = correlatedInputs(1500, 300, 1);  // 300 features: two 256-tiles, one partial
    const MatrixD xd = x.cast<double>();
    const MatrixD ref = 2.0 * xd.transpose() * xd / 1500.0;
    for (std::int64_t chunk : {1500, 512, 97}) {
        HessianAccumulator acc(300);
        acc.add(x.topRows(1000), chunk);
        acc.add(x.bottomRows(500), chunk);
        EXPECT_EQ(acc.samples(), 1500);
        const MatrixF h = acc.finalize();
        EXPECT_LT((h.cast<double>() - ref).cwiseAbs().maxCoeff(), 1e-5 * ref.cwiseAbs().maxCoeff()) << chunk;
        EXPECT_EQ(h, h.transpose());
        const VectorD meanAbs = xd.cwiseAbs().colwise().mean().transpose();
        EXPECT_LT((acc.meanAbs().cast<double>() - meanAbs).cwiseAbs().maxCoeff(), 1e-6 * meanAbs.maxCoeff());
    }
}

TEST(Hessian, MatchesSeedH) {
    const auto file = io::SafetensorsFile::open(std::string(QS_TEST_DATA_DIR) + "/quant/seed_reference.safetensors");
    const MatrixF x = file.tensor("X").toMatrix(), seedH = file.tensor("H").toMatrix();
    const MatrixF h = hessian(x);
    EXPECT_LT((h - seedH).cwiseAbs().maxCoeff(), 2e-6f * seedH.cwiseAbs().maxCoeff());
}

TEST(Hessian, OutputErrorFromHMatchesInputs) {
    const MatrixF x = correlatedInputs(700, 96, 2);
    std::mt19937 gen(3);
    std::normal_distribution<float> g(0.0f, 0.02f);
    MatrixF w(40, 96), q(40, 96);
    for (std::int64_t i = 0; i < w.size(); ++i) {
        w.data()[i] = g(gen);
        q.data()[i] = w.data()[i] + 0.1f * g(gen);
    }
    const OutputError a = outputErrorFromInputs(w, q, x), b = outputErrorFromHessian(w, q, hessian(x));
    EXPECT_NEAR(a.mse, b.mse, 1e-5 * a.mse);
    EXPECT_NEAR(a.relative, b.relative, 1e-5 * a.relative);
    // by hand: mean over tokens and outputs of ((W - Q) x)²
    const MatrixD e = x.cast<double>() * (w - q).cast<double>().transpose();
    EXPECT_NEAR(a.mse, e.squaredNorm() / static_cast<double>(e.size()), 1e-6 * a.mse);
}

TEST(Hessian, GramLowerIsXtX) {
    const MatrixF x = correlatedInputs(64, 520, 4);
    const Eigen::MatrixXf g = gramLower(x);
    const MatrixF ref = x.transpose() * x;
    for (std::int64_t c = 0; c < 520; ++c)
        for (std::int64_t r = c; r < 520; ++r) ASSERT_NEAR(g(r, c), ref(r, c), 1e-4f * std::abs(ref(r, c)) + 1e-3f);
}

// The tiled accumulator adds each chunk's f32 tiles (gramLower's products) into f64 at once: the
// same sums as gramLower's whole chunk added afterwards, bit for bit, for any chunking.
TEST(Hessian, TiledSumsEqualGramLowerChunksBitForBit) {
    const MatrixF x = correlatedInputs(900, 600, 5);  // three tiles, the last 88 wide
    for (std::int64_t chunk : {900, 256, 333}) {
        HessianAccumulator acc(600);
        acc.add(x, chunk);
        Eigen::MatrixXd sum = Eigen::MatrixXd::Zero(600, 600);
        for (std::int64_t r = 0; r < 900; r += chunk) {
            const Eigen::MatrixXf g = gramLower(x.middleRows(r, std::min<std::int64_t>(chunk, 900 - r)));
            for (std::int64_t c = 0; c < 600; ++c) sum.col(c).tail(600 - c) += g.col(c).tail(600 - c).cast<double>();
        }
        const MatrixF h = acc.finalize();
        for (std::int64_t r = 0; r < 600; ++r)
            for (std::int64_t c = 0; c <= r; ++c) {
                const float expected = static_cast<float>(2.0 / 900.0 * sum(r, c));
                ASSERT_EQ(h(r, c), expected) << r << "," << c << " chunk " << chunk;
                ASSERT_EQ(h(c, r), expected);
            }
    }
}

// Only the lower triangle's tiles are summed (n(n+256)/2 doubles at most, not n²); release() gives
// finalize()'s H and frees them, keeping the sample count and mean |x|.
TEST(Hessian, ReleaseFreesTheSums) {
    const std::int64_t n = 1100;
    const MatrixF x = correlatedInputs(300, n, 6);
    HessianAccumulator acc(n);
    acc.add(x);
    const double lower = double(n) * (n + 256) / 2 * sizeof(double) + double(n) * sizeof(double);
    EXPECT_LE(double(acc.bytes()), lower);
    EXPECT_GT(double(acc.bytes()), double(n) * n / 2 * sizeof(double));
    const MatrixF h = acc.finalize();
    const VectorF meanAbs = acc.meanAbs();
    EXPECT_FALSE(acc.released());
    const MatrixF released = acc.release();
    EXPECT_TRUE(acc.released());
    EXPECT_EQ(h, released);
    EXPECT_EQ(acc.bytes(), std::uint64_t(n) * sizeof(double));  // only Σ|x| is left
    EXPECT_EQ(acc.samples(), 300);
    EXPECT_EQ(acc.meanAbs(), meanAbs);
    EXPECT_THROW(acc.add(x), Error);
    EXPECT_THROW(acc.finalize(), Error);
}

// Each tile is one single-threaded GEMM, whichever thread computes it: the same bits on any team
// (resume and the GUI's cached runs rely on it; the f32 SGEMM itself gives other bits on other teams).
TEST(Hessian, GivesTheSameBitsOnOneAndTwoThreads) {
    const MatrixF x = correlatedInputs(3000, 700, 4);
    const int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    const MatrixF one = hessian(x);
    omp_set_num_threads(2);
    const MatrixF two = hessian(x);
    omp_set_num_threads(threads);
    EXPECT_EQ(one, two);
}
