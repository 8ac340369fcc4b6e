#include "awq_folding.h"

#include <algorithm>
#include <array>
#include <string_view>

#include "qs/error.h"

namespace qs::pipeline {

namespace {

struct Absorber {
    std::string_view module;   // the linear that reads the scaled input
    std::string_view into;     // the tensor (norm) or linear (rows) that takes 1/s
    bool rows;                 // into names a linear whose output rows are divided
};

constexpr std::array<Absorber, 7> kAbsorbers{{
    {"self_attn.q_proj", "input_layernorm.weight", false},
    {"self_attn.k_proj", "input_layernorm.weight", false},
    {"self_attn.v_proj", "input_layernorm.weight", false},
    {"mlp.gate_proj", "post_attention_layernorm.weight", false},
    {"mlp.up_proj", "post_attention_layernorm.weight", false},
    {"self_attn.o_proj", "self_attn.v_proj", true},
    {"mlp.down_proj", "mlp.up_proj", true},
}};

bool allOnes(const std::vector<float>& s) {
    return std::all_of(s.begin(), s.end(), [](float v) { return v == 1.0f; });
}

const Absorber& absorberOf(const std::string& module, const std::string& prefix) {
    for (const auto& a : kAbsorbers)
        if (a.module == module) return a;
    throw Error(prefix + ": AWQ input scales on a module whose input has no known producer to fold them into");
}

void addDivisor(std::map<std::string, std::vector<float>>& into, const std::string& key, const std::vector<float>& s,
                const std::string& prefix) {
    const auto [it, inserted] = into.emplace(key, s);
    if (!inserted && it->second != s)
        throw Error(prefix + ": its AWQ input scales differ from those of the linears reading the same input, so " + key +
                    " cannot absorb both");
}

}  // namespace

std::string layerPrefix(std::size_t layer) { return "model.layers." + std::to_string(layer) + "."; }

AwqFolding planAwqFolding(const std::vector<QuantizedLayer>& layers) {
    AwqFolding folding;
    for (std::size_t i = 0; i < layers.size(); ++i) {
        const std::string base = layerPrefix(i);
        for (const auto& [module, q] : layers[i]) {
            if (q->inputScales.empty() || allOnes(q->inputScales)) continue;
            const std::string prefix = base + module;
            const Absorber& a = absorberOf(module, prefix);
            const std::string target = base + std::string(a.into);
            if (!a.rows) {
                addDivisor(folding.normDivisors, target, q->inputScales, prefix);
                continue;
            }
            const auto previous = layers[i].find(a.into);
            if (previous == layers[i].end())
                throw Error(prefix + ": AWQ input scales need " + target + " quantized beside it to absorb them");
            if (previous->second->rows != static_cast<std::int64_t>(q->inputScales.size()))
                throw Error(prefix + ": " + std::to_string(q->inputScales.size()) + " AWQ input scales but " + target + " has " +
                            std::to_string(previous->second->rows) + " output rows");
            addDivisor(folding.rowDivisors, target, q->inputScales, prefix);
        }
    }
    return folding;
}

quant::QuantizedLinear withRowsDivided(const quant::QuantizedLinear& q, const std::vector<float>& divisors) {
    if (q.blockRows != 1 || q.scales.rows() != static_cast<Eigen::Index>(divisors.size()))
        throw Error("AWQ folding needs one scale row per output row of the previous linear");
    quant::QuantizedLinear out = q;
    for (Eigen::Index r = 0; r < out.scales.rows(); ++r) out.scales.row(r) /= divisors[static_cast<std::size_t>(r)];
    return out;
}

}  // namespace qs::pipeline
