// AWQ against search_scale and the lesson's examples 4 and 5 (docs/reference-algorithms.md), and plain RTN at α = 0.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "qs/io/safetensors_file.h"
#include "qs/quant/awq.h"
#include "qs/quant/hessian.h"
#include "qs/quant/output_error.h"
#include "qs/quant/rtn.h"

#include "java_random.h"
#include "quant_test_data.h"

using namespace qs;
using namespace qs::quant;

namespace {

// Lesson example 4's inputs: independent N(0, 1) channels, the first `salient` eight times larger;
// example 5's: a shared component plus 0.5 noise (correlated), the same salient channels.
MatrixF lessonInputs(test::JavaRandom& rnd, int tokens, int n, bool correlated) {
    MatrixF x(tokens, n);
    for (int t = 0; t < tokens; ++t) {
        const double shared = correlated ? rnd.nextGaussian() : 0.0;
        for (int j = 0; j < n; ++j) {
            const double v = correlated ? shared + 0.5 * rnd.nextGaussian() : rnd.nextGaussian();
            x(t, j) = static_cast<float>(v * (j < 2 ? 8.0 : 1.0));
        }
    }
    return x;
}

MatrixF lessonWeights(test::JavaRandom& rnd, int rows, int n) {
    MatrixF w(rows, n);
    for (int r = 0; r < rows; ++r)
        for (int j = 0; j < n; ++j) w(r, j) = static_cast<float>(rnd.nextGaussian() * 0.02);
    return w;
}

VectorF meanAbs(const MatrixF& x) {
    return (x.cwiseAbs().cast<double>().colwise().sum() / x.rows()).transpose().cast<float>();
}

// The lesson's grid: symmetric, one absmax scale per row, levels -(qmax+1) .. qmax.
constexpr AwqOptions lessonGrid(int bits, int grid) {
    return {.bits = bits, .groupSize = -1, .sym = true, .rule = GridRule::AutoAwq, .grid = grid};
}

double testMseAt(const MatrixF& w, const VectorF& mean, double alpha, int bits, const MatrixF& test) {
    const std::vector<float> s = awqScales(mean, alpha);
    MatrixF ws = w;
    for (std::int64_t c = 0; c < w.cols(); ++c) ws.col(c) *= s[static_cast<std::size_t>(c)];
    QuantizedLinear q = quantizeRtn(ws, {.bits = bits, .groupSize = -1, .sym = true, .rule = GridRule::AutoAwq});
    q.inputScales = s;
    return outputErrorFromInputs(w, q.effectiveWeight(), test).mse;
}

}  // namespace

TEST(Awq, MatchesSeedSearch) {
    const auto file = qs::quant::testing::seedReference();
    const MatrixF w = file.tensor("W").toMatrix(), x = file.tensor("X").toMatrix();
    const AwqResult r = quantizeAwq({&w}, x, {.bits = 4, .groupSize = 128});
    EXPECT_DOUBLE_EQ(r.alpha, qs::quant::testing::seedFigure("awq_alpha"));
    EXPECT_FLOAT_EQ(static_cast<float>(r.alpha), file.tensor("awq_g128.alpha").toMatrix()(0, 0));
    const MatrixF s = file.tensor("awq_g128.scales").toMatrix();
    for (std::int64_t c = 0; c < 512; ++c)
        ASSERT_NEAR(r.scales[static_cast<std::size_t>(c)], s(0, c), 1e-5f * s(0, c)) << c;
    const double mse = outputErrorFromInputs(w, r.linears[0].effectiveWeight(), x).mse;
    EXPECT_NEAR(mse, qs::quant::testing::seedFigure("awq_g128_output_mse"),
                0.01 * qs::quant::testing::seedFigure("awq_g128_output_mse"));
    EXPECT_NEAR(r.linears[0].outputMse, mse, 1e-4 * mse);
    EXPECT_LT(mse, 0.7 * qs::quant::testing::seedFigure("rtn_g128_output_mse"));
    std::printf("seed awq: alpha %.2f, mse %.6g (seed %.6g)\n", r.alpha, mse,
                qs::quant::testing::seedFigure("awq_g128_output_mse"));
    // From the accumulator's statistics alone: the same choice.
    HessianAccumulator acc(512);
    acc.add(x, 300);
    const AwqResult fromStats =
        quantizeAwqFromStats({&w}, acc.meanAbs(), acc.finalize(), {.bits = 4, .groupSize = 128});
    EXPECT_DOUBLE_EQ(fromStats.alpha, r.alpha);
}

