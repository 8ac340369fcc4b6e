#include "qs/model/model_config.h"

#include <cmath>
#include <set>
#include <type_traits>

#include "qs/architectures/module_names.h"
#include "qs/architectures/registry.h"
#include "qs/error.h"
#include "qs/io/checkpoint.h"
#include "qs/io/dtype.h"
#include "qs/io/json_value.h"

#include "config_json.h"

namespace qs::model {

namespace modules = architectures::modules;
namespace {

using detail::fail;
using detail::optional;
using detail::parseRopeScaling;
using detail::requiredInt;

void parseAttentionVariant(const nlohmann::json& j, const architectures::Family& family, ModelConfig& c,
                           const std::string& source) {
    const bool attentionBias = optional<bool>(j, "attention_bias", false, source);
    switch (family.attentionBias) {
        case architectures::AttentionBias::QkvAlways:  // the config does not say so
            c.qkvBias = true;
            c.outputBias = false;
            break;
        case architectures::AttentionBias::FlagDefaultOn:
            c.qkvBias = c.outputBias = optional<bool>(j, "attention_bias", true, source);
            break;
        case architectures::AttentionBias::Flag: c.qkvBias = c.outputBias = attentionBias; break;
        case architectures::AttentionBias::QkvFlag:
            c.qkvBias = attentionBias;
            c.outputBias = false;
            break;
    }
    c.mlpBias = optional<bool>(j, "mlp_bias", false, source);
    c.qkNorm = family.qkNormKey.empty() ? family.qkNorm
                                        : optional<bool>(j, std::string(family.qkNormKey).c_str(), false, source);
    c.arch.fusedQkv = family.fusedQkv;
    c.arch.fusedGateUp = family.fusedGateUp;
    switch (family.slidingWindow) {
        case architectures::SlidingWindow::EveryLayer:
            c.slidingWindow = optional<int>(j, "sliding_window", 0, source);
            break;
        case architectures::SlidingWindow::PerLayer: break;  // the family's own reader: per-layer windows
        case architectures::SlidingWindow::Refused:
            // Qwen's per-layer windows (max_window_layers) are not implemented: refuse instead of guessing.
            if (optional<bool>(j, "use_sliding_window", false, source))
                fail(source, "use_sliding_window is not supported for model_type '" + c.modelType + "'");
            break;
    }
}

std::vector<int> layerList(const nlohmann::json& j, const char* key, int numLayers, const std::string& source) {
    const auto it = j.find(key);
    if (it == j.end() || it->is_null()) return {};
    if (!it->is_array())
        fail(source, std::string("'") + key + "' is " + io::jsonKind(*it) + ", not a list of layer indices");
    std::vector<int> layers;
    for (const auto& v : *it) {
        if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::int64_t>() >= numLayers)
            fail(source, std::string("'") + key + "' holds " + v.dump() +
                             ", not a layer index below num_hidden_layers " + std::to_string(numLayers));
        layers.push_back(v.get<int>());
    }
    return layers;
}

MoeNames moeNamesOf(const architectures::ExpertNames& e) {
    return MoeNames{e.block, e.gate, e.up, e.down, e.router, e.shared};
}

// GLM-4.5's router: sigmoid scores, group-limited top-k, a scale, and the shared expert's width.
void parseSigmoidRouter(const nlohmann::json& j, const architectures::MoeSpec& spec, MoeConfig& m,
                        const std::string& source) {
    m.scoring = RouterScoring::SigmoidGrouped;
    m.numGroups = optional<int>(j, "n_group", 1, source);
    m.topkGroups = optional<int>(j, "topk_group", 1, source);
    m.routedScalingFactor = optional<double>(j, "routed_scaling_factor", 1.0, source);
    if (m.numGroups < 1 || m.numExperts % m.numGroups != 0)
        fail(source, "n_group " + std::to_string(m.numGroups) + " does not divide the " + std::to_string(m.numExperts) +
                         " experts");
    if (m.topkGroups < 1 || m.topkGroups > m.numGroups)
        fail(source, "topk_group " + std::to_string(m.topkGroups) + " must be between 1 and n_group " +
                         std::to_string(m.numGroups));
    // Each kept group offers its experts; fewer than top-k would leave transformers choosing masked ones.
    if (m.topkGroups * (m.numExperts / m.numGroups) < m.numExpertsPerToken)
        fail(source, "topk_group " + std::to_string(m.topkGroups) + " groups of " +
                         std::to_string(m.numExperts / m.numGroups) + " experts hold fewer than num_experts_per_tok " +
                         std::to_string(m.numExpertsPerToken));
    if (!(m.routedScalingFactor > 0.0)) fail(source, "'routed_scaling_factor' must be positive");
    if (!spec.sharedExpertsKey.empty()) {
        const int shared = optional<int>(j, std::string(spec.sharedExpertsKey).c_str(), 0, source);
        if (shared < 0) fail(source, "'" + std::string(spec.sharedExpertsKey) + "' must not be negative");
        m.sharedExpertIntermediateSize = shared * m.expertIntermediateSize;
    }
}

// The sparse MoE block, as the family's config spells it (architectures::MoeSpec); the semantics are shared.
void parseMoe(const nlohmann::json& j, const architectures::MoeSpec& spec, ModelConfig& c, const std::string& source) {
    MoeConfig& m = c.moe;
    m.numExperts = requiredInt(j, std::string(spec.numExpertsKey).c_str(), source);
    m.expertIntermediateSize = spec.expertSizeKey.empty()
                                   ? c.intermediateSize
                                   : requiredInt(j, std::string(spec.expertSizeKey).c_str(), source);
    // Without a key the top-k weights are always renormalised (Mixtral's block, gpt-oss's softmax over the top k).
    m.normTopkProb = spec.normTopkDefault ? optional<bool>(j, "norm_topk_prob", *spec.normTopkDefault, source) : true;
    if (spec.sparseLayers) {
        m.sparseStep = optional<int>(j, "decoder_sparse_step", 1, source);
        m.denseLayers = layerList(j, "mlp_only_layers", c.numLayers, source);
    }
    m.names = moeNamesOf(spec.names);
    m.stackedExperts = spec.stacked;
    if (spec.clampedSwiglu) {
        m.activation = ExpertActivation::ClampedSwiglu;
        m.swigluLimit = static_cast<float>(optional<double>(j, "swiglu_limit", 7.0, source));
        if (!(m.swigluLimit > 0.0f)) fail(source, "'swiglu_limit' must be positive");
    }
    m.numExpertsPerToken = requiredInt(j, "num_experts_per_tok", source);
    if (!spec.firstDenseKey.empty()) {
        m.firstDenseLayers = optional<int>(j, std::string(spec.firstDenseKey).c_str(), 0, source);
        if (m.firstDenseLayers < 0 || m.firstDenseLayers > c.numLayers)
            fail(source, "'" + std::string(spec.firstDenseKey) + "' " + std::to_string(m.firstDenseLayers) +
                             " is not between 0 and num_hidden_layers " + std::to_string(c.numLayers));
    }
    if (spec.scoring == architectures::RouterScoring::SigmoidGrouped) parseSigmoidRouter(j, spec, m, source);
    if (!spec.sharedExpertSizeKey.empty()) {
        m.sharedExpertIntermediateSize = optional<int>(j, std::string(spec.sharedExpertSizeKey).c_str(), 0, source);
        m.sharedExpertGate = spec.sharedExpertGate && m.sharedExpertIntermediateSize > 0;
        m.names.sharedGate = m.sharedExpertGate;
    }
    if (m.sharedExpertIntermediateSize == 0) m.names.shared.clear();  // a name only for what is there
}

using architectures::TowerLayout;
using architectures::VisionLanguage;

void applyLayout(const TowerLayout& layout, Architecture& arch) {
    arch.tensorPrefix = layout.tensorPrefix;
    arch.lmHead = layout.lmHead;
    arch.passThroughPrefixes = layout.passThroughPrefixes;
}

// The text config of a VLM as a config of its text model_type: text_config (or, where the family
// allowed it, the top level) with the keys a VLM gives only at the top copied in.
nlohmann::json towerTextConfig(std::string_view modelType, const VisionLanguage& tower, const nlohmann::json& j,
                               const std::string& source) {
    const std::string textModelType(tower.textModelType);
    const auto text = j.find("text_config");
    const bool hasText = text != j.end() && text->is_object();
    if (!hasText && tower.textConfigRequired)
        fail(source, "model_type '" + std::string(modelType) + "' needs a 'text_config' object");
    nlohmann::json t = hasText ? *text : j;
    if (hasText) {
        const std::string type = optional<std::string>(t, "model_type", textModelType, source);
        if (!tower.textConfigTypes.contains(type) && type != textModelType)
            fail(source, "text_config.model_type '" + type + "' is not the " + textModelType + " text tower a '" +
                             std::string(modelType) + "' model is read as");
        // The VLM ties its lm_head to the text tower's embedding; the dtype may be given only at the top.
        for (const char* key : {"tie_word_embeddings", "torch_dtype", "dtype"})
            if (!t.contains(key) && j.contains(key)) t[key] = j[key];
    }
    t["model_type"] = textModelType;
    return t;
}

std::vector<int> mropeSectionOf(const nlohmann::json& rope, const std::string& source) {
    const auto it = rope.find("mrope_section");
    if (it == rope.end() || it->is_null()) return {};
    if (!it->is_array() || it->size() != 3)
        fail(source, "rope_scaling.mrope_section must list three sizes (temporal, height, width)");
    std::vector<int> sections;
    for (const auto& v : *it) {
        if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::int64_t>() > (1 << 16))
            fail(source, "rope_scaling.mrope_section holds " + v.dump() + ", not a size");
        sections.push_back(v.get<int>());
    }
    return sections;
}

