#include "qs/pipeline/export_check.h"

#include <map>
#include <optional>
#include <utility>

#include "qs/architectures/module_names.h"
#include "qs/architectures/registry.h"
#include "qs/error.h"
#include "qs/formats/detect.h"
#include "qs/io/gguf_file.h"
#include "qs/io/tensor_name.h"
#include "qs/model/attention_linears.h"
#include "qs/model/layer_weights.h"
#include "qs/pipeline/layer_quantizer.h"
#include "qs/quant/rtn.h"

namespace qs::pipeline {

namespace modules = architectures::modules;

namespace {

// Phi-3's fused projections: written as one tensor of the fused shape.
bool isFusedProjection(const std::string& module) {
    return module == modules::kQkvProj || module == modules::kGateUpProj;
}

// A linear of a decoder layer outside its experts: Llama's seven, DeepSeek's latent attention's, or a fused one.
bool isDecoderLinear(const io::TensorName& naming) {
    if (naming.layer < 0) return false;
    for (auto module : model::LayerWeights::kLinearModules)
        if (naming.module == module) return true;
    for (const auto layout : {model::AttentionLayout::Latent, model::AttentionLayout::LatentLowRankQuery,
                              model::AttentionLayout::GatedDeltaNet})
        for (const std::string_view module : model::attentionModules(layout))
            if (naming.module == module) return true;
    return isFusedProjection(naming.module);
}

struct DecoderLinear {
    std::string module;
    std::int64_t rows = 0, cols = 0;
};

// Every decoder-layer linear by prefix, in name order, with its [out, in]: a dense weight's shape, or
// the shape a quantized source's format decodes it to (a GPTQ source stores no "<prefix>.weight").
std::map<std::string, DecoderLinear> decoderLinears(const io::Checkpoint& checkpoint) {
    std::map<std::string, DecoderLinear> linears;
    for (const auto& t : checkpoint.tensors())
        if (isDecoderLinear(t.naming) && t.naming.part == "weight" && t.info->shape.size() == 2)
            linears[t.info->name.substr(0, t.info->name.size() - 7)] = {t.naming.module, t.info->shape[0],
                                                                        t.info->shape[1]};
    for (const formats::LayerQuantInfo& layer : formats::detect(checkpoint).layers) {
        if (layer.ref.expert >= 0 || layer.scheme == "dense") continue;
        const io::TensorName naming = io::parseTensorName(layer.ref.prefix + ".weight");
        if (isDecoderLinear(naming)) linears[layer.ref.prefix] = {naming.module, layer.rows, layer.cols};
    }
    return linears;
}

// A result with the method's layout for a [rows, cols] weight; nullopt when only the real run knows
// it (the trellis, whose Viterbi search is the expensive part).
std::optional<quant::QuantizedLinear> weightStandIn(const MethodSpec& method, std::int64_t rows, std::int64_t cols) {
    const MatrixF zeros = MatrixF::Zero(rows, cols);
    switch (method.kind) {
        case MethodKind::Trellis:
        case MethodKind::Gguf: return std::nullopt;
        case MethodKind::Gptq:
        case MethodKind::Awq: {
            // Same grid as RTN; GPTQ with act-order also stores a g_idx.
            quant::RtnOptions options;
            options.bits = method.bits;
            options.groupSize = method.groupSize;
            options.sym = method.sym;
            quant::QuantizedLinear q = quant::quantizeRtn(zeros, options);
            q.method = method.kind == MethodKind::Gptq ? quant::Method::Gptq : quant::Method::Awq;
            if (method.actOrder && method.kind == MethodKind::Gptq)
                for (std::int64_t c = 0; c < cols; ++c) q.gIdx.push_back(static_cast<std::int32_t>(c / q.blockCols));
            return q;
        }
        default: return quantizeLinear(method, zeros, nullptr, 0.0, 0);
    }
}

// The same with what the method asks the engine to quantize besides (its inputs, the KV cache).
std::optional<quant::QuantizedLinear> standIn(const MethodSpec& method, std::int64_t rows, std::int64_t cols) {
    auto q = weightStandIn(method, rows, cols);
    if (!q) return q;
    q->input = {method.activations, quant::needsCalibratedScale(method.activations) ? 1.0f : 0.0f};
    if (method.kvCacheFp8) q->cacheScale = 1.0f;
    return q;
}

std::string shapeText(std::int64_t rows, std::int64_t cols) {
    return "[" + std::to_string(rows) + ", " + std::to_string(cols) + "]";
}

}  // namespace

// gpt-oss's experts are slices of stacked tensors (mlp.experts.gate_up_proj [E, in, out]); the methods
// quantize them one by one (mlp.experts.3.gate_up_proj), but the encoders write one tensor per linear.
// vLLM's gpt_oss loader reads the experts stacked, as gpt-oss's own MXFP4 (quant_method "mxfp4") or as
// dense w13/w2 tensors, and no per-expert quantized layout: refused, pointing at the two that load.
std::string gptOssExpertsRefusal(const io::Checkpoint& source) {
    if (!architectures::stacksExperts(source.config().value("model_type", ""))) return {};
    if (source.gguf() != nullptr)
        return source.gguf()->path().string() +
               ": a gpt-oss GGUF's experts read back as separate gate, up and down projections, and vLLM "
               "loads gpt-oss's experts only stacked (gpt-oss's own MXFP4 or dense); a GGUF method "
               "writes a file llama.cpp runs";
    return source.root().string() +
           ": gpt-oss's experts are stacked tensors, which vLLM loads as gpt-oss's own MXFP4 or "
           "dense, not as per-expert quantized linears (compare measures the methods; quantize "
           "--method mxfp4 writes gpt-oss's own MXFP4, a GGUF method a file llama.cpp runs)";
}

const formats::LinearEncoder& encoderForMethod(const MethodSpec& method, const std::string& format) {
    if (method.gguf())
        throw Error(method.label() +
                    " is written as a GGUF file (pipeline::writeGgufResult), not as a safetensors checkpoint");
    if (!format.empty()) return formats::encoderNamed(format);
    if (const auto q = standIn(method, 128, 128)) return formats::defaultEncoderFor(*q);
    // The trellis has no stand-in (its layout comes from the search), but its encoder follows from the method.
    return formats::defaultEncoderFor(quant::QuantizedLinear::trellisCodes(0, 0, method.trellisL, method.bits, 0, 0));
}

std::string exportRefusal(const MethodSpec& method, const formats::LinearEncoder& encoder,
                          const io::Checkpoint& checkpoint) {
    if (auto why = gptOssExpertsRefusal(checkpoint); !why.empty()) return why;
    std::map<std::pair<std::int64_t, std::int64_t>, std::string> byShape;
    for (const auto& [prefix, linear] : decoderLinears(checkpoint)) {
        if (isFusedProjection(linear.module) && (method.kind == MethodKind::Nvfp4 || method.kvCacheFp8)) {
            return prefix + ": the checkpoint stores its parts as one tensor, and " + method.label() +
                   (method.kvCacheFp8 ? " keeps k_proj's and v_proj's KV cache scales apart"
                                      : " gives each part its own global scale");
        }
        const auto key = std::pair{linear.rows, linear.cols};
        auto it = byShape.find(key);
        if (it == byShape.end()) {
            const auto q = standIn(method, key.first, key.second);
            it = byShape.emplace(key, q ? encoder.refusal(*q) : std::string()).first;
        }
        if (!it->second.empty()) return prefix + " " + shapeText(key.first, key.second) + ": " + it->second;
    }
    return "";
}

std::string sourceMismatch(const MethodResult& result, const io::CheckpointFingerprint& source) {
    if (result.source.empty())
        return result.label() +
               ": the result does not say which checkpoint it was quantized from, so it "
               "cannot be written over " +
               source.describe();
    if (result.source == source) return "";
    return result.label() + " was quantized from " + result.source.describe() + ", not from " + source.describe() +
           "; export it from the checkpoint it was made from";
}

}  // namespace qs::pipeline
