#pragma once
// Summary statistics of tensors (min, max, mean, standard deviation, NaN and Inf counts), computed
// by streaming over fixed-size chunks of the memory-mapped bytes on all threads. Each chunk is
// reduced in f64 (mean, then squared deviations) and the chunks are merged pairwise (Chan et al.)
// in a fixed order, so the result does not depend on the thread count and stays accurate for
// billions of elements.
#include <cstdint>
#include <vector>

#include "qs/cancel_token.h"
#include "qs/io/tensor.h"
#include "qs/progress.h"

namespace qs::analysis {

// Moments of the finite values of one tensor. NaN and +-Inf are counted, not included; when a
// tensor has no finite value, min/max/mean/std are NaN.
struct TensorStats {
    std::int64_t count = 0;  // all elements
    std::int64_t finiteCount = 0;
    std::int64_t nanCount = 0;
    std::int64_t infCount = 0;  // +Inf and -Inf
    double min = 0.0;
    double max = 0.0;
    double mean = 0.0;
    double std = 0.0;  // population standard deviation (divides by finiteCount, as numpy)
};

struct TensorStatsOptions {
    int threads = 0;                       // 0: all cores (OpenMP default)
    std::size_t chunkElements = 1u << 16;  // elements converted and reduced at once per thread
    qs::ProgressCallback progress;         // stage "stats"; may be called from worker threads
    qs::CancelToken cancel;                // polled between chunks; throws qs::Cancelled
};

// Statistics of one tensor (any dtype convertToF32 supports).
TensorStats computeTensorStats(const io::TensorView& tensor, const TensorStatsOptions& options = {});

// Statistics of several tensors at once, returned in the order given. Chunks of all tensors share
// one parallel loop, so many small tensors use all threads as well as one large tensor does.
std::vector<TensorStats> computeTensorStats(const std::vector<io::TensorView>& tensors,
                                            const TensorStatsOptions& options = {});

}  // namespace qs::analysis
