#include "job_save_resume.h"

#include <map>

#include "qs/error.h"
#include "qs/pipeline/job_report.h"
#include "qs/pipeline/sequence_file.h"
#include "qs/pipeline/stored_layers.h"

namespace qs::pipeline {
namespace {

// How a layer record names stream m's linear `module` ("0:self_attn.q_proj"); with an empty module,
// the prefix of all of stream m's.
std::string linearKey(std::size_t stream, const std::string& module) { return std::to_string(stream) + ":" + module; }

// The hidden states that travel to the next layer, by name (the work folder's snapshot).
std::map<std::string, HiddenStream*> travelling(JobRun& run) {
    std::map<std::string, HiddenStream*> out{
        {"calibration", &run.calibration}, {"evaluation", &run.evaluation}, {"kv_evaluation", &run.kvEvaluation}};
    for (std::size_t m = 0; m < run.streams.size(); ++m) {
        out.emplace("s" + std::to_string(m) + ".calibration", &run.streams[m].calibration);
        out.emplace("s" + std::to_string(m) + ".evaluation", &run.streams[m].evaluation);
    }
    return out;
}

// The one reader every stream's stored linears share, so that a layer's record is opened once.
std::shared_ptr<StoredLinearCache> storedLinears(JobRun& run) {
    if (!run.storedLinears) run.storedLinears = std::make_shared<StoredLinearCache>(run.work->path());
    return run.storedLinears;
}

// Layer `layer`'s facts of every stream: its error, time and module logs, and whether it kept the
// layer, whose linears go into `record`.
nlohmann::json streamFacts(const JobRun& run, int layer, LayerRecord& record) {
    nlohmann::json streams = nlohmann::json::array();
    for (std::size_t m = 0; m < run.streams.size(); ++m) {
        const MethodStream& s = run.streams[m];
        nlohmann::json logs = nlohmann::json::array();
        for (const auto& log : s.result.modules)
            if (log.layer == layer) logs.push_back(toJson(log));
        const bool kept = s.kept.size() == std::size_t(layer) + 1;
        if (kept)
            for (const auto& [module, compact] : s.kept.back())
                record.linears.emplace(linearKey(m, module), compact->unpack());
        streams.push_back(
            {{"error", s.result.error}, {"seconds", s.result.seconds}, {"modules", std::move(logs)}, {"kept", kept}});
    }
    return streams;
}

// The streams' facts of layer `layer` as saveLayer wrote them, their linears installed again.
void restoreStreams(JobRun& run, int layer, const nlohmann::json& streams, LayerRecord& record) {
    if (streams.size() != run.streams.size())
        throw Error(run.work->path().string() + ": layer " + std::to_string(layer) + " has another number of methods");
    for (std::size_t m = 0; m < run.streams.size(); ++m) {
        MethodStream& s = run.streams[m];
        const nlohmann::json& facts = streams[m];
        s.result.error = facts.at("error").get<std::string>();
        s.result.seconds = facts.at("seconds").get<double>();
        for (const auto& log : facts.at("modules")) {
            s.result.modules.push_back(moduleLogFromJson(log));
            if (run.moduleLog) run.moduleLog(s.result.modules.back());
        }
        if (!facts.at("kept").get<bool>()) continue;
        CompactLayer kept;
        const std::string prefix = linearKey(m, "");
        for (auto& [key, q] : record.linears)
            if (key.starts_with(prefix)) {
                const std::string module = key.substr(prefix.size());
                kept.emplace(module, s.install(layer, module, std::make_shared<const CompactLinear>(std::move(q))));
            }
        s.kept.push_back(std::move(kept));
    }
}

void restoreLayer(JobRun& run, int layer, LayerRecord record) {
    restoreStreams(run, layer, record.facts.at("streams"), record);
    if (run.kvCache) {
        const auto& scales = record.facts.at("cache_scales");
        run.cacheScales.emplace_back(scales.at(0).get<float>(), scales.at(1).get<float>());
    }
    if (run.keepsLayerInputs())
        run.layerInputs.push_back(run.layerInputsOnDisk() ? Hidden{} : std::move(record.hidden.at("layer_input")));
}

// The hidden states after the last finished layer: a stream that spills streams from the folder's
// files as they are; the others are read in.
void restoreTravelling(JobRun& run) {
    const HiddenShapes shapes = run.work->hiddenShapes();
    for (auto& [name, target] : travelling(run)) {
        const auto it = shapes.find(name);
        if (it == shapes.end())
            throw Error(run.work->path().string() + ": the hidden states '" + name + "' are missing");
        const std::filesystem::path file = run.work->hiddenFolder() / WorkFolder::hiddenFileName(name);
        *target = run.spilled.contains(name) ? HiddenStream::spilled(file, it->second)
                                             : HiddenStream(SequenceFile::load(file, it->second));
    }
}

}  // namespace

std::optional<std::filesystem::path> spillFile(const JobRun& run, const std::string& name) {
    if (!run.work || !run.spilled.contains(name)) return std::nullopt;
    return run.work->hiddenStaging(0) / WorkFolder::hiddenFileName(name);
}

void spillInto(JobRun& run, int layer) {
    if (!run.work || run.spilled.empty()) return;
    const std::filesystem::path staging = run.work->hiddenStaging(layer);
    for (auto& [name, stream] : travelling(run))
        if (stream->isSpilled()) stream->writeNextTo(staging / WorkFolder::hiddenFileName(name));
}

void saveLayer(JobRun& run, int layer) {
    if (!run.work) return;
    LayerRecord record;
    record.facts["streams"] = streamFacts(run, layer, record);
    if (run.kvCache)
        record.facts["cache_scales"] = {run.cacheScales[std::size_t(layer)].first,
                                        run.cacheScales[std::size_t(layer)].second};
    if (run.keepsLayerInputs()) record.hidden["layer_input"] = run.layerInputs[std::size_t(layer)];
    // Each stream's file goes into the layer's hidden-state folder (a spilled stream's is there already).
    const std::filesystem::path staging = run.work->hiddenStaging(layer);
    HiddenShapes after;
    for (const auto& [name, hidden] : travelling(run)) {
        hidden->saveTo(staging / WorkFolder::hiddenFileName(name));
        after.emplace(name, hidden->shape());
    }
    run.work->saveLayer(layer, record, after);
    for (auto& [name, hidden] : travelling(run))
        hidden->movedTo(run.work->hiddenFolder() / WorkFolder::hiddenFileName(name));
    if (run.keepsLayerInputs() && run.layerInputsOnDisk())
        Hidden().swap(run.layerInputs[std::size_t(layer)]);  // read back when scored (layerInput)
}

void leaveCodesOnDisk(JobRun& run, int layer) {
    if (!run.resultsOnDisk()) return;
    for (std::size_t m = 0; m < run.streams.size(); ++m) {
        MethodStream& s = run.streams[m];
        if (s.kept.size() != std::size_t(layer) + 1) continue;  // failed before this layer
        QuantizedLayer headers;
        for (auto& [module, compact] : s.kept.back()) {
            headers.emplace(module, std::make_shared<const quant::QuantizedLinear>(linearHeader(compact->parts())));
            s.model.overrideLinear(
                layer, module, model::WeightProvider([stored = storedLinears(run), layer, key = linearKey(m, module)] {
                    return stored->load(layer, key).effectiveWeight();
                }));
        }
        s.headers.push_back(std::move(headers));
        CompactLayer().swap(s.kept.back());
    }
}

int restoreFinishedLayers(JobRun& run) {
    if (!run.work) return 0;
    const int done = run.work->completeLayers();
    const int L = run.config.numLayers;
    const std::string& teamNote = run.threadTeam->note();
    if (done == 0) {
        if (run.plan.resume)
            run.report(
                "resume", 0, L, 0.0,
                "no layer in " + run.work->path().string() + " was complete: starting from the first" + teamNote);
        return 0;
    }
    if (done > L) throw Error(run.work->path().string() + " holds more layers than the model has");
    run.report("resume", done, L, 0.8 * done / L,
               "resuming after layer " + std::to_string(done) + "/" + std::to_string(L) + " from " +
                   run.work->path().string() + teamNote);
    for (int layer = 0; layer < done; ++layer) {
        restoreLayer(run, layer, run.work->loadLayer(layer));
        leaveCodesOnDisk(run, layer);
    }
    restoreTravelling(run);
    return done;
}

void storeKept(JobRun& run, std::size_t m) {
    MethodStream& s = run.streams[m];
    s.model.clearOverrides();
    if (!s.failed())
        s.result.stored =
            std::make_shared<const StoredLayers>(run.work->path(), linearKey(m, ""), std::move(s.headers));
    std::vector<CompactLayer>().swap(s.kept);
}

CompactLayer finishedLayer(const JobRun& run, std::size_t m, int layer) {
    const CompactLayer& held = run.streams[m].kept[std::size_t(layer)];
    if (!held.empty() || !run.resultsOnDisk()) return held;
    CompactLayer read;
    for (auto& [module, q] : WorkFolder::loadLinears(run.work->path(), layer, linearKey(m, "")))
        read.emplace(module, std::make_shared<const CompactLinear>(std::move(q)));
    return read;
}

Hidden layerInput(const JobRun& run, int layer) {
    if (run.layerInputsOnDisk()) return WorkFolder::loadKeptHidden(run.work->path(), layer, "layer_input");
    return run.layerInputs[std::size_t(layer)];
}

}  // namespace qs::pipeline