TEST(Awq, AlphaZeroIsRtnBitForBit) {
    const auto file = qs::quant::testing::seedReference();
    const MatrixF w = file.tensor("W").toMatrix(), x = file.tensor("X").toMatrix();
    const AwqResult r = quantizeAwq({&w}, x, {.bits = 4, .groupSize = 128, .grid = 1});  // α = 0 only
    ASSERT_EQ(r.alpha, 0.0);
    for (float v : r.scales) ASSERT_EQ(v, 1.0f);
    const QuantizedLinear rtn = quantizeRtn(w, {.bits = 4, .groupSize = 128});
    EXPECT_EQ(r.linears[0].codes, rtn.codes);
    EXPECT_EQ(r.linears[0].scales, rtn.scales);
    EXPECT_EQ(r.linears[0].zeros, rtn.zeros);
    EXPECT_EQ(r.linears[0].effectiveWeight(), rtn.dequantize());
    EXPECT_NEAR(r.gridError[0], qs::quant::testing::seedFigure("rtn_g128_output_mse"),
                1e-4 * qs::quant::testing::seedFigure("rtn_g128_output_mse"));
}

// Lesson example 4: 2 of 32 channels 8x larger; α = 0.2 cut the test error by 39% (5.149e-04 ->
// 3.132e-04), too large an α makes it worse (2.489e-03 at α = 1).
TEST(Awq, LessonExample4) {
    test::JavaRandom rnd(11);
    const MatrixF calib = lessonInputs(rnd, 512, 32, false), test = lessonInputs(rnd, 512, 32, false);
    const MatrixF w = lessonWeights(rnd, 32, 32);
    const VectorF mean = meanAbs(calib);
    const double printed[] = {5.149e-04, 3.132e-04, 3.349e-04, 5.585e-04, 1.179e-03, 2.489e-03};
    for (int a = 0; a <= 5; ++a)
        EXPECT_NEAR(testMseAt(w, mean, 0.2 * a, 4, test), printed[a], 1e-3 * printed[a]) << 0.2 * a;
    const AwqResult r = quantizeAwq({&w}, calib, lessonGrid(4, 20));
    const double rtn = testMseAt(w, mean, 0.0, 4, test);
    const double awq = outputErrorFromInputs(w, r.linears[0].effectiveWeight(), test).mse;
    std::printf("example 4: alpha %.2f, test mse %.3e vs RTN %.3e (-%.0f%%)\n", r.alpha, awq, rtn,
                100 * (1 - awq / rtn));
    EXPECT_GT(r.alpha, 0.0);
    EXPECT_LT(awq, 0.7 * rtn);
}

// Lesson example 5: correlated channels, 0 and 1 salient; AWQ picks α 0.4 (4-bit, test 1.702e-04)
// and α 0.2 (3-bit, 1.404e-03) on an 11-point grid 0 .. 1 (α = 1 never wins, so grid 10 is the same search).
TEST(Awq, LessonExample5) {
    test::JavaRandom rnd(5);
    const MatrixF calib = lessonInputs(rnd, 512, 16, true), test = lessonInputs(rnd, 512, 16, true);
    const MatrixF w = lessonWeights(rnd, 16, 16);
    struct Case {
        int bits;
        double alpha, mse;
    };
    for (const Case c : {Case{4, 0.4, 1.702e-04}, Case{3, 0.2, 1.404e-03}}) {
        const AwqResult r = quantizeAwq({&w}, calib, lessonGrid(c.bits, 10));
        EXPECT_NEAR(r.alpha, c.alpha, 1e-12) << c.bits;
        const double mse = outputErrorFromInputs(w, r.linears[0].effectiveWeight(), test).mse;
        EXPECT_NEAR(mse, c.mse, 1e-3 * c.mse) << c.bits;
    }
}

