#pragma once
// `quantscope-cli inspect PATH --hessian LAYER [--calib FILE] [--samples N] [--seq-len T]
// [--device D] [--json]`: the Hessian tab's figure on the command line. The calibration text runs
// through the layers before LAYER on the chosen device, and each linear of LAYER gets diag(H) =
// 2 Σ x_c² / n per input channel (pipeline::hessianDiagonals): a summary per linear (range, spread,
// the channels GPTQ's act-order quantizes first), or with --json every channel.
#include <string>

namespace qs::cli {

struct HessianOptions {
    std::string path;
    int layer = 0;
    std::string calib;  // "": the checkpoint's calibration.txt, else the bundled demo's
    int samples = 8;
    int seqLen = 128;
    std::string device = "auto";
    bool json = false;
};

void runInspectHessian(const HessianOptions& options);

}  // namespace qs::cli
