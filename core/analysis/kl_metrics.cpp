#include "qs/analysis/kl_metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "qs/error.h"

namespace qs::analysis {
namespace {

struct Normalizer {
    double logZ = 0.0;     // log Σ exp(x_i), computed around the maximum so that it cannot overflow
    Eigen::Index top = 0;  // first index of the maximum, as llama.cpp picks it
};

Normalizer normalize(const float* x, Eigen::Index n) {
    Normalizer r;
    for (Eigen::Index i = 1; i < n; ++i)
        if (x[i] > x[r.top]) r.top = i;
    const double maxv = x[r.top];
    double sum = 0.0;
    for (Eigen::Index i = 0; i < n; ++i) sum += std::exp(static_cast<double>(x[i]) - maxv);
    r.logZ = maxv + std::log(sum);
    return r;
}

double klOf(const float* base, const float* quant, Eigen::Index n, const Normalizer& b, const Normalizer& q) {
    double kl = 0.0;
    for (Eigen::Index i = 0; i < n; ++i) {
        const double lb = static_cast<double>(base[i]) - b.logZ;
        const double lq = static_cast<double>(quant[i]) - q.logZ;
        kl += std::exp(lb) * (lb - lq);
    }
    return kl;
}

struct Position {
    double kld = 0, nll = 0, nllBase = 0, deltaP = 0;
    bool sameTop = false;
};

Position measure(const float* base, const float* quant, Eigen::Index n, std::int32_t target) {
    const Normalizer b = normalize(base, n), q = normalize(quant, n);
    Position p;
    p.kld = klOf(base, quant, n, b, q);
    p.nll = q.logZ - quant[target];
    p.nllBase = b.logZ - base[target];
    p.deltaP = std::exp(-p.nll) - std::exp(-p.nllBase);
    p.sameTop = b.top == q.top;
    return p;
}

// llama.cpp's mean_and_uncertainty: the standard error of the mean, sqrt(var / (n - 1)) with the
// population variance, left at 0 for 10 values or fewer.
ValueWithUncertainty meanAndUncertainty(double mean, double m2, std::size_t n) {
    if (n < 1) return {};
    const double var = m2 / static_cast<double>(n);
    return {mean, var > 0 && n > 10 ? std::sqrt(var / static_cast<double>(n - 1)) : 0.0};
}

// llama.cpp's covariance of the two means (not of the values): cov(a, b) / (n - 1).
double covarianceOfMeans(double comoment, std::size_t n) {
    if (n < 10) return 0.0;
    const double dn = static_cast<double>(n);
    return comoment / dn / (dn - 1.0);
}

double differenceUncertainty(double ua, double ub, double cov) {
    return std::sqrt(std::max(0.0, ua * ua + ub * ub - 2.0 * cov));
}

}  // namespace

double klDivergence(std::span<const float> baseLogits, std::span<const float> quantLogits) {
    if (baseLogits.size() != quantLogits.size() || baseLogits.empty())
        throw Error("KL divergence: logit vectors must be non-empty and of the same size");
    const auto n = static_cast<Eigen::Index>(baseLogits.size());
    return klOf(baseLogits.data(), quantLogits.data(), n, normalize(baseLogits.data(), n),
                normalize(quantLogits.data(), n));
}

double Distribution::quantile(const std::vector<double>& sorted, double fraction) {
    if (sorted.empty()) return 0.0;
    if (fraction <= 0) return sorted.front();
    if (fraction >= 1) return sorted.back();
    const double p = fraction * static_cast<double>(sorted.size() - 1);
    const auto i = static_cast<std::size_t>(p);
    const double w = p - static_cast<double>(i);
    return (1 - w) * sorted[i] + w * sorted[std::min(i + 1, sorted.size() - 1)];
}

Distribution Distribution::of(std::vector<double> v) {
    Distribution d;
    if (v.empty()) return d;
    std::sort(v.begin(), v.end());
    d.minimum = v.front();
    d.maximum = v.back();
    d.p0_1 = quantile(v, 0.001);
    d.p1 = quantile(v, 0.01);
    d.p5 = quantile(v, 0.05);
    d.p10 = quantile(v, 0.10);
    d.p25 = quantile(v, 0.25);
    d.median = quantile(v, 0.5);  // the mean of the two middle values for even n, as llama.cpp's median
    d.p75 = quantile(v, 0.75);
    d.p90 = quantile(v, 0.90);
    d.p95 = quantile(v, 0.95);
    d.p99 = quantile(v, 0.99);
    d.p99_9 = quantile(v, 0.999);
    return d;
}

void KlAccumulator::add(const Eigen::Ref<const MatrixF>& base, const Eigen::Ref<const MatrixF>& quant,
                        std::span<const std::int32_t> targets) {
    if (base.rows() != quant.rows() || base.cols() != quant.cols())
        throw Error("KL metrics: base and quantized logits differ in shape");
    if (base.rows() != static_cast<Eigen::Index>(targets.size()))
        throw Error("KL metrics: " + std::to_string(targets.size()) + " targets for " + std::to_string(base.rows()) +
                    " positions");
    if (base.cols() == 0 || (vocab_ >= 0 && base.cols() != vocab_))
        throw Error("KL metrics: vocabulary of " + std::to_string(base.cols()) + " logits, earlier chunks had " +
                    std::to_string(vocab_));
    for (std::int32_t t : targets)
        if (t < 0 || t >= base.cols())
            throw Error("KL metrics: target token " + std::to_string(t) + " outside the vocabulary");
    vocab_ = base.cols();

    const Eigen::Index n = base.rows();
    std::vector<Position> positions(static_cast<std::size_t>(n));
#pragma omp parallel for schedule(static) if (n * base.cols() > 100000)
    for (Eigen::Index i = 0; i < n; ++i)
        positions[static_cast<std::size_t>(i)] =
            measure(base.row(i).data(), quant.row(i).data(), vocab_, targets[static_cast<std::size_t>(i)]);

    // Accumulated in position order, so the report depends neither on the thread count nor on the chunking.
    for (const Position& p : positions) {
        const std::size_t n = kld_.size() + 1;
        const double nllDelta = p.nll - nll_.mean;  // before the update: the co-moment needs the old mean
        nll_.add(p.nll, n);
        nllBase_.add(p.nllBase, n);
        nllComoment_ += nllDelta * (p.nllBase - nllBase_.mean);
        kldMoments_.add(p.kld, n);
        deltaPMoments_.add(p.deltaP, n);
        deltaP2Moments_.add(p.deltaP * p.deltaP, n);
        sameTop_ += p.sameTop ? 1 : 0;
        kld_.push_back(p.kld);
        deltaP_.push_back(p.deltaP);
    }
}

void KlAccumulator::Moments::add(double x, std::size_t n) {
    const double delta = x - mean;
    mean += delta / static_cast<double>(n);
    m2 += delta * (x - mean);
}

KlReport KlAccumulator::report() const {
    KlReport r;
    const std::size_t n = count();
    r.count = n;
    if (n == 0) return r;
    const ValueWithUncertainty logPpl = meanAndUncertainty(nll_.mean, nll_.m2, n);
    const ValueWithUncertainty logPplBase = meanAndUncertainty(nllBase_.mean, nllBase_.m2, n);
    const double cov = covarianceOfMeans(nllComoment_, n);
    r.pplQ = {std::exp(logPpl.value), std::exp(logPpl.value) * logPpl.uncertainty};
    r.pplBase = {std::exp(logPplBase.value), std::exp(logPplBase.value) * logPplBase.uncertainty};
    const double denom = logPpl.uncertainty * logPplBase.uncertainty;
    r.lnPplCorrelation = denom > 0 ? cov / denom : std::numeric_limits<double>::quiet_NaN();
    r.lnPplRatio = {logPpl.value - logPplBase.value,
                    differenceUncertainty(logPpl.uncertainty, logPplBase.uncertainty, cov)};
    r.pplRatio = {std::exp(r.lnPplRatio.value), std::exp(r.lnPplRatio.value) * r.lnPplRatio.uncertainty};
    r.pplDiff = {r.pplQ.value - r.pplBase.value, differenceUncertainty(r.pplQ.uncertainty, r.pplBase.uncertainty,
                                                                       r.pplQ.value * r.pplBase.value * cov)};

    r.meanKld = meanAndUncertainty(kldMoments_.mean, kldMoments_.m2, n);
    r.kld = Distribution::of(kld_);

    r.meanDeltaP = meanAndUncertainty(deltaPMoments_.mean, deltaPMoments_.m2, n);
    r.deltaP = Distribution::of(deltaP_);
    const ValueWithUncertainty mse = meanAndUncertainty(deltaP2Moments_.mean, deltaP2Moments_.m2, n);
    const double rms = std::sqrt(mse.value);
    r.rmsDeltaP = {rms, rms > 0 ? 0.5 / rms * mse.uncertainty : 0.0};
    const double same = static_cast<double>(sameTop_) / static_cast<double>(n);
    r.sameTop = {same, n > 1 ? std::sqrt(same * (1 - same) / static_cast<double>(n - 1)) : 0.0};
    return r;
}

namespace {

template <typename... Args>
void appendf(std::string& out, const char* format, Args... args) {
    char line[160];
    std::snprintf(line, sizeof line, format, args...);
    out += line;
}

}  // namespace

std::string formatKlReport(const KlReport& r) {
    std::string o;
    o += "====== Perplexity statistics ======\n";
    appendf(o, "Mean PPL(Q)                   : %10.6lf ± %10.6lf\n", r.pplQ.value, r.pplQ.uncertainty);
    appendf(o, "Mean PPL(base)                : %10.6lf ± %10.6lf\n", r.pplBase.value, r.pplBase.uncertainty);
    appendf(o, "Cor(ln(PPL(Q)), ln(PPL(base))): %6.2lf%%\n", 100.0 * r.lnPplCorrelation);
    appendf(o, "Mean ln(PPL(Q)/PPL(base))     : %10.6lf ± %10.6lf\n", r.lnPplRatio.value, r.lnPplRatio.uncertainty);
    appendf(o, "Mean PPL(Q)/PPL(base)         : %10.6lf ± %10.6lf\n", r.pplRatio.value, r.pplRatio.uncertainty);
    appendf(o, "Mean PPL(Q)-PPL(base)         : %10.6lf ± %10.6lf\n", r.pplDiff.value, r.pplDiff.uncertainty);
    o += "\n====== KL divergence statistics ======\n";
    const Distribution& k = r.kld;
    appendf(o, "Mean    KLD: %10.6lf ± %10.6lf\n", r.meanKld.value, r.meanKld.uncertainty);
    appendf(o, "Maximum KLD: %10.6f\n", k.maximum);
    appendf(o, "99.9%%   KLD: %10.6f\n", k.p99_9);
    appendf(o, "99.0%%   KLD: %10.6f\n", k.p99);
    appendf(o, "95.0%%   KLD: %10.6f\n", k.p95);
    appendf(o, "90.0%%   KLD: %10.6f\n", k.p90);
    appendf(o, "Median  KLD: %10.6f\n", k.median);
    appendf(o, "10.0%%   KLD: %10.6f\n", k.p10);
    appendf(o, " 5.0%%   KLD: %10.6f\n", k.p5);
    appendf(o, " 1.0%%   KLD: %10.6f\n", k.p1);
    appendf(o, " 0.1%%   KLD: %10.6f\n", k.p0_1);
    appendf(o, "Minimum KLD: %10.6f\n", k.minimum);
    o += "\n====== Token probability statistics ======\n";
    const Distribution& d = r.deltaP;
    appendf(o, "Mean    Δp: %6.3lf ± %5.3lf %%\n", 100.0 * r.meanDeltaP.value, 100.0 * r.meanDeltaP.uncertainty);
    const std::pair<const char*, double> rows[] = {
        {"Maximum Δp", d.maximum}, {"99.9%   Δp", d.p99_9}, {"99.0%   Δp", d.p99},    {"95.0%   Δp", d.p95},
        {"90.0%   Δp", d.p90},     {"75.0%   Δp", d.p75},   {"Median  Δp", d.median}, {"25.0%   Δp", d.p25},
        {"10.0%   Δp", d.p10},     {" 5.0%   Δp", d.p5},    {" 1.0%   Δp", d.p1},     {" 0.1%   Δp", d.p0_1},
        {"Minimum Δp", d.minimum}};
    for (const auto& [label, value] : rows) appendf(o, "%s: %6.3lf%%\n", label, 100.0 * value);
    appendf(o, "RMS Δp    : %6.3lf ± %5.3lf %%\n", 100.0 * r.rmsDeltaP.value, 100.0 * r.rmsDeltaP.uncertainty);
    appendf(o, "Same top p: %6.3lf ± %5.3lf %%\n", 100.0 * r.sameTop.value, 100.0 * r.sameTop.uncertainty);
    return o;
}

}  // namespace qs::analysis