// Qwen-VL's multimodal RoPE read and taken out of the text config's rope_scaling / rope_parameters, so
// that the text model_type reads what is left as the plain RoPE it is for text: HF's multimodal rotary
// (Qwen2_5_VLRotaryEmbedding + apply_multimodal_rotary_pos_emb, Qwen3-VL's apply_interleaved_mrope)
// computes the angles of each frequency from one of the temporal / height / width position ids, chosen
// by mrope_section (in blocks, or interleaved); get_rope_index gives a text token three equal ids (its
// position), so every frequency sees the same position and the rotation is the 1-D RoPE of rope_theta.
// Old configs spell the type "mrope", which Qwen2_5_VLConfig itself rewrites to "default".
void takeMultimodalRope(nlohmann::json& text, ModelConfig& c, const std::string& source) {
    for (const char* key : {"rope_scaling", "rope_parameters"}) {
        const auto it = text.find(key);
        if (it == text.end() || !it->is_object()) continue;
        nlohmann::json& rope = *it;
        for (const char* typeKey : {"rope_type", "type"})
            if (rope.contains(typeKey) && rope[typeKey] == "mrope") rope[typeKey] = "default";
        if (const auto sections = mropeSectionOf(rope, source); !sections.empty()) c.mropeSection = sections;
        c.mropeInterleaved = optional<bool>(rope, "mrope_interleaved", c.mropeInterleaved, source);
        rope.erase("mrope_section");
        rope.erase("mrope_interleaved");
    }
}

