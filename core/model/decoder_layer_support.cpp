#include "decoder_layer_support.h"

#include <vector>

namespace qs::model::detail {

const LayerMath& math(const DecoderLayerContext& c) { return c.math ? *c.math : cpuLayerMath(); }

bool hooked(const DecoderLayerContext& c) { return c.hook && *c.hook; }

void notify(const DecoderLayerContext& c, std::span<const std::string_view> modules, const MatrixF& x,
            std::int64_t routed) {
    if (hooked(c)) (*c.hook)(LinearInput{c.layer, modules, x, routed});
}

const MatrixF& engineInput(const MatrixF& x, std::initializer_list<const Linear*> linears, MatrixF& storage) {
    std::vector<quant::ActivationQuant> inputs;
    for (const Linear* l : linears) inputs.push_back(l->input);
    const quant::ActivationQuant fused = quant::fusedInput(inputs);
    if (!fused.active()) return x;
    storage = x;
    quant::fakeQuantize(storage, fused);
    return storage;
}

}  // namespace qs::model::detail
