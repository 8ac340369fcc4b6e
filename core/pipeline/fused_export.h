#pragma once
// Fused projections on export: a checkpoint that stores q/k/v as one qkv_proj and gate/up as one
// gate_up_proj (Phi-3, model::Architecture::fusedQkv / fusedGateUp) is read as separate linears, and
// is written back as it was: the parts' QuantizedLinears stacked along the output rows
// (quant::concatenateRows), AWQ's row divisors applied to each part first. A fused projection whose
// parts are not all quantized, or not alike, is refused in one line.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "awq_folding.h"
#include "qs/model/model_config.h"
#include "qs/quant/quantized_linear.h"

namespace qs::pipeline {

struct FusedLinears {
    // The linears as written, in the order given: each fused projection in place of its first part.
    std::vector<std::pair<std::string, const quant::QuantizedLinear*>> linears;
    std::vector<std::unique_ptr<const quant::QuantizedLinear>> owned;   // the fused ones
};

// `linears` by prefix ("model.layers.0.self_attn.q_proj"), `layerPrefixes` the decoder layers' prefixes.
// The row divisors of fused parts are consumed (removed from `folding`: they are inside the fused linear).
FusedLinears fuseForExport(const std::vector<std::pair<std::string, const quant::QuantizedLinear*>>& linears,
                           const model::Architecture& arch, AwqFolding& folding);

}  // namespace qs::pipeline
