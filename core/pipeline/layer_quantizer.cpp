#include "qs/pipeline/layer_quantizer.h"

#include <chrono>
#include <cmath>
#include <set>
#include <vector>

#include "qs/architectures/module_names.h"
#include "qs/error.h"
#include "qs/model/attention_linears.h"
#include "qs/pipeline/gguf_type_mix.h"
#include "qs/quant/awq.h"
#include "qs/quant/fp8.h"
#include "qs/quant/gptaq.h"
#include "qs/quant/gptq.h"
#include "qs/quant/mxfp4.h"
#include "qs/quant/nf4.h"
#include "qs/quant/nvfp4.h"
#include "qs/quant/output_error.h"
#include "qs/quant/rtn.h"
#include "qs/quant/trellis.h"

#include "gguf_method.h"

namespace qs::pipeline {

namespace modules = architectures::modules;
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
struct AwqGroup {
    std::vector<std::string> modules;
    bool canScale = true;  // false: α = 0 only (RTN), nothing to fold
    bool experts = false;  // every expert's gate/up: one scale for the MoE block's input
};

// A dense layer's four groups; a sparse MoE layer's experts share one group for their gate/up (the
// norm before the MoE block absorbs 1/s, the router's columns s), and each expert's down_proj is
// scaled through its own up_proj's rows (a shared expert's likewise). With grouped-query attention v_proj has fewer rows than
// o_proj has inputs, so no 1/s can be folded into it: AutoAWQ leaves o_proj unscaled, and so do we.
// gpt-oss fuses gate and up into one projection whose output is clamped: its down_proj stays unscaled.
// DeepSeek's latent attention: {q_a (q), kv_a}, {q_b} and {kv_b}, each scaled into the norm before it; its
// o_proj reads the heads' values, which kv_b_proj's value rows produce between its key rows: not scaled.
std::vector<AwqGroup> awqGroups(const model::LayerWeights& w) {
    std::vector<AwqGroup> groups;
    for (const auto& input : model::attentionInputModules(w.attention)) {
        AwqGroup group{{input.begin(), input.end()}};
        if (input.front() == modules::kOProj) group.canScale = !w.isLatent() && w.v.weight.rows() == w.o.weight.cols();
        // Qwen3.5's Gated DeltaNet: in_proj_b / in_proj_a read the input norm's output too and stay dense, and
        // out_proj reads the gated norm, whose weight every value head shares: nothing to fold into.
        if (w.isDeltaNet()) group.canScale = false;
        groups.push_back(std::move(group));
    }
    if (!w.isMoe()) {
        groups.push_back({{modules::kGateProj, modules::kUpProj}});
        groups.push_back({{modules::kDownProj}});
        return groups;
    }
    const model::MoeNames& names = w.moeNames;
    AwqGroup gateUp{{}, true, true};
    std::vector<AwqGroup> downs;
    for (std::size_t e = 0; e < w.experts.size(); ++e) {
        const std::string expert = names.expert(static_cast<int>(e));
        gateUp.modules.push_back(expert + names.gate);
        if (!names.fusedGateUp()) gateUp.modules.push_back(expert + names.up);
        downs.push_back({{expert + names.down}, !names.fusedGateUp()});
    }
    if (w.hasSharedExpert()) {  // GLM: the shared expert reads the block's input too
        gateUp.modules.push_back(names.sharedExpert() + names.gate);
        gateUp.modules.push_back(names.sharedExpert() + names.up);
        downs.push_back({{names.sharedExpert() + names.down}});
    }
    groups.push_back(std::move(gateUp));
    groups.insert(groups.end(), downs.begin(), downs.end());
    return groups;
}

// What AWQ's search reads of one input: mean |x| per channel and H = 2 XᵀX / n, the statistics' own
// (borrowed: a 14336-wide H is 0.8 GB) or the experts' weighted sum.
struct AwqInput {
    VectorF meanAbs;
    const MatrixF* borrowed = nullptr;
    MatrixF summed;
    const MatrixF& h() const { return borrowed != nullptr ? *borrowed : summed; }
};

// The MoE block's input as the experts saw it: each expert's statistics weighted by its token count.
// With all-expert calibration every expert's gate/up read one input, whose statistics are borrowed (a
// weighted sum of one H would copy it, and round it). Else, with `release`, each expert's H is freed
// once it is added, so only the sum stays.
AwqInput expertsInput(const MethodSpec& method, const AwqGroup& group, LayerStatistics& statistics, bool release) {
    std::set<const InputStatistics*> inputs;
    for (const std::string& module : group.modules) inputs.insert(&statistics.input(module));
    if (inputs.size() == 1 && (*inputs.begin())->hessian->samples() > 0)
        return {(*inputs.begin())->hessian->meanAbs(), &statistics.hessian(group.modules.front()), {}};
    AwqInput sum;
    double tokens = 0.0;
    std::set<const InputStatistics*> seen;
    for (const std::string& module : group.modules) {
        const InputStatistics& input = statistics.input(module);
        const auto n = static_cast<double>(input.hessian->samples());
        if (seen.insert(&input).second && n > 0.0) {
            const MatrixF& h = statistics.hessian(module);
            if (tokens == 0.0) {
                sum.summed = MatrixF::Zero(h.rows(), h.cols());
                sum.meanAbs = VectorF::Zero(h.cols());
            }
            sum.summed += static_cast<float>(n) * h;
            sum.meanAbs += static_cast<float>(n) * input.hessian->meanAbs();
            tokens += n;
        }
        if (release) statistics.done(module);
    }
    if (tokens == 0.0) throw Error(method.label() + ": no calibration token reached the experts of this layer");
    sum.summed /= static_cast<float>(tokens);
    sum.meanAbs /= static_cast<float>(tokens);
    return sum;
}

// The statistics of a group whose linears read one input.
AwqInput groupInput(const MethodSpec& method, const AwqGroup& group, LayerStatistics& statistics) {
    const std::string& module = group.modules.front();
    const InputStatistics& input = statistics.input(module);
    // An expert's down_proj that no calibration token reached (routed-only MoE calibration) has no H.
    if (input.hessian->samples() == 0)
        throw Error(module + " saw no calibration token (routed-only MoE calibration), so " + method.label() +
                    " has no statistics for it: calibrate every expert (--moe-calibration all)");
    return {input.hessian->meanAbs(), &statistics.hessian(module), {}};
}

std::vector<quant::QuantizedLinear> quantizeAwqGroup(const MethodSpec& method, const AwqGroup& group,
                                                     const model::LayerWeights& weights, const AwqInput& input,
                                                     const Backend* backend) {
    std::vector<const MatrixF*> ws;
    for (const std::string& module : group.modules) ws.push_back(&weights.linear(module).weight);
    quant::AwqOptions options;
    options.bits = method.bits;
    options.groupSize = method.groupSize;
    options.sym = method.sym;
    if (!group.canScale) options.grid = 1;  // α = 0 only: RTN
    return orCpu(backend).awq(ws, input.meanAbs, input.h(), options).linears;
}

// `releasable` (the same object as `weights`, or null) loses each group's weights once the group is done.
QuantizedLayer quantizeAwqLayer(const MethodSpec& method, const model::LayerWeights& weights,
                                model::LayerWeights* releasable, LayerStatistics& statistics, const CancelToken& cancel,
                                const Backend* backend, bool releaseStatistics) {
    if (statistics.empty()) throw Error(method.label() + " needs calibration inputs");
    const std::vector<AwqGroup> groups = awqGroups(weights);  // decided before any weight is freed
    QuantizedLayer layer;
    for (const AwqGroup& group : groups) {
        cancel.throwIfCancelled();
        const auto start = std::chrono::steady_clock::now();
        const AwqInput input = group.experts ? expertsInput(method, group, statistics, releaseStatistics)
                                             : groupInput(method, group, statistics);
        auto linears = quantizeAwqGroup(method, group, weights, input, backend);
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        for (std::size_t i = 0; i < group.modules.size(); ++i) {
            linears[i].seconds = seconds / double(group.modules.size());
            layer.emplace(group.modules[i], std::make_shared<quant::QuantizedLinear>(std::move(linears[i])));
            if (releaseStatistics) statistics.done(group.modules[i]);
            if (releasable) releasable->linear(group.modules[i]).weight = MatrixF();
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
            throw Error(method.label() + " quantizes a layer's linears together, not one linear of " +
                        std::string(module));
        const auto start = std::chrono::steady_clock::now();
        const MatrixF& w = weights.linear(module).weight;
        const double samples =
            statistics.empty() ? 0.0 : static_cast<double>(statistics.input(module).hessian->samples());
        // An expert that no calibration token reached (routed-only MoE calibration) has no H at all.
        const bool starved = !statistics.empty() && samples == 0.0;
        if (starved && method.kind == MethodKind::Gptq)
            throw Error(module + " saw no calibration token (routed-only MoE calibration), so " + method.label() +
                        " has no Hessian for it: calibrate every expert (--moe-calibration all)");
        // GPTAQ's D, before the last module's H is taken with the input's other statistics.
        const MatrixF deviation = method.gptaq && !starved ? statistics.deviation(module) : MatrixF();
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
        if (method.gptaq)  // on the CPU whatever the backend: the CUDA solver has no GPTAQ
            q = std::make_shared<quant::QuantizedLinear>(
                quant::quantizeGptaq(w, requireHessian(method, h), deviation, gptqOptions(method, samples, &cancel)));
        else if (method.kind == MethodKind::Gptq && h == &owned)
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
    if (method.kind == MethodKind::Awq)
        return quantizeAwqLayer(method, weights, releasable, statistics, cancel, backend, releaseStatistics);
    return quantizeEachLinear([&method](std::string_view) { return &method; }, weights, releasable, statistics, seed,
                              cancel, backend, releaseStatistics);
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
        case MethodKind::Gptq:
            if (method.gptaq)
                throw Error(method.label() +
                            " quantizes from the full-precision model's inputs beside the quantized model's: the Job "
                            "quantizes it");
            return orCpu(backend).gptq(w, requireHessian(method, h), gptqOptions(method, samples, cancel));
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
            if (!method.ggmlType)
                throw Error(method.label() + " chooses a type per tensor of the model: the Job quantizes it");
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
                             std::uint64_t seed, const CancelToken& cancel, const Backend* backend,
                             LayerRelease release) {
    return quantizeLayerReleasing(method, weights, release.weights ? &weights : nullptr, statistics, seed, cancel,
                                  backend, release.statistics);
}

}  // namespace qs::pipeline
