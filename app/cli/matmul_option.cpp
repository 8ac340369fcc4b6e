#include "matmul_option.h"

namespace qs::cli {

void addMatmulOption(CLI::App& cmd, std::string& matmul) {
    cmd.add_option("--matmul", matmul,
                   "The calibration forward passes' matmuls and the Hessians' products: bf16 (f32 accumulation, "
                   "oneDNN), f32, or auto (bf16 where the CPU multiplies BF16 natively); the KL's passes stay f32")
        ->capture_default_str()
        ->check(CLI::IsMember({"auto", "f32", "bf16"}));
}

}  // namespace qs::cli
