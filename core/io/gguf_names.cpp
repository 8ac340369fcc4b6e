// The name table between llama.cpp's tensor names and Hugging Face's (gguf-py constants.py,
// MODEL_TENSOR -> TENSOR_NAMES, and tensor_mapping.py for the Llama/Qwen names).
#include "qs/io/gguf_names.h"

#include <array>
#include <cctype>
#include <utility>

namespace qs::io {

namespace {

using Pair = std::pair<std::string_view, std::string_view>;  // {GGUF, Hugging Face}

constexpr std::array<Pair, 3> kTopLevel = {{
    {"token_embd", "model.embed_tokens"},
    {"output_norm", "model.norm"},
    {"output", "lm_head"},
}};

constexpr std::array<Pair, 12> kPerLayer = {{
    {"attn_norm", "input_layernorm"},
    {"attn_qkv", "self_attn.qkv_proj"},  // Phi-3's fused q/k/v (its fused gate/up is ffn_up: gguf_export's planner)
    {"attn_q", "self_attn.q_proj"},
    {"attn_k", "self_attn.k_proj"},
    {"attn_v", "self_attn.v_proj"},
    {"attn_output", "self_attn.o_proj"},
    {"attn_q_norm", "self_attn.q_norm"},
    {"attn_k_norm", "self_attn.k_norm"},
    {"ffn_norm", "post_attention_layernorm"},
    {"ffn_gate", "mlp.gate_proj"},
    {"ffn_up", "mlp.up_proj"},
    {"ffn_down", "mlp.down_proj"},
}};

constexpr std::string_view kGgufLayer = "blk.";
constexpr std::string_view kHfLayer = "model.layers.";

// "weight" or "bias": the parameter suffixes both namings share.
bool knownPart(std::string_view part) { return part == "weight" || part == "bias"; }

// Splits "<module>.<part>" at its last dot.
std::optional<std::pair<std::string_view, std::string_view>> splitPart(std::string_view name) {
    const auto dot = name.rfind('.');
    if (dot == std::string_view::npos || !knownPart(name.substr(dot + 1))) return std::nullopt;
    return std::make_pair(name.substr(0, dot), name.substr(dot + 1));
}

// "<digits>.<rest>" -> {digits, rest}.
std::optional<std::pair<std::string_view, std::string_view>> splitLayer(std::string_view name) {
    std::size_t digits = 0;
    while (digits < name.size() && std::isdigit(static_cast<unsigned char>(name[digits]))) ++digits;
    if (digits == 0 || digits >= name.size() || name[digits] != '.') return std::nullopt;
    return std::make_pair(name.substr(0, digits), name.substr(digits + 1));
}

// Maps `name` from one naming (first = from, second = to when forward) to the other.
std::optional<std::string> translate(std::string_view name, bool toHf) {
    const auto split = splitPart(name);
    if (!split) return std::nullopt;
    const auto [module, part] = *split;
    const auto from = [&](const Pair& p) { return toHf ? p.first : p.second; };
    const auto to = [&](const Pair& p) { return toHf ? p.second : p.first; };
    for (const auto& p : kTopLevel)
        if (module == from(p)) return std::string(to(p)) + "." + std::string(part);
    const std::string_view layerFrom = toHf ? kGgufLayer : kHfLayer, layerTo = toHf ? kHfLayer : kGgufLayer;
    if (!module.starts_with(layerFrom)) return std::nullopt;
    const auto layer = splitLayer(module.substr(layerFrom.size()));
    if (!layer) return std::nullopt;
    for (const auto& p : kPerLayer)
        if (layer->second == from(p))
            return std::string(layerTo) + std::string(layer->first) + "." + std::string(to(p)) + "." +
                   std::string(part);
    return std::nullopt;
}

}  // namespace

std::optional<HfArchitecture> hfArchitectureOfGguf(std::string_view ggufArchitecture) {
    if (ggufArchitecture == "llama") return HfArchitecture{"llama", "LlamaForCausalLM"};
    if (ggufArchitecture == "qwen2") return HfArchitecture{"qwen2", "Qwen2ForCausalLM"};
    if (ggufArchitecture == "qwen3") return HfArchitecture{"qwen3", "Qwen3ForCausalLM"};
    if (ggufArchitecture == "qwen3moe") return HfArchitecture{"qwen3_moe", "Qwen3MoeForCausalLM"};
    // llama.cpp's gemma3 is the text tower (Gemma3ForCausalLM), also of the Gemma 3 VLM's GGUF.
    if (ggufArchitecture == "gemma3") return HfArchitecture{"gemma3_text", "Gemma3ForCausalLM"};
    if (ggufArchitecture == "phi3") return HfArchitecture{"phi3", "Phi3ForCausalLM"};
    if (ggufArchitecture == "gpt-oss") return HfArchitecture{"gpt_oss", "GptOssForCausalLM"};
    // A Qwen-VL GGUF holds the text tower only (the vision tower goes to an mmproj file): read back as
    // its text model, whose RoPE is the multimodal one's for text (rope.dimension_sections only split
    // the frequencies over positions that are equal for text tokens).
    if (ggufArchitecture == "qwen2vl") return HfArchitecture{"qwen2", "Qwen2ForCausalLM"};
    if (ggufArchitecture == "qwen3vl") return HfArchitecture{"qwen3", "Qwen3ForCausalLM"};
    return std::nullopt;
}

std::optional<std::string> ggufArchitectureOfModelType(std::string_view modelType) {
    if (modelType == "llama" || modelType == "mistral") return "llama";
    if (modelType == "qwen2" || modelType == "qwen3") return std::string(modelType);
    // llama.cpp runs Mixtral as llama with experts (llama.expert_count), Qwen3-MoE as its own arch.
    if (modelType == "mixtral") return "llama";
    if (modelType == "qwen3_moe") return "qwen3moe";
    // The Gemma 3 VLM's GGUF is its text tower (llama.cpp's converter puts the vision tower in an mmproj file).
    if (modelType == "gemma3_text" || modelType == "gemma3") return "gemma3";
    if (modelType == "phi3") return "phi3";
    if (modelType == "gpt_oss") return "gpt-oss";
    // The Qwen-VL text towers as llama.cpp's convert_hf_to_gguf writes them (Qwen2VLModel, Qwen3VLTextModel:
    // the text model's tensors with rope.dimension_sections), Mistral 3's as llama (Mistral3Model).
    if (modelType == "qwen2_5_vl") return "qwen2vl";
    if (modelType == "qwen3_vl") return "qwen3vl";
    if (modelType == "mistral3") return "llama";
    return std::nullopt;
}

std::string ggufFileTypeName(std::int64_t fileType) {
    // llama.h's enum llama_ftype; the gaps are types llama.cpp has removed.
    static constexpr std::array<std::string_view, 42> kNames = {
        "F32",   "F16",     "Q4_0",      "Q4_1",   "",       "",        "",       "Q8_0",   "Q5_0",
        "Q5_1",  "Q2_K",    "Q3_K_S",    "Q3_K_M", "Q3_K_L", "Q4_K_S",  "Q4_K_M", "Q5_K_S", "Q5_K_M",
        "Q6_K",  "IQ2_XXS", "IQ2_XS",    "Q2_K_S", "IQ3_XS", "IQ3_XXS", "IQ1_S",  "IQ4_NL", "IQ3_S",
        "IQ3_M", "IQ2_S",   "IQ2_M",     "IQ4_XS", "IQ1_M",  "BF16",    "",       "",       "",
        "TQ1_0", "TQ2_0",   "MXFP4_MOE", "NVFP4",  "Q1_0",   "Q2_0"};
    if (fileType >= 0 && fileType < static_cast<std::int64_t>(kNames.size()) &&
        !kNames[static_cast<std::size_t>(fileType)].empty())
        return std::string(kNames[static_cast<std::size_t>(fileType)]);
    return "type " + std::to_string(fileType);
}

bool ggufArchitecturePermutesQk(std::string_view ggufArchitecture) { return ggufArchitecture == "llama"; }

std::optional<std::string> hfNameOfGgufTensor(std::string_view ggufName) { return translate(ggufName, true); }
std::optional<std::string> ggufNameOfHfTensor(std::string_view hfName) { return translate(hfName, false); }

}  // namespace qs::io
