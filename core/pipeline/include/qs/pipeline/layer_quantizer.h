#pragma once
// Quantizes the seven linears of one decoder layer with one method, from the original weights and
// (for GPTQ, AWQ and every output-error figure) the layer's calibration statistics.
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "qs/cancel_token.h"
#include "qs/model/layer_weights.h"
#include "qs/pipeline/backend.h"
#include "qs/pipeline/layer_statistics.h"
#include "qs/pipeline/method_spec.h"
#include "qs/quant/quantized_linear.h"

namespace qs::pipeline {

using QuantizedLayer = std::map<std::string, std::shared_ptr<const quant::QuantizedLinear>, std::less<>>;

// `statistics` may be empty (no calibration): then GPTQ and AWQ throw and no output error is measured.
// Each result carries its relative output error on the calibration inputs and its wall time.
// GPTQ, the float formats and the trellis run on `backend` (null: the CPU).
QuantizedLayer quantizeLayer(const MethodSpec& method, const model::LayerWeights& weights, LayerStatistics& statistics,
                             std::uint64_t seed, const CancelToken& cancel, const Backend* backend = nullptr);

// What quantizeLayer may free as it goes, for the last user of a layer's weights and statistics:
// a 4096-wide layer is 0.9 GB of f32 weights and 1 GB of running sums, its down_proj's H 0.8 GB.
struct LayerRelease {
    bool statistics = false;  // LayerStatistics::done() after each module; GPTQ takes each input's last H
    bool weights = false;     // each linear's f32 weight once quantized (its bias and the norms stay)
};
// The same results, bit for bit, freeing what `release` allows.
QuantizedLayer quantizeLayer(const MethodSpec& method, model::LayerWeights& weights, LayerStatistics& statistics,
                             std::uint64_t seed, const CancelToken& cancel, const Backend* backend,
                             LayerRelease release);

// A method per linear (a mixed-precision allocation): `methodOf(module)` names it, or returns null
// for a linear left dense (absent from the result). AWQ and the GGUF file types, which choose for a
// whole layer, are refused; a single ggml type (MethodSpec::ggmlType) is one linear's. Nothing is released: the caller's weights and statistics stay as they are.
using ModuleMethod = std::function<const MethodSpec*(std::string_view module)>;
QuantizedLayer quantizeLayerModules(const ModuleMethod& methodOf, const model::LayerWeights& weights,
                                    LayerStatistics& statistics, std::uint64_t seed, const CancelToken& cancel,
                                    const Backend* backend = nullptr);

// One linear (RTN, GPTQ, FP8, MXFP4, NVFP4, NF4, trellis, one ggml type weighted by H's diagonal as the
// GGUF methods' imatrix); `h` may be null for the methods that need none.
// `cancel`, when given, is polled inside the long ones (GPTQ between column blocks, the trellis per group).
quant::QuantizedLinear quantizeLinear(const MethodSpec& method, const MatrixF& weight, const MatrixF* h, double samples,
                                      std::uint64_t seed, const Backend* backend = nullptr,
                                      const CancelToken* cancel = nullptr);

}  // namespace qs::pipeline
