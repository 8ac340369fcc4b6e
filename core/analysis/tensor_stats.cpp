#include "qs/analysis/tensor_stats.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <exception>
#include <limits>
#include <mutex>
#include <string>

#include <omp.h>

#include "qs/error.h"
#include "qs/io/dtype.h"

namespace qs::analysis {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int kProgressSteps = 200;  // at most this many callbacks: the CLI redraws at 0.5 % steps

// Running moments: m2 is the sum of squared deviations from the mean, which merges exactly.
struct Moments {
    std::int64_t count = 0;
    std::int64_t finite = 0;
    std::int64_t nan = 0;
    std::int64_t inf = 0;
    double min = kInf;
    double max = -kInf;
    double mean = 0.0;
    double m2 = 0.0;
};

Moments mergeMoments(const Moments& a, const Moments& b) {
    Moments r;
    r.count = a.count + b.count;
    r.finite = a.finite + b.finite;
    r.nan = a.nan + b.nan;
    r.inf = a.inf + b.inf;
    r.min = std::min(a.min, b.min);
    r.max = std::max(a.max, b.max);
    if (a.finite == 0 || b.finite == 0) {
        const Moments& only = a.finite == 0 ? b : a;
        r.mean = only.mean;
        r.m2 = only.m2;
        return r;
    }
    const double n = static_cast<double>(r.finite);
    const double delta = b.mean - a.mean;
    r.mean = a.mean + delta * (static_cast<double>(b.finite) / n);
    r.m2 = a.m2 + b.m2 + delta * delta * (static_cast<double>(a.finite) * static_cast<double>(b.finite) / n);
    return r;
}

// Two passes over a chunk that fits in cache: the mean first, then squared deviations from it,
// which avoids the cancellation of sum(x^2) - n*mean^2. Four accumulators, by index modulo 4,
// break the chain of dependent f64 additions; their order is fixed, so results stay deterministic.
Moments reduceChunk(const float* values, std::size_t n) {
    Moments m;
    m.count = static_cast<std::int64_t>(n);
    std::array<double, 4> sums{};
    const auto accumulate = [&m](float x, double& sum) {
        if (std::isfinite(x)) {
            sum += x;
            m.min = std::min(m.min, static_cast<double>(x));
            m.max = std::max(m.max, static_cast<double>(x));
            ++m.finite;
        } else if (std::isnan(x)) {
            ++m.nan;
        } else {
            ++m.inf;
        }
    };
    std::size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        for (std::size_t lane = 0; lane < 4; ++lane) accumulate(values[i + lane], sums[lane]);
    }
    for (; i < n; ++i) accumulate(values[i], sums[i % 4]);
    if (m.finite == 0) return m;
    m.mean = ((sums[0] + sums[1]) + (sums[2] + sums[3])) / static_cast<double>(m.finite);

    std::array<double, 4> squares{};
    const auto deviation = [mean = m.mean](float x, double& square) {
        if (std::isfinite(x)) {
            const double d = static_cast<double>(x) - mean;
            square += d * d;
        }
    };
    for (i = 0; i + 4 <= n; i += 4) {
        for (std::size_t lane = 0; lane < 4; ++lane) deviation(values[i + lane], squares[lane]);
    }
    for (; i < n; ++i) deviation(values[i], squares[i % 4]);
    m.m2 = (squares[0] + squares[1]) + (squares[2] + squares[3]);
    return m;
}

// Merges partials[first, last) as a balanced tree, so rounding error grows with log(chunks).
Moments mergeRange(const std::vector<Moments>& partials, std::size_t first, std::size_t last) {
    if (last - first == 0) return {};
    if (last - first == 1) return partials[first];
    const std::size_t mid = first + (last - first) / 2;
    return mergeMoments(mergeRange(partials, first, mid), mergeRange(partials, mid, last));
}

TensorStats toStats(const Moments& m) {
    TensorStats s;
    s.count = m.count;
    s.finiteCount = m.finite;
    s.nanCount = m.nan;
    s.infCount = m.inf;
    if (m.finite == 0) {
        s.min = s.max = s.mean = s.std = kNaN;
        return s;
    }
    s.min = m.min;
    s.max = m.max;
    s.mean = m.mean;
    s.std = std::sqrt(m.m2 / static_cast<double>(m.finite));
    return s;
}

struct Chunk {
    std::size_t tensor = 0;
    std::size_t first = 0;  // element offset
    std::size_t count = 0;
};

struct ChunkPlan {
    std::vector<Chunk> chunks;
    std::vector<std::size_t> firstChunk;  // per tensor, plus one past the end
    std::uint64_t totalBytes = 0;
};

