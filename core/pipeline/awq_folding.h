#pragma once
// Where an AWQ result's input scales go on export, as AutoAWQ's apply_scale puts them: a linear that
// computes x * diag(1/s) through W * diag(s) needs 1/s applied to x by whatever produced x.
//   q/k/v_proj   -> input_layernorm.weight /= s
//   gate/up_proj -> post_attention_layernorm.weight /= s (Gemma: pre_feedforward_layernorm)
// A norm that scales by (1 + w) (Gemma) absorbs 1/s as w' = (1 + w) / s - 1.
//   q_a_proj, kv_a_proj_with_mqa (DeepSeek) -> input_layernorm.weight /= s
//   q_b_proj     -> q_a_layernorm.weight /= s;  kv_b_proj -> kv_a_layernorm.weight /= s
//   o_proj       -> v_proj's output rows /= s (its scales rows and bias)
//   down_proj    -> up_proj's output rows /= s
// A sparse MoE block's experts share one s for their gate/up (layer_quantizer's AWQ groups): the norm
// before the block absorbs 1/s and the dense router, which reads the same input, takes s in its
// columns (router · diag(s) · diag(1/s) x = router x); each expert's down_proj -> its up_proj's rows.
// Linears with no input scales, or all ones (o_proj under grouped-query attention), need nothing.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "qs/model/model_config.h"
#include "qs/pipeline/layer_quantizer.h"

namespace qs::pipeline {

struct AwqFolding {
    // Source tensor name ("model.layers.0.input_layernorm.weight") -> divisor per element.
    std::map<std::string, std::vector<float>> normDivisors;
    // Linear prefix ("model.layers.0.self_attn.v_proj") -> divisor per output row.
    std::map<std::string, std::vector<float>> rowDivisors;
    // Dense source tensor ("model.layers.0.mlp.gate.weight", a MoE router) -> multiplier per input column.
    std::map<std::string, std::vector<float>> columnMultipliers;
    float normOffset = 0.0f;  // the norms scale by (normOffset + w): Architecture::normOffset

    bool empty() const { return normDivisors.empty() && rowDivisors.empty() && columnMultipliers.empty(); }
};

// "model.layers.<i>." for decoder layer i (under the architecture's tensor prefix).
std::string layerPrefix(std::size_t layer, const model::Architecture& arch);

// Throws qs::Error when scales cannot be folded: a module outside the table, linears sharing an
// input with different scales, or a previous linear whose rows do not match. The norms are named as
// `arch` names them; `moe` names a MoE model's experts and routers (null: a dense model).
AwqFolding planAwqFolding(const std::vector<QuantizedLayer>& layers, const model::Architecture& arch,
                          const model::MoeNames* moe = nullptr);

// q with row r's scales divided by divisors[r] (integer grids with one scale row per output row).
quant::QuantizedLinear withRowsDivided(const quant::QuantizedLinear& q, const std::vector<float>& divisors);

}  // namespace qs::pipeline
