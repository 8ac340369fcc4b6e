// Maps a checkpoint tensor name onto (layer, module, part, role). The names follow a few shapes:
//   <root>.<layers>.<N>.<module...>.<part...>   decoder layers ("model.layers.7.mlp.down_proj.weight",
//                                               GPT-2 "transformer.h.3.attn.c_attn.weight")
//   <root>.<module>.<part...>                   outside the layers ("model.embed_tokens.weight")
// The part starts at the first token that names a stored piece of a module (weight, qweight, scales,
// ...), so that "<module>.<part>" is the name's tail: bitsandbytes' "down_proj.weight.absmax" has part
// "weight.absmax". gpt-oss MXFP4 joins the part with '_' ("experts.gate_up_proj_blocks"): module
// "experts.gate_up_proj", part "blocks".
#include "qs/io/tensor_name.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <optional>
#include <vector>

namespace qs::io {

namespace {

using Tokens = std::vector<std::string_view>;

Tokens split(std::string_view s) {
    Tokens out;
    std::size_t start = 0;
    while (true) {
        const std::size_t dot = s.find('.', start);
        out.push_back(s.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
        if (dot == std::string_view::npos) return out;
        start = dot + 1;
    }
}

template <std::size_t N>
bool oneOf(std::string_view s, const std::array<std::string_view, N>& set) {
    return std::find(set.begin(), set.end(), s) != set.end();
}

// Containers of the decoder layers, the token before the layer index.
constexpr std::array<std::string_view, 6> kLayerContainers{"layers", "h", "blocks", "layer", "block", "decoder_layers"};
// Prefixes that wrap a whole model and say nothing about a tensor's place.
constexpr std::array<std::string_view, 8> kRoots{"model",   "transformer", "language_model", "gpt_neox",
                                                 "decoder", "base_model",  "backbone",       "text_model"};
// Tokens that begin a module's stored part (dense, GPTQ/AWQ, FP8, compressed-tensors, ModelOpt,
// bitsandbytes, LoRA).
constexpr std::array<std::string_view, 29> kPartStarts{"weight",
                                                       "bias",
                                                       "qweight",
                                                       "qzeros",
                                                       "scales",
                                                       "g_idx",
                                                       "weight_scale",
                                                       "weight_scale_inv",
                                                       "weight_packed",
                                                       "weight_global_scale",
                                                       "weight_zero_point",
                                                       "weight_shape",
                                                       "weight_g_idx",
                                                       "input_scale",
                                                       "input_global_scale",
                                                       "output_scale",
                                                       "k_scale",
                                                       "v_scale",
                                                       "SCB",
                                                       "weight_format",
                                                       "absmax",
                                                       "quant_map",
                                                       "quant_state",
                                                       "zeros",
                                                       "lora_a",
                                                       "lora_b",
                                                       "lora_A",
                                                       "lora_B",
                                                       "trellis"};
// gpt-oss style suffixes that fuse the part into the last token.
constexpr std::array<std::string_view, 4> kFusedSuffixes{"_blocks", "_scales", "_bias", "_zeros"};

constexpr std::array<std::string_view, 9> kEmbeddings{
    "embed_tokens",        "wte",        "wpe",     "word_embeddings", "embed_positions", "tok_embeddings",
    "position_embeddings", "embeddings", "embed_in"};
constexpr std::array<std::string_view, 3> kLmHeads{"lm_head", "embed_out", "output"};
// Linears whose names do not end in "_proj" (GPT-2's, Falcon's, llama2.c's, DeepSeek's kv_a_proj_with_mqa).
constexpr std::array<std::string_view, 17> kLinears{"c_attn",
                                                    "c_proj",
                                                    "c_fc",
                                                    "dense",
                                                    "query_key_value",
                                                    "dense_h_to_4h",
                                                    "dense_4h_to_h",
                                                    "fc1",
                                                    "fc2",
                                                    "wq",
                                                    "wk",
                                                    "wv",
                                                    "wo",
                                                    "w1",
                                                    "w2",
                                                    "w3",
                                                    "kv_a_proj_with_mqa"};

// Plain decimal digits below kMaxLayerIndex: "-1", "+3" and "99999999999" name no decoder layer
// (the token then is an ordinary name part), so layer counts derived from names stay small.
std::optional<int> layerIndex(std::string_view s) {
    if (s.empty() || s.size() > 7 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return std::nullopt;
    int v = 0;
    std::from_chars(s.data(), s.data() + s.size(), v);
    if (v >= kMaxLayerIndex) return std::nullopt;
    return v;
}

// An optional sign and decimal digits: what a layer index looks like, valid or not.
bool looksNumeric(std::string_view s) {
    if (!s.empty() && (s.front() == '-' || s.front() == '+')) s.remove_prefix(1);
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string join(Tokens::const_iterator b, Tokens::const_iterator e) {
    std::string out;
    for (auto it = b; it != e; ++it) {
        if (!out.empty()) out += '.';
        out += *it;
    }
    return out;
}

bool endsWith(std::string_view s, std::string_view suffix) {
    return s.size() > suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

TensorRole roleOf(std::string_view leaf, int layer) {
    if (oneOf(leaf, kEmbeddings)) return TensorRole::Embedding;
    if (layer < 0 && oneOf(leaf, kLmHeads)) return TensorRole::LmHead;
    if (leaf.find("norm") != std::string_view::npos || leaf.starts_with("ln_") || leaf == "ln_f")
        return TensorRole::Norm;
    // "gate": the router of Mixtral and Qwen3-MoE; "router": gpt-oss's (GptOssTopKRouter, a biased linear).
    if (leaf.ends_with("_proj") || leaf == "gate" || leaf == "router" || oneOf(leaf, kLinears))
        return TensorRole::Linear;
    // Qwen3.5's Gated DeltaNet projections (linear_attn.in_proj_qkv / _z / _b / _a) and its MoE's shared-expert gate.
    if (leaf.starts_with("in_proj_") || leaf == "shared_expert_gate") return TensorRole::Linear;
    return TensorRole::Other;
}

// Splits the tokens after the layer index (or after the roots) into module and part.
void splitModuleAndPart(Tokens::const_iterator b, Tokens::const_iterator e, TensorName& out) {
    if (b == e) return;
    auto partStart = std::find_if(b, e, [](std::string_view t) { return oneOf(t, kPartStarts); });
    if (partStart == b && std::next(b) != e) partStart = e;  // "weight" alone cannot be a module name
    if (partStart == e) {
        const std::string_view last = *std::prev(e);
        for (const auto suffix : kFusedSuffixes) {
            if (endsWith(last, suffix)) {
                out.module = join(b, std::prev(e));
                if (!out.module.empty()) out.module += '.';
                out.module += last.substr(0, last.size() - suffix.size());
                out.part = std::string(suffix.substr(1));
                return;
            }
        }
        partStart = std::prev(e);
    }
    out.module = join(b, partStart);
    out.part = join(partStart, e);
}

}  // namespace

TensorName parseTensorName(std::string_view fullName) {
    const Tokens tokens = split(fullName);
    TensorName out;
    auto moduleBegin = tokens.cbegin();
    // Qwen3.5's (and Qwen3-Next's) multi-token-prediction layers, "mtp.layers.N.…", sit beside the decoder: no
    // decoder layer N.
    const bool besideDecoder = tokens.front() == "mtp";
    for (auto it = tokens.cbegin(); it != tokens.cend() && !besideDecoder; ++it) {
        if (it == tokens.cbegin() || !oneOf(*std::prev(it), kLayerContainers)) continue;
        if (const auto index = layerIndex(*it)) {
            out.layer = *index;
            moduleBegin = std::next(it);
            break;
        }
        if (looksNumeric(*it)) out.badLayerIndex = true;
    }
    if (out.layer < 0) {
        while (moduleBegin != tokens.cend() && std::next(moduleBegin) != tokens.cend() && oneOf(*moduleBegin, kRoots))
            ++moduleBegin;
    }
    splitModuleAndPart(moduleBegin, tokens.cend(), out);
    const std::string_view module = out.module;
    const auto dot = module.rfind('.');
    out.role = roleOf(dot == std::string_view::npos ? module : module.substr(dot + 1), out.layer);
    return out;
}

bool isTowerTensor(std::string_view name) {
    for (const std::string_view word : {"vision", "visual", "audio", "multi_modal_projector", "mm_projector"})
        if (name.find(word) != std::string_view::npos) return true;
    return false;
}

bool isRouterModule(std::string_view module) {
    const auto dot = module.rfind('.');
    const std::string_view last = dot == std::string_view::npos ? module : module.substr(dot + 1);
    return last == "gate" || last == "router" || last.ends_with("_gate");
}

}  // namespace qs::io
