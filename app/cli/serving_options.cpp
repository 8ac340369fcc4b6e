#include "serving_options.h"

#include "qs/error.h"

namespace qs::cli {

void addServingOptions(CLI::App& cmd, ServingOptions& options) {
    cmd.add_option("--kv-cache", options.kvCache,
                   "KV cache as the engine will hold it: none (the model's dtype) or fp8 (E4M3, k/v scales calibrated "
                   "per layer)")
        ->capture_default_str();
    cmd.add_option("--act-calibration", options.actCalibration,
                   "Range of static input and KV-cache scales: max, or a percentile of the per-token maxima (p99.9)")
        ->capture_default_str();
}

pipeline::ActivationCalibration applyServingOptions(const ServingOptions& options,
                                                    std::vector<pipeline::MethodSpec>& methods) {
    if (options.kvCache != "none" && options.kvCache != "fp8")
        throw Error("--kv-cache " + options.kvCache + ": use none or fp8");
    for (auto& m : methods) m.kvCacheFp8 = options.kvCache == "fp8";
    return pipeline::parseActivationCalibration(options.actCalibration);
}

}  // namespace qs::cli
