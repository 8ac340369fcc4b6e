// Phi-3 / Phi-4 (Phi3ForCausalLM): Llama's decoder with q/k/v and gate/up stored fused, an optional partial
// rotary embedding (Phi-4-mini: 0.75 of each head), LongRoPE, and Mistral's window. Its config reader's own
// part: core/model/architectures/phi3_config.cpp. llama.cpp's phi3 keeps the fused gate/up as ffn_up
// (gate rows, then up rows) and writes the window on every layer.
#include "families.h"

namespace qs::architectures::detail {

const Family& phi3() {
    static const Family f{
        .modelType = "phi3",
        .hfClass = "Phi3ForCausalLM",
        .displayName = "Phi-3",
        .slidingWindow = SlidingWindow::EveryLayer,
        .longRope = true,
        .extra = ConfigExtra::Phi3,
        .fusedQkv = "self_attn.qkv_proj",
        .fusedGateUp = "mlp.gate_up_proj",
        .ggufArch = "phi3",
        .ggufNames = {{"ffn_up", "mlp.gate_up_proj"}},
        .ggufMetadata = {.windowOnEveryLayerKey = true},
    };
    return f;
}

}  // namespace qs::architectures::detail
