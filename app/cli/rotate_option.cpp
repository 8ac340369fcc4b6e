#include "rotate_option.h"

namespace qs::cli {

void addRotateOptions(CLI::App& cmd, bool& rotate, std::uint64_t& seed) {
    cmd.add_flag("--rotate", rotate,
                 "Rotate the residual stream and each head's values by seeded Hadamard matrices folded into the "
                 "weights (QuaRot) before quantizing: the same model, with its outliers spread; Llama, Mistral, "
                 "Qwen2/3, Qwen3-MoE and Mixtral");
    cmd.add_option("--rotation-seed", seed, "Seed of --rotate's random signs")->capture_default_str();
}

}  // namespace qs::cli
