#include "job_kl.h"

#include <cmath>
#include <string_view>

#include "hidden_states.h"
#include "job_save_resume.h"
#include "kl_scoring.h"

namespace qs::pipeline {
namespace {

// The streams scored against the original at the end of the evaluation text; a failed method
// is skipped. The quantized streams share the original's final norm and lm_head, except that a
// GGUF method's whole model has its own output (`ownHeads`).
std::vector<KlStream> klStreams(const JobRun& run, const std::vector<const HiddenStream*>& hidden,
                                bool ownHeads = false) {
    std::vector<KlStream> out;
    for (std::size_t m = 0; m < run.streams.size(); ++m)
        out.push_back({ownHeads && run.streams[m].ggufTypes ? &run.streams[m].model : &run.base,
                       run.streams[m].failed() ? nullptr : hidden[m]});
    return out;
}

std::vector<const HiddenStream*> pointersTo(const std::vector<HiddenStream>& hidden) {
    std::vector<const HiddenStream*> pointers;
    for (const auto& h : hidden) pointers.push_back(&h);
    return pointers;
}

// Each stream's states after layer `layer` run on through the original layers after it.
void runOriginalLayersAfter(JobRun& run, int layer, std::vector<HiddenStream>& hidden) {
    for (int after = layer + 1; after < run.config.numLayers; ++after)
        for (std::size_t m = 0; m < run.streams.size(); ++m)
            if (!run.streams[m].failed()) runLayerAll(run.base, after, hidden[m], run.cancel);
}

// The original layer with the stream's quantized linears of one group in place (a dense one stays original).
model::LayerWeights withGroupOf(const model::LayerWeights& original, const CompactLayer& kept,
                                const std::vector<std::string_view>& group) {
    model::LayerWeights w = original;
    for (auto module : group) {
        const auto it = kept.find(module);
        if (it == kept.end()) continue;
        model::Linear& linear = w.linear(module);
        linear.weight = it->second->effectiveWeight();
        linear.input = it->second->parts().input;
        linear.cacheScale = it->second->parts().cacheScale;
    }
    return w;
}

void scorePerLayer(JobRun& run, int layer, const std::vector<HiddenStream>& hidden) {
    const auto kl =
        scoreKl({&run.base, &run.evaluation}, klStreams(run, pointersTo(hidden)), run.plan.evaluation, run.cancel);
    for (std::size_t m = 0; m < run.streams.size(); ++m)
        if (!run.streams[m].failed())
            run.streams[m].result.perLayerKl[std::size_t(layer)] = kl[m].report().meanKld.value;
}

// KL with only group g of layer `layer` quantized, each stream's from its finished layer.
void scorePerGroup(JobRun& run, int layer, const model::LayerWeights& original,
                   const std::vector<CompactLayer>& finished, const Hidden& input, std::size_t g) {
    std::vector<HiddenStream> hidden(run.streams.size());
    for (std::size_t m = 0; m < run.streams.size(); ++m) {
        if (run.streams[m].failed()) continue;
        hidden[m] = HiddenStream(input);
        runLayerAll(run.base, layer, withGroupOf(original, finished[m], kFusedGroups[g]), hidden[m], run.cancel);
    }
    runOriginalLayersAfter(run, layer, hidden);
    const auto kl =
        scoreKl({&run.base, &run.evaluation}, klStreams(run, pointersTo(hidden)), run.plan.evaluation, run.cancel);
    for (std::size_t m = 0; m < run.streams.size(); ++m)
        if (!run.streams[m].failed())
            run.streams[m].result.perGroupKl[std::size_t(layer)][g] = kl[m].report().meanKld.value;
}

}  // namespace

void scoreFinalKl(JobRun& run) {
    if (run.plan.evaluation.empty()) return;
    std::vector<const HiddenStream*> hidden;
    for (const auto& s : run.streams) hidden.push_back(&s.evaluation);
    std::vector<KlStream> scored = klStreams(run, hidden, true);
    if (run.kvCache) scored.push_back({&run.base, &run.kvEvaluation});
    const auto kl = scoreKl(
        {&run.base, &run.evaluation}, scored, run.plan.evaluation, run.cancel, [&](std::size_t i, std::size_t n) {
            run.report("evaluate", int(i) + 1, int(n), 0.8 + 0.05 * double(i) / double(n), "KL against the original");
        });
    for (std::size_t m = 0; m < run.streams.size(); ++m)
        if (!run.streams[m].failed()) run.streams[m].result.kl = kl[m].report();
    if (run.kvCache) run.cacheOnlyKl = kl.back().report();
}

void scorePerLayerKl(JobRun& run) {
    const int L = run.config.numLayers;
    for (auto& s : run.streams) s.result.perLayerKl.assign(std::size_t(L), std::nan(""));
    for (int l = 0; l < L; ++l) {
        run.report("per-layer KL", l + 1, L, 0.85 + 0.15 * l / L,
                   "layer " + std::to_string(l + 1) + "/" + std::to_string(L));
        std::vector<HiddenStream> hidden(run.streams.size());
        const Hidden input = layerInput(run, l);
        for (std::size_t m = 0; m < run.streams.size(); ++m) {
            if (run.streams[m].failed()) continue;
            hidden[m] = HiddenStream(input);
            runLayerAll(run.streams[m].model, l, hidden[m], run.cancel);
        }
        runOriginalLayersAfter(run, l, hidden);
        scorePerLayer(run, l, hidden);
    }
}

void scorePerGroupKl(JobRun& run) {
    const int L = run.config.numLayers;
    for (auto& s : run.streams)
        s.result.perGroupKl.assign(std::size_t(L), std::vector<double>(kFusedGroups.size(), std::nan("")));
    for (int l = 0; l < L; ++l) {
        run.report("per-group KL", l + 1, L, 0.9 + 0.1 * l / L,
                   "layer " + std::to_string(l + 1) + "/" + std::to_string(L));
        const model::LayerWeights original = run.weights->layer(l);
        std::vector<CompactLayer> finished(run.streams.size());
        for (std::size_t m = 0; m < run.streams.size(); ++m)
            if (!run.streams[m].failed()) finished[m] = finishedLayer(run, m, l);
        const Hidden input = layerInput(run, l);
        for (std::size_t g = 0; g < kFusedGroups.size(); ++g) scorePerGroup(run, l, original, finished, input, g);
    }
}

}  // namespace qs::pipeline
