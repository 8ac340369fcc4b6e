// Llama 4's own part of the config reader (architectures::ConfigExtra::Llama4; the family: llama4.cpp), with
// Llama4TextConfig's keys and defaults: which layers rotate, chunk and hold experts, the L2 q/k norm, the NoPE
// layers' temperature tuning, and the dense MLP's own width.
#include "config_json.h"

namespace qs::model::detail {

namespace {

// A per-layer list of 0 / 1 (no_rope_layers: 1 rotates), at least num_hidden_layers long as transformers reads it.
std::vector<bool> flagList(const nlohmann::json& j, const char* key, int numLayers, const std::string& source) {
    const auto it = j.find(key);
    std::vector<bool> out;
    if (!it->is_array() || static_cast<int>(it->size()) < numLayers)
        fail(source, std::string("'") + key + "' must list at least num_hidden_layers (" + std::to_string(numLayers) +
                         ") values of 0 or 1");
    for (int i = 0; i < numLayers; ++i) {
        const auto& v = (*it)[static_cast<std::size_t>(i)];
        if (!v.is_number_integer() || (v.get<std::int64_t>() != 0 && v.get<std::int64_t>() != 1))
            fail(source, std::string("'") + key + "' holds " + v.dump() + ", not 0 or 1");
        out.push_back(v.get<int>() == 1);
    }
    return out;
}

}  // namespace

void readLlama4Config(const nlohmann::json& j, ModelConfig& c, const std::string& source) {
    Llama4Attention& a = c.llama4;
    const int n = c.numLayers;
    // The experts are intermediate_size wide (parseMoe read them so); a dense layer's MLP intermediate_size_mlp.
    c.intermediateSize = requiredInt(j, "intermediate_size_mlp", source);
    c.rmsNormEps = optional<double>(j, "rms_norm_eps", 1e-5, source);
    if (!j.contains("rope_theta") && !(j.contains("rope_parameters") && j["rope_parameters"].contains("rope_theta")))
        c.ropeTheta = 500000.0;  // Llama4TextConfig's default_theta

    const int interval = optional<int>(j, "no_rope_layer_interval", 4, source);
    if (interval < 1) fail(source, "'no_rope_layer_interval' must be at least 1");
    const auto noRope = j.find("no_rope_layers");
    if (noRope != j.end() && !noRope->is_null() && !(noRope->is_array() && noRope->empty())) {
        a.rope = flagList(j, "no_rope_layers", n, source);
    } else {
        for (int i = 0; i < n; ++i) a.rope.push_back((i + 1) % interval != 0);
    }
    const auto types = j.find("layer_types");
    if (types != j.end() && !types->is_null()) {
        if (!types->is_array() || static_cast<int>(types->size()) < n)
            fail(source, "'layer_types' must name the attention of each of the " + std::to_string(n) + " layers");
        for (int i = 0; i < n; ++i) {
            const auto& t = (*types)[static_cast<std::size_t>(i)];
            if (t != "chunked_attention" && t != "full_attention")
                fail(source, "layer_types holds " + t.dump() + " (only chunked_attention and full_attention)");
            a.chunked.push_back(t == "chunked_attention");
        }
    } else {
        a.chunked = a.rope;  // Llama4TextConfig: RoPE layers chunked, NoPE layers full
    }
    const auto chunk = j.find("attention_chunk_size");
    a.chunkSize = chunk == j.end() ? 8192 : chunk->is_null() ? 0 : requiredInt(j, "attention_chunk_size", source);
    if (a.chunkSize < 0) fail(source, "'attention_chunk_size' must not be negative");
    a.l2QkNorm = optional<bool>(j, "use_qk_norm", true, source);
    // The releases write attn_temperature_tuning as 4 (Llama4TextAttention tests it for truth).
    const auto tuning = j.find("attn_temperature_tuning");
    if (tuning != j.end() && tuning->is_number())
        a.temperatureTuning = tuning->get<double>() != 0.0;
    else
        a.temperatureTuning = optional<bool>(j, "attn_temperature_tuning", true, source);
    a.floorScale = optional<double>(j, "floor_scale", 8192.0, source);
    a.attnScale = optional<double>(j, "attn_scale", 0.1, source);
    if (!(a.floorScale > 0.0)) fail(source, "'floor_scale' must be positive");

    // moe_layers (default: every interleave_moe_layer_step-th layer) as dense layers beside a step of 1.
    MoeConfig& m = c.moe;
    const int step = optional<int>(j, "interleave_moe_layer_step", 1, source);
    if (step < 1) fail(source, "'interleave_moe_layer_step' must be at least 1");
    std::vector<bool> sparse(static_cast<std::size_t>(n), false);
    const auto moeLayers = j.find("moe_layers");
    if (moeLayers != j.end() && !moeLayers->is_null()) {
        if (!moeLayers->is_array()) fail(source, "'moe_layers' must list layer indices");
        for (const auto& v : *moeLayers) {
            if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::int64_t>() >= n)
                fail(source, "'moe_layers' holds " + v.dump() + ", not a layer index below num_hidden_layers " +
                                 std::to_string(n));
            sparse[v.get<std::size_t>()] = true;
        }
    } else {
        for (int i = step - 1; i < n; i += step) sparse[static_cast<std::size_t>(i)] = true;
    }
    m.sparseStep = 1;
    m.denseLayers.clear();
    for (int i = 0; i < n; ++i)
        if (!sparse[static_cast<std::size_t>(i)]) m.denseLayers.push_back(i);
    m.scoring = RouterScoring::SigmoidScalesInput;
    m.sharedExpertIntermediateSize = m.expertIntermediateSize;  // Llama4TextMoe's shared_expert: intermediate_size
    m.names.shared = "shared_expert";
    if (optional<std::string>(j, "hidden_act", "silu", source) != "silu")
        fail(source, "hidden_act must be silu for Llama 4");
}

}  // namespace qs::model::detail