ModelConfig towerFromJson(const architectures::Family& family, const nlohmann::json& j, const std::string& source) {
    const VisionLanguage& tower = *family.vision;
    nlohmann::json text = towerTextConfig(family.modelType, tower, j, source);
    const std::string textSource = text.is_object() && j.contains("text_config") ? source + " text_config" : source;
    ModelConfig mrope;
    if (tower.multimodalRope) takeMultimodalRope(text, mrope, textSource);
    ModelConfig c = ModelConfig::fromJson(text, textSource);
    c.modelType = family.modelType;
    applyLayout(tower.current, c.arch);
    c.mropeSection = mrope.mropeSection;
    c.mropeInterleaved = mrope.mropeInterleaved;
    if (!c.mropeSection.empty()) {
        int sum = 0;
        for (int s : c.mropeSection) sum += s;
        if (sum != c.rotaryDims() / 2)
            fail(textSource, "rope_scaling.mrope_section sums to " + std::to_string(sum) + ", not " +
                                 (c.rotaryDims() == c.headDim ? "head_dim" : "the rotary dimensions") +
                                 " / 2 = " + std::to_string(c.rotaryDims() / 2));
    }
    // Qwen3-VL adds vision features into its first decoder layers at the image tokens only (deepstack):
    // nothing for text; counted for llama.cpp's qwen3vl, whose converter writes it.
    const nlohmann::json vision = j.value("vision_config", nlohmann::json::object());
    if (tower.deepstack && vision.is_object() && vision.contains("deepstack_visual_indexes") &&
        vision["deepstack_visual_indexes"].is_array())
        c.deepstackLayers = static_cast<int>(vision["deepstack_visual_indexes"].size());
    return c;
}

}  // namespace

