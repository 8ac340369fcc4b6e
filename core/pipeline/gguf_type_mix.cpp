// llama.cpp's per-tensor type rules (src/llama-quant.cpp of the llama.cpp release tests/interop pins),
// restricted to the file types of ggufFileTypes(). llama.cpp counts attn_v-like tensors (attn_v, and
// Phi-3's fused attn_qkv) and ffn_down tensors in its loader's order (by layer, then by name), which
// for one such tensor per layer is the layer index; for a model with experts it reads the layer from
// the name. The rules below use the layer index directly. An expert's projections are one stacked
// tensor per kind (ffn_{gate,up,down}_exps), chosen like the dense ones, and the router
// (ffn_gate_inp) is never quantized.
#include "qs/pipeline/gguf_type_mix.h"

#include <algorithm>
#include <cctype>

#include "qs/architectures/registry.h"
#include "qs/error.h"
#include "qs/io/gguf_names.h"
#include "qs/io/llama_ftype.h"
#include "qs/io/tensor_name.h"

namespace qs::pipeline {

namespace {

using T = io::GgmlType;

// llama.h's llama_ftype values (qs/io/llama_ftype.h).
constexpr int kF32 = io::llamaFtype("F32");
constexpr int kF16 = io::llamaFtype("F16");
constexpr int kQ4_0 = io::llamaFtype("Q4_0");
constexpr int kQ4_1 = io::llamaFtype("Q4_1");
constexpr int kQ8_0 = io::llamaFtype("Q8_0");
constexpr int kQ5_0 = io::llamaFtype("Q5_0");
constexpr int kQ5_1 = io::llamaFtype("Q5_1");
constexpr int kQ2_K = io::llamaFtype("Q2_K");
constexpr int kQ3_K_S = io::llamaFtype("Q3_K_S");
constexpr int kQ3_K_M = io::llamaFtype("Q3_K_M");
constexpr int kQ3_K_L = io::llamaFtype("Q3_K_L");
constexpr int kQ4_K_S = io::llamaFtype("Q4_K_S");
constexpr int kQ4_K_M = io::llamaFtype("Q4_K_M");
constexpr int kQ5_K_S = io::llamaFtype("Q5_K_S");
constexpr int kQ5_K_M = io::llamaFtype("Q5_K_M");
constexpr int kQ6_K = io::llamaFtype("Q6_K");
constexpr int kIQ4_NL = io::llamaFtype("IQ4_NL");
constexpr int kIQ4_XS = io::llamaFtype("IQ4_XS");
constexpr int kBF16 = io::llamaFtype("BF16");

enum class Category { TokenEmbd, Output, AttnQkv, AttnQ, AttnK, AttnV, AttnOutput, FfnUp, FfnGate, FfnDown, Other };

// tensor_get_category: by the GGUF name.
Category categoryOf(const std::string& gguf) {
    if (gguf == "output.weight") return Category::Output;
    if (gguf == "token_embd.weight") return Category::TokenEmbd;
    const auto has = [&](std::string_view part) { return gguf.find(part) != std::string::npos; };
    if (has("attn_qkv.weight")) return Category::AttnQkv;
    if (has("attn_v.weight")) return Category::AttnV;
    if (has("attn_k.weight")) return Category::AttnK;
    if (has("attn_q.weight")) return Category::AttnQ;
    if (has("attn_output.weight")) return Category::AttnOutput;
    if (has("ffn_up")) return Category::FfnUp;
    if (has("ffn_gate")) return Category::FfnGate;
    if (has("ffn_down")) return Category::FfnDown;
    return Category::Other;
}

// tensor_allows_quantization for the tensors of the models QuantScope writes: matrices (and stacked
// experts) whose name ends in "weight", norms and the experts' router excepted.
bool quantizable(const GgufTensorChoice& t) {
    const std::string& n = t.ggufName;
    return t.shape.size() >= 2 && n.ends_with("weight") && n.find("_norm.weight") == std::string::npos &&
           n.find("ffn_gate_inp.weight") == std::string::npos;
}

struct Model {
    int layers = 0;
    int gqa = 1;         // heads per kv head
    bool is70B = false;  // llama.cpp's LLM_TYPE_70B (llama with GQA, or qwen2, at 80 layers)
    bool tied = false;   // no output.weight: token_embd follows the output's rules
    int experts = 0;     // hparams.n_expert: 8 (Mixtral-8x7B's count) turns on rules of its own
};

// The layers where the _M mixes spend more bits: the first and last eighths and every third between.
bool useMoreBits(int layer, int layers) {
    return layer < layers / 8 || layer >= 7 * layers / 8 || (layer - layers / 8) % 3 == 2;
}

T outputType(T type, std::int64_t cols) {
    if (cols % io::ggmlTypeTraits(type).blockElements != 0) return T::Q8_0;
    return type == T::Q8_0 ? type : T::Q6_K;
}

T attnVType(int f, T type, int layer, const Model& m) {
    if (f == kQ2_K)
        type = m.gqa >= 4 ? T::Q4_K : T::Q3_K;
    else if (f == kQ3_K_M)
        type = layer < 2 ? T::Q5_K : T::Q4_K;
    else if (f == kQ3_K_L)
        type = T::Q5_K;
    else if ((f == kIQ4_NL || f == kIQ4_XS) && m.gqa >= 4)
        type = T::Q5_K;
    else if ((f == kQ4_K_M || f == kQ5_K_M) && useMoreBits(layer, m.layers))
        type = T::Q6_K;
    else if (f == kQ4_K_S && layer < 4)
        type = T::Q5_K;
    if (m.is70B && (type == T::Q3_K || type == T::Q4_K)) type = T::Q5_K;
    if (m.experts == 8) type = T::Q8_0;  // "for the 8-expert model, bumping this to Q8_0 trades just ~128MB"
    return type;
}

T attnKType(T type, const Model& m) { return m.experts == 8 ? T::Q8_0 : type; }

T ffnDownType(int f, T type, int layer, const Model& m, bool importance) {
    const int n = m.layers;
    if (f == kQ2_K) return T::Q3_K;
    if (f == kQ3_K_M) return layer < n / 16 ? T::Q5_K : T::Q4_K;
    if (f == kQ3_K_L) return T::Q5_K;
    if (f == kQ4_K_M) return useMoreBits(layer, n) ? T::Q6_K : type;
    if (layer < n / 8 && (f == kIQ4_NL || f == kIQ4_XS) && !importance) return T::Q5_K;
    if (f == kQ5_K_M && useMoreBits(layer, n)) return T::Q6_K;
    if (f == kQ4_K_S && layer < n / 8) return T::Q5_K;
    if ((f == kQ4_0 || f == kQ5_0) && importance && layer < n / 8) return f == kQ4_0 ? T::Q4_1 : T::Q5_1;
    return type;
}

T attnOutputType(int f, T type, const Model& m) {
    if (m.experts == 8) {
        const bool moreBits =
            f == kQ2_K || f == kQ3_K_S || f == kQ3_K_M || f == kIQ4_NL || f == kQ4_K_S || f == kQ4_K_M || f == kIQ4_XS;
        return moreBits ? T::Q5_K : type;
    }
    if (f == kQ2_K) return T::Q3_K;
    if (f == kQ3_K_M) return T::Q4_K;
    if (f == kQ3_K_L) return T::Q5_K;
    return type;
}

// A part of a projection the GGUF stores fused (Phi-3's q_proj in attn_qkv, gate_proj in ffn_up) is
// chosen as that tensor is: by its name and its fused shape, so that all parts get one type.
GgufTensorChoice asStored(const GgufTensorChoice& t, const model::ModelConfig& config) {
    if (t.naming.layer < 0 || t.shape.size() != 2) return t;
    for (const model::FusedProjection& f : config.fusedProjections()) {
        std::int64_t rows = 0;
        bool part = false;
        for (const auto& [module, partRows] : f.parts) {
            rows += partRows;
            part = part || t.naming.module == module;
        }
        if (!part) continue;
        GgufTensorChoice fused = t;
        fused.name = config.layerPrefix(t.naming.layer) + f.fused + ".weight";
        fused.ggufName = "blk." + std::to_string(t.naming.layer) +
                         (f.fused == config.arch.fusedQkv ? ".attn_qkv.weight" : ".ffn_up.weight");
        fused.naming = io::parseTensorName(fused.name);
        fused.shape = {rows, t.shape[1]};
        return fused;
    }
    return t;
}

// llama_tensor_get_type_impl.
T mixType(int f, T type, const GgufTensorChoice& t, Category c, const Model& m, bool importance) {
    const int layer = std::max(t.naming.layer, 0);
    switch (c) {
        case Category::Output: return outputType(type, t.shape.back());
        case Category::TokenEmbd: return m.tied ? outputType(type, t.shape.back()) : type;
        case Category::AttnQkv:  // category_is_attn_v: Phi-3's fused q/k/v follows attn_v's rules
        case Category::AttnV: return attnVType(f, type, layer, m);
        case Category::AttnK: return attnKType(type, m);
        case Category::FfnDown: return ffnDownType(f, type, layer, m, importance);
        case Category::AttnOutput: return attnOutputType(f, type, m);
        default: return type;
    }
}

Model modelOf(const model::ModelConfig& config) {
    Model m;
    m.layers = config.numLayers;
    m.gqa = config.numKvHeads > 0 ? config.numHeads / config.numKvHeads : 1;
    // llama_model_type's 70B, whose K-quant mixes differ (Family::ggufSeventyBAt80Layers).
    const architectures::Family* family = architectures::familyOf(config.modelType);
    using Seventy = architectures::Family::Seventy;
    const Seventy seventy = family != nullptr ? family->ggufSeventyBAt80Layers : Seventy::Never;
    m.is70B = config.numLayers == 80 &&
              (seventy == Seventy::Always || (seventy == Seventy::WithGqa && config.numHeads != config.numKvHeads));
    m.tied = config.tieWordEmbeddings;
    m.experts = config.moe.numExperts;
    return m;
}

bool sameName(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
           });
}

}  // namespace

