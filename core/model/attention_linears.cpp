#include "qs/model/attention_linears.h"

#include "qs/architectures/module_names.h"

namespace qs::model {

namespace modules = architectures::modules;

std::vector<std::vector<std::string_view>> attentionInputModules(AttentionLayout layout) {
    switch (layout) {
        case AttentionLayout::Latent:
            return {{modules::kQProj, modules::kKvAProj}, {modules::kKvBProj}, {modules::kOProj}};
        case AttentionLayout::LatentLowRankQuery:
            return {{modules::kQAProj, modules::kKvAProj}, {modules::kQBProj}, {modules::kKvBProj}, {modules::kOProj}};
        case AttentionLayout::GatedDeltaNet:
            return {{modules::kInProjQkv, modules::kInProjZ}, {modules::kDeltaOutProj}};
        case AttentionLayout::QueryKeyValue: break;
    }
    return {{modules::kQProj, modules::kKProj, modules::kVProj}, {modules::kOProj}};
}

std::vector<std::string_view> attentionModules(AttentionLayout layout) {
    std::vector<std::string_view> out;
    for (const auto& group : attentionInputModules(layout)) out.insert(out.end(), group.begin(), group.end());
    return out;
}

namespace {

// A linear of the attention with its shape: transformers' DeepseekV3Attention gives q_a_proj,
// kv_a_proj_with_mqa and o_proj a bias with attention_bias, never q_proj, q_b_proj or kv_b_proj.
LinearShape attentionShape(const ModelConfig& c, std::string_view module) {
    const std::int64_t h = c.hiddenSize;
    const LinearAttentionConfig& la = c.linearAttention;
    if (module == modules::kInProjQkv) return {std::string(module), la.convDim(), h, false};
    if (module == modules::kInProjZ) return {std::string(module), la.valueDim(), h, false};
    if (module == modules::kDeltaOutProj) return {std::string(module), h, la.valueDim(), false};
    if (!c.mla.active()) {
        const std::int64_t q = c.qDim(), kv = c.kvDim();
        if (module == modules::kOProj) return {std::string(module), h, q, c.outputBias};
        // Qwen3.5's q_proj gives each head its query and its output gate.
        if (module == modules::kQProj) return {std::string(module), c.attentionOutputGate ? 2 * q : q, h, c.qkvBias};
        return {std::string(module), kv, h, c.qkvBias};
    }
    const LatentAttention& a = c.mla;
    const std::int64_t heads = c.numHeads, q = heads * a.qkHeadDim();
    if (module == modules::kQProj) return {std::string(module), q, h, false};
    if (module == modules::kQAProj) return {std::string(module), a.qLoraRank, h, c.qkvBias};
    if (module == modules::kQBProj) return {std::string(module), q, a.qLoraRank, false};
    if (module == modules::kKvAProj) return {std::string(module), a.kvLoraRank + a.qkRopeHeadDim, h, c.qkvBias};
    if (module == modules::kKvBProj)
        return {std::string(module), heads * (a.qkNopeHeadDim + a.vHeadDim), a.kvLoraRank, false};
    return {std::string(module), h, heads * a.vHeadDim, c.outputBias};  // o_proj
}

}  // namespace

std::vector<std::vector<LinearShape>> attentionInputGroups(const ModelConfig& c, int layer) {
    std::vector<std::vector<LinearShape>> out;
    for (const auto& group : attentionInputModules(c.attentionLayout(layer))) {
        out.emplace_back();
        for (const std::string_view module : group) out.back().push_back(attentionShape(c, module));
    }
    return out;
}

std::vector<LinearShape> attentionLinears(const ModelConfig& config, int layer) {
    std::vector<LinearShape> out;
    for (auto& group : attentionInputGroups(config, layer)) out.insert(out.end(), group.begin(), group.end());
    return out;
}

std::vector<LinearShape> denseMlpLinears(const ModelConfig& c) {
    const std::int64_t h = c.hiddenSize, ff = c.intermediateSize;
    return {{modules::kGateProj, ff, h, c.mlpBias},
            {modules::kUpProj, ff, h, c.mlpBias},
            {modules::kDownProj, h, ff, c.mlpBias}};
}

std::vector<LinearShape> denseLayerLinears(const ModelConfig& config, int layer) {
    std::vector<LinearShape> out = attentionLinears(config, layer);
    for (LinearShape& l : denseMlpLinears(config)) out.push_back(std::move(l));
    return out;
}

}  // namespace qs::model
