#pragma once
// The options of compare and quantize that say what the serving engine quantizes besides the weights:
// --kv-cache fp8 (the KV cache in FP8 with calibrated k/v scales, for every method) and
// --act-calibration max|pNN (how static input and KV-cache scales are calibrated).
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "qs/pipeline/activation_calibration.h"
#include "qs/pipeline/method_spec.h"

namespace qs::cli {

struct ServingOptions {
    std::string kvCache = "none";
    std::string actCalibration = "max";
};

void addServingOptions(CLI::App& cmd, ServingOptions& options);
// Sets every method's KV cache and returns the calibration; throws qs::Error for a bad value.
pipeline::ActivationCalibration applyServingOptions(const ServingOptions& options,
                                                    std::vector<pipeline::MethodSpec>& methods);

}  // namespace qs::cli