ChunkPlan planChunks(const std::vector<io::TensorView>& tensors, std::size_t chunkElements) {
    ChunkPlan plan;
    for (std::size_t t = 0; t < tensors.size(); ++t) {
        const io::TensorView& view = tensors[t];
        const auto numel = static_cast<std::size_t>(view.numel());
        if (view.bytes().size() != view.info().storedSize()) {
            throw Error("tensor '" + view.name() + "': " + std::to_string(view.bytes().size()) + " bytes do not hold " +
                        std::to_string(numel) + " elements of " + view.info().typeName());
        }
        plan.firstChunk.push_back(plan.chunks.size());
        for (std::size_t first = 0; first < numel; first += chunkElements) {
            plan.chunks.push_back({t, first, std::min(chunkElements, numel - first)});
        }
        plan.totalBytes += view.bytes().size();
    }
    plan.firstChunk.push_back(plan.chunks.size());
    return plan;
}

// Throttles progress callbacks to kProgressSteps and serialises them, since chunks finish on any thread.
class ProgressReporter {
public:
    ProgressReporter(const TensorStatsOptions& options, const std::vector<io::TensorView>& tensors,
                     std::uint64_t totalBytes)
        : callback_(options.progress), tensors_(tensors), totalBytes_(totalBytes) {}

    void chunkDone(const Chunk& chunk, std::uint64_t bytes) {
        if (!callback_ || totalBytes_ == 0) return;
        const std::uint64_t done = doneBytes_.fetch_add(bytes) + bytes;
        const int step = static_cast<int>(done * kProgressSteps / totalBytes_);
        if (step <= reported_.load()) return;
        std::lock_guard lock(mutex_);
        if (step <= reported_.load()) return;
        reported_.store(step);
        qs::Progress p;
        p.stage = "stats";
        p.step = static_cast<int>(chunk.tensor) + 1;
        p.steps = static_cast<int>(tensors_.size());
        p.fraction = static_cast<double>(done) / static_cast<double>(totalBytes_);
        p.message = tensors_[chunk.tensor].name();
        callback_(p);
    }

private:
    const qs::ProgressCallback& callback_;
    const std::vector<io::TensorView>& tensors_;
    std::uint64_t totalBytes_;
    std::atomic<std::uint64_t> doneBytes_{0};
    std::atomic<int> reported_{0};
    std::mutex mutex_;
};

// Runs reduceChunk over every chunk on the OpenMP threads. Exceptions cannot leave an OpenMP
// region, so the first one is kept and rethrown after the loop; cancellation skips the rest.
std::vector<Moments> reduceChunks(const std::vector<io::TensorView>& tensors, const ChunkPlan& plan,
                                  const TensorStatsOptions& options) {
    std::vector<Moments> partials(plan.chunks.size());
    ProgressReporter reporter(options, tensors, plan.totalBytes);
    std::exception_ptr error;
    std::mutex errorMutex;
    std::atomic<bool> failed{false};
    const int threads = options.threads > 0 ? options.threads : omp_get_max_threads();
    const auto chunkCount = static_cast<std::int64_t>(plan.chunks.size());

#pragma omp parallel num_threads(threads)
    {
        std::vector<float> buffer(options.chunkElements);
#pragma omp for schedule(dynamic)
        for (std::int64_t c = 0; c < chunkCount; ++c) {
            if (failed.load(std::memory_order_relaxed) || options.cancel.cancelled()) continue;
            try {
                const Chunk& chunk = plan.chunks[static_cast<std::size_t>(c)];
                const io::TensorView& view = tensors[chunk.tensor];
                view.decode(chunk.first, chunk.count, buffer.data());
                partials[static_cast<std::size_t>(c)] = reduceChunk(buffer.data(), chunk.count);
                // Bytes in proportion to elements: exact for plain dtypes, close for ggml's blocks.
                reporter.chunkDone(chunk, view.bytes().size() * chunk.count /
                                              std::max<std::size_t>(1, static_cast<std::size_t>(view.numel())));
            } catch (...) {
                std::lock_guard lock(errorMutex);
                if (!error) error = std::current_exception();
                failed.store(true);
            }
        }
    }
    if (error) std::rethrow_exception(error);
    options.cancel.throwIfCancelled();
    return partials;
}

}  // namespace

std::vector<TensorStats> computeTensorStats(const std::vector<io::TensorView>& tensors,
                                            const TensorStatsOptions& options) {
    if (options.chunkElements == 0) throw Error("tensor statistics: chunkElements must be positive");
    const ChunkPlan plan = planChunks(tensors, options.chunkElements);
    const std::vector<Moments> partials = reduceChunks(tensors, plan, options);
    std::vector<TensorStats> result;
    result.reserve(tensors.size());
    for (std::size_t t = 0; t < tensors.size(); ++t) {
        Moments m = mergeRange(partials, plan.firstChunk[t], plan.firstChunk[t + 1]);
        m.count = tensors[t].numel();  // an empty tensor has no chunk but still its (zero) count
        result.push_back(toStats(m));
    }
    return result;
}

TensorStats computeTensorStats(const io::TensorView& tensor, const TensorStatsOptions& options) {
    return computeTensorStats(std::vector<io::TensorView>{tensor}, options).front();
}

}  // namespace qs::analysis
