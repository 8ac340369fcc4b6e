#pragma once
// --matmul: in what precision the calibration forward passes multiply (model::bf16LayerMath), and what
// their Hessians' products read (quant::GramInputs: the inputs rounded to bfloat16, summed in f32). BF16
// where the CPU multiplies it natively and the passes run on the CPU, else f32; the evaluation passes (the
// KL reported) stay f32 whatever is chosen (docs/performance.md has the figures).
#include <string>
#include <string_view>

namespace qs::pipeline {

enum class MatmulChoice { Auto, F32, Bf16 };

// "auto", "f32", "bf16"; anything else is a qs::Error.
MatmulChoice parseMatmulChoice(std::string_view text);

struct MatmulSelection {
    bool bf16 = false;
    std::string message;  // one line for the run's start: what was chosen, and why
};

// What `choice` gives where the forward passes run: the CPU reference (`deviceMath` false), or a backend
// with its own LayerMath (a CUDA device). Throws qs::Error for bf16 on a device (its LayerMath multiplies
// in f32) or where oneDNN has no BF16 matmul.
MatmulSelection selectMatmul(MatmulChoice choice, bool deviceMath);

struct JobPlan;
// The plan's choice where its passes run: on its backend's own LayerMath when it has one, or, before a
// backend is chosen, on the device it names.
MatmulSelection selectMatmul(const JobPlan& plan);

}  // namespace qs::pipeline