const std::vector<GgufFileType>& ggufFileTypes() {
    static const std::vector<GgufFileType> types = {
        {"Q4_0", kQ4_0, T::Q4_0, "4.5 bpw, one f16 scale per 32 (llama.cpp's legacy type)"},
        {"Q4_1", kQ4_1, T::Q4_1, "5.0 bpw, f16 scale and minimum per 32"},
        {"Q5_0", kQ5_0, T::Q5_0, "5.5 bpw, one f16 scale per 32"},
        {"Q5_1", kQ5_1, T::Q5_1, "6.0 bpw, f16 scale and minimum per 32"},
        {"Q2_K", kQ2_K, T::Q2_K, "K-quant mix around 2.6 bpw: attn_v Q3_K/Q4_K, ffn_down Q3_K, attn_output Q3_K"},
        {"Q3_K_S", kQ3_K_S, T::Q3_K, "Q3_K everywhere (3.44 bpw), output Q6_K"},
        {"Q3_K_M", kQ3_K_M, T::Q3_K, "Q3_K with attn_v Q5_K/Q4_K, ffn_down Q4_K/Q5_K, attn_output Q4_K"},
        {"Q3_K_L", kQ3_K_L, T::Q3_K, "Q3_K with attn_v, ffn_down Q5_K, attn_output Q5_K"},
        {"IQ4_NL", kIQ4_NL, T::IQ4_NL, "4.5 bpw non-linear grid per 32"},
        {"IQ4_XS", kIQ4_XS, T::IQ4_XS, "4.25 bpw non-linear grid, 6-bit sub-block scales per 256"},
        {"Q4_K_S", kQ4_K_S, T::Q4_K, "Q4_K (4.5 bpw) with the first attn_v and ffn_down Q5_K"},
        {"Q4_K_M", kQ4_K_M, T::Q4_K,
         "Q4_K with half of attn_v and ffn_down Q6_K, output Q6_K (llama.cpp's usual choice)"},
        {"Q5_K_S", kQ5_K_S, T::Q5_K, "Q5_K (5.5 bpw) everywhere, output Q6_K"},
        {"Q5_K_M", kQ5_K_M, T::Q5_K, "Q5_K with half of attn_v and ffn_down Q6_K"},
        {"Q6_K", kQ6_K, T::Q6_K, "6.5625 bpw everywhere"},
        {"Q8_0", kQ8_0, T::Q8_0, "8.5 bpw, one f16 scale per 32"},
        {"F16", kF16, T::F16, "16-bit floats"},
        {"BF16", kBF16, T::BF16, "bfloat16"},
        {"F32", kF32, T::F32, "32-bit floats (no quantization)"},
    };
    return types;
}

