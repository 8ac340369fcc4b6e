#pragma once
// Histogram of a tensor's values: linear bins over [min, max] of its finite values, with the moments
// and the tail counts beyond k standard deviations that the GUI draws and the CLI prints. Computed
// on all threads by streaming over the tensor's bytes; cancellable.
#include <cstdint>
#include <span>
#include <vector>

#include "qs/cancel_token.h"
#include "qs/io/tensor.h"

namespace qs::analysis {

struct HistogramOptions {
    int bins = 128;          // at least 1
    double tailSigma = 3.0;  // k: values further than k·σ from the mean are tails
    qs::CancelToken cancel;  // polled between chunks; throws qs::Cancelled
};

struct Histogram {
    std::vector<double> edges;          // bins + 1, edges[0] = min, edges[bins] = max
    std::vector<std::uint64_t> counts;  // bins; bin i holds [edges[i], edges[i+1]), the last also max
    double mean = 0.0;
    double stddev = 0.0;  // population standard deviation of the finite values
    double min = 0.0;
    double max = 0.0;
    std::uint64_t count = 0;      // finite values, the sum of counts
    std::uint64_t nonFinite = 0;  // NaN and +-Inf, left out of everything above
    double tailSigma = 3.0;
    std::uint64_t tailBelow = 0;  // values < mean - k·σ
    std::uint64_t tailAbove = 0;  // values > mean + k·σ

    int bins() const { return static_cast<int>(counts.size()); }
    // The bin holding x, consistent with `edges`; -1 when x is outside [edges.front(), edges.back()].
    int binOf(double x) const;
    double tailFraction() const;  // (tailBelow + tailAbove) / count, 0 when empty
};

// When all finite values are equal (or there is none), the bins span a unit-wide range around them.
Histogram computeHistogram(const io::TensorView& tensor, const HistogramOptions& options = {});
Histogram computeHistogram(std::span<const float> values, const HistogramOptions& options = {});

// The fraction of a Gaussian further than k·σ from its mean (0.0027 for k = 3): what the tails
// would hold if the weights were normal.
double gaussianTailFraction(double k);

}  // namespace qs::analysis