TEST(Awq, SharedInputSumsTheLinearsErrors) {
    std::mt19937 gen(3);
    std::normal_distribution<float> g(0.0f, 1.0f);
    MatrixF x(256, 128);
    for (std::int64_t i = 0; i < x.size(); ++i) x.data()[i] = g(gen);
    x.col(5) *= 10.0f;
    x.col(77) *= 6.0f;
    MatrixF a(64, 128), b(32, 128);
    for (std::int64_t i = 0; i < a.size(); ++i) a.data()[i] = 0.02f * g(gen);
    for (std::int64_t i = 0; i < b.size(); ++i) b.data()[i] = 0.05f * g(gen);
    const AwqResult both = quantizeAwq({&a, &b}, x, {.bits = 3, .groupSize = 64});
    const AwqResult onlyA = quantizeAwq({&a}, x, {.bits = 3, .groupSize = 64});
    const AwqResult onlyB = quantizeAwq({&b}, x, {.bits = 3, .groupSize = 64});
    for (std::size_t i = 0; i < both.gridError.size(); ++i)
        EXPECT_NEAR(both.gridError[i], onlyA.gridError[i] + onlyB.gridError[i], 1e-9 * both.gridError[i]);
    const auto minIt = std::min_element(both.gridError.begin(), both.gridError.end());
    EXPECT_DOUBLE_EQ(both.alpha, static_cast<double>(minIt - both.gridError.begin()) / 20);
    ASSERT_EQ(both.linears.size(), 2u);
    EXPECT_EQ(both.linears[1].rows, 32);
    EXPECT_EQ(both.linears[1].method, Method::Awq);
    // the clip search on top never hurts the calibration error much and usually helps
    const AwqResult clipped = quantizeAwq({&a, &b}, x, {.bits = 3, .groupSize = 64, .clipSearch = true});
    EXPECT_LT(clipped.linears[0].outputMse + clipped.linears[1].outputMse,
              both.linears[0].outputMse + both.linears[1].outputMse);
}

TEST(Awq, FoldingOneOverSKeepsTheProduct) {
    std::mt19937 gen(4);
    std::normal_distribution<float> g(0.0f, 1.0f);
    MatrixF x(64, 32), w(16, 32), prev(32, 24), xin(64, 24);
    for (std::int64_t i = 0; i < x.size(); ++i) x.data()[i] = g(gen) * (i % 32 == 3 ? 8.0f : 1.0f);
    for (std::int64_t i = 0; i < w.size(); ++i) w.data()[i] = 0.02f * g(gen);
    for (std::int64_t i = 0; i < prev.size(); ++i) prev.data()[i] = 0.1f * g(gen);
    for (std::int64_t i = 0; i < xin.size(); ++i) xin.data()[i] = g(gen);
    const AwqResult r = quantizeAwq({&w}, x, {.bits = 4, .groupSize = 32});
    const QuantizedLinear& q = r.linears[0];
    // RMSNorm: y = x̂ ⊙ γ; the folded γ / s feeds the stored (scaled) weights directly.
    std::vector<float> gamma(32, 1.5f), folded = gamma;
    foldIntoNorm(folded, r.scales);
    const Eigen::Map<const VectorF> gv(gamma.data(), 32), fv(folded.data(), 32);
    const MatrixF viaFold = (x * fv.asDiagonal()) * q.dequantize().transpose();
    const MatrixF viaEffective = (x * gv.asDiagonal()) * q.effectiveWeight().transpose();
    EXPECT_LT((viaFold - viaEffective).cwiseAbs().maxCoeff(), 1e-5f * viaEffective.cwiseAbs().maxCoeff());
    // previous linear: its output c is divided by s_c
    MatrixF prevFolded = prev;
    foldIntoPreviousLinear(prevFolded, r.scales);
    const MatrixF a = (xin * prevFolded.transpose()) * q.dequantize().transpose();
    const MatrixF b = (xin * prev.transpose()) * q.effectiveWeight().transpose();
    EXPECT_LT((a - b).cwiseAbs().maxCoeff(), 1e-5f * b.cwiseAbs().maxCoeff());
}
