// GPTAQ (qs/quant/gptaq.h) against GPTQModel's GPTAQ loop written out in double, GPTQ itself where
// the quantized model's inputs are the full-precision ones (or alpha is 0), and the objective it
// exists for: ||Q X̃ - W X|| below GPTQ's when X̃ differs from X.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <random>
#include <vector>

#include "qs/eigen.h"
#include "qs/error.h"
#include "qs/quant/gptaq.h"
#include "qs/quant/gptq.h"
#include "qs/quant/hessian.h"
#include "qs/quant/input_deviation.h"
#include "qs/quant/rtn.h"

using namespace qs;
using namespace qs::quant;

namespace {

// Correlated inputs: a shared component plus noise, a few channels much larger than the rest.
MatrixF fullPrecisionInputs(std::int64_t tokens, std::int64_t n, std::mt19937& gen) {
    std::normal_distribution<float> g(0.0f, 1.0f);
    MatrixF x(tokens, n);
    for (std::int64_t t = 0; t < tokens; ++t) {
        const float shared = g(gen);
        for (std::int64_t j = 0; j < n; ++j) x(t, j) = (shared + 0.5f * g(gen)) * (j % 7 == 0 ? 4.0f : 1.0f);
    }
    return x;
}

// The quantized model's inputs: the full-precision ones with the earlier layers' error added, which
// follows the inputs (a fixed mixing of the channels, as a quantized linear's error would) plus noise.
MatrixF quantizedModelInputs(const MatrixF& x, float size, std::mt19937& gen) {
    std::normal_distribution<float> g(0.0f, 1.0f);
    MatrixF mix(x.cols(), x.cols());
    for (std::int64_t i = 0; i < mix.size(); ++i) mix.data()[i] = g(gen) / static_cast<float>(x.cols());
    MatrixF xq = x + size * (x * mix);
    for (std::int64_t i = 0; i < xq.size(); ++i) xq.data()[i] += 0.3f * size * g(gen);
    return xq;
}

MatrixF randomWeights(std::int64_t rows, std::int64_t cols, std::mt19937& gen) {
    std::normal_distribution<float> g(0.0f, 0.02f);
    MatrixF w(rows, cols);
    for (std::int64_t i = 0; i < w.size(); ++i) w.data()[i] = g(gen);
    return w;
}

// D = 2 (X - X̃)ᵀ X̃ / n in double, as GPTQModel accumulates dXXT.
MatrixF correctionInputs(const MatrixF& x, const MatrixF& xq) {
    const MatrixD dx = (x - xq).cast<double>();
    return (2.0 / static_cast<double>(x.rows()) * dx.transpose() * xq.cast<double>()).cast<float>();
}

struct Case {
    int bits, group, block;
    bool actOrder;
};

// GPTQModel's GPTAQ.quantize in double, written from its description: H⁻¹'s upper Cholesky factor U,
// P = alpha triu₁(D Uᵀ) U, blocks of `block` columns; inside a block each column is quantized and
// moves the block's later columns by -e U_ij + w P_ij (w the weights it was quantized from), and after
// the block the later columns move by -E U + W1 P with W1 the block as it ends (its quantized values).
// Grids come from the weights as they are when a group begins at a block's start (the cases' groups
// begin only there). Codes in the original column order.
std::vector<std::uint8_t> referenceGptaq(const MatrixF& wIn, const MatrixF& h, const MatrixF& dxxt, const Case& c,
                                         double alpha) {
    const std::int64_t rows = wIn.rows(), n = wIn.cols();
    std::vector<std::int64_t> perm(static_cast<std::size_t>(n));
    std::iota(perm.begin(), perm.end(), 0);
    if (c.actOrder) std::stable_sort(perm.begin(), perm.end(), [&h](auto a, auto b) { return h(a, a) > h(b, b); });
    MatrixD w(rows, n), hd(n, n), d(n, n);
    for (std::int64_t k = 0; k < n; ++k) {
        w.col(k) = wIn.col(perm[std::size_t(k)]).cast<double>();
        for (std::int64_t j = 0; j < n; ++j) {
            hd(k, j) = h(perm[std::size_t(k)], perm[std::size_t(j)]);
            d(k, j) = dxxt(perm[std::size_t(k)], perm[std::size_t(j)]);
        }
    }
    hd.diagonal().array() += 0.01 * hd.diagonal().mean();
    const MatrixD hinv = hd.inverse();
    const MatrixD u = hinv.llt().matrixU();  // hinv = Uᵀ U
    const MatrixD a = (d * u.transpose()).triangularView<Eigen::StrictlyUpper>();
    const MatrixD p = alpha * a * u;
    const int groupCols = c.group < 0 ? static_cast<int>(n) : c.group;
    const float maxq = static_cast<float>((1 << c.bits) - 1);
    std::vector<std::uint8_t> codes(static_cast<std::size_t>(rows * n));
    std::vector<GridParams> grid(static_cast<std::size_t>(rows));
    for (std::int64_t i1 = 0; i1 < n; i1 += c.block) {
        const std::int64_t i2 = std::min<std::int64_t>(i1 + c.block, n), count = i2 - i1;
        MatrixD w1 = w.middleCols(i1, count);
        MatrixD err1 = MatrixD::Zero(rows, count);
        for (std::int64_t i = 0; i < count; ++i) {
            const std::int64_t col = i1 + i;
            if (col % groupCols == 0)
                for (std::int64_t r = 0; r < rows; ++r) {
                    const auto seg = w.row(r).segment(col, std::min<std::int64_t>(groupCols, n - col)).cast<float>();
                    grid[std::size_t(r)] =
                        gridParams(seg.minCoeff(), seg.maxCoeff(), c.bits, false, GridRule::AutoGptq);
                }
            const Eigen::VectorXd before = w1.col(i);
            for (std::int64_t r = 0; r < rows; ++r) {
                const float code = quantizeCode(static_cast<float>(before[r]), grid[std::size_t(r)], maxq);
                codes[std::size_t(r * n + perm[std::size_t(col)])] = static_cast<std::uint8_t>(code);
                err1(r, i) = (before[r] - dequantizeCode(code, grid[std::size_t(r)])) / u(col, col);
            }
            w1.rightCols(count - i) -=
                err1.col(i) * u.row(col).segment(col, count - i) - before * p.row(col).segment(col, count - i);
        }
        w.middleCols(i1, count) = w1;
        if (i2 < n) w.rightCols(n - i2) -= err1 * u.block(i1, i2, count, n - i2) - w1 * p.block(i1, i2, count, n - i2);
    }
    return codes;
}

GptqOptions optionsOf(const Case& c) {
    return {.bits = c.bits, .groupSize = c.group, .actOrder = c.actOrder, .sym = false, .blockSize = c.block};
}

struct Problem {
    MatrixF x, xq, w, h, d;
};

Problem problem(std::int64_t tokens, std::int64_t rows, std::int64_t n, float size, unsigned seed) {
    std::mt19937 gen(seed);
    Problem p;
    p.x = fullPrecisionInputs(tokens, n, gen);
    p.xq = quantizedModelInputs(p.x, size, gen);
    p.w = randomWeights(rows, n, gen);
    p.h = hessian(p.xq);
    p.d = correctionInputs(p.x, p.xq);
    return p;
}

// ||Q X̃ - W X||_F², GPTAQ's objective.
double asymmetricError(const Problem& p, const QuantizedLinear& q) {
    return (p.xq.cast<double>() * q.dequantize().cast<double>().transpose() -
            p.x.cast<double>() * p.w.cast<double>().transpose())
        .squaredNorm();
}

}  // namespace

