#include "job_layer_loop.h"

#include <optional>

#include "qs/architectures/module_names.h"
#include "qs/error.h"
#include "qs/pipeline/activation_calibration.h"
#include "qs/pipeline/layer_statistics.h"
#include "qs/pipeline/resource_estimate.h"

#include "gguf_method.h"
#include "hidden_states.h"
#include "job_save_resume.h"

namespace qs::pipeline {

namespace modules = architectures::modules;
namespace {

using Clock = std::chrono::steady_clock;

// A layer's norms and biases without its linears' weights (filled in by the caller).
model::LayerWeights withoutLinearWeights(const model::LayerWeights& w) {
    model::LayerWeights out;
    out.inputNorm = w.inputNorm;
    out.postAttentionNorm = w.postAttentionNorm;
    out.attentionOutputNorm = w.attentionOutputNorm;
    out.mlpOutputNorm = w.mlpOutputNorm;
    out.qNorm = w.qNorm;
    out.kNorm = w.kNorm;
    out.sinks = w.sinks;
    out.attention = w.attention;  // DeepSeek's latent attention: its linears' names and its latents' norms
    out.qANorm = w.qANorm;
    out.kvANorm = w.kvANorm;
    out.moeNames = w.moeNames;
    out.router = w.router;  // the router is never quantized
    out.routerScoreBias = w.routerScoreBias;
    out.sharedExpertGate = w.sharedExpertGate;  // Qwen3.5-MoE: dense, as the router
    out.deltaNet = w.deltaNet;  // Qwen3.5: the conv, A_log, dt_bias, gated norm and dense in_proj_b / a stay
    for (model::Linear* l : {&out.deltaNet.inProjQkv, &out.deltaNet.inProjZ, &out.deltaNet.outProj})
        l->weight.resize(0, 0);
    out.experts.resize(w.experts.size());
    for (const auto& module : w.linearModules()) out.linear(module).bias = w.linear(module).bias;
    return out;
}

ModuleLog logOf(const MethodSpec& m, int layer, const std::string& module, const quant::QuantizedLinear& q,
                std::int64_t samples, std::int64_t routedTokens) {
    ModuleLog log;
    log.method = m.name;
    log.layer = layer;
    log.module = module;
    log.inFeatures = q.cols;
    log.outFeatures = q.rows;
    log.outputError = q.outputError;
    log.loss = q.gptqLoss;
    log.samples = samples;
    log.damp = q.dampPercent;
    log.seconds = q.seconds;
    log.bitsPerWeight = q.bitsPerWeight();
    log.residentBytes = residentBytes();
    log.routedTokens = routedTokens;
    return log;
}

// Which streams free what the layer's quantization no longer needs as they quantize (LayerRelease).
struct LastUsers {
    std::size_t ofWeights;     // the last stream that has not failed frees the original linears
    std::size_t ofStatistics;  // the last that quantizes from the original stream frees its statistics
    LayerRelease releaseFor(std::size_t stream) const {
        return LayerRelease{stream == ofStatistics, stream == ofWeights};
    }
};

// Chosen before the layer's first stream quantizes, so a stream that fails on this layer changes nothing.
LastUsers lastUsersOf(const std::vector<MethodStream>& streams) {
    std::size_t lastStream = streams.size(), lastBaseUser = streams.size();
    for (std::size_t m = 0; m < streams.size(); ++m) {
        if (streams[m].failed()) continue;
        lastStream = m;
        if (!streams[m].ownCalibration) lastBaseUser = m;
    }
    return LastUsers{lastStream, lastBaseUser};
}

// The layer's FP8 KV-cache scales, and the original layer run with its cache quantized (the cache's damage alone).
void evaluateCacheOnly(JobRun& run, int layer, model::LayerWeights& original, const LayerStatistics& baseStats) {
    const float k = calibratedCacheScale(baseStats.keyTokenMaxAbs(), run.plan.activationCalibration);
    const float v = calibratedCacheScale(baseStats.valueTokenMaxAbs(), run.plan.activationCalibration);
    run.cacheScales.emplace_back(k, v);
    original.k.cacheScale = k, original.v.cacheScale = v;
    runLayerAll(run.base, layer, original, run.kvEvaluation, run.cancel);
    original.k.cacheScale = 0.0f, original.v.cacheScale = 0.0f;
}

// What the engine quantizes around `module` besides its weight: its input (calibrated on `stats`),
// the KV cache (k_proj, v_proj).
void setServing(const JobRun& run, const MethodSpec& m, int layer, const std::string& module, LayerStatistics& stats,
                quant::QuantizedLinear& q) {
    if (m.activations != quant::ActivationFormat::None)
        q.input = calibratedInput(m.activations, stats.input(module), run.plan.activationCalibration);
    if (m.kvCacheFp8 && module == modules::kKProj) q.cacheScale = run.cacheScales[std::size_t(layer)].first;
    if (m.kvCacheFp8 && module == modules::kVProj) q.cacheScale = run.cacheScales[std::size_t(layer)].second;
}

QuantizedLayer quantizeMixedLayer(const JobRun& run, const MixedMethods& mix, int layer,
                                  const model::LayerWeights& original, LayerStatistics& stats) {
    return quantizeLayerModules([&mix, layer](std::string_view module) { return mix.methodOf(layer, module); },
                                original, stats, run.plan.seed + std::uint64_t(layer), run.cancel,
                                run.plan.backend.get());
}

// The stream's method (or mix, or GGUF type mix) applied to the layer's linears.
QuantizedLayer quantizeWithMethod(const JobRun& run, const MethodStream& s, int layer, model::LayerWeights& original,
                                  LayerStatistics& stats, LayerRelease release) {
    if (s.mix) return quantizeMixedLayer(run, *s.mix, layer, original, stats);
    if (s.ggufTypes) {
        LinearImportance fromFile;  // the plan's imatrix file, else the calibration's statistics
        if (const Imatrix* imatrix = run.plan.imatrix.get())
            fromFile = [imatrix, &run, layer](std::string_view module, std::int64_t cols) {
                return imatrix->importanceOf(run.config, layer, module, cols);
            };
        return quantizeGgufLayer(s.ggufTypes, run.config.layerPrefix(layer), layer, original, stats, run.cancel,
                                 release, fromFile);
    }
    return quantizeLayer(s.result.method, original, stats, run.plan.seed + std::uint64_t(layer), run.cancel,
                         run.plan.backend.get(), release);
}

// Each quantized linear logged, set up as the engine serves it and installed in the stream's model;
// the finished layer as the stream keeps it.
CompactLayer keepQuantized(JobRun& run, MethodStream& s, int layer, QuantizedLayer& q, LayerStatistics& stats) {
    CompactLayer kept;
    for (auto& [module, linear] : q) {
        const auto samples = stats.empty() ? 0 : stats.input(module).hessian->samples();
        const auto routed = stats.empty() ? -1 : stats.routedTokens(module);
        const MethodSpec& method = s.mix ? *s.mix->methodOf(layer, module) : s.result.method;
        s.result.modules.push_back(logOf(method, layer, module, *linear, samples, routed));
        if (run.moduleLog) run.moduleLog(s.result.modules.back());
        quant::QuantizedLinear served(*linear);
        linear.reset();
        setServing(run, s.result.method, layer, module, stats, served);
        kept.emplace(module, s.install(layer, module, std::make_shared<const CompactLinear>(std::move(served))));
    }
    return kept;
}

// The stream's layer as its Transformer would load it (the same effective weights), built once here.
model::LayerWeights quantizedWeights(model::LayerWeights& original, const CompactLayer& kept, bool weightsReleased) {
    model::LayerWeights quantized = weightsReleased ? std::move(original) : withoutLinearWeights(original);
    if (!weightsReleased)  // a mix's dense linears keep their original weights
        for (const auto& module : original.linearModules())
            if (!kept.contains(module)) quantized.linear(module).weight = original.linear(module).weight;
    for (const auto& [module, compact] : kept) {
        model::Linear& linear = quantized.linear(module);
        linear.weight = compact->effectiveWeight();
        linear.input = compact->parts().input;
        linear.cacheScale = compact->parts().cacheScale;
    }
    return quantized;
}

// A calibration pass over a layer is most of a large model's time in it (40 s a layer for an 8B at
// 128 x 512 tokens): a report per sequence, at the layer's start fraction, so the status moves.
SequenceDone calibrationProgress(const JobRun& run, int layer, std::size_t total, const std::string& who,
                                 const std::string& where) {
    if (!run.progress) return {};
    const int L = run.config.numLayers;
    return [&run, layer, L, total, who, where](std::size_t done) {
        run.report("calibrate", layer + 1, L, 0.8 * layer / L,
                   who + "sequence " + std::to_string(done) + "/" + std::to_string(total) + ", " + where);
    };
}

// The last GPTAQ stream that has not failed (streams.size() when none): the original's calibration
// stream moves past the layer once that stream has read the layer's inputs beside its own.
std::size_t lastPairedStream(const std::vector<MethodStream>& streams) {
    std::size_t last = streams.size();
    for (std::size_t m = 0; m < streams.size(); ++m)
        if (!streams[m].failed() && streams[m].ownCalibration && streams[m].result.method.gptaq) last = m;
    return last;
}

// Nothing reads a calibration stream past the last layer: there its observation is its only pass.
bool calibrationTravelsPast(const JobRun& run, int layer) { return layer + 1 < run.config.numLayers; }

// `advanceBase`: the last stream to pair its inputs with the original's, which then moves the
// original's calibration stream past the layer (before its quantization may free the linears).
void quantizeStream(JobRun& run, MethodStream& s, int layer, model::LayerWeights& original, LayerStatistics& baseStats,
                    LayerRelease release, bool advanceBase) {
    const bool travels = calibrationTravelsPast(run, layer);
    std::optional<LayerStatistics> own;
    if (s.ownCalibration) {  // the layer's inputs in this stream; the stream itself advances after quantization
        own.emplace(run.statistics());
        const SequenceDone progress =
            calibrationProgress(run, layer, s.calibration.size(), s.result.method.label() + ", ",
                                "layer " + std::to_string(layer + 1) + "/" + std::to_string(run.config.numLayers));
        if (s.result.method.gptaq) {  // beside the original model's inputs over the same tokens
            observeLayerPaired(run.base, run.calibration, s.model, s.calibration, layer, original, run.cancel,
                               own->pairedHook(), run.calibrationMath.get(), progress);
            if (advanceBase && travels)
                runLayerAll(run.base, layer, original, run.calibration, run.cancel, {}, {}, run.calibrationMath.get());
        } else {
            observeLayerAll(s.model, layer, original, s.calibration, run.cancel, own->hook(), run.calibrationMath.get(),
                            {}, progress);
        }
        release.statistics = true;
    }
    LayerStatistics& stats = own ? *own : baseStats;
    const auto start = Clock::now();
    CompactLayer kept;
    try {
        if (s.mix) release = {};  // its dense linears still need their weights, its other linears the statistics
        QuantizedLayer q = quantizeWithMethod(run, s, layer, original, stats, release);
        kept = keepQuantized(run, s, layer, q, stats);
    } catch (const Cancelled&) {
        throw;
    } catch (const Error& e) {
        s.result.error = e.what();
        return;
    }
    s.result.seconds += secondsSince(start);
    model::LayerWeights quantized = quantizedWeights(original, kept, release.weights);
    s.kept.push_back(std::move(kept));
    if (s.ownCalibration && travels)
        runLayerAll(s.model, layer, quantized, s.calibration, run.cancel, {}, {}, run.calibrationMath.get());
    runLayerAll(s.model, layer, quantized, s.evaluation, run.cancel);
}

}  // namespace

// Memory: the layer is converted to f32 once (`original`) and run from there, never cached by a
// Transformer. The last stream that needs them frees the original linears and the statistics as
// it quantizes (LayerRelease); a stream's quantized layer is decoded once for its forward passes.
void calibrateAndQuantizeLayer(JobRun& run, int layer) {
    const int L = run.config.numLayers;
    const std::string where = "layer " + std::to_string(layer + 1) + "/" + std::to_string(L);
    run.report("calibrate", layer + 1, L, 0.8 * layer / L, where);
    spillInto(run, layer);
    model::LayerWeights original = run.weights->layer(layer);
    LayerStatistics baseStats = run.statistics();  // only when a method quantizes from the original stream
    const model::KeyValueHook keyValues = run.kvCache ? baseStats.keyValueHook() : model::KeyValueHook{};
    const std::size_t paired = lastPairedStream(run.streams);  // GPTAQ's streams read the stream's layer input
    // The original's calibration stream moves past the layer here unless a GPTAQ stream reads its input
    // first (it moves then), or the layer is the last.
    const bool advanceBase = paired == run.streams.size() && calibrationTravelsPast(run, layer);
    const SequenceDone progress = calibrationProgress(run, layer, run.calibration.size(), "", where);
    if (run.baseStatistics && advanceBase)
        runLayerAll(run.base, layer, original, run.calibration, run.cancel, baseStats.hook(), keyValues,
                    run.calibrationMath.get(), progress);
    else if (run.baseStatistics)
        observeLayerAll(run.base, layer, original, run.calibration, run.cancel, baseStats.hook(),
                        run.calibrationMath.get(), keyValues, progress);
    else if (run.fullPrecisionInputs && advanceBase)  // its GPTAQ streams failed: it travels on all the same
        runLayerAll(run.base, layer, original, run.calibration, run.cancel, {}, {}, run.calibrationMath.get());
    if (run.keepsLayerInputs()) run.layerInputs.push_back(run.evaluation.inMemory());
    if (run.kvCache) evaluateCacheOnly(run, layer, original, baseStats);
    runLayerAll(run.base, layer, original, run.evaluation, run.cancel);
    const LastUsers last = lastUsersOf(run.streams);
    for (std::size_t m = 0; m < run.streams.size(); ++m) {
        auto& s = run.streams[m];
        if (s.failed()) continue;
        run.report("quantize", layer + 1, L, 0.8 * (layer + double(m) / run.streams.size()) / L,
                   s.result.method.label() + ", layer " + std::to_string(layer + 1) + "/" + std::to_string(L));
        quantizeStream(run, s, layer, original, baseStats, last.releaseFor(m), m == paired);
    }
}

}  // namespace qs::pipeline