const GgufFileType* ggufFileTypeNamed(std::string_view name) {
    static const std::vector<std::pair<std::string_view, std::string_view>> aliases = {
        {"Q3_K", "Q3_K_M"}, {"Q4_K", "Q4_K_M"}, {"Q5_K", "Q5_K_M"}};
    for (const auto& [alias, target] : aliases)
        if (sameName(name, alias)) name = target;
    for (const auto& t : ggufFileTypes())
        if (sameName(name, t.name)) return &t;
    return nullptr;
}

const GgufFileType& ggufFileTypeOf(int fileType) {
    for (const auto& t : ggufFileTypes())
        if (t.fileType == fileType) return t;
    throw Error("GGUF file type " + std::to_string(fileType) + " is not one QuantScope writes");
}

// tensor_type_fallback.
T ggufFallbackType(T type, std::int64_t cols) {
    const auto fits = [cols](T t) { return cols % io::ggmlTypeTraits(t).blockElements == 0; };
    if (fits(type)) return type;
    T smaller = type;
    switch (type) {
        case T::IQ4_XS: smaller = T::IQ4_NL; break;
        case T::Q2_K:
        case T::Q3_K: smaller = T::Q4_0; break;
        case T::Q4_K: smaller = T::Q5_0; break;
        case T::Q5_K: smaller = T::Q5_1; break;
        case T::Q6_K: smaller = T::Q8_0; break;
        default: break;
    }
    return fits(smaller) ? smaller : T::F16;
}

GgufTypeChooser ggufMixChooser(const GgufFileType& fileType, const model::ModelConfig& config, bool withImportance) {
    const Model m = modelOf(config);
    const int f = fileType.fileType;
    const T base = fileType.baseType;
    return [m, f, base, withImportance, config](const GgufTensorChoice& part) {
        const GgufTensorChoice t = asStored(part, config);
        if (t.shape.size() < 2) return T::F32;
        if (!quantizable(t)) return T::F32;
        if (io::ggmlTypeTraits(base).isFloat) return base;  // F32, F16, BF16: every matrix as it is
        return ggufFallbackType(mixType(f, base, t, categoryOf(t.ggufName), m, withImportance), t.shape.back());
    };
}

}  // namespace qs::pipeline