AttentionLayout ModelConfig::attentionLayout(int layer) const {
    if (isLinearAttentionLayer(layer)) return AttentionLayout::GatedDeltaNet;
    if (!mla.active()) return AttentionLayout::QueryKeyValue;
    return mla.qLoraRank > 0 ? AttentionLayout::LatentLowRankQuery : AttentionLayout::Latent;
}

bool ModelConfig::isMoeLayer(int layer) const {
    if (!isMoe() || layer < moe.firstDenseLayers) return false;
    for (int dense : moe.denseLayers)
        if (dense == layer) return false;
    return (layer + 1) % moe.sparseStep == 0;
}

ModelConfig ModelConfig::fromJson(const nlohmann::json& j, const std::string& source) {
    if (!j.is_object()) fail(source, "config is not a JSON object");
    ModelConfig c;
    c.modelType = optional<std::string>(j, "model_type", "", source);
    const architectures::Family* family = architectures::familyOf(c.modelType);
    if (family != nullptr && !family->notYet.empty())
        fail(source, "model_type '" + c.modelType + "' is not supported yet: " + std::string(family->notYet));
    // A GGUF's config names its architecture when no family reads it back; llama4 is also a VLM's model_type, whose
    // config.json has a text_config.
    if (family == nullptr || (family->vision && !j.contains("text_config")))
        for (const architectures::Family* writer : architectures::families())
            if (writer->ggufArch == c.modelType && !writer->ggufReadBackMissing.empty())
                fail(source, "a GGUF of llama.cpp's " + c.modelType +
                                 " does not run here yet: " + std::string(writer->ggufReadBackMissing));
    if (family == nullptr) {
        fail(source,
             "model_type '" + c.modelType + "' is not supported (" + architectures::supportedModelTypes() + ")");
    }
    if (family->vision) return towerFromJson(*family, j, source);
    // Qwen3.5's text config: its multimodal RoPE taken out as a VLM's text tower's is (plain RoPE for text),
    // and the MoE variant's missing intermediate_size (every layer is sparse) read as moe_intermediate_size.
    if (family->textMultimodalRope) {
        nlohmann::json text = j;
        ModelConfig mrope;
        takeMultimodalRope(text, mrope, source);
        if (!text.contains("intermediate_size") && text.contains("moe_intermediate_size"))
            text["intermediate_size"] = text["moe_intermediate_size"];
        if (text != j) {
            ModelConfig t = fromJson(text, source);
            t.mropeSection = mrope.mropeSection;
            t.mropeInterleaved = mrope.mropeInterleaved;
            int sum = 0;
            for (int s : t.mropeSection) sum += s;
            if (!t.mropeSection.empty() && sum != t.rotaryDims() / 2)
                fail(source, "rope_parameters.mrope_section sums to " + std::to_string(sum) +
                                 ", not the rotary dimensions / 2 = " + std::to_string(t.rotaryDims() / 2));
            return t;
        }
    }
    const std::string act = optional<std::string>(j, "hidden_act", "silu", source);
    if (family->extra != architectures::ConfigExtra::Gemma3 && act != "silu")  // Gemma reads its own
        fail(source, "hidden_act '" + act + "' is not supported (only silu)");

    c.hiddenSize = requiredInt(j, "hidden_size", source);
    c.intermediateSize = requiredInt(j, "intermediate_size", source);
    c.numLayers = requiredInt(j, "num_hidden_layers", source);
    c.numHeads = requiredInt(j, "num_attention_heads", source);
    c.numKvHeads = optional<int>(j, "num_key_value_heads", c.numHeads, source);
    c.headDim = optional<int>(j, "head_dim", c.numHeads > 0 ? c.hiddenSize / c.numHeads : 0, source);
    c.vocabSize = requiredInt(j, "vocab_size", source);
    c.maxPositionEmbeddings = optional<int>(j, "max_position_embeddings", 2048, source);
    c.rmsNormEps = optional<double>(j, "rms_norm_eps", 1e-6, source);
    c.tieWordEmbeddings = optional<bool>(j, "tie_word_embeddings", false, source);

    const auto params = j.find("rope_parameters");
    const bool hasParams = params != j.end() && params->is_object();
    c.ropeTheta =
        hasParams ? optional<double>(*params, "rope_theta", optional<double>(j, "rope_theta", 10000.0, source), source)
                  : optional<double>(j, "rope_theta", 10000.0, source);
    c.ropeScaling = parseRopeScaling(hasParams ? *params : j.value("rope_scaling", nlohmann::json()), source);

    parseAttentionVariant(j, *family, c, source);
    if (family->partialRotary) detail::readPartialRotary(j, c, source);
    if (family->moe) parseMoe(j, *family->moe, c, source);
    switch (family->extra) {
        case architectures::ConfigExtra::Gemma3: detail::readGemma3Config(j, c, source); break;
        case architectures::ConfigExtra::Phi3: detail::readPhi3Config(j, c, source); break;
        case architectures::ConfigExtra::GptOss: detail::readGptOssConfig(j, c, source); break;
        case architectures::ConfigExtra::DeepseekV3: detail::readDeepseekV3Config(j, c, source); break;
        case architectures::ConfigExtra::Llama4: detail::readLlama4Config(j, c, source); break;
        case architectures::ConfigExtra::Qwen35: detail::readQwen35Config(j, c, source); break;
        case architectures::ConfigExtra::None: break;
    }
    if (!family->longRope && c.ropeScaling.type == RopeScalingType::LongRope)
        fail(source, "longrope is supported for model_type '" +
                         architectures::modelTypesWhere([](const architectures::Family& f) { return f.longRope; }) +
                         "' only");
    // YaRN is checked against transformers and llama.cpp for some families only: elsewhere refused, not guessed.
    if (!family->yarn && c.ropeScaling.type == RopeScalingType::Yarn)
        fail(source, "rope scaling 'yarn' is not supported for model_type '" + c.modelType + "' (only for " +
                         architectures::modelTypesWhere([](const architectures::Family& f) { return f.yarn; }) + ")");
    c.validate(source);
    return c;
}

