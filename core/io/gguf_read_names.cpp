// The architecture-dependent names of a GGUF read back (gguf_read_names.h): the inverse of the
// planner in core/pipeline/gguf_export.cpp and of llama.cpp's convert_hf_to_gguf.py for these models.
#include "gguf_read_names.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <limits>
#include <utility>

#include "qs/error.h"
#include "qs/io/gguf_names.h"
#include "qs/io/shape_text.h"

namespace qs::io::detail {

namespace {

using Pair = std::pair<std::string_view, std::string_view>;  // {GGUF module, Hugging Face module}

// Gemma 3's norms by role: llama.cpp's ffn_norm is the norm before the MLP, and the sandwich norms after
// attention and after the MLP have their own names (convert_hf_to_gguf's Gemma3Model).
constexpr std::array<Pair, 3> kGemma3 = {{
    {"post_attention_norm", "post_attention_layernorm"},
    {"ffn_norm", "pre_feedforward_layernorm"},
    {"post_ffw_norm", "post_feedforward_layernorm"},
}};

// llama.cpp's phi3 keeps Phi-3's fused gate/up (gate rows, then up rows) as ffn_up.
constexpr std::array<Pair, 1> kPhi3 = {{{"ffn_up", "mlp.gate_up_proj"}}};

// llama.cpp's gpt-oss calls the norm before the MLP post_attention_norm (convert_hf_to_gguf's GptOssModel).
constexpr std::array<Pair, 1> kGptOss = {{{"post_attention_norm", "post_attention_layernorm"}}};

struct LayerTensor {
    std::string_view layer;   // "7"
    std::string_view module;  // "ffn_gate_exps"
    std::string_view part;    // "weight"
};

// "blk.<digits>.<module>.<part>" split into its pieces.
std::optional<LayerTensor> splitLayerTensor(std::string_view name) {
    constexpr std::string_view kBlk = "blk.";
    if (!name.starts_with(kBlk)) return std::nullopt;
    name.remove_prefix(kBlk.size());
    std::size_t digits = 0;
    while (digits < name.size() && std::isdigit(static_cast<unsigned char>(name[digits]))) ++digits;
    if (digits == 0 || digits >= name.size() || name[digits] != '.') return std::nullopt;
    const std::string_view rest = name.substr(digits + 1);
    const auto dot = rest.rfind('.');
    if (dot == std::string_view::npos || dot == 0) return std::nullopt;
    return LayerTensor{name.substr(0, digits), rest.substr(0, dot), rest.substr(dot + 1)};
}

template <std::size_t N>
std::optional<std::string_view> lookup(const std::array<Pair, N>& table, std::string_view module) {
    for (const auto& [gguf, hf] : table)
        if (gguf == module) return hf;
    return std::nullopt;
}

std::string layerName(std::string_view layer, std::string_view module, std::string_view part) {
    return "model.layers." + std::string(layer) + "." + std::string(module) + "." + std::string(part);
}

// The expert projection a stacked tensor holds, as the architecture names it.
const std::string* expertModule(const GgufExpertNames& e, std::string_view module) {
    if (module == "ffn_gate_exps") return &e.gate;
    if (module == "ffn_up_exps") return &e.up;
    if (module == "ffn_down_exps") return &e.down;
    return nullptr;
}

// Mixtral GGUF files converted before llama.cpp stacked the experts (early 2024) keep one tensor per
// expert, blk.N.ffn_{gate,up,down}.E.weight, which llama.cpp still loads.
std::optional<std::string> legacyExpertName(const GgufExpertNames& e, const LayerTensor& t) {
    const auto dot = t.module.find('.');
    if (e.count == 0 || dot == std::string_view::npos) return std::nullopt;
    const std::string_view expert = t.module.substr(dot + 1);
    if (expert.empty() ||
        !std::ranges::all_of(expert, [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }))
        return std::nullopt;
    const std::string stacked = std::string(t.module.substr(0, dot)) + "_exps";
    const std::string* module = expertModule(e, stacked);
    if (module == nullptr) return std::nullopt;
    return layerName(t.layer, e.block + ".experts." + std::string(expert) + "." + *module, t.part);
}

}  // namespace

GgufReadNames ggufReadNames(const GgufFile& file) {
    GgufReadNames names;
    if (const std::string* arch = file.metadata().string("general.architecture")) names.arch = *arch;
    if (names.arch == "gemma3") names.normShift = -1.0f;
    // llama.cpp runs Mixtral as llama with experts, Qwen3-MoE as qwen3moe and gpt-oss as gpt-oss, all with
    // the experts of every layer stacked. gpt-oss's checkpoint interleaves gate and up in one gate_up_proj;
    // its GGUF keeps them apart (ffn_gate_exps, ffn_up_exps, each with its biases), and they come back as
    // each expert's gate_proj and up_proj (model::ModelConfig::fromCheckpoint reads them so).
    const bool mixtral = names.arch == "llama", qwen3moe = names.arch == "qwen3moe", gptOss = names.arch == "gpt-oss";
    if (!mixtral && !qwen3moe && !gptOss) return names;
    if (mixtral)
        names.experts = {0, "block_sparse_moe", "w1", "w3", "w2"};
    else if (gptOss)
        names.experts = {0, "mlp", "gate_proj", "up_proj", "down_proj", "router"};
    else
        names.experts = {0, "mlp", "gate_proj", "up_proj", "down_proj"};
    const std::string key = names.arch + ".expert_count";
    const GgufValue* count = file.metadata().find(key);
    if (count == nullptr) return names;
    const auto n = count->asInteger();
    if (!n || *n < 0 || *n > std::numeric_limits<int>::max())
        throw Error(file.path().string() + ": metadata '" + key + "' is not a count of experts");
    names.experts.count = static_cast<int>(*n);
    return names;
}

std::optional<std::string> hfNameIn(const GgufReadNames& names, std::string_view ggufName) {
    if (const auto t = splitLayerTensor(ggufName)) {
        if (names.experts.count > 0 && t->module == "ffn_gate_inp")
            return layerName(t->layer, names.experts.block + "." + names.experts.router, t->part);
        if (const auto legacy = legacyExpertName(names.experts, *t)) return legacy;
        // gpt-oss's per-head attention sinks are a parameter of self_attn, not a module's weight.
        if (names.arch == "gpt-oss" && t->module == "attn_sinks" && t->part == "weight")
            return "model.layers." + std::string(t->layer) + ".self_attn.sinks";
        const auto special = names.arch == "gemma3"    ? lookup(kGemma3, t->module)
                             : names.arch == "phi3"    ? lookup(kPhi3, t->module)
                             : names.arch == "gpt-oss" ? lookup(kGptOss, t->module)
                                                       : std::nullopt;
        if (special && (t->part == "weight" || t->part == "bias")) return layerName(t->layer, *special, t->part);
    }
    return hfNameOfGgufTensor(ggufName);
}

bool isGgufNorm(const TensorInfo& t) {
    return t.name.ends_with("norm.weight") && t.shape.size() == 1 && t.decodesToF32();
}

std::optional<std::vector<TensorInfo>> splitStackedExperts(const TensorInfo& stacked, const GgufReadNames& names,
                                                           const std::string& file) {
    const GgufExpertNames& e = names.experts;
    const auto t = splitLayerTensor(stacked.name);
    if (e.block.empty() || !t || (t->part != "weight" && t->part != "bias")) return std::nullopt;
    const std::string* module = expertModule(e, t->module);
    if (module == nullptr) return std::nullopt;
    const bool bias = t->part == "bias";
    if (e.count == 0)
        throw Error(file + ": tensor '" + stacked.name + "' " + shapeText(stacked.shape) + " stacks experts, but " +
                    names.arch + ".expert_count is missing or 0");
    if (stacked.shape.size() != (bias ? 2u : 3u) || stacked.shape[0] != e.count)
        throw Error(file + ": tensor '" + stacked.name + "' " + shapeText(stacked.shape) + " is not the " +
                    std::to_string(e.count) + " stacked experts " + (bias ? "[experts, out]" : "[experts, out, in]") +
                    " that " + names.arch + ".expert_count says");
    // An expert is a run of whole rows (of a bias: one row), so its bytes are a slice of the stacked ones.
    const std::vector<std::int64_t> shape(stacked.shape.begin() + 1, stacked.shape.end());
    const std::int64_t rows = bias ? 1 : shape[0];
    const std::uint64_t bytes = static_cast<std::uint64_t>(rows) * ggmlRowBytes(*stacked.ggmlType, shape.back());
    std::vector<TensorInfo> experts;
    for (int x = 0; x < e.count; ++x) {
        TensorInfo one = stacked;
        one.name = "model.layers." + std::string(t->layer) + "." + e.block + ".experts." + std::to_string(x) + "." +
                   *module + "." + std::string(t->part);
        one.shape = shape;
        one.begin = stacked.begin + static_cast<std::uint64_t>(x) * bytes;
        one.end = one.begin + bytes;
        experts.push_back(std::move(one));
    }
    return experts;
}

}  // namespace qs::io::detail