TEST(Gptaq, EqualsGptqBitForBitWhenTheInputsAgree) {
    const Problem p = problem(512, 24, 64, 0.0f, 3);  // X̃ = X: D = 0
    ASSERT_EQ(p.d.cwiseAbs().maxCoeff(), 0.0f);
    for (const Case c : {Case{4, 16, 16, false}, Case{3, -1, 8, true}, Case{4, 32, 16, false}}) {
        const QuantizedLinear g = quantizeGptq(p.w, p.h, optionsOf(c));
        const QuantizedLinear a = quantizeGptaq(p.w, p.h, p.d, optionsOf(c));
        EXPECT_EQ(a.codes, g.codes) << c.bits << " bits, group " << c.group;
        EXPECT_EQ(a.scales, g.scales);
        EXPECT_EQ(a.zeros, g.zeros);
        EXPECT_EQ(a.gIdx, g.gIdx);
        EXPECT_EQ(a.method, Method::Gptq);  // exported as GPTQ
    }
}

TEST(Gptaq, AlphaZeroIsGptqEvenWhenTheInputsDiffer) {
    const Problem p = problem(512, 24, 64, 0.5f, 4);
    ASSERT_GT(p.d.cwiseAbs().maxCoeff(), 0.0f);
    const Case c{4, 16, 16, false};
    EXPECT_EQ(quantizeGptaq(p.w, p.h, p.d, optionsOf(c), 0.0).codes, quantizeGptq(p.w, p.h, optionsOf(c)).codes);
    // The negative control of the control: with the default alpha the codes do change.
    EXPECT_NE(quantizeGptaq(p.w, p.h, p.d, optionsOf(c)).codes, quantizeGptq(p.w, p.h, optionsOf(c)).codes);
}

