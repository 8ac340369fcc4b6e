#include "qs/model/attention_linears.h"

#include "qs/architectures/module_names.h"

namespace qs::model {

namespace modules = architectures::modules;

std::vector<std::string_view> attentionModules(AttentionLayout layout) {
    switch (layout) {
        case AttentionLayout::Latent: return {modules::kQProj, modules::kKvAProj, modules::kKvBProj, modules::kOProj};
        case AttentionLayout::LatentLowRankQuery:
            return {modules::kQAProj, modules::kKvAProj, modules::kQBProj, modules::kKvBProj, modules::kOProj};
        case AttentionLayout::QueryKeyValue: break;
    }
    return {modules::kQProj, modules::kKProj, modules::kVProj, modules::kOProj};
}

namespace {

// transformers' DeepseekV3Attention: attention_bias gives q_a_proj, kv_a_proj_with_mqa and o_proj a bias;
// q_proj, q_b_proj and kv_b_proj never have one.
std::vector<std::vector<LinearShape>> latentInputGroups(const ModelConfig& c) {
    const LatentAttention& a = c.mla;
    const std::int64_t h = c.hiddenSize, heads = c.numHeads, q = heads * a.qkHeadDim();
    const LinearShape kvA{modules::kKvAProj, a.kvLoraRank + a.qkRopeHeadDim, h, c.qkvBias};
    const LinearShape kvB{modules::kKvBProj, heads * (a.qkNopeHeadDim + a.vHeadDim), a.kvLoraRank, false};
    const LinearShape o{modules::kOProj, h, heads * a.vHeadDim, c.outputBias};
    if (a.qLoraRank == 0) return {{{modules::kQProj, q, h, false}, kvA}, {kvB}, {o}};
    return {
        {{modules::kQAProj, a.qLoraRank, h, c.qkvBias}, kvA}, {{modules::kQBProj, q, a.qLoraRank, false}}, {kvB}, {o}};
}

}  // namespace

std::vector<std::vector<LinearShape>> attentionInputGroups(const ModelConfig& c) {
    if (c.mla.active()) return latentInputGroups(c);
    const std::int64_t h = c.hiddenSize, q = c.qDim(), kv = c.kvDim();
    return {
        {{modules::kQProj, q, h, c.qkvBias}, {modules::kKProj, kv, h, c.qkvBias}, {modules::kVProj, kv, h, c.qkvBias}},
        {{modules::kOProj, h, q, c.outputBias}}};
}

std::vector<LinearShape> attentionLinears(const ModelConfig& config) {
    std::vector<LinearShape> out;
    for (auto& group : attentionInputGroups(config)) out.insert(out.end(), group.begin(), group.end());
    return out;
}

std::vector<LinearShape> denseMlpLinears(const ModelConfig& c) {
    const std::int64_t h = c.hiddenSize, ff = c.intermediateSize;
    return {{modules::kGateProj, ff, h, c.mlpBias},
            {modules::kUpProj, ff, h, c.mlpBias},
            {modules::kDownProj, h, ff, c.mlpBias}};
}

std::vector<LinearShape> denseLayerLinears(const ModelConfig& config) {
    std::vector<LinearShape> out = attentionLinears(config);
    for (LinearShape& l : denseMlpLinears(config)) out.push_back(std::move(l));
    return out;
}

}  // namespace qs::model
