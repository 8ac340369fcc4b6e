#include "qs/analysis/histogram.h"

#include <algorithm>
#include <cmath>
#include <string>

#include <omp.h>

#include "qs/analysis/tensor_stats.h"
#include "qs/error.h"

#include "chunk_loop.h"

namespace qs::analysis {
namespace {

std::vector<double> linearEdges(double lo, double hi, int bins) {
    std::vector<double> edges(static_cast<std::size_t>(bins) + 1);
    for (int i = 0; i <= bins; ++i) edges[static_cast<std::size_t>(i)] = lo + (hi - lo) * i / bins;
    edges.back() = hi;  // exact, so that max always lands in the last bin
    return edges;
}

// A degenerate range (one distinct value, or none) still gets bins of positive width.
std::pair<double, double> binRange(const TensorStats& stats) {
    if (stats.finiteCount == 0) return {0.0, 1.0};
    if (stats.min < stats.max) return {stats.min, stats.max};
    const double pad = 0.5 * std::max(1.0, std::abs(stats.min));
    return {stats.min - pad, stats.max + pad};
}

struct TailCounts {
    std::uint64_t below = 0;
    std::uint64_t above = 0;
};

// Second pass: bin counts and tails, accumulated per thread (integer sums do not depend on order).
void countBins(const io::TensorView& tensor, Histogram& h, const qs::CancelToken& cancel) {
    const auto threads = static_cast<std::size_t>(omp_get_max_threads());
    const auto bins = static_cast<std::size_t>(h.bins());
    std::vector<std::vector<std::uint64_t>> perThread(threads, std::vector<std::uint64_t>(bins, 0));
    std::vector<TailCounts> tails(threads);
    const double lowTail = h.mean - h.tailSigma * h.stddev;
    const double highTail = h.mean + h.tailSigma * h.stddev;

    detail::forEachChunk(tensor, detail::kChunkElements, cancel,
                         [&](int thread, std::size_t, std::size_t, std::span<const float> values) {
                             auto& counts = perThread[static_cast<std::size_t>(thread)];
                             TailCounts& tail = tails[static_cast<std::size_t>(thread)];
                             for (const float v : values) {
                                 if (!std::isfinite(v)) continue;
                                 ++counts[static_cast<std::size_t>(h.binOf(v))];
                                 tail.below += v < lowTail;
                                 tail.above += v > highTail;
                             }
                         });
    for (std::size_t t = 0; t < threads; ++t) {
        for (std::size_t b = 0; b < bins; ++b) h.counts[b] += perThread[t][b];
        h.tailBelow += tails[t].below;
        h.tailAbove += tails[t].above;
    }
}

}  // namespace

int Histogram::binOf(double x) const {
    if (counts.empty() || !(x >= edges.front() && x <= edges.back())) return -1;
    const int last = bins() - 1;
    const double width = (edges.back() - edges.front()) / bins();
    int b = std::clamp(static_cast<int>((x - edges.front()) / width), 0, last);
    // The division can land one bin off next to an edge; the edges are what the bins mean.
    while (b > 0 && x < edges[static_cast<std::size_t>(b)]) --b;
    while (b < last && x >= edges[static_cast<std::size_t>(b) + 1]) ++b;
    return b;
}

double Histogram::tailFraction() const {
    return count == 0 ? 0.0 : static_cast<double>(tailBelow + tailAbove) / static_cast<double>(count);
}

Histogram computeHistogram(const io::TensorView& tensor, const HistogramOptions& options) {
    if (options.bins < 1) throw Error("histogram of '" + tensor.name() + "': bins must be at least 1");
    if (!(options.tailSigma > 0.0)) throw Error("histogram of '" + tensor.name() + "': k·σ must be positive");

    TensorStatsOptions statsOptions;
    statsOptions.cancel = options.cancel;
    const TensorStats stats = computeTensorStats(tensor, statsOptions);

    Histogram h;
    h.count = static_cast<std::uint64_t>(stats.finiteCount);
    h.nonFinite = static_cast<std::uint64_t>(stats.nanCount + stats.infCount);
    h.tailSigma = options.tailSigma;
    if (h.count > 0) {
        h.mean = stats.mean;
        h.stddev = stats.std;
        h.min = stats.min;
        h.max = stats.max;
    }
    const auto [lo, hi] = binRange(stats);
    h.edges = linearEdges(lo, hi, options.bins);
    h.counts.assign(static_cast<std::size_t>(options.bins), 0);
    if (h.count > 0) countBins(tensor, h, options.cancel);
    return h;
}

double gaussianTailFraction(double k) { return std::erfc(k / std::sqrt(2.0)); }

Histogram computeHistogram(std::span<const float> values, const HistogramOptions& options) {
    const detail::F32Tensor tensor(values, {static_cast<std::int64_t>(values.size())});
    return computeHistogram(tensor.view(), options);
}

}  // namespace qs::analysis
