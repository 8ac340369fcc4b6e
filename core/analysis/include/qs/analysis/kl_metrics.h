#pragma once
// KL metrics: how far a quantized model's next-token distributions are from the original's, with the
// statistics and labels of llama.cpp's `perplexity --kl-divergence` report, so that QuantScope's
// numbers can be compared with the ones quantization users already share.
//
// Differences from llama.cpp, all in the direction of exactness: log-softmax and KL are computed in
// f64 over the whole vocabulary (llama.cpp stores the base log-probabilities as 16-bit codes and skips
// p_base < e^-16); per-position values are kept in f64; variances are accumulated with Welford's
// method instead of Σx² - n·mean². The statistics themselves (standard errors, covariance of the
// means, correlation, percentile interpolation) are llama.cpp's.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "qs/eigen.h"
#include "qs/matrix.h"

namespace qs::analysis {

// KL(P_base ‖ P_quant) in nats of one position's logits over the whole vocabulary.
double klDivergence(std::span<const float> baseLogits, std::span<const float> quantLogits);

struct ValueWithUncertainty {
    double value = 0.0;
    double uncertainty = 0.0;  // one standard error; 0 with 10 positions or fewer, as llama.cpp
};

// Quantiles of per-position values, interpolated linearly between order statistics as llama.cpp does.
struct Distribution {
    double minimum = 0.0, p0_1 = 0.0, p1 = 0.0, p5 = 0.0, p10 = 0.0, p25 = 0.0, median = 0.0;
    double p75 = 0.0, p90 = 0.0, p95 = 0.0, p99 = 0.0, p99_9 = 0.0, maximum = 0.0;

    static Distribution of(std::vector<double> values);  // all zero when empty
    // The value at `fraction` (0..1) of sorted values: (1-w)·v[i] + w·v[i+1] with fraction·(n-1) = i + w.
    static double quantile(const std::vector<double>& sorted, double fraction);
};

struct KlReport {
    std::size_t count = 0;  // positions compared

    // Perplexity statistics (over the target tokens).
    ValueWithUncertainty pplQ;  // exp(mean NLL of the quantized model)
    ValueWithUncertainty pplBase;
    double lnPplCorrelation = 0.0;    // Pearson correlation of per-token NLLs, -1..1 (NaN if undefined)
    ValueWithUncertainty lnPplRatio;  // mean ln(PPL(Q)/PPL(base))
    ValueWithUncertainty pplRatio;
    ValueWithUncertainty pplDiff;  // PPL(Q) - PPL(base)

    // KL divergence statistics (nats).
    ValueWithUncertainty meanKld;
    Distribution kld;

    // Token probability statistics: Δp = p_quant(target) - p_base(target), as fractions (0.01 = 1%).
    ValueWithUncertainty meanDeltaP;
    Distribution deltaP;
    ValueWithUncertainty rmsDeltaP;
    ValueWithUncertainty sameTop;  // fraction of positions whose argmax agrees
};

// llama.cpp's three sections ("====== Perplexity statistics ======" ...), line for line.
std::string formatKlReport(const KlReport& report);

// Accumulates positions in chunks (rows of logits), so an evaluation can stream its sequences.
class KlAccumulator {
public:
    // base and quant [n, vocab] (same shape); targets [n]: the token that follows each position.
    // Throws qs::Error on a shape mismatch or a target outside the vocabulary.
    void add(const Eigen::Ref<const MatrixF>& baseLogits, const Eigen::Ref<const MatrixF>& quantLogits,
             std::span<const std::int32_t> targets);

    std::size_t count() const { return kld_.size(); }
    const std::vector<double>& klValues() const { return kld_; }  // per position, in order of add()
    KlReport report() const;

private:
    // Welford's running mean and sum of squared deviations: llama.cpp's Σx² - n·mean² loses every
    // digit of a small variance around a large mean (ln PPL ≈ 10 with a spread of 1e-6).
    struct Moments {
        double mean = 0.0, m2 = 0.0;
        void add(double x, std::size_t n);  // n: count including x
    };
    Moments nll_, nllBase_, kldMoments_, deltaPMoments_, deltaP2Moments_;
    double nllComoment_ = 0.0;  // Σ (nll - mean)(nllBase - meanBase)
    std::size_t sameTop_ = 0;
    std::vector<double> kld_;
    std::vector<double> deltaP_;
    Eigen::Index vocab_ = -1;
};

}  // namespace qs::analysis
