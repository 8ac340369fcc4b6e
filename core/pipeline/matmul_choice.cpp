#include "qs/pipeline/matmul_choice.h"

#include "qs/error.h"
#include "qs/model/bf16_layer_math.h"
#include "qs/pipeline/job.h"
#include "qs/quant/bf16_gram.h"

namespace qs::pipeline {

MatmulChoice parseMatmulChoice(std::string_view text) {
    if (text == "auto") return MatmulChoice::Auto;
    if (text == "f32") return MatmulChoice::F32;
    if (text == "bf16") return MatmulChoice::Bf16;
    throw Error("--matmul " + std::string(text) + ": expected auto, f32 or bf16");
}

MatmulSelection selectMatmul(MatmulChoice choice, bool deviceMath) {
    if (choice == MatmulChoice::F32) return {false, "matmul: f32"};
    if (deviceMath) {
        if (choice == MatmulChoice::Bf16)
            throw Error(
                "--matmul bf16 multiplies on the CPU; the device's forward passes compute in f32 "
                "(use --device cpu)");
        return {false, "matmul: f32 (the forward passes run on the device)"};
    }
    const bool native = model::cpuRunsBf16Natively();
    if (choice == MatmulChoice::Auto && !native)
        return {false, "matmul: f32 (this CPU has no native BF16; --matmul bf16 would emulate it)"};
    (void)model::bf16LayerMath();  // refuses here, in one line, where oneDNN has no BF16 matmul
    if (!quant::bf16GramAvailable())
        throw Error("--matmul bf16: oneDNN has only its reference BF16 loops on this CPU, far slower than f32");
    return {true, std::string("matmul: BF16 for the calibration forward passes and the Hessians' products") +
                      (native ? "" : ", emulated (slow: this CPU has no native BF16)") +
                      " (accumulated in f32; the evaluation in f32)"};
}

MatmulSelection selectMatmul(const JobPlan& plan) {
    const bool deviceMath = plan.backend ? plan.backend->layerMath() != nullptr : plan.device == DeviceChoice::Cuda;
    return selectMatmul(plan.matmul, deviceMath);
}

}  // namespace qs::pipeline
