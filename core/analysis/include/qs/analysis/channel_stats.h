#pragma once
// Per-channel magnitudes of a weight matrix [out_features, in_features]: the largest |w| of every
// input channel (column) and of every output row, and the k channels that stand out most. Outlier
// input channels are what AWQ protects and what makes per-tensor scales fail.
#include <cstdint>
#include <span>
#include <vector>

#include "qs/cancel_token.h"
#include "qs/io/tensor.h"

namespace qs::analysis {

// Input channels are columns (what activations multiply), output channels are rows.
enum class ChannelAxis { Input, Output };

struct ChannelRank {
    std::int64_t channel = 0;
    float maxAbs = 0.0f;
    float ratioToMedian = 0.0f;  // maxAbs / median over all channels of the axis; 0 when the median is 0
};

struct ChannelStats {
    std::int64_t rows = 0;                // output features
    std::int64_t cols = 0;                // input features
    std::vector<float> inputMaxAbs;       // cols: max over rows of |w[r][c]|
    std::vector<float> outputMaxAbs;      // rows: max over columns of |w[r][c]|
    std::vector<ChannelRank> topInputs;   // the k largest inputMaxAbs, descending, ties by lower index
    std::vector<ChannelRank> topOutputs;  // the same for outputMaxAbs

    const std::vector<float>& maxAbs(ChannelAxis axis) const {
        return axis == ChannelAxis::Input ? inputMaxAbs : outputMaxAbs;
    }
    const std::vector<ChannelRank>& top(ChannelAxis axis) const {
        return axis == ChannelAxis::Input ? topInputs : topOutputs;
    }
};

struct ChannelStatsOptions {
    int topK = 16;
    qs::CancelToken cancel;  // polled between chunks of rows; throws qs::Cancelled
};

// Rank 2 is [rows, cols]; rank 1 is one row; higher ranks are [shape[0], product of the rest]. NaN
// elements are ignored; an infinite one makes its channel's maximum infinite.
ChannelStats computeChannelStats(const io::TensorView& tensor, const ChannelStatsOptions& options = {});
ChannelStats computeChannelStats(std::span<const float> rowMajor, std::int64_t rows, std::int64_t cols,
                                 const ChannelStatsOptions& options = {});

// The k largest values (fewer when there are fewer), descending, ties by lower index.
std::vector<ChannelRank> topChannels(std::span<const float> maxAbs, int k);

}  // namespace qs::analysis
