#pragma once
// Layer overview: one statistic per decoder layer × linear module (σ, max|w|, kurtosis, fraction of
// outliers), so that a glance shows which layers and modules have the heavy tails that quantization
// struggles with. Computed tensor by tensor, streaming, with progress and cancellation.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "qs/cancel_token.h"
#include "qs/io/checkpoint.h"
#include "qs/io/tensor.h"
#include "qs/matrix.h"
#include "qs/progress.h"

namespace qs::analysis {

enum class LayerStatistic { StdDev, MaxAbs, Kurtosis, OutlierFraction };

inline constexpr LayerStatistic kLayerStatistics[] = {LayerStatistic::StdDev, LayerStatistic::MaxAbs,
                                                      LayerStatistic::Kurtosis, LayerStatistic::OutlierFraction};

std::string_view statisticName(LayerStatistic statistic);  // e.g. "max|w|", for labels and CSV headers

struct WeightStats {
    std::string tensor;      // full tensor name
    std::int64_t count = 0;  // finite elements
    double mean = 0.0;
    double stddev = 0.0;  // population
    double maxAbs = 0.0;
    double kurtosis = 0.0;         // excess kurtosis m4/σ⁴ - 3: 0 for a Gaussian, large for heavy tails
    double outlierFraction = 0.0;  // fraction of values with |w - mean| > outlierSigma·σ
    double value(LayerStatistic statistic) const;
};

// Moments of one tensor's finite values, in two streaming passes (moments, then fourth powers and outliers).
WeightStats computeWeightStats(const io::TensorView& tensor, double outlierSigma = 6.0,
                               const qs::CancelToken& cancel = {});

struct LayerOverview {
    std::vector<int> layers;                        // ascending decoder layer indices
    std::vector<std::string> modules;               // columns, in moduleRank order
    std::vector<std::optional<WeightStats>> cells;  // layers.size() × modules.size(), row-major by layer
    double outlierSigma = 6.0;

    const WeightStats* cell(std::size_t layerRow, std::size_t moduleColumn) const;
    bool empty() const { return layers.empty() || modules.empty(); }
};

// A quantized checkpoint's linears, which the overview shows as the weights they decode to (their
// packed codes, int32 words or bytes, say nothing): whether a stored tensor is a quantized linear's
// codes (GPTQ's qweight, FP8's weight, ...), and that linear's decoded weights [out, in]. The decoding
// is the caller's (the formats library's, above this one). Unset: stored floating-point weights only.
struct QuantizedLinears {
    std::function<bool(const io::CheckpointTensor&)> isCodes;
    std::function<MatrixF(const io::CheckpointTensor&)> decode;
};

struct LayerOverviewOptions {
    double outlierSigma = 6.0;
    qs::ProgressCallback progress;  // stage "overview", one step per tensor; from the calling thread
    qs::CancelToken cancel;         // polled between and inside tensors; throws qs::Cancelled
    // Tensors left out (the GUI shows a MoE checkpoint's experts in a layer × expert view of their own).
    std::function<bool(const io::CheckpointTensor&)> skip;
    QuantizedLinears quantized;
};

// Covers every linear module inside a decoder layer: its dense floating-point "weight", or, where
// `options.quantized` says a tensor is a quantized linear's codes, the weights they decode to (the
// cell then names the codes tensor).
LayerOverview computeLayerOverview(const io::Checkpoint& checkpoint, const LayerOverviewOptions& options = {});

// The order modules are shown in: attention (q, k, v, o) before the MLP (gate, up, down), then norms,
// then anything else; lower comes first, equal ranks sort by name.
int moduleRank(std::string_view module);

}  // namespace qs::analysis
