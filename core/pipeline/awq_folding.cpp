#include "awq_folding.h"

#include <algorithm>
#include <array>
#include <string_view>

#include "qs/architectures/module_names.h"
#include "qs/error.h"

namespace qs::pipeline {

namespace modules = architectures::modules;

namespace {

enum class Into { InputNorm, PreMlpNorm, Norm, Rows };

struct Absorber {
    std::string_view module;  // the linear that reads the scaled input
    Into kind;  // the norm before the attention or the MLP (Architecture's names), another norm, or a linear's rows
    std::string_view producer;  // Into::Norm: the norm's module; Into::Rows: the linear whose output rows are divided
};

// Only the norms that feed a linear absorb scales: Gemma's output norms (post_attention_layernorm,
// post_feedforward_layernorm) normalise a sub-block's output and feed the residual stream, not a linear.
// DeepSeek's latent attention: q_a_proj and kv_a_proj_with_mqa read the input norm's output, q_b_proj and
// kv_b_proj their latents' norms (its o_proj is not scaled: layer_quantizer's AWQ groups).
constexpr std::array<Absorber, 11> kAbsorbers{{
    {modules::kQProj, Into::InputNorm, ""},
    {modules::kKProj, Into::InputNorm, ""},
    {modules::kVProj, Into::InputNorm, ""},
    {modules::kQAProj, Into::InputNorm, ""},
    {modules::kKvAProj, Into::InputNorm, ""},
    {modules::kQBProj, Into::Norm, modules::kQANorm},
    {modules::kKvBProj, Into::Norm, modules::kKvANorm},
    {modules::kGateProj, Into::PreMlpNorm, ""},
    {modules::kUpProj, Into::PreMlpNorm, ""},
    {modules::kOProj, Into::Rows, modules::kVProj},
    {modules::kDownProj, Into::Rows, modules::kUpProj},
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
        throw Error(prefix + ": its AWQ input scales differ from those of the linears reading the same input, so " +
                    key + " cannot absorb both");
}

// The rows of `target` (a module of the same layer, quantized beside the linear `prefix`) absorb q's scales.
void foldIntoRows(AwqFolding& folding, const QuantizedLayer& layer, const std::string& base, const std::string& target,
                  const quant::QuantizedLinear& q, const std::string& prefix) {
    const auto previous = layer.find(target);
    if (previous == layer.end())
        throw Error(prefix + ": AWQ input scales need " + base + target + " quantized beside it to absorb them");
    if (previous->second->rows != static_cast<std::int64_t>(q.inputScales.size()))
        throw Error(prefix + ": " + std::to_string(q.inputScales.size()) + " AWQ input scales but " + base + target +
                    " has " + std::to_string(previous->second->rows) + " output rows");
    addDivisor(folding.rowDivisors, base + target, q.inputScales, prefix);
}

// A MoE expert's linear ("mlp.experts.3.up_proj", or the shared expert's "mlp.shared_experts.up_proj"):
// gate/up read the block's input, which the norm before the block produces and the router reads too;
// down_proj reads what its own up_proj's rows produce. False when `module` is not an expert's.
bool foldExpert(AwqFolding& folding, const QuantizedLayer& layer, const std::string& base, const std::string& module,
                const quant::QuantizedLinear& q, const model::MoeNames& moe, const model::Architecture& arch) {
    const std::string experts = moe.experts();
    const auto dot = module.rfind('.');
    const bool shared = !moe.shared.empty() && module.starts_with(moe.sharedExpert());
    if ((!module.starts_with(experts) && !shared) || dot == std::string::npos || dot < moe.block.size()) return false;
    const std::string expert = module.substr(0, dot + 1), name = module.substr(dot + 1), prefix = base + module;
    if (name == moe.down) {
        if (moe.fusedGateUp())
            throw Error(prefix + ": AWQ input scales cannot be folded into a fused, clamped gate_up_proj (gpt-oss)");
        foldIntoRows(folding, layer, base, expert + moe.up, q, prefix);
    } else if (name == moe.gate || name == moe.up) {
        addDivisor(folding.normDivisors, base + arch.preMlpNorm + ".weight", q.inputScales, prefix);
        addDivisor(folding.columnMultipliers, base + moe.router() + ".weight", q.inputScales, prefix);
        if (moe.sharedGate)  // Qwen3.5-MoE's shared_expert_gate reads the block's input as the router does
            addDivisor(folding.columnMultipliers, base + moe.sharedExpertGate() + ".weight", q.inputScales, prefix);
    } else {
        throw Error(prefix +
                    ": AWQ input scales on an expert module whose input has no known producer to fold them into");
    }
    return true;
}

}  // namespace

std::string layerPrefix(std::size_t layer, const model::Architecture& arch) {
    return arch.tensorPrefix + "layers." + std::to_string(layer) + ".";
}

AwqFolding planAwqFolding(const std::vector<QuantizedLayer>& layers, const model::Architecture& arch,
                          const model::MoeNames* moe) {
    AwqFolding folding;
    folding.normOffset = arch.normOffset;
    for (std::size_t i = 0; i < layers.size(); ++i) {
        const std::string base = layerPrefix(i, arch);
        for (const auto& [module, q] : layers[i]) {
            if (q->inputScales.empty() || allOnes(q->inputScales)) continue;
            if (moe != nullptr && foldExpert(folding, layers[i], base, module, *q, *moe, arch)) continue;
            const std::string prefix = base + module;
            const Absorber& a = absorberOf(module, prefix);
            if (a.kind != Into::Rows) {
                const std::string norm = a.kind == Into::InputNorm    ? arch.inputNorm
                                         : a.kind == Into::PreMlpNorm ? arch.preMlpNorm
                                                                      : std::string(a.producer);
                addDivisor(folding.normDivisors, base + norm + ".weight", q->inputScales, prefix);
                continue;
            }
            foldIntoRows(folding, layers[i], base, std::string(a.producer), *q, prefix);
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
