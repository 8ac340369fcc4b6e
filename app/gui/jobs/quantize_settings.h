#pragma once
// QuantizeSettings: what the Quantize panel asks for, as a value the worker turns into a
// pipeline::JobPlan (tokenizing happens there, off the GUI thread).
#include <string>
#include <vector>

#include <QString>

#include "qs/pipeline/job.h"

namespace qs::gui {

struct MethodChoice {
    std::string name;     // a pipeline::parseMethod name: "gptq4-act", "fp8", "trellis3"
    int groupSize = 128;  // integer methods only; -1 = one group per row
    bool operator==(const MethodChoice&) const = default;
};

struct QuantizeSettings {
    std::vector<MethodChoice> methods;
    QString calibrationFile;  // empty: the text beside the checkpoint, else the bundled demo text
    int samples = 16;
    int sequenceLength = 128;
    QString evaluationFile;  // empty: as for calibration
    int evaluationSamples = 8;
    pipeline::DeviceChoice device = pipeline::DeviceChoice::Auto;
    pipeline::MatmulChoice matmul = pipeline::MatmulChoice::Auto;  // the calibration passes' GEMMs (--matmul)
    bool perLayerKl = false;
    bool kvCacheFp8 = false;             // every safetensors method with an FP8 KV cache
    bool moeCalibrateAllExperts = true;  // pipeline::JobPlan::moeCalibrateAllExperts (the CLI's --moe-calibration all)
    std::uint64_t seed = 0;
    bool rotate = false;  // pipeline::JobPlan::rotate (the CLI's --rotate), its signs drawn from `seed`
    QString imatrixFile;  // llama.cpp's imatrix the GGUF methods weigh by (--imatrix); empty: the calibration's
    bool operator==(const QuantizeSettings&) const = default;  // the Quantize panel's estimate is of these
};

// Parses the methods and tokenizes both texts (pipeline::buildJobPlan), then selects the device.
// Throws qs::Error with the core's message.
pipeline::JobPlan buildPlan(const QuantizeSettings& settings, const std::filesystem::path& checkpointPath);

}  // namespace qs::gui
