#include "qs/analysis/channel_stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include <omp.h>

#include "qs/error.h"

#include "chunk_loop.h"

namespace qs::analysis {
namespace {

std::pair<std::int64_t, std::int64_t> matrixShape(const std::vector<std::int64_t>& shape) {
    if (shape.empty()) return {1, 1};
    if (shape.size() == 1) return {1, shape[0]};
    const std::int64_t cols = std::accumulate(shape.begin() + 1, shape.end(), std::int64_t{1}, std::multiplies<>());
    return {shape[0], cols};
}

float median(std::span<const float> values) {
    if (values.empty()) return 0.0f;
    std::vector<float> copy(values.begin(), values.end());
    const auto mid = copy.begin() + static_cast<std::ptrdiff_t>(copy.size() / 2);
    std::nth_element(copy.begin(), mid, copy.end());
    return *mid;
}

// Chunks hold whole rows, so each row's maximum is finished inside one chunk; column maxima are
// kept per thread and merged (max is exact in any order).
void reduceRows(const io::TensorView& tensor, ChannelStats& s, const qs::CancelToken& cancel) {
    const auto cols = static_cast<std::size_t>(s.cols);
    const std::size_t rowsPerChunk = std::max<std::size_t>(1, detail::kChunkElements / std::max<std::size_t>(cols, 1));
    const auto threads = static_cast<std::size_t>(omp_get_max_threads());
    std::vector<std::vector<float>> columnMax(threads, std::vector<float>(cols, 0.0f));

    detail::forEachChunk(tensor, rowsPerChunk * cols, cancel,
                         [&](int thread, std::size_t, std::size_t first, std::span<const float> values) {
                             auto& colMax = columnMax[static_cast<std::size_t>(thread)];
                             for (std::size_t offset = 0; offset < values.size(); offset += cols) {
                                 float rowMax = 0.0f;
                                 for (std::size_t c = 0; c < cols; ++c) {
                                     const float a = std::abs(values[offset + c]);
                                     if (a > rowMax) rowMax = a;  // NaN compares false: ignored
                                     if (a > colMax[c]) colMax[c] = a;
                                 }
                                 s.outputMaxAbs[(first + offset) / cols] = rowMax;
                             }
                         });
    for (const auto& colMax : columnMax) {
        for (std::size_t c = 0; c < cols; ++c) s.inputMaxAbs[c] = std::max(s.inputMaxAbs[c], colMax[c]);
    }
}

}  // namespace

std::vector<ChannelRank> topChannels(std::span<const float> maxAbs, int k) {
    std::vector<std::int64_t> order(maxAbs.size());
    std::iota(order.begin(), order.end(), std::int64_t{0});
    const auto take =
        static_cast<std::ptrdiff_t>(std::clamp<std::size_t>(static_cast<std::size_t>(std::max(k, 0)), 0, order.size()));
    std::partial_sort(order.begin(), order.begin() + take, order.end(), [&](std::int64_t a, std::int64_t b) {
        const float va = maxAbs[static_cast<std::size_t>(a)];
        const float vb = maxAbs[static_cast<std::size_t>(b)];
        return va != vb ? va > vb : a < b;
    });
    const float mid = median(maxAbs);
    std::vector<ChannelRank> top;
    top.reserve(static_cast<std::size_t>(take));
    for (std::ptrdiff_t i = 0; i < take; ++i) {
        const float v = maxAbs[static_cast<std::size_t>(order[static_cast<std::size_t>(i)])];
        top.push_back({order[static_cast<std::size_t>(i)], v, mid > 0.0f ? v / mid : 0.0f});
    }
    return top;
}

ChannelStats computeChannelStats(const io::TensorView& tensor, const ChannelStatsOptions& options) {
    const auto [rows, cols] = matrixShape(tensor.shape());
    if (tensor.info().storedSize() != tensor.bytes().size()) {
        throw Error("channel statistics of '" + tensor.name() + "': the data does not match its shape");
    }
    ChannelStats s;
    s.rows = rows;
    s.cols = cols;
    s.inputMaxAbs.assign(static_cast<std::size_t>(cols), 0.0f);
    s.outputMaxAbs.assign(static_cast<std::size_t>(rows), 0.0f);
    if (rows > 0 && cols > 0) reduceRows(tensor, s, options.cancel);
    s.topInputs = topChannels(s.inputMaxAbs, options.topK);
    s.topOutputs = topChannels(s.outputMaxAbs, options.topK);
    return s;
}

ChannelStats computeChannelStats(std::span<const float> rowMajor, std::int64_t rows, std::int64_t cols,
                                 const ChannelStatsOptions& options) {
    if (rows < 0 || cols < 0 ||
        static_cast<std::uint64_t>(rows) * static_cast<std::uint64_t>(cols) != rowMajor.size()) {
        throw Error("channel statistics: " + std::to_string(rowMajor.size()) + " values are not a " +
                    std::to_string(rows) + "x" + std::to_string(cols) + " matrix");
    }
    const detail::F32Tensor tensor(rowMajor, {rows, cols});
    return computeChannelStats(tensor.view(), options);
}

}  // namespace qs::analysis