void ModelConfig::validate(const std::string& source) const {
    if (hiddenSize <= 0 || intermediateSize <= 0 || numLayers <= 0 || numHeads <= 0 || numKvHeads <= 0 ||
        headDim <= 0 || vocabSize <= 0 || maxPositionEmbeddings <= 0)
        fail(source, "sizes must be positive");
    if (numHeads % numKvHeads != 0) fail(source, "num_attention_heads is not a multiple of num_key_value_heads");
    if (headDim % 2 != 0) fail(source, "head_dim must be even for rotary embeddings");
    if (rotaryDim < 0 || rotaryDim > headDim || rotaryDim % 2 != 0)
        fail(source, "the rotary part of a head must be even and at most head_dim");
    if (ropeScaling.type == RopeScalingType::LongRope &&
        (ropeScaling.shortFactor.size() != std::size_t(rotaryDims() / 2) ||
         ropeScaling.longFactor.size() != std::size_t(rotaryDims() / 2)))
        fail(source, "longrope needs one short and one long factor per rotary frequency");
    if (!(rmsNormEps > 0.0) || !(ropeTheta > 0.0)) fail(source, "rms_norm_eps and rope_theta must be positive");
    if (slidingWindow < 0) fail(source, "sliding_window must not be negative");
    if (!slidingLayers.empty() && static_cast<int>(slidingLayers.size()) != numLayers)
        fail(source, "the per-layer attention types do not cover the " + std::to_string(numLayers) + " layers");
    if (queryPreAttnScalar < 0.0 || ropeLocalTheta < 0.0)
        fail(source, "query_pre_attn_scalar and the local RoPE base must not be negative");
    if (mla.active() &&
        (mla.qLoraRank < 0 || mla.qkNopeHeadDim <= 0 || mla.qkRopeHeadDim <= 0 || mla.qkRopeHeadDim % 2 != 0 ||
         mla.vHeadDim <= 0 || mla.vHeadDim > headDim || headDim != mla.qkHeadDim() || numKvHeads != numHeads))
        fail(source,
             "the latent attention's sizes are inconsistent (q/k heads of qk_nope_head_dim + qk_rope_head_dim, "
             "an even rotary part, values no wider, as many key/value heads as query heads)");
    if (const LinearAttentionConfig& la = linearAttention;
        la.active() &&
        (static_cast<int>(la.layers.size()) != numLayers || la.numKeyHeads <= 0 || la.numValueHeads <= 0 ||
         la.numValueHeads % la.numKeyHeads != 0 || la.keyHeadDim <= 0 || la.valueHeadDim <= 0 || la.convKernel < 1))
        fail(source,
             "the linear attention's sizes are inconsistent (one layer type per layer, positive head counts and "
             "sizes, value heads a multiple of key heads, a kernel of at least 1)");
    if (moe.numExperts < 0) fail(source, "the number of experts must not be negative");
    if (isMoe()) {
        if (moe.numExpertsPerToken < 1 || moe.numExpertsPerToken > moe.numExperts)
            fail(source, "num_experts_per_tok " + std::to_string(moe.numExpertsPerToken) +
                             " must be between 1 and the " + std::to_string(moe.numExperts) + " experts");
        if (moe.expertIntermediateSize <= 0) fail(source, "the experts' intermediate size must be positive");
        if (moe.sparseStep < 1) fail(source, "decoder_sparse_step must be at least 1");
        if (moe.names.block.empty()) fail(source, "model_type '" + modelType + "' has no MoE tensor names");
    }
}

