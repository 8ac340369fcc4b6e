#pragma once
// vLLM loads q/k/v as one linear (qkv_proj) and gate/up as one (gate_up_proj), and refuses a
// checkpoint whose shards of a fused linear are quantized differently. A per-linear mix is written
// only when every fused linear is alike; its config keys name the fused linear too.
#include <functional>
#include <string>
#include <string_view>

#include "qs/formats/linear_encoder.h"

namespace qs::formats::detail {

// "model.layers.0.self_attn.qkv_proj" for q/k/v_proj's prefix, "...mlp.gate_up_proj" for gate/up; "" otherwise.
std::string fusedPrefix(std::string_view prefix);

// Throws qs::Error naming the linear whose `schemeKey` differs from an earlier shard of its fused
// linear, or that is dense while another shard is quantized.
void requireFusedShardsAlike(const ExportScheme& scheme,
                             const std::function<std::string(const quant::QuantizedLinear&)>& schemeKey,
                             std::string_view format);

// The text matched literally by Python's re (every regex metacharacter escaped).
std::string regexEscape(std::string_view text);

}  // namespace qs::formats::detail
