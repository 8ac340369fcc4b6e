#pragma once
// The calibrated scales of the serving engine's quantization (activation_quant.h): static input scales
// (FP8 W8A8, NVFP4 W4A4's global scale) and the FP8 KV cache's k_scale / v_scale, from the largest
// magnitudes the calibration text produced.
//
// The range is the maximum over the calibration tokens (what llm-compressor's min-max observer and
// ModelOpt's max calibrator take), or a percentile of the per-token maxima: p = 99.9 ignores the 0.1 %
// of tokens with the largest |x| (an outlier token saturates instead of coarsening every other token).
#include <span>
#include <string>

#include "qs/pipeline/layer_statistics.h"
#include "qs/quant/activation_quant.h"

namespace qs::pipeline {

struct ActivationCalibration {
    double percentile = 100.0;  // of the per-token max |x|; 100 = the maximum

    std::string label() const;  // "max", "p99.9"
};

// Parses "max" or "pNN[.N]" (0 < NN <= 100); throws qs::Error otherwise.
ActivationCalibration parseActivationCalibration(std::string_view text);

// The `percentile` of the values (nearest rank: the smallest value with at least p % of them at or
// below it); 0 for none. Throws qs::Error for a percentile outside (0, 100] or a non-finite value.
float calibratedAmax(std::span<const float> tokenMaxAbs, double percentile);

// The input quantization of `format` for an input with these statistics (no scale for dynamic formats).
quant::ActivationQuant calibratedInput(quant::ActivationFormat format, const InputStatistics& input,
                                       const ActivationCalibration& calibration);

// The FP8 KV cache scale (amax / 448) of keys or values with these per-token maxima.
float calibratedCacheScale(std::span<const float> tokenMaxAbs, const ActivationCalibration& calibration);

}  // namespace qs::pipeline