void ModelConfig::requireDense(const std::string& source, const std::string& what) const {
    if (isMoe())
        fail(source, "model_type '" + modelType + "' is a mixture of experts (" + std::to_string(moe.numExperts) +
                         " experts), and " + what + " does not handle experts yet");
}

std::vector<std::pair<std::string, std::vector<std::string>>> fusedModules(const Architecture& arch) {
    std::vector<std::pair<std::string, std::vector<std::string>>> out;
    if (!arch.fusedQkv.empty()) out.push_back({arch.fusedQkv, {modules::kQProj, modules::kKProj, modules::kVProj}});
    if (!arch.fusedGateUp.empty()) out.push_back({arch.fusedGateUp, {modules::kGateProj, modules::kUpProj}});
    return out;
}

std::vector<FusedProjection> ModelConfig::fusedProjections() const {
    const auto rowsOf = [this](const std::string& module) {
        return module == modules::kQProj                 ? qDim()
               : module.starts_with(modules::kAttention) ? kvDim()
                                                         : intermediateSize;
    };
    std::vector<FusedProjection> out;
    for (const auto& [fused, parts] : fusedModules(arch)) {
        FusedProjection f{fused, {}};
        for (const std::string& part : parts) f.parts.emplace_back(part, rowsOf(part));
        out.push_back(std::move(f));
    }
    return out;
}

int ModelConfig::windowOf(int layer) const {
    if (slidingLayers.empty()) return slidingWindow;
    return slidingLayers.at(static_cast<std::size_t>(layer)) ? slidingWindow : 0;
}

bool ModelConfig::usesLocalRope(int layer) const {
    return ropeLocalTheta > 0.0 && !slidingLayers.empty() && slidingLayers.at(static_cast<std::size_t>(layer));
}

ModelConfig ModelConfig::fromCheckpoint(const io::Checkpoint& checkpoint) {
    ModelConfig c = fromJson(checkpoint.config(), checkpoint.configSource().string());
    // llama.cpp's gpt-oss keeps each expert's gate and up apart (ffn_gate_exps, ffn_up_exps, with their
    // biases), where the checkpoint interleaves them in one stacked gate_up_proj: a GGUF reads back one
    // gate_proj, up_proj and down_proj per expert (io's GGUF names), and the clamped SwiGLU takes them apart.
    const architectures::Family* family = architectures::familyOf(c.modelType);
    if (checkpoint.gguf() != nullptr && family != nullptr && family->moe) {
        const std::string shared = c.moe.names.shared;
        c.moe.names = moeNamesOf(family->moe->ggufNames);
        c.moe.names.shared = shared;
        c.moe.stackedExperts = false;
    }
    // A VLM written before transformers 4.52 keeps its text tower in the old layout (TowerLayout).
    if (family != nullptr && family->vision)
        if (!checkpoint.find(c.arch.tensorPrefix + "embed_tokens.weight") &&
            checkpoint.find(family->vision->old.tensorPrefix + "embed_tokens.weight"))
            applyLayout(family->vision->old, c.arch);
    // Gemma scales the embedding in the embedding tensor's own dtype.
    if (c.embeddingScale != 1.0)
        if (const io::CheckpointTensor* e = checkpoint.find(c.arch.tensorPrefix + "embed_tokens.weight"))
            c.embeddingScale = detail::embeddingScaleIn(e->info->dtype, c.hiddenSize);
    return c;
}

}  // namespace qs::model
