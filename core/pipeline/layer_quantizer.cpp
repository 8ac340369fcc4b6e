#include "qs/pipeline/layer_quantizer.h"

#include <chrono>
#include <cmath>
#include <vector>

#include "gguf_method.h"
#include "qs/error.h"
#include "qs/pipeline/gguf_type_mix.h"
#include "qs/quant/awq.h"
#include "qs/quant/fp8.h"
#include "qs/quant/gptq.h"
#include "qs/quant/mxfp4.h"
#include "qs/quant/nf4.h"
#include "qs/quant/nvfp4.h"
#include "qs/quant/output_error.h"
#include "qs/quant/rtn.h"
#include "qs/quant/trellis.h"

namespace qs::pipeline {
namespace {

const Backend& orCpu(const Backend* backend) {
    static const std::shared_ptr<Backend> cpu = makeCpuBackend();
    return backend ? *backend : *cpu;
}

quant::Fp8Scaling fp8Scaling(Fp8Granularity g) {
    if (g == Fp8Granularity::Channel) return quant::Fp8Scaling::PerChannel;
    if (g == Fp8Granularity::Tensor) return quant::Fp8Scaling::PerTensor;
    return quant::Fp8Scaling::Block;
}

const MatrixF& requireHessian(const MethodSpec& method, const MatrixF* h) {
    if (h == nullptr) throw Error(method.label() + " needs calibration inputs");
    return *h;
}

// The linears that read one input, in the order AutoAWQ searches them. o_proj is scaled through
// v_proj's rows and down_proj through up_proj's, as AutoAWQ does "when shapes allow".
const std::vector<std::vector<std::string_view>> kAwqGroups = {
    {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"},
    {"self_attn.o_proj"},
    {"mlp.gate_proj", "mlp.up_proj"},
    {"mlp.down_proj"},
};

// With grouped-query attention v_proj has fewer rows than o_proj has inputs, so no 1/s can be
// folded into it: AutoAWQ leaves o_proj unscaled, and so do we (plain RTN on AutoAWQ's grid).
bool awqCanScale(const std::vector<std::string_view>& group, const model::LayerWeights& weights) {
    if (group.front() != "self_attn.o_proj") return true;
    return weights.v.weight.rows() == weights.o.weight.cols();
}

std::vector<quant::QuantizedLinear> quantizeAwqGroup(const MethodSpec& method, const std::vector<std::string_view>& group,
                                                     const model::LayerWeights& weights, LayerStatistics& statistics,
                                                     bool canScale, const Backend* backend) {
    if (statistics.empty()) throw Error(method.label() + " needs calibration inputs");
    std::vector<const MatrixF*> ws;
    for (auto module : group) ws.push_back(&weights.linear(module).weight);
    quant::AwqOptions options;
    options.bits = method.bits;
    options.groupSize = method.groupSize;
    options.sym = method.sym;
    if (!canScale) options.grid = 1;   // α = 0 only: RTN
    const auto& input = statistics.input(group.front());
    return orCpu(backend).awq(ws, input.hessian->meanAbs(), statistics.hessian(group.front()), options).linears;
}

// `releasable` (the same object as `weights`, or null) loses each group's weights once the group is done.
QuantizedLayer quantizeAwqLayer(const MethodSpec& method, const model::LayerWeights& weights, model::LayerWeights* releasable,
                                LayerStatistics& statistics, const CancelToken& cancel, const Backend* backend,
                                bool releaseStatistics) {
    std::vector<bool> canScale;   // decided before any weight is freed (o_proj's depends on v_proj's shape)
    for (const auto& group : kAwqGroups) canScale.push_back(awqCanScale(group, weights));
    QuantizedLayer layer;
    for (std::size_t g = 0; g < kAwqGroups.size(); ++g) {
        const auto& group = kAwqGroups[g];
        cancel.throwIfCancelled();
        const auto start = std::chrono::steady_clock::now();
        auto linears = quantizeAwqGroup(method, group, weights, statistics, canScale[g], backend);
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        for (std::size_t i = 0; i < group.size(); ++i) {
            linears[i].seconds = seconds / double(group.size());
            layer.emplace(std::string(group[i]), std::make_shared<quant::QuantizedLinear>(std::move(linears[i])));
            if (releaseStatistics) statistics.done(group[i]);
            if (releasable) releasable->linear(group[i]).weight = MatrixF();
        }
    }
    return layer;
}

quant::GptqOptions gptqOptions(const MethodSpec& method, double samples, const CancelToken* cancel) {
    quant::GptqOptions options;
    options.bits = method.bits;
    options.groupSize = method.groupSize;
    options.actOrder = method.actOrder;
    options.sym = method.sym;
    options.samples = samples;
    options.cancel = cancel;
    return options;
}

// Each linear with the method `methodOf` names for it (none: left out, it stays dense), one at a time.
QuantizedLayer quantizeEachLinear(const ModuleMethod& methodOf, const model::LayerWeights& weights,
                                  model::LayerWeights* releasable, LayerStatistics& statistics, std::uint64_t seed,
                                  const CancelToken& cancel, const Backend* backend, bool releaseStatistics) {
    QuantizedLayer layer;
    for (const std::string& module : weights.linearModules()) {
        cancel.throwIfCancelled();
        const MethodSpec* chosen = methodOf(module);
        if (chosen == nullptr) continue;
        const MethodSpec& method = *chosen;
        if (method.kind == MethodKind::Awq || method.ggufFileMix())
            throw Error(method.label() + " quantizes a layer's linears together, not one linear of " + std::string(module));
        const auto start = std::chrono::steady_clock::now();
        const MatrixF& w = weights.linear(module).weight;
        const double samples = statistics.empty() ? 0.0 : static_cast<double>(statistics.input(module).hessian->samples());
        // An expert that no calibration token reached (routed-only MoE calibration) has no H at all.
        const bool starved = !statistics.empty() && samples == 0.0;
        if (starved && method.kind == MethodKind::Gptq)
            throw Error(module + " saw no calibration token (routed-only MoE calibration), so " + method.label() +
                        " has no Hessian for it: calibrate every expert (--moe-calibration all)");
        // The last module of an input takes its H, so GPTQ can work in its memory and nothing is left behind.
        MatrixF owned;
        const MatrixF* h = nullptr;
        if (!statistics.empty() && !starved) {
            if (releaseStatistics && statistics.lastOfInput(module)) {
                owned = statistics.takeHessian(module);
                h = &owned;
            } else {
                h = &statistics.hessian(module);
            }
        }
        std::shared_ptr<quant::QuantizedLinear> q;
        if (method.kind == MethodKind::Gptq && h == &owned)
            q = std::make_shared<quant::QuantizedLinear>(
                orCpu(backend).gptqConsuming(w, std::move(owned), gptqOptions(method, samples, &cancel)));
        else
            q = std::make_shared<quant::QuantizedLinear>(quantizeLinear(method, w, h, samples, seed, backend, &cancel));
        if (h != nullptr && h->size() > 0 && std::isnan(q->outputError)) {
            const auto error = quant::outputErrorFromHessian(w, q->effectiveWeight(), *h);
            q->outputError = error.relative;
            q->outputMse = error.mse;
        }
        q->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        layer.emplace(std::string(module), std::move(q));
        if (releaseStatistics && !statistics.empty()) statistics.done(module);
        if (releasable) releasable->linear(module).weight = MatrixF();
    }
    return layer;
}

QuantizedLayer quantizeLayerReleasing(const MethodSpec& method, const model::LayerWeights& weights,
                                      model::LayerWeights* releasable, LayerStatistics& statistics, std::uint64_t seed,
                                      const CancelToken& cancel, const Backend* backend, bool releaseStatistics) {
    // AWQ folds 1/s of gate/up's input scale into post_attention_layernorm, which every expert (and the
    // router) reads: one expert's scale cannot be folded there, and vLLM's MoE kernels read no
    // per-expert input scale that could hold it.
    if (method.kind == MethodKind::Awq && weights.isMoe())
        throw Error(method.label() + " is not applied to MoE layers: its per-channel scales would have to be folded into the "
                                     "norm that every expert and the router share");
    if (method.kind == MethodKind::Awq)
        return quantizeAwqLayer(method, weights, releasable, statistics, cancel, backend, releaseStatistics);
    return quantizeEachLinear([&method](std::string_view) { return &method; }, weights, releasable, statistics, seed, cancel,
                              backend, releaseStatistics);
}

}  // namespace

QuantizedLayer quantizeLayerModules(const ModuleMethod& methodOf, const model::LayerWeights& weights,
                                    LayerStatistics& statistics, std::uint64_t seed, const CancelToken& cancel,
                                    const Backend* backend) {
    return quantizeEachLinear(methodOf, weights, nullptr, statistics, seed, cancel, backend, false);
}

quant::QuantizedLinear quantizeLinear(const MethodSpec& method, const MatrixF& w, const MatrixF* h, double samples,
                                      std::uint64_t seed, const Backend* backend, const CancelToken* cancel) {
    switch (method.kind) {
    case MethodKind::Rtn: {
        quant::RtnOptions options;
        options.bits = method.bits;
        options.groupSize = method.groupSize;
        options.sym = method.sym;
        options.rule = quant::GridRule::AutoAwq;
        return quant::quantizeRtn(w, options);
    }
    case MethodKind::Gptq: return orCpu(backend).gptq(w, requireHessian(method, h), gptqOptions(method, samples, cancel));
    case MethodKind::Fp8: return orCpu(backend).fp8(w, fp8Scaling(method.fp8Scales), 128);
    case MethodKind::Mxfp4: return orCpu(backend).mxfp4(w);
    case MethodKind::Nvfp4: return orCpu(backend).nvfp4(w);
    case MethodKind::Nf4: return orCpu(backend).nf4(w, {});
    case MethodKind::Trellis: {
        quant::TrellisOptions options;
        options.L = method.trellisL;
        options.K = method.bits;
        options.seed = seed;
        options.cancel = cancel;
        return orCpu(backend).trellis(w, options);
    }
    case MethodKind::Awq: break;
    case MethodKind::Gguf:
        if (!method.ggmlType) throw Error(method.label() + " chooses a type per tensor of the model: the Job quantizes it");
        // One type per linear, weighted by the calibration as the GGUF methods are (gguf_method.h).
        return quant::quantizeGgml(w, ggufFallbackType(*method.ggmlType, w.cols()),
                                   ggufImportance(h, static_cast<std::int64_t>(samples)));
    }
    throw Error(method.label() + " quantizes groups of linears: use quantizeLayer");
}

QuantizedLayer quantizeLayer(const MethodSpec& method, const model::LayerWeights& weights, LayerStatistics& statistics,
                             std::uint64_t seed, const CancelToken& cancel, const Backend* backend) {
    return quantizeLayerReleasing(method, weights, nullptr, statistics, seed, cancel, backend, false);
}

QuantizedLayer quantizeLayer(const MethodSpec& method, model::LayerWeights& weights, LayerStatistics& statistics,
                             std::uint64_t seed, const CancelToken& cancel, const Backend* backend, LayerRelease release) {
    return quantizeLayerReleasing(method, weights, release.weights ? &weights : nullptr, statistics, seed, cancel, backend,
                                  release.statistics);
}

}  // namespace qs::pipeline
