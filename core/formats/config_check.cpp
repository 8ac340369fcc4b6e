#include "qs/formats/config_check.h"

#include <algorithm>
#include <map>
#include <optional>

#include "qs/architectures/module_names.h"
#include "qs/architectures/registry.h"
#include "qs/error.h"
#include "qs/io/json_value.h"
#include "qs/io/tensor_name.h"

#include "tensor_access.h"

namespace qs::formats {

namespace modules = architectures::modules;

namespace {

using Shape = std::vector<std::int64_t>;

// The config's sizes (or the text_config's, for multimodal wrappers); absent keys stay empty.
struct ConfigSizes {
    std::string modelType;
    std::optional<std::int64_t> hidden, intermediate, layers, heads, kvHeads, headDim, vocab;
    std::int64_t trailingLayers = 0;  // stored after the decoder's, not run (Family::trailingLayersKey)
    // DeepSeek's latent attention (kv_lora_rank set): q_lora_rank (absent or null: q_proj) and the head parts.
    std::optional<std::int64_t> qLoraRank, kvLoraRank, qkNope, qkRope, vHead;
    // Qwen3.5: q_proj also gives the output gate, and the Gated DeltaNet's sizes (Qwen3_5TextConfig's defaults).
    bool outputGate = false;
    std::int64_t linearKeyHeads = 16, linearValueHeads = 32, linearKeyDim = 128, linearValueDim = 128;
};

ConfigSizes readSizes(const nlohmann::json& config, const std::string& where, std::vector<std::string>& problems) {
    ConfigSizes s;
    const nlohmann::json& c =
        config.contains("text_config") && config["text_config"].is_object() ? config["text_config"] : config;
    const auto sizeFrom = [&](const char* key, std::int64_t least) -> std::optional<std::int64_t> {
        try {
            // As ModelConfig bounds them: products of two sizes stay far from overflow.
            return io::jsonIntegerField(c, key, where, {least, 1 << 24});
        } catch (const Error& e) {
            problems.push_back(e.what());
            return std::nullopt;
        }
    };
    const auto size = [&](const char* key) { return sizeFrom(key, 1); };
    if (c.contains("model_type") && c["model_type"].is_string()) s.modelType = c["model_type"].get<std::string>();
    s.hidden = size("hidden_size");
    s.intermediate = size("intermediate_size");
    // Llama 4: a dense layer's MLP is intermediate_size_mlp wide (its experts intermediate_size).
    if (c.contains("intermediate_size_mlp")) s.intermediate = size("intermediate_size_mlp");
    s.layers = size("num_hidden_layers");
    s.heads = size("num_attention_heads");
    s.kvHeads = size("num_key_value_heads");
    if (!s.kvHeads) s.kvHeads = s.heads;
    s.headDim = size("head_dim");
    if (!s.headDim && s.hidden && s.heads && *s.hidden % *s.heads == 0) s.headDim = *s.hidden / *s.heads;
    s.vocab = size("vocab_size");
    if (const architectures::Family* family = architectures::familyOf(s.modelType);
        family != nullptr && !family->trailingLayersKey.empty() && c.contains(family->trailingLayersKey))
        s.trailingLayers = sizeFrom(std::string(family->trailingLayersKey).c_str(), 0).value_or(0);
    if (const architectures::Family* family = architectures::familyOf(s.modelType);
        family != nullptr && family->extra == architectures::ConfigExtra::Qwen35) {
        s.outputGate = true;
        s.linearKeyHeads = size("linear_num_key_heads").value_or(s.linearKeyHeads);
        s.linearValueHeads = size("linear_num_value_heads").value_or(s.linearValueHeads);
        s.linearKeyDim = size("linear_key_head_dim").value_or(s.linearKeyDim);
        s.linearValueDim = size("linear_value_head_dim").value_or(s.linearValueDim);
    }
    if (c.contains("kv_lora_rank")) {
        s.kvLoraRank = size("kv_lora_rank");
        s.qLoraRank = size("q_lora_rank");
        s.qkNope = size("qk_nope_head_dim");
        s.qkRope = size("qk_rope_head_dim");
        s.vHead = size("v_head_dim");
    }
    return s;
}

std::string text(const Shape& shape) { return detail::shapeText(shape); }

// [out, in] of every linear, quantized or dense, by module prefix.
std::map<std::string, Shape> linearShapes(const io::Checkpoint& ck, const FormatInfo& format) {
    std::map<std::string, Shape> shapes;
    for (const auto& l : format.layers)
        if (l.problem.empty() && l.ref.expert < 0) shapes[l.ref.prefix] = {l.rows, l.cols};
    for (const auto& prefix : format.denseLinears)
        if (const auto* t = ck.find(prefix + ".weight"); t != nullptr && t->info->shape.size() == 2)
            shapes[prefix] = t->info->shape;
    return shapes;
}

// What config.json implies for the linears of DeepSeek's latent attention (DeepseekV3Attention's shapes).
std::optional<Shape> expectedLatentShape(const ConfigSizes& s, const std::string& module) {
    const auto known = [](auto... v) { return (v.has_value() && ...); };
    if (!known(s.heads, s.hidden, s.kvLoraRank, s.qkNope, s.qkRope, s.vHead)) return std::nullopt;
    const std::int64_t h = *s.hidden, q = *s.heads * (*s.qkNope + *s.qkRope);
    if (module == modules::kQProj) return Shape{q, h};
    if (module == modules::kQAProj && s.qLoraRank) return Shape{*s.qLoraRank, h};
    if (module == modules::kQBProj && s.qLoraRank) return Shape{q, *s.qLoraRank};
    if (module == modules::kKvAProj) return Shape{*s.kvLoraRank + *s.qkRope, h};
    if (module == modules::kKvBProj) return Shape{*s.heads * (*s.qkNope + *s.vHead), *s.kvLoraRank};
    if (module == modules::kOProj) return Shape{h, *s.heads * *s.vHead};
    return std::nullopt;
}

// What config.json implies for the linears of a decoder layer (Llama-family names).
std::optional<Shape> expectedShape(const ConfigSizes& s, const std::string& module) {
    const auto known = [](auto... v) { return (v.has_value() && ...); };
    if (s.kvLoraRank && module.starts_with(modules::kAttention)) return expectedLatentShape(s, module);
    if (module == modules::kQProj && known(s.heads, s.headDim, s.hidden))
        return Shape{(s.outputGate ? 2 : 1) * *s.heads * *s.headDim, *s.hidden};
    if (s.outputGate && s.hidden) {  // Qwen3.5's Gated DeltaNet
        const std::int64_t keys = s.linearKeyHeads * s.linearKeyDim, values = s.linearValueHeads * s.linearValueDim;
        if (module == modules::kInProjQkv) return Shape{2 * keys + values, *s.hidden};
        if (module == modules::kInProjZ) return Shape{values, *s.hidden};
        if (module == modules::kInProjB || module == modules::kInProjA) return Shape{s.linearValueHeads, *s.hidden};
        if (module == modules::kDeltaOutProj) return Shape{*s.hidden, values};
    }
    if ((module == modules::kKProj || module == modules::kVProj) && known(s.kvHeads, s.headDim, s.hidden))
        return Shape{*s.kvHeads * *s.headDim, *s.hidden};
    if (module == modules::kOProj && known(s.heads, s.headDim, s.hidden))
        return Shape{*s.hidden, *s.heads * *s.headDim};
    if ((module == modules::kGateProj || module == modules::kUpProj) && known(s.intermediate, s.hidden))
        return Shape{*s.intermediate, *s.hidden};
    if (module == modules::kDownProj && known(s.intermediate, s.hidden)) return Shape{*s.hidden, *s.intermediate};
    return std::nullopt;
}

std::string keysFor(const ConfigSizes& s, const std::string& module) {
    if (s.kvLoraRank && module.starts_with(modules::kAttention))
        return "hidden_size, num_attention_heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, "
               "v_head_dim";
    if (module.starts_with(modules::kAttention))
        return "hidden_size, num_attention_heads, num_key_value_heads, head_dim";
    if (module.starts_with("linear_attn."))
        return "hidden_size, linear_num_key_heads, linear_num_value_heads, linear_key_head_dim, "
               "linear_value_head_dim";
    return "hidden_size, intermediate_size";
}

void checkLinears(const io::Checkpoint& ck, const FormatInfo& format, const ConfigSizes& s, const std::string& where,
                  std::vector<std::string>& problems) {
    for (const auto& [prefix, shape] : linearShapes(ck, format)) {
        const auto naming = io::parseTensorName(prefix + ".weight");
        if (naming.layer < 0 || io::isTowerTensor(prefix)) continue;  // a VLM's vision layers have their own sizes
        const auto expected = expectedShape(s, naming.module);
        if (expected && *expected != shape) {
            problems.push_back(where + ": " + keysFor(s, naming.module) + " imply " + text(*expected) + " for " +
                               prefix + ", but its weight is " + text(shape));
            return;  // one line says it; the other layers repeat it
        }
    }
}

void checkEmbedding(const io::Checkpoint& ck, const ConfigSizes& s, const std::string& where,
                    std::vector<std::string>& problems) {
    for (const auto& t : ck.tensors()) {
        if (t.naming.role != io::TensorRole::Embedding || t.naming.module.find("embed_tokens") == std::string::npos ||
            t.info->shape.size() != 2)
            continue;
        const auto& shape = t.info->shape;
        if (s.vocab && shape[0] != *s.vocab)
            problems.push_back(where + ": vocab_size " + std::to_string(*s.vocab) + ", but " + t.info->name + " is " +
                               text(shape));
        if (s.hidden && shape[1] != *s.hidden)
            problems.push_back(where + ": hidden_size " + std::to_string(*s.hidden) + ", but " + t.info->name + " is " +
                               text(shape));
        return;
    }
}

void checkLayers(const io::Checkpoint& ck, const ConfigSizes& s, const std::string& where,
                 std::vector<std::string>& problems) {
    int maxLayer = -1;
    for (const auto& t : ck.tensors())
        if (!io::isTowerTensor(t.info->name)) maxLayer = std::max(maxLayer, t.naming.layer);
    if (s.layers && maxLayer >= 0 && maxLayer + 1 != *s.layers + s.trailingLayers)
        problems.push_back(
            where + ": num_hidden_layers " + std::to_string(*s.layers) +
            (s.trailingLayers > 0 ? " and " + std::to_string(s.trailingLayers) + " layers after them" : "") +
            ", but the tensors hold " + std::to_string(maxLayer + 1) + " decoder layers (0 to " +
            std::to_string(maxLayer) + ")");
}

// model_type against the tensors that tell the architectures apart: Qwen3's per-head q/k norms,
// Qwen2's q/k/v biases.
void checkModelType(const io::Checkpoint& ck, const ConfigSizes& s, const std::string& where,
                    std::vector<std::string>& problems) {
    bool anyLayer = false, qkNorm = false, qkvBias = false;
    std::string normName;
    for (const auto& t : ck.tensors()) {
        if (t.naming.layer < 0 || io::isTowerTensor(t.info->name)) continue;
        anyLayer = true;
        if (t.naming.module == modules::kQNorm || t.naming.module == modules::kKNorm) {
            qkNorm = true;
            normName = t.info->name;
            if (s.headDim && t.info->shape != Shape{*s.headDim})
                problems.push_back(where + ": head_dim " + std::to_string(*s.headDim) + ", but " + t.info->name +
                                   " is " + text(t.info->shape));
        }
        if (t.naming.module == modules::kQProj && t.naming.part == "bias") qkvBias = true;
    }
    if (!anyLayer || s.modelType.empty()) return;
    const architectures::Family* family = architectures::familyOf(s.modelType);
    if (family == nullptr) return;
    const std::string type = "model_type '" + s.modelType + "'";
    if (family->tensorsHoldQkNorm == true && !qkNorm)
        problems.push_back(where + ": " + type +
                           " normalises q and k per head, but the tensors hold no self_attn.q_norm");
    if (family->tensorsHoldQkNorm == false && qkNorm)
        problems.push_back(where + ": " + type + " has no q/k norms, but the tensors hold " + normName +
                           " (Qwen3 has them)");
    if (family->tensorsHoldQkvBias && !qkvBias)
        problems.push_back(where + ": " + type + " has q/k/v biases, but the tensors hold no self_attn.q_proj.bias");
}

// A GGUF of an architecture that is written here but does not read back (deepseek2): the config synthesized
// from its metadata describes no model of ours, and running it is refused saying why (ModelConfig).
bool unreadGgufArchitecture(const io::Checkpoint& checkpoint, const nlohmann::json& config) {
    if (checkpoint.gguf() == nullptr || !config.contains("model_type") || !config["model_type"].is_string())
        return false;
    const std::string arch = config["model_type"].get<std::string>();
    return std::ranges::any_of(architectures::families(), [&](const architectures::Family* f) {
        return f->ggufArch == arch && !f->ggufReadBackMissing.empty();
    });
}

}  // namespace

std::vector<std::string> configDisagreements(const io::Checkpoint& checkpoint, const FormatInfo& format) {
    std::vector<std::string> problems;
    const auto& config = checkpoint.config();
    if (!config.is_object() || config.empty() || unreadGgufArchitecture(checkpoint, config)) return problems;
    // config.json, or the GGUF file whose metadata the config was synthesized from.
    const std::string where = checkpoint.configSource().string();
    const ConfigSizes sizes = readSizes(config, where, problems);
    checkEmbedding(checkpoint, sizes, where, problems);
    checkLayers(checkpoint, sizes, where, problems);
    checkLinears(checkpoint, format, sizes, where, problems);
    checkModelType(checkpoint, sizes, where, problems);
    return problems;
}

void requireConfigMatchesTensors(const io::Checkpoint& checkpoint, const FormatInfo& format) {
    const auto problems = configDisagreements(checkpoint, format);
    if (problems.empty()) return;
    std::string message = problems.front();
    if (problems.size() > 1) message += " (and " + std::to_string(problems.size() - 1) + " more disagreements)";
    throw Error(message + (checkpoint.gguf() ? "; the GGUF's metadata describes" : "; config.json describes") +
                " another model than its tensors");
}

}  // namespace qs::formats
