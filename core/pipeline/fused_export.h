#pragma once
// Fused projections on export: a checkpoint that stores q/k/v as one qkv_proj and gate/up as one
// gate_up_proj (Phi-3, model::Architecture::fusedQkv / fusedGateUp) is read as separate linears, and
// is written back as it was: the parts' QuantizedLinears stacked along the output rows
// (quant::concatenateRows), AWQ's row divisors applied to each part first. A fused projection whose
// parts are not all quantized, or not alike, is refused in one line.
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "qs/model/model_config.h"
#include "qs/quant/quantized_linear.h"

#include "awq_folding.h"

namespace qs::pipeline {

struct FusedLinears {
    // The linears as written, in the order given: each fused projection in place of its first part.
    std::vector<std::pair<std::string, const quant::QuantizedLinear*>> linears;
    std::vector<std::unique_ptr<const quant::QuantizedLinear>> owned;  // the fused ones
};

// `linears` by prefix ("model.layers.0.self_attn.q_proj"), `layerPrefixes` the decoder layers' prefixes.
// The row divisors of fused parts are consumed (removed from `folding`: they are inside the fused linear).
// Given headers (a result on disk: no codes), the fused linears are headers too.
FusedLinears fuseForExport(const std::vector<std::pair<std::string, const quant::QuantizedLinear*>>& linears,
                           const model::Architecture& arch, AwqFolding& folding);

// A result on disk as the writer asks for it: the complete linear for each written prefix, a fused
// projection stacked from its parts as `part` reads them back (a layer at a time), with the parts'
// row divisors as planned before fuseForExport consumed them.
class FusedLinearReader {
public:
    using PartReader = std::function<std::shared_ptr<const quant::QuantizedLinear>(const std::string&)>;
    FusedLinearReader(const model::Architecture& arch, std::map<std::string, std::vector<float>> rowDivisors,
                      PartReader part);

    std::shared_ptr<const quant::QuantizedLinear> complete(const std::string& prefix) const;

private:
    std::vector<std::pair<std::string, std::vector<std::string>>> groups_;
    std::map<std::string, std::vector<float>> rowDivisors_;
    PartReader part_;
};

}  // namespace qs::pipeline
