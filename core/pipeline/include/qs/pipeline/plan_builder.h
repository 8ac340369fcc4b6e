#pragma once
// A Job's plan from what a user chose: the methods, and for the calibration and the evaluation text
// which file (resolveRunText when none is named), how many sequences and how long. The CLI's compare
// and quantize and the GUI's Quantize panel build their plans here; tokenizing happens here too, so a
// GUI calls it off its event thread.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <vector>

#include "qs/pipeline/job.h"
#include "qs/pipeline/method_spec.h"
#include "qs/pipeline/quantized_source.h"

namespace qs::pipeline {

struct TextChoice {
    std::filesystem::path file;  // empty: the checkpoint's own, else the bundled one (resolveRunText)
    int samples = 0;             // sequences to cut; 0: this text is not read
    int sequenceLength = 512;    // tokens per sequence
};

struct PlanSettings {
    std::filesystem::path checkpoint;
    std::vector<MethodSpec> methods;
    TextChoice calibration;
    TextChoice evaluation;
    bool perLayerKl = false;
    bool trueSequential = true;
    bool rotate = false;  // JobPlan::rotate and rotationSeed
    std::uint64_t rotationSeed = 0;
    bool moeCalibrateAllExperts = true;  // JobPlan::moeCalibrateAllExperts
    std::uint64_t seed = 0;
    bool allowNonFinite = false;  // else a linear with NaN or Inf weights is refused (openModelCheckpoint)
    ActivationCalibration activationCalibration;  // static input and KV-cache scales: max or a percentile
    MatmulChoice matmul = MatmulChoice::Auto;     // JobPlan::matmul
    std::filesystem::path imatrix;                // llama.cpp's imatrix for the GGUF methods (JobPlan::imatrix)
};

struct BuiltPlan {
    JobPlan plan;                           // no backend chosen yet: plan.device (Auto) or the caller's
    std::filesystem::path calibrationFile;  // the files read; empty where a text was not read
    std::filesystem::path evaluationFile;
    // The source's quantization when it has one: its decoded weights are quantized and are the KL's
    // reference (quantized_source.h); the front ends say so in one line (QuantizedSource::referenceNote).
    std::optional<QuantizedSource> quantizedSource;
};

// Opens the checkpoint with the checks of a model's input (openModelCheckpoint: config against
// tensors, finite dense linears; a quantized source's linears must decode: requireDecodableSource) and
// its tokenizer, and tokenizes the texts read. Throws qs::Error for no methods, an unreadable or
// refused checkpoint or tokenizer, a missing or too short text, an imatrix without a GGUF method or with
// no entry for this model's linears; the checks come before any work, so a refusal stays one line.
BuiltPlan buildJobPlan(const PlanSettings& settings);

}  // namespace qs::pipeline
