// KL metrics against values computed here by hand or by brute force in long double.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "qs/analysis/kl_metrics.h"
#include "qs/error.h"

using namespace qs;
using namespace qs::analysis;

namespace {

MatrixF randomLogits(std::mt19937& rng, int rows, int vocab, float scale) {
    std::normal_distribution<float> n(0.0f, scale);
    MatrixF m(rows, vocab);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = n(rng);
    return m;
}

std::vector<long double> softmaxRef(const MatrixF& m, Eigen::Index row) {
    std::vector<long double> p(static_cast<std::size_t>(m.cols()));
    long double sum = 0;
    for (Eigen::Index i = 0; i < m.cols(); ++i)
        sum += (p[std::size_t(i)] = std::exp(static_cast<long double>(m(row, i))));
    for (auto& v : p) v /= sum;
    return p;
}

TEST(KlDivergence, IdenticalLogitsGiveZero) {
    std::mt19937 rng(1);
    const MatrixF l = randomLogits(rng, 20, 300, 3.0f);
    std::vector<std::int32_t> targets(20);
    for (int i = 0; i < 20; ++i) targets[std::size_t(i)] = (i * 37) % 300;
    KlAccumulator acc;
    acc.add(l, l, targets);
    for (double k : acc.klValues()) EXPECT_EQ(k, 0.0);
    const KlReport r = acc.report();
    EXPECT_EQ(r.meanKld.value, 0.0);
    EXPECT_DOUBLE_EQ(r.pplQ.value, r.pplBase.value);
    EXPECT_DOUBLE_EQ(r.pplRatio.value, 1.0);
    EXPECT_EQ(r.lnPplRatio.value, 0.0);
    EXPECT_EQ(r.lnPplRatio.uncertainty, 0.0);
    EXPECT_NEAR(r.lnPplCorrelation, 1.0, 1e-12);
    EXPECT_EQ(r.meanDeltaP.value, 0.0);
    EXPECT_EQ(r.rmsDeltaP.value, 0.0);
    EXPECT_EQ(r.sameTop.value, 1.0);
    EXPECT_EQ(r.sameTop.uncertainty, 0.0);
}

TEST(KlDivergence, TwoTokenCaseMatchesTheClosedFormEvenFarFromZero) {
    // base p = (1/2, 1/2), quant q = (3/4, 1/4): KL = ½ ln(½ / ¾) + ½ ln(½ / ¼) = ½ ln(4/3).
    const double expected = 0.5 * std::log(4.0 / 3.0);
    const std::vector<float> base{0.0f, 0.0f}, quant{static_cast<float>(std::log(3.0)), 0.0f};
    EXPECT_NEAR(klDivergence(base, quant), expected, 1e-7);
    // Shifting all logits by a constant changes nothing; a naive exp() would overflow at 1000.
    const std::vector<float> baseShift{1000.0f, 1000.0f}, quantShift{1000.0f + quant[0], 1000.0f};
    EXPECT_NEAR(klDivergence(baseShift, quantShift), expected, 1e-5);
    // And it is not symmetric: KL(q ‖ p) = ¾ ln(3/2) + ¼ ln(1/2).
    EXPECT_NEAR(klDivergence(quant, base), 0.75 * std::log(1.5) + 0.25 * std::log(0.5), 1e-7);
}

TEST(KlDivergence, MatchesBruteForceOnRandomLogits) {
    std::mt19937 rng(2);
    const MatrixF b = randomLogits(rng, 1, 1000, 4.0f), q = b + randomLogits(rng, 1, 1000, 0.5f);
    const auto p = softmaxRef(b, 0), r = softmaxRef(q, 0);
    long double kl = 0;
    for (std::size_t i = 0; i < p.size(); ++i) kl += p[i] * std::log(p[i] / r[i]);
    EXPECT_NEAR(klDivergence({b.data(), 1000}, {q.data(), 1000}), double(kl), 1e-9);
    EXPECT_GT(double(kl), 0.01);
}

TEST(KlAccumulator, UniformLogitsHavePerplexityEqualToTheVocabulary) {
    const MatrixF uniform = MatrixF::Constant(30, 50, 2.5f);
    std::vector<std::int32_t> targets(30, 7);
    KlAccumulator acc;
    acc.add(uniform, uniform, targets);
    const KlReport r = acc.report();
    EXPECT_NEAR(r.pplQ.value, 50.0, 1e-9);
    EXPECT_NEAR(r.pplBase.value, 50.0, 1e-9);
    EXPECT_NEAR(r.pplQ.uncertainty, 0.0, 1e-9);
}

TEST(Distribution, QuantilesInterpolateBetweenOrderStatistics) {
    std::vector<double> v;
    for (int i = 100; i >= 0; --i) v.push_back(i);  // 0..100, unsorted
    const Distribution d = Distribution::of(v);
    EXPECT_DOUBLE_EQ(d.minimum, 0.0);
    EXPECT_DOUBLE_EQ(d.maximum, 100.0);
    EXPECT_NEAR(d.p99_9, 99.9, 1e-9);
    EXPECT_NEAR(d.p99, 99.0, 1e-9);
    EXPECT_NEAR(d.p95, 95.0, 1e-9);
    EXPECT_NEAR(d.median, 50.0, 1e-9);
    EXPECT_NEAR(d.p0_1, 0.1, 1e-9);
    // An even count: the median is the mean of the middle two, as llama.cpp prints it.
    EXPECT_DOUBLE_EQ(Distribution::of({1.0, 2.0, 10.0, 20.0}).median, 6.0);
    EXPECT_DOUBLE_EQ(Distribution::quantile({1.0, 2.0, 10.0, 20.0}, 0.5), 6.0);
}

// Positions with known KL: base (½, ½), quant σ(a_i): KL_i = -ln 2 - ½ ln(σ(a)(1 - σ(a))).
TEST(KlAccumulator, PercentilesOfKnownPerPositionValues) {
    const int n = 201;
    MatrixF base = MatrixF::Zero(n, 2), quant = MatrixF::Zero(n, 2);
    std::vector<double> expected;
    for (int i = 0; i < n; ++i) {
        const double a = 0.02 * (i - 100);  // -2 .. 2, KL symmetric in a
        quant(i, 0) = float(a);
        const double s = 1.0 / (1.0 + std::exp(-double(quant(i, 0))));
        expected.push_back(-std::log(2.0) - 0.5 * std::log(s * (1 - s)));
    }
    std::vector<std::int32_t> targets(n, 0);
    KlAccumulator acc;
    acc.add(base, quant, targets);
    const KlReport r = acc.report();
    const Distribution d = Distribution::of(expected);
    EXPECT_NEAR(r.kld.maximum, d.maximum, 1e-9);
    EXPECT_NEAR(r.kld.p99, d.p99, 1e-9);
    EXPECT_NEAR(r.kld.median, d.median, 1e-9);
    EXPECT_NEAR(r.kld.minimum, 0.0, 1e-12);
    double mean = 0;
    for (double e : expected) mean += e / n;
    EXPECT_NEAR(r.meanKld.value, mean, 1e-9);
    // Δp on target 0: σ(a) - ½, ranging over ±(σ(2) - ½).
    EXPECT_NEAR(r.deltaP.maximum, 1.0 / (1.0 + std::exp(-2.0)) - 0.5, 1e-6);
    EXPECT_NEAR(r.deltaP.minimum, -(1.0 / (1.0 + std::exp(-2.0)) - 0.5), 1e-6);
    EXPECT_NEAR(r.deltaP.median, 0.0, 1e-7);
}

// The aggregate statistics against direct formulas (sample variance / n, Pearson correlation).
TEST(KlAccumulator, UncertaintiesAndCorrelationMatchBruteForce) {
    std::mt19937 rng(3);
    const int n = 250, vocab = 37;
    const MatrixF base = randomLogits(rng, n, vocab, 2.0f);
    const MatrixF quant = base + randomLogits(rng, n, vocab, 0.7f);
    std::vector<std::int32_t> targets(n);
    std::uniform_int_distribution<int> tok(0, vocab - 1);
    for (auto& t : targets) t = tok(rng);
    KlAccumulator acc;
    acc.add(base, quant, targets);
    const KlReport r = acc.report();

    std::vector<long double> kl(n), nll(n), nllBase(n), dp(n);
    int same = 0;
    for (int i = 0; i < n; ++i) {
        const auto p = softmaxRef(base, i), q = softmaxRef(quant, i);
        for (int v = 0; v < vocab; ++v)
            kl[std::size_t(i)] += p[std::size_t(v)] * std::log(p[std::size_t(v)] / q[std::size_t(v)]);
        const std::size_t t = std::size_t(targets[std::size_t(i)]);
        nll[std::size_t(i)] = -std::log(q[t]);
        nllBase[std::size_t(i)] = -std::log(p[t]);
        dp[std::size_t(i)] = q[t] - p[t];
        Eigen::Index bi, qi;
        base.row(i).maxCoeff(&bi);
        quant.row(i).maxCoeff(&qi);
        same += bi == qi;
    }
    auto mean = [&](const std::vector<long double>& x) {
        long double s = 0;
        for (auto v : x) s += v;
        return s / n;
    };
    auto stderrOf = [&](const std::vector<long double>& x) {
        const long double m = mean(x);
        long double ss = 0;
        for (auto v : x) ss += (v - m) * (v - m);
        return std::sqrt(ss / n / (n - 1));
    };
    EXPECT_NEAR(r.meanKld.value, double(mean(kl)), 1e-10);
    EXPECT_NEAR(r.meanKld.uncertainty, double(stderrOf(kl)), 1e-10);
    EXPECT_NEAR(r.pplQ.value, double(std::exp(mean(nll))), 1e-8);
    EXPECT_NEAR(r.pplQ.uncertainty, double(std::exp(mean(nll)) * stderrOf(nll)), 1e-8);
    EXPECT_NEAR(r.pplBase.value, double(std::exp(mean(nllBase))), 1e-8);
    long double cov = 0, va = 0, vb = 0;
    const long double ma = mean(nll), mb = mean(nllBase);
    for (int i = 0; i < n; ++i) {
        cov += (nll[std::size_t(i)] - ma) * (nllBase[std::size_t(i)] - mb);
        va += (nll[std::size_t(i)] - ma) * (nll[std::size_t(i)] - ma);
        vb += (nllBase[std::size_t(i)] - mb) * (nllBase[std::size_t(i)] - mb);
    }
    EXPECT_NEAR(r.lnPplCorrelation, double(cov / std::sqrt(va * vb)), 1e-9);
    std::vector<long double> diff(n);
    for (int i = 0; i < n; ++i) diff[std::size_t(i)] = nll[std::size_t(i)] - nllBase[std::size_t(i)];
    EXPECT_NEAR(r.lnPplRatio.value, double(mean(diff)), 1e-10);
    EXPECT_NEAR(r.lnPplRatio.uncertainty, double(stderrOf(diff)), 1e-9);  // var(a - b) = var a + var b - 2 cov
    EXPECT_NEAR(r.meanDeltaP.value, double(mean(dp)), 1e-7);
    EXPECT_NEAR(r.meanDeltaP.uncertainty, double(stderrOf(dp)), 1e-7);
    std::vector<long double> dp2(n);
    for (int i = 0; i < n; ++i) dp2[std::size_t(i)] = dp[std::size_t(i)] * dp[std::size_t(i)];
    EXPECT_NEAR(r.rmsDeltaP.value, double(std::sqrt(mean(dp2))), 1e-7);
    EXPECT_NEAR(r.sameTop.value, double(same) / n, 1e-12);
    EXPECT_LT(same, n);  // the perturbation moves some argmaxes: the check is not vacuous
    EXPECT_NEAR(r.sameTop.uncertainty, std::sqrt(r.sameTop.value * (1 - r.sameTop.value) / (n - 1)), 1e-12);
}

TEST(KlAccumulator, ChunkedInputGivesTheSameReport) {
    std::mt19937 rng(4);
    const MatrixF base = randomLogits(rng, 40, 64, 2.0f), quant = base + randomLogits(rng, 40, 64, 0.3f);
    std::vector<std::int32_t> targets(40);
    for (int i = 0; i < 40; ++i) targets[std::size_t(i)] = (i * 13) % 64;
    KlAccumulator whole, chunked;
    whole.add(base, quant, targets);
    for (int begin = 0; begin < 40; begin += 7) {
        const int rows = std::min(7, 40 - begin);
        chunked.add(base.middleRows(begin, rows), quant.middleRows(begin, rows),
                    std::span<const std::int32_t>(targets).subspan(std::size_t(begin), std::size_t(rows)));
    }
    EXPECT_EQ(whole.klValues(), chunked.klValues());
    EXPECT_EQ(formatKlReport(whole.report()), formatKlReport(chunked.report()));
    EXPECT_EQ(chunked.count(), 40u);
}

TEST(KlAccumulator, RejectsMismatchedInput) {
    KlAccumulator acc;
    const MatrixF a = MatrixF::Zero(3, 10), b = MatrixF::Zero(3, 11);
    const std::vector<std::int32_t> ok{0, 1, 2}, bad{0, 1, 10};
    EXPECT_THROW(acc.add(a, b, ok), Error);
    EXPECT_THROW(acc.add(a, a, bad), Error);
    EXPECT_THROW(acc.add(a, a, std::span<const std::int32_t>(ok).first(2)), Error);
    acc.add(a, a, ok);
    EXPECT_THROW(acc.add(b, b, ok), Error);  // another vocabulary than the first chunk
    EXPECT_EQ(acc.count(), 3u);
}

TEST(KlReport, FormatsLikeLlamaCpp) {
    const MatrixF uniform = MatrixF::Constant(30, 50, 0.0f);
    MatrixF quant = uniform;
    quant.col(7).setConstant(std::log(2.0f));  // target 7 doubles its weight: p = 2/51
    std::vector<std::int32_t> targets(30, 7);
    KlAccumulator acc;
    acc.add(uniform, quant, targets);
    const std::string text = formatKlReport(acc.report());
    EXPECT_NE(text.find("====== Perplexity statistics ======\n"), std::string::npos);
    EXPECT_NE(text.find("Mean PPL(Q)                   :  25.500000 ±   0.000000\n"), std::string::npos) << text;
    EXPECT_NE(text.find("Mean PPL(base)                :  50.000000 ±   0.000000\n"), std::string::npos) << text;
    EXPECT_NE(text.find("Mean PPL(Q)/PPL(base)         :   0.510000 ±   0.000000\n"), std::string::npos) << text;
    EXPECT_NE(text.find("====== KL divergence statistics ======\n"), std::string::npos);
    // KL = ln(51/50) - (1/50) ln 2 = 0.006339...
    char kl[64];
    std::snprintf(kl, sizeof kl, "Mean    KLD: %10.6lf ± %10.6lf\n", std::log(51.0 / 50.0) - std::log(2.0) / 50.0, 0.0);
    EXPECT_NE(text.find(kl), std::string::npos) << text;
    EXPECT_NE(text.find("99.9%   KLD:"), std::string::npos);
    EXPECT_NE(text.find(" 0.1%   KLD:"), std::string::npos);
    EXPECT_NE(text.find("====== Token probability statistics ======\n"), std::string::npos);
    EXPECT_NE(text.find("Mean    Δp:  1.922 ± 0.000 %\n"), std::string::npos) << text;  // 2/51 - 1/50
    EXPECT_NE(text.find("75.0%   Δp:  1.922%\n"), std::string::npos) << text;
    EXPECT_NE(text.find("RMS Δp    :  1.922 ± 0.000 %\n"), std::string::npos) << text;
    // All base logits tie, so the base argmax is token 0 while the quantized one is token 7.
    EXPECT_NE(text.find("Same top p:  0.000 ± 0.000 %\n"), std::string::npos) << text;
    // Zero spread: the correlation is undefined, not a number from rounding noise.
    EXPECT_NE(text.find("Cor(ln(PPL(Q)), ln(PPL(base))):    nan%\n"), std::string::npos) << text;
}

}  // namespace
