// The Hessian accumulator against a double-precision XᵀX, the seed's H, and the output-error identity.
#include <gtest/gtest.h>

#include <random>

#include "qs/io/safetensors_file.h"
#include "qs/quant/hessian.h"
#include "qs/quant/output_error.h"

using namespace qs;
using namespace qs::quant;

namespace {

MatrixF randomInputs(std::int64_t n, std::int64_t f, unsigned seed) {
    std::mt19937 gen(seed);
    std::normal_distribution<float> g(0.0f, 1.0f);
    MatrixF x(n, f);
    for (std::int64_t t = 0; t < n; ++t) {
        const float shared = g(gen);
        for (std::int64_t j = 0; j < f; ++j) x(t, j) = shared + 0.5f * g(gen) + (j % 7 == 0 ? 3.0f : 0.0f);
    }
    return x;
}

}  // namespace

TEST(Hessian, MatchesDoublePrecisionForAnyChunking) {
    const MatrixF x = randomInputs(1500, 300, 1);   // 300 features: two 256-tiles, one partial
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
    const MatrixF x = randomInputs(700, 96, 2);
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
    const MatrixF x = randomInputs(64, 520, 4);
    const Eigen::MatrixXf g = gramLower(x);
    const MatrixF ref = x.transpose() * x;
    for (std::int64_t c = 0; c < 520; ++c)
        for (std::int64_t r = c; r < 520; ++r) ASSERT_NEAR(g(r, c), ref(r, c), 1e-4f * std::abs(ref(r, c)) + 1e-3f);
}