TEST(Gptaq, EqualsTheReferenceLoopInDouble) {
    const Problem p = problem(512, 16, 48, 0.5f, 5);
    for (const Case c : {Case{4, 16, 16, false}, Case{4, 32, 16, false}, Case{3, -1, 8, false}, Case{4, 16, 8, true},
                         Case{2, 48, 16, false}}) {
        for (double alpha : {0.25, 1.0}) {
            const QuantizedLinear q = quantizeGptaq(p.w, p.h, p.d, optionsOf(c), alpha);
            const auto ref = referenceGptaq(p.w, p.h, p.d, c, alpha);
            std::int64_t diff = 0;
            for (std::size_t i = 0; i < ref.size(); ++i) diff += ref[i] != q.codes[i];
            EXPECT_EQ(diff, 0) << c.bits << " bits, group " << c.group << ", block " << c.block << ", act-order "
                               << c.actOrder << ", alpha " << alpha;
        }
    }
}

TEST(Gptaq, LowersTheAsymmetricErrorBelowGptq) {
    for (unsigned seed : {6u, 7u, 8u}) {
        const Problem p = problem(2048, 64, 128, 0.4f, seed);
        const GptqOptions o{.bits = 3, .groupSize = 32, .sym = false};
        const double gptq = asymmetricError(p, quantizeGptq(p.w, p.h, o));
        const double gptaq = asymmetricError(p, quantizeGptaq(p.w, p.h, p.d, o));
        const double full = asymmetricError(p, quantizeGptaq(p.w, p.h, p.d, o, 1.0));
        EXPECT_LT(gptaq, gptq) << "seed " << seed;
        std::printf("seed %u: ||Q X~ - W X||^2 GPTQ %.4g, GPTAQ %.4g (alpha 1: %.4g)\n", seed, gptq, gptaq, full);
    }
}

TEST(Gptaq, MeasuresItsErrorOnTheQuantizedModelsInputs) {
    const Problem p = problem(1024, 32, 64, 0.5f, 9);
    const QuantizedLinear q = quantizeGptaq(p.w, p.h, p.d, {.bits = 4, .groupSize = 32, .sym = false});
    const MatrixD diff = (p.w - q.dequantize()).cast<double>();
    const MatrixD xq = p.xq.cast<double>();
    const double err2 = (xq * diff.transpose()).squaredNorm(),
                 ref2 = (xq * p.w.cast<double>().transpose()).squaredNorm();
    EXPECT_NEAR(q.outputError, std::sqrt(err2 / ref2), 1e-4 * std::sqrt(err2 / ref2));
}

TEST(Gptaq, RejectsACorrectionOfTheWrongShape) {
    const Problem p = problem(256, 8, 32, 0.5f, 10);
    EXPECT_THROW(quantizeGptaq(p.w, p.h, MatrixF::Zero(16, 16)), Error);
}

// D accumulated over several calls (and chunks inside one) equals 2 (X - X̃)ᵀ X̃ / n computed at once in double.
TEST(InputDeviation, AccumulatesTheClosedForm) {
    const Problem p = problem(5000, 4, 300, 0.5f, 11);  // 300 features: a partial 256-wide tile; 5000 rows: chunks
    InputDeviationAccumulator acc(300);
    acc.add(p.x.topRows(1200), p.xq.topRows(1200));
    acc.add(p.x.bottomRows(3800), p.xq.bottomRows(3800));
    EXPECT_EQ(acc.samples(), 5000);
    const MatrixF d = acc.finalize();
    const double scale = p.d.cwiseAbs().maxCoeff();
    EXPECT_LT((d - p.d).cwiseAbs().maxCoeff(), 1e-4 * scale);
    EXPECT_THROW(acc.add(p.x.topRows(10), p.xq.topRows(9)), Error);
    EXPECT_THROW(InputDeviationAccumulator(300).finalize(), Error);
}
