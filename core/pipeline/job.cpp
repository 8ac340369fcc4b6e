#include "qs/pipeline/job.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <optional>
#include <set>

#include <omp.h>

#include "qs/error.h"
#include "qs/formats/detect.h"
#include "qs/io/checkpoint.h"
#include "qs/io/checkpoint_fingerprint.h"
#include "qs/model/checkpoint_weights.h"
#include "qs/model/transformer.h"
#include "qs/pipeline/compact_linear.h"
#include "qs/pipeline/decoded_weights.h"
#include "qs/pipeline/job_report.h"
#include "qs/pipeline/model_checkpoint.h"
#include "qs/pipeline/stored_layers.h"
#include "qs/pipeline/work_folder.h"

#include "gguf_method.h"
#include "hidden_states.h"
#include "kl_scoring.h"
#include "stream_budget.h"

namespace qs::pipeline {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

using CompactLayer = std::map<std::string, std::shared_ptr<const CompactLinear>, std::less<>>;

// One method's quantized model, run side by side with the original.
struct MethodStream {
    MethodResult result;
    model::Transformer model;  // the original weights with this method's quantized linears in place
    HiddenStream calibration;  // its own calibration stream (true-sequential GPTQ / AWQ only)
    HiddenStream evaluation;
    bool ownCalibration = false;
    std::vector<CompactLayer> kept;  // the finished layers, codes packed; result.layers at the end
    GgufTypeChooser ggufTypes;       // GGUF methods: the type of each tensor; its model has their token_embd and output
    const MixedMethods* mix = nullptr;  // a method per linear instead of result.method for all
    // Results on disk (JobPlan::resultsOnDisk): a finished layer's linears without their codes, which
    // stay in the work folder (its `kept` entry is emptied once it is saved); result.stored at the end.
    std::vector<QuantizedLayer> headers = {};
    bool failed() const { return !result.error.empty(); }
};

// A layer's norms and biases without its linears' weights (filled in by the caller).
model::LayerWeights withoutLinearWeights(const model::LayerWeights& w) {
    model::LayerWeights out;
    out.inputNorm = w.inputNorm;
    out.postAttentionNorm = w.postAttentionNorm;
    out.attentionOutputNorm = w.attentionOutputNorm;
    out.mlpOutputNorm = w.mlpOutputNorm;
    out.qNorm = w.qNorm;
    out.kNorm = w.kNorm;
    out.moeNames = w.moeNames;
    out.router = w.router;  // the router is never quantized
    out.experts.resize(w.experts.size());
    for (const auto& module : w.linearModules()) out.linear(module).bias = w.linear(module).bias;
    return out;
}

// Whether `t` is (a part of) gpt-oss's stacked experts: [E, ...] gate_up_proj or down_proj, BF16 or
// MXFP4 blocks and scales, not their biases.
bool isStackedExpertWeight(const io::CheckpointTensor& t, const model::MoeConfig& moe) {
    if (!moe.stackedExperts || t.naming.layer < 0) return false;
    // "mlp.experts" + "gate_up_proj"; "mlp.experts.gate_up_proj" + "blocks" (the parser's split)
    const std::string tail = t.naming.module + "." + t.naming.part;
    for (const std::string& kind : {moe.names.gate, moe.names.down}) {
        const std::string stacked = moe.names.experts() + kind;
        if (tail == stacked || tail == stacked + ".blocks" || tail == stacked + ".scales") return true;
    }
    return false;
}

// The bytes of the tensors the result keeps as stored: all but the decoder's linear weights, whose
// quantized bytes the result counts; their biases and a MoE's routers stay as stored.
std::uint64_t nonLinearBytes(const io::Checkpoint& checkpoint, const model::ModelConfig& config) {
    std::uint64_t bytes = 0;
    for (const auto& t : checkpoint.tensors()) {
        const bool router = config.isMoe() && t.naming.module == config.moe.names.router();
        const bool linear =
            t.naming.role == io::TensorRole::Linear && t.naming.layer >= 0 && !router && t.naming.part != "bias";
        if (!linear && !isStackedExpertWeight(t, config.moe)) bytes += t.info->byteSize();
    }
    return bytes;
}

void summarize(MethodResult& r, std::uint64_t keptBytes) {
    double bits = 0, weights = 0;
    r.linearBytes = 0;
    for (const auto& layer : linearHeaders(r))
        for (const auto& [name, q] : layer) {
            const double n = double(q->rows) * double(q->cols);
            bits += q->bitsPerWeight() * n;
            weights += n;
            r.linearBytes += q->bytes();
        }
    r.bitsPerWeight = weights > 0 ? bits / weights : 0.0;
    r.checkpointBytes = r.linearBytes + keptBytes;
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

// A device that cannot hold the plan's peak is refused before any work, with the numbers.
void checkDeviceMemory(const Backend& backend, const DeviceWorkload& workload, bool force,
                       const ProgressCallback& progress) {
    const std::int64_t need = backend.peakDeviceBytes(workload);
    if (need <= 0) return;
    const std::int64_t available = backend.freeMemoryBytes();
    const std::string line = "device memory: about " + formatBytes(std::uint64_t(need)) + " at the peak, " +
                             formatBytes(std::uint64_t(std::max<std::int64_t>(available, 0))) + " free";
    if (need > available && !force)
        throw Error("this plan does not fit on the device: " + line +
                    "; use shorter sequences or --device cpu (or force it to try anyway)");
    if (progress) progress({"plan", 0, 0, 0.0, line});
}

// The weights the Job quantizes: the checkpoint's own, or gpt-oss's MXFP4 experts (as released) decoded.
std::shared_ptr<const model::WeightSource> sourceWeights(const io::Checkpoint& checkpoint,
                                                         const model::ModelConfig& config, bool allowNonFinite) {
    const formats::FormatInfo format = formats::detect(checkpoint);
    if (format.format == formats::Format::Mxfp4 && format.variant == "gpt-oss")
        return std::make_shared<DecodedWeights>(checkpoint, config,
                                                formats::DecodeOptions{.allowNonFinite = allowNonFinite});
    return std::make_shared<model::CheckpointWeights>(
        checkpoint, config, model::CheckpointWeights::Options{.allowNonFinite = allowNonFinite});
}

class Runner {
public:
    Runner(const JobPlan& plan, std::set<std::string> spilled, const ProgressCallback& progress,
           const CancelToken& cancel, const ModuleLogCallback& log)
        : plan_(plan),
          spilled_(std::move(spilled)),
          progress_(progress),
          cancel_(cancel),
          log_(log),
          checkpoint_(openModelCheckpoint(plan.checkpoint, plan.allowNonFinite)),
          config_(model::ModelConfig::fromCheckpoint(checkpoint_)),
          weights_(sourceWeights(checkpoint_, config_, plan.allowNonFinite)),
          base_(makeModel()) {
        if (!plan_.workDir.empty())
            work_.emplace(plan_.resume ? WorkFolder::resume(plan_.workDir, planIdentity(plan_))
                                       : WorkFolder::start(plan_.workDir, planIdentity(plan_)));
        if (work_) keepThreadTeam();
    }

    ~Runner() {
        if (callerTeam_) omp_set_num_threads(*callerTeam_);
    }
    Runner(const Runner&) = delete;
    Runner& operator=(const Runner&) = delete;

    JobResult run() {
        const auto start = Clock::now();
        setUpStreams();
        for (int layer = restore(); layer < config_.numLayers; ++layer) {
            processLayer(layer);
            save(layer);
            spill(layer);
        }
        returnFreedHeapToSystem();  // the logits' blocks come on top of what the layers' work left in the heap
        evaluate();
        if (plan_.perLayerKl && !plan_.evaluation.empty()) perLayerKl();
        if (plan_.perGroupKl && !plan_.evaluation.empty()) perGroupKl();
        // Unpacking every layer of every method takes a while on a large model: it polls too, and a
        // cancel that arrives by the end still wins over the finished result.
        for (std::size_t m = 0; m < streams_.size(); ++m) {
            if (resultsOnDisk())
                storeKept(m);
            else
                unpackKept(streams_[m], cancel_);
        }
        JobResult result;
        result.source = io::fingerprintOf(checkpoint_);
        const std::uint64_t kept = nonLinearBytes(checkpoint_, config_);
        for (auto& s : streams_) {
            cancel_.throwIfCancelled();
            if (!s.failed())
                summarize(s.result, s.ggufTypes ? ggufNonLinearBytes(checkpoint_, config_, s.ggufTypes) : kept);
            else
                s.result.layers.clear(), s.result.stored.reset();
            s.result.source = result.source;
            result.methods.push_back(std::move(s.result));
        }
        cancel_.throwIfCancelled();
        result.kvCacheOnlyKl = cacheOnlyKl_;
        result.calibrationTokens = tokenCount(plan_.calibration);
        result.evaluationTokens = tokenCount(plan_.evaluation);
        result.seconds = secondsSince(start);
        report("done", config_.numLayers, config_.numLayers, 1.0, "finished");
        return result;
    }

private:
    // A model of the checkpoint whose forward passes run where the backend runs (on `weights`, else the checkpoint's).
    model::Transformer makeModel(std::shared_ptr<const model::WeightSource> weights = nullptr) const {
        model::Transformer model(config_, weights ? std::move(weights) : weights_);
        if (plan_.backend) model.setLayerMath(plan_.backend->layerMath());
        model.setHookSeesAllExpertTokens(plan_.moeCalibrateAllExperts);
        return model;
    }

    void report(const std::string& stage, int step, int steps, double fraction, const std::string& message) {
        if (progress_) progress_({stage, step, steps, fraction, message});
    }

    // The streams' first hidden states, the embeddings; on a resumed run restore() reads them instead.
    void setUpStreams() {
        const bool embed = !work_ || work_->completeLayers() == 0;
        const auto embedded = [&](const model::Transformer& model, const TokenSequences& text,
                                  const std::string& name) {
            return embed ? embedStream(model, text, spillFile(name)) : HiddenStream();
        };
        const auto copied = [&](const HiddenStream& from, const std::string& name) {
            return embed ? from.copy(spillFile(name)) : HiddenStream();
        };
        bool baseCalibration = false;  // the original's calibration stream travels (as travellingStreams says)
        for (const auto& t : travellingStreams(plan_, config_.hiddenSize))
            baseCalibration = baseCalibration || t.name == "calibration";
        if (baseCalibration) calibration_ = embedded(base_, plan_.calibration, "calibration");
        evaluation_ = embedded(base_, plan_.evaluation, "evaluation");
        for (const auto& m : plan_.methods) {
            const std::string name = "s" + std::to_string(streams_.size());
            MethodStream s{MethodResult{}, makeModel(), {}, {}, false, {}, {}};
            s.result.method = m;
            s.ownCalibration = plan_.trueSequential && m.sequential() && !plan_.calibration.empty();
            if (s.ownCalibration) s.calibration = embedded(base_, plan_.calibration, name + ".calibration");
            if (m.ggufFileMix()) {  // its own token_embd and output, so its evaluation starts from its own embedding
                s.ggufTypes = ggufMethodChooser(m, config_, !plan_.calibration.empty());
                s.model = makeModel(ggufEdgeWeights(weights_, checkpoint_, config_, s.ggufTypes));
                s.evaluation = embedded(s.model, plan_.evaluation, name + ".evaluation");
            } else {
                s.evaluation = copied(evaluation_, name + ".evaluation");
            }
            if (!s.ownCalibration && !plan_.calibration.empty()) baseStatistics_ = true;
            kvCache_ = kvCache_ || m.kvCacheFp8;
            streams_.push_back(std::move(s));
        }
        for (const auto& mix : plan_.mixed) {
            const std::string name = "s" + std::to_string(streams_.size());
            MethodStream s{MethodResult{}, makeModel(), {}, copied(evaluation_, name + ".evaluation"),
                           false,          {},          {}, &mix};
            s.result.method = mix.summary();
            s.result.mixed = true;
            s.ownCalibration = plan_.trueSequential && mix.sequential() && !plan_.calibration.empty();
            if (s.ownCalibration)
                s.calibration = embedded(base_, plan_.calibration, name + ".calibration");
            else if (!plan_.calibration.empty())
                baseStatistics_ = true;
            streams_.push_back(std::move(s));
        }
        // The KV cache's scales come from the original model's calibration stream, shared by every method.
        if (kvCache_) {
            baseStatistics_ = true;
            kvEvaluation_ = copied(evaluation_, "kv_evaluation");
        }
        if (baseStatistics_ != baseCalibration) throw Error("internal: the Job's streams differ from its estimate's");
    }

    // Where stream `name`'s first hidden states go when it spills (JobPlan::maxMemory): layer 0's
    // hidden-state folder, which the first layer then rewrites in place.
    std::optional<std::filesystem::path> spillFile(const std::string& name) const {
        if (!work_ || !spilled_.contains(name)) return std::nullopt;
        return work_->hiddenStaging(0) / WorkFolder::hiddenFileName(name);
    }

    // A spilled stream writes layer `layer`'s results into that layer's hidden-state folder, never over
    // the previous layer's (what a resumed run reads).
    void spillInto(int layer) {
        if (!work_ || spilled_.empty()) return;
        const std::filesystem::path staging = work_->hiddenStaging(layer);
        for (auto& [name, stream] : travelling())
            if (stream->isSpilled()) stream->writeNextTo(staging / WorkFolder::hiddenFileName(name));
    }

    // Memory: the layer is converted to f32 once (`original`) and run from there, never cached by a
    // Transformer. The last stream that needs them frees the original linears and the statistics as
    // it quantizes (LayerRelease); a stream's quantized layer is decoded once for its forward passes.
    void processLayer(int layer) {
        const int L = config_.numLayers;
        report("calibrate", layer + 1, L, 0.8 * layer / L,
               "layer " + std::to_string(layer + 1) + "/" + std::to_string(L));
        spillInto(layer);
        model::LayerWeights original = weights_->layer(layer);
        LayerStatistics baseStats(plan_.backend.get());  // only when a method quantizes from the original stream
        if (baseStatistics_)
            runLayerAll(base_, layer, original, calibration_, cancel_, baseStats.hook(),
                        kvCache_ ? baseStats.keyValueHook() : model::KeyValueHook{});
        if (plan_.perLayerKl || plan_.perGroupKl) layerInputs_.push_back(evaluation_.inMemory());
        if (kvCache_) evaluateCacheOnly(layer, original, baseStats);
        runLayerAll(base_, layer, original, evaluation_, cancel_);
        std::size_t lastStream = streams_.size(), lastBaseUser = streams_.size();
        for (std::size_t m = 0; m < streams_.size(); ++m) {
            if (streams_[m].failed()) continue;
            lastStream = m;
            if (!streams_[m].ownCalibration) lastBaseUser = m;
        }
        for (std::size_t m = 0; m < streams_.size(); ++m) {
            auto& s = streams_[m];
            if (s.failed()) continue;
            report("quantize", layer + 1, L, 0.8 * (layer + double(m) / streams_.size()) / L,
                   s.result.method.label() + ", layer " + std::to_string(layer + 1) + "/" + std::to_string(L));
            quantizeStream(s, layer, original, baseStats, LayerRelease{m == lastBaseUser, m == lastStream});
        }
    }

    // The layer's FP8 KV-cache scales, and the original layer run with its cache quantized (the cache's damage alone).
    void evaluateCacheOnly(int layer, model::LayerWeights& original, const LayerStatistics& baseStats) {
        const float k = calibratedCacheScale(baseStats.keyTokenMaxAbs(), plan_.activationCalibration);
        const float v = calibratedCacheScale(baseStats.valueTokenMaxAbs(), plan_.activationCalibration);
        cacheScales_.emplace_back(k, v);
        original.k.cacheScale = k, original.v.cacheScale = v;
        runLayerAll(base_, layer, original, kvEvaluation_, cancel_);
        original.k.cacheScale = 0.0f, original.v.cacheScale = 0.0f;
    }

    // What the engine quantizes around `module` besides its weight: its input (calibrated on `stats`),
    // the KV cache (k_proj, v_proj).
    void setServing(const MethodSpec& m, int layer, const std::string& module, LayerStatistics& stats,
                    quant::QuantizedLinear& q) const {
        if (m.activations != quant::ActivationFormat::None)
            q.input = calibratedInput(m.activations, stats.input(module), plan_.activationCalibration);
        if (m.kvCacheFp8 && module == "self_attn.k_proj") q.cacheScale = cacheScales_[std::size_t(layer)].first;
        if (m.kvCacheFp8 && module == "self_attn.v_proj") q.cacheScale = cacheScales_[std::size_t(layer)].second;
    }

    void quantizeStream(MethodStream& s, int layer, model::LayerWeights& original, LayerStatistics& baseStats,
                        LayerRelease release) {
        std::optional<LayerStatistics> own;
        if (s.ownCalibration) {  // the layer's inputs in this stream; the stream itself advances after quantization
            own.emplace(plan_.backend.get());
            observeLayerAll(s.model, layer, original, s.calibration, cancel_, own->hook());
            release.statistics = true;
        }
        LayerStatistics& stats = own ? *own : baseStats;
        const auto start = Clock::now();
        CompactLayer kept;
        try {
            if (s.mix) release = {};  // its dense linears still need their weights, its other linears the statistics
            QuantizedLayer q = s.mix ? quantizeMixedLayer(*s.mix, layer, original, stats)
                               : s.ggufTypes
                                   ? quantizeGgufLayer(s.ggufTypes, config_.layerPrefix(layer), layer, original, stats,
                                                       cancel_, release)
                                   : quantizeLayer(s.result.method, original, stats, plan_.seed + std::uint64_t(layer),
                                                   cancel_, plan_.backend.get(), release);
            for (auto& [module, linear] : q) {
                const auto samples = stats.empty() ? 0 : stats.input(module).hessian->samples();
                const auto routed = stats.empty() ? -1 : stats.routedTokens(module);
                const MethodSpec& method = s.mix ? *s.mix->methodOf(layer, module) : s.result.method;
                s.result.modules.push_back(logOf(method, layer, module, *linear, samples, routed));
                if (log_) log_(s.result.modules.back());
                quant::QuantizedLinear served(*linear);
                linear.reset();
                setServing(s.result.method, layer, module, stats, served);
                kept.emplace(module,
                             install(s, layer, module, std::make_shared<const CompactLinear>(std::move(served))));
            }
        } catch (const Cancelled&) {
            throw;
        } catch (const Error& e) {
            s.result.error = e.what();
            return;
        }
        s.result.seconds += secondsSince(start);
        // The stream's layer as its Transformer would load it (the same effective weights), built once here.
        model::LayerWeights quantized = release.weights ? std::move(original) : withoutLinearWeights(original);
        if (!release.weights)  // a mix's dense linears keep their original weights
            for (const auto& module : original.linearModules())
                if (!kept.contains(module)) quantized.linear(module).weight = original.linear(module).weight;
        for (const auto& [module, compact] : kept) {
            model::Linear& linear = quantized.linear(module);
            linear.weight = compact->effectiveWeight();
            linear.input = compact->parts().input;
            linear.cacheScale = compact->parts().cacheScale;
        }
        s.kept.push_back(std::move(kept));
        if (s.ownCalibration) runLayerAll(s.model, layer, quantized, s.calibration, cancel_);
        runLayerAll(s.model, layer, quantized, s.evaluation, cancel_);
    }

    // The stream's model runs `module` of `layer` from the finished linear from now on.
    static std::shared_ptr<const CompactLinear> install(MethodStream& s, int layer, const std::string& module,
                                                        std::shared_ptr<const CompactLinear> compact) {
        s.model.overrideLinear(layer, module, model::WeightProvider([compact] { return compact->effectiveWeight(); }));
        s.model.setServingQuantization(layer, module, compact->parts().input, compact->parts().cacheScale);
        return compact;
    }

    bool resultsOnDisk() const { return work_ && plan_.resultsOnDisk; }
    // With results on disk the per-layer KL's inputs (the original evaluation states at each layer's
    // input, one stream per layer) stay in the layers' records too, where save() writes them anyway:
    // in RAM they would grow with the depth.
    bool layerInputsOnDisk() const { return resultsOnDisk(); }
    Hidden layerInput(int layer) const {
        if (layerInputsOnDisk()) return WorkFolder::loadKeptHidden(work_->path(), layer, "layer_input");
        return layerInputs_[std::size_t(layer)];
    }

    static std::string linearKey(std::size_t stream, const std::string& module) {
        return std::to_string(stream) + ":" + module;
    }

    // Results on disk: layer `layer` is in the work folder now, so each stream keeps only its linears'
    // headers, and its model reads the layer's weights back from the folder when it runs it again
    // (per-layer KL).
    void spill(int layer) {
        if (!resultsOnDisk()) return;
        for (std::size_t m = 0; m < streams_.size(); ++m) {
            MethodStream& s = streams_[m];
            if (s.kept.size() != std::size_t(layer) + 1) continue;  // failed before this layer
            QuantizedLayer headers;
            for (auto& [module, compact] : s.kept.back()) {
                headers.emplace(module, std::make_shared<const quant::QuantizedLinear>(linearHeader(compact->parts())));
                s.model.overrideLinear(
                    layer, module, model::WeightProvider([stored = storedLinears(), layer, key = linearKey(m, module)] {
                        return stored->load(layer, key).effectiveWeight();
                    }));
            }
            s.headers.push_back(std::move(headers));
            CompactLayer().swap(s.kept.back());
        }
    }

    // The one reader every stream's stored linears share, so that a layer's record is opened once.
    std::shared_ptr<StoredLinearCache> storedLinears() {
        if (!storedLinears_) storedLinears_ = std::make_shared<StoredLinearCache>(work_->path());
        return storedLinears_;
    }

    // Results on disk: the stream's result names its layers in the work folder.
    void storeKept(std::size_t m) {
        MethodStream& s = streams_[m];
        s.model.clearOverrides();
        if (!s.failed())
            s.result.stored =
                std::make_shared<const StoredLayers>(work_->path(), linearKey(m, ""), std::move(s.headers));
        std::vector<CompactLayer>().swap(s.kept);
    }

    // Stream m's finished layer `layer`: held, or read back from the work folder (results on disk).
    CompactLayer finishedLayer(std::size_t m, int layer) const {
        const CompactLayer& held = streams_[m].kept[std::size_t(layer)];
        if (!held.empty() || !resultsOnDisk()) return held;
        CompactLayer read;
        for (auto& [module, q] : WorkFolder::loadLinears(work_->path(), layer, linearKey(m, "")))
            read.emplace(module, std::make_shared<const CompactLinear>(std::move(q)));
        return read;
    }

    // The hidden states that travel to the next layer, by name (the work folder's snapshot).
    std::map<std::string, HiddenStream*> travelling() {
        std::map<std::string, HiddenStream*> out{
            {"calibration", &calibration_}, {"evaluation", &evaluation_}, {"kv_evaluation", &kvEvaluation_}};
        for (std::size_t m = 0; m < streams_.size(); ++m) {
            out.emplace("s" + std::to_string(m) + ".calibration", &streams_[m].calibration);
            out.emplace("s" + std::to_string(m) + ".evaluation", &streams_[m].evaluation);
        }
        return out;
    }

    // Layer `layer` finished: what a resumed run needs of it goes to the work folder.
    void save(int layer) {
        if (!work_) return;
        LayerRecord record;
        nlohmann::json streams = nlohmann::json::array();
        for (std::size_t m = 0; m < streams_.size(); ++m) {
            const MethodStream& s = streams_[m];
            nlohmann::json logs = nlohmann::json::array();
            for (const auto& log : s.result.modules)
                if (log.layer == layer) logs.push_back(toJson(log));
            const bool kept = s.kept.size() == std::size_t(layer) + 1;
            if (kept)
                for (const auto& [module, compact] : s.kept.back())
                    record.linears.emplace(std::to_string(m) + ":" + module, compact->unpack());
            streams.push_back({{"error", s.result.error},
                               {"seconds", s.result.seconds},
                               {"modules", std::move(logs)},
                               {"kept", kept}});
        }
        record.facts["streams"] = std::move(streams);
        if (kvCache_)
            record.facts["cache_scales"] = {cacheScales_[std::size_t(layer)].first,
                                            cacheScales_[std::size_t(layer)].second};
        if (plan_.perLayerKl || plan_.perGroupKl) record.hidden["layer_input"] = layerInputs_[std::size_t(layer)];
        // Each stream's file goes into the layer's hidden-state folder (a spilled stream's is there already).
        const std::filesystem::path staging = work_->hiddenStaging(layer);
        HiddenShapes after;
        for (const auto& [name, hidden] : travelling()) {
            hidden->saveTo(staging / WorkFolder::hiddenFileName(name));
            after.emplace(name, hidden->shape());
        }
        work_->saveLayer(layer, record, after);
        for (auto& [name, hidden] : travelling())
            hidden->movedTo(work_->hiddenFolder() / WorkFolder::hiddenFileName(name));
        if ((plan_.perLayerKl || plan_.perGroupKl) && layerInputsOnDisk())
            Hidden().swap(layerInputs_[std::size_t(layer)]);  // read back when scored (layerInput)
    }

    // A new run records its team's size; a resumed one runs on the team it started on, whatever the
    // free cores are now (WorkFolder::threadTeam says why), and says so when that differs.
    void keepThreadTeam() {
        const int now = omp_get_max_threads();
        if (!plan_.resume) {
            work_->recordThreadTeam(now);
            return;
        }
        const std::optional<int> started = work_->threadTeam();
        if (!started || *started == now) return;
        callerTeam_ = now;
        omp_set_num_threads(*started);
        teamNote_ = ", on the " + std::to_string(*started) + " threads it started on (not " + std::to_string(now) +
                    "), so that it writes the same bits";
    }

    // A resumed run: the finished layers and the hidden states after them from the work folder; the
    // first layer still to do.
    int restore() {
        if (!work_) return 0;
        const int done = work_->completeLayers();
        if (done == 0) {
            if (plan_.resume)
                report("resume", 0, config_.numLayers, 0.0,
                       "no layer in " + work_->path().string() + " was complete: starting from the first" + teamNote_);
            return 0;
        }
        if (done > config_.numLayers) throw Error(work_->path().string() + " holds more layers than the model has");
        report("resume", done, config_.numLayers, 0.8 * done / config_.numLayers,
               "resuming after layer " + std::to_string(done) + "/" + std::to_string(config_.numLayers) + " from " +
                   work_->path().string() + teamNote_);
        for (int layer = 0; layer < done; ++layer) {
            restoreLayer(layer, work_->loadLayer(layer));
            spill(layer);
        }
        // A stream that spills streams from the folder's files as they are; the others are read in.
        const HiddenShapes shapes = work_->hiddenShapes();
        for (auto& [name, target] : travelling()) {
            const auto it = shapes.find(name);
            if (it == shapes.end())
                throw Error(work_->path().string() + ": the hidden states '" + name + "' are missing");
            const std::filesystem::path file = work_->hiddenFolder() / WorkFolder::hiddenFileName(name);
            *target = spilled_.contains(name) ? HiddenStream::spilled(file, it->second)
                                              : HiddenStream(SequenceFile::load(file, it->second));
        }
        return done;
    }

    void restoreLayer(int layer, LayerRecord record) {
        const nlohmann::json& streams = record.facts.at("streams");
        if (streams.size() != streams_.size())
            throw Error(work_->path().string() + ": layer " + std::to_string(layer) + " has another number of methods");
        for (std::size_t m = 0; m < streams_.size(); ++m) {
            MethodStream& s = streams_[m];
            const nlohmann::json& facts = streams[m];
            s.result.error = facts.at("error").get<std::string>();
            s.result.seconds = facts.at("seconds").get<double>();
            for (const auto& log : facts.at("modules")) {
                s.result.modules.push_back(moduleLogFromJson(log));
                if (log_) log_(s.result.modules.back());
            }
            if (!facts.at("kept").get<bool>()) continue;
            CompactLayer kept;
            const std::string prefix = std::to_string(m) + ":";
            for (auto& [key, q] : record.linears)
                if (key.starts_with(prefix)) {
                    const std::string module = key.substr(prefix.size());
                    kept.emplace(module,
                                 install(s, layer, module, std::make_shared<const CompactLinear>(std::move(q))));
                }
            s.kept.push_back(std::move(kept));
        }
        if (kvCache_) {
            const auto& scales = record.facts.at("cache_scales");
            cacheScales_.emplace_back(scales.at(0).get<float>(), scales.at(1).get<float>());
        }
        if (plan_.perLayerKl || plan_.perGroupKl)
            layerInputs_.push_back(layerInputsOnDisk() ? Hidden{} : std::move(record.hidden.at("layer_input")));
    }

    QuantizedLayer quantizeMixedLayer(const MixedMethods& mix, int layer, const model::LayerWeights& original,
                                      LayerStatistics& stats) const {
        return quantizeLayerModules([&mix, layer](std::string_view module) { return mix.methodOf(layer, module); },
                                    original, stats, plan_.seed + std::uint64_t(layer), cancel_, plan_.backend.get());
    }

    // The kept layers back as QuantizedLinears (each freed from the compact store as it is unpacked).
    static void unpackKept(MethodStream& s, const CancelToken& cancel) {
        s.model.clearOverrides();  // the overrides share the compact layers
        for (auto& layer : s.kept) {
            cancel.throwIfCancelled();
            QuantizedLayer q;
            for (auto& [module, compact] : layer) {
                q.emplace(module, std::make_shared<const quant::QuantizedLinear>(compact->unpack()));
                compact.reset();
            }
            if (!s.failed()) s.result.layers.push_back(std::move(q));
        }
        std::vector<CompactLayer>().swap(s.kept);
    }

    // The streams scored against the original at the end of the evaluation text; a failed method
    // is skipped. The quantized streams share the original's final norm and lm_head, except that a
    // GGUF method's whole model has its own output (`ownHeads`).
    std::vector<KlStream> klStreams(const std::vector<const HiddenStream*>& hidden, bool ownHeads = false) const {
        std::vector<KlStream> out;
        for (std::size_t m = 0; m < streams_.size(); ++m)
            out.push_back({ownHeads && streams_[m].ggufTypes ? &streams_[m].model : &base_,
                           streams_[m].failed() ? nullptr : hidden[m]});
        return out;
    }

    void evaluate() {
        if (plan_.evaluation.empty()) return;
        std::vector<const HiddenStream*> hidden;
        for (const auto& s : streams_) hidden.push_back(&s.evaluation);
        std::vector<KlStream> scored = klStreams(hidden, true);
        if (kvCache_) scored.push_back({&base_, &kvEvaluation_});
        const auto kl =
            scoreKl({&base_, &evaluation_}, scored, plan_.evaluation, cancel_, [&](std::size_t i, std::size_t n) {
                report("evaluate", int(i) + 1, int(n), 0.8 + 0.05 * double(i) / double(n), "KL against the original");
            });
        for (std::size_t m = 0; m < streams_.size(); ++m)
            if (!streams_[m].failed()) streams_[m].result.kl = kl[m].report();
        if (kvCache_) cacheOnlyKl_ = kl.back().report();
    }

    // KL with only layer l quantized: the method's layer l, then the original layers after it.
    void perLayerKl() {
        const int L = config_.numLayers;
        for (auto& s : streams_) s.result.perLayerKl.assign(std::size_t(L), std::nan(""));
        for (int l = 0; l < L; ++l) {
            report("per-layer KL", l + 1, L, 0.85 + 0.15 * l / L,
                   "layer " + std::to_string(l + 1) + "/" + std::to_string(L));
            std::vector<HiddenStream> hidden(streams_.size());
            const Hidden input = layerInput(l);
            for (std::size_t m = 0; m < streams_.size(); ++m) {
                if (streams_[m].failed()) continue;
                hidden[m] = HiddenStream(input);
                runLayerAll(streams_[m].model, l, hidden[m], cancel_);
            }
            for (int after = l + 1; after < L; ++after)
                for (std::size_t m = 0; m < streams_.size(); ++m)
                    if (!streams_[m].failed()) runLayerAll(base_, after, hidden[m], cancel_);
            scorePerLayer(l, hidden);
        }
    }

    // KL with only one fused group of layer l quantized (the rest of the layer and the layers after it
    // original): what a mix that chooses per group changes, measured rather than shared out.
    void perGroupKl() {
        const int L = config_.numLayers;
        for (auto& s : streams_)
            s.result.perGroupKl.assign(std::size_t(L), std::vector<double>(kFusedGroups.size(), std::nan("")));
        for (int l = 0; l < L; ++l) {
            report("per-group KL", l + 1, L, 0.9 + 0.1 * l / L,
                   "layer " + std::to_string(l + 1) + "/" + std::to_string(L));
            const model::LayerWeights original = weights_->layer(l);
            std::vector<CompactLayer> finished(streams_.size());
            for (std::size_t m = 0; m < streams_.size(); ++m)
                if (!streams_[m].failed()) finished[m] = finishedLayer(m, l);
            const Hidden input = layerInput(l);
            for (std::size_t g = 0; g < kFusedGroups.size(); ++g) {
                std::vector<HiddenStream> hidden(streams_.size());
                for (std::size_t m = 0; m < streams_.size(); ++m) {
                    if (streams_[m].failed()) continue;
                    hidden[m] = HiddenStream(input);
                    runLayerAll(base_, l, withGroupOf(original, finished[m], kFusedGroups[g]), hidden[m], cancel_);
                }
                for (int after = l + 1; after < L; ++after)
                    for (std::size_t m = 0; m < streams_.size(); ++m)
                        if (!streams_[m].failed()) runLayerAll(base_, after, hidden[m], cancel_);
                std::vector<const HiddenStream*> pointers;
                for (const auto& h : hidden) pointers.push_back(&h);
                const auto kl = scoreKl({&base_, &evaluation_}, klStreams(pointers), plan_.evaluation, cancel_);
                for (std::size_t m = 0; m < streams_.size(); ++m)
                    if (!streams_[m].failed())
                        streams_[m].result.perGroupKl[std::size_t(l)][g] = kl[m].report().meanKld.value;
            }
        }
    }

    // The original layer with the stream's quantized linears of one group in place (a dense one stays original).
    static model::LayerWeights withGroupOf(const model::LayerWeights& original, const CompactLayer& kept,
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

    void scorePerLayer(int layer, const std::vector<HiddenStream>& hidden) {
        std::vector<const HiddenStream*> pointers;
        for (const auto& h : hidden) pointers.push_back(&h);
        const auto kl = scoreKl({&base_, &evaluation_}, klStreams(pointers), plan_.evaluation, cancel_);
        for (std::size_t m = 0; m < streams_.size(); ++m)
            if (!streams_[m].failed()) streams_[m].result.perLayerKl[std::size_t(layer)] = kl[m].report().meanKld.value;
    }

    const JobPlan& plan_;
    const std::set<std::string> spilled_;  // the travelling streams that live in the work folder (stream_budget.h)
    const ProgressCallback& progress_;
    const CancelToken& cancel_;
    const ModuleLogCallback& log_;
    io::Checkpoint checkpoint_;
    model::ModelConfig config_;
    std::shared_ptr<const model::WeightSource> weights_;
    model::Transformer base_;
    HiddenStream calibration_;     // the original model's calibration stream (when a method quantizes from it)
    bool baseStatistics_ = false;  // some method quantizes from the original stream's statistics
    HiddenStream evaluation_;      // the original model's evaluation stream (final hidden states at the end)
    std::vector<Hidden>
        layerInputs_;  // the original evaluation hidden states at each layer's input (per-layer KL; empty once on disk)
    std::vector<MethodStream> streams_;
    bool kvCache_ = false;                              // some method quantizes the KV cache
    std::vector<std::pair<float, float>> cacheScales_;  // the FP8 KV cache's (k_scale, v_scale) per layer
    HiddenStream kvEvaluation_;                         // the original model with its KV cache quantized
    std::optional<analysis::KlReport> cacheOnlyKl_;
    std::optional<WorkFolder> work_;                    // the state after each layer, when the plan keeps one
    std::shared_ptr<StoredLinearCache> storedLinears_;  // results on disk: their linears, read back a layer at a time
    std::optional<int> callerTeam_;                     // the caller's team size, while a resumed run uses its own
    std::string teamNote_;                              // said with "resuming after layer ..." when the team differs
};

}  // namespace

Job::Job(JobPlan plan) : plan_(std::move(plan)) {
    if (plan_.methods.empty() && plan_.mixed.empty()) throw Error("the plan has no methods");
    for (const auto& mix : plan_.mixed) {
        mix.check();
        if (mix.needsCalibration() && plan_.calibration.empty())
            throw Error(mix.name + " needs calibration text (GPTQ), and none was given");
    }
    for (const auto& m : plan_.methods)
        if (m.needsCalibration() && plan_.calibration.empty())
            throw Error(m.label() + " needs calibration text, and none was given");
    for (const auto& m : plan_.methods)
        if (m.kvCacheFp8 && m.gguf())
            throw Error("an FP8 KV cache applies to the safetensors methods, not to " + m.label() +
                        ": llama.cpp chooses its cache type when it runs (--cache-type-k, --cache-type-v)");
}

JobResult Job::run(const ProgressCallback& progress, const CancelToken& cancel, const ModuleLogCallback& moduleLog,
                   bool force) {
    const ResourceEstimate e = estimate();
    if (!force && e.availableBytes > 0 && !e.fits()) {
        std::string offers = "; use fewer methods, samples or tokens, or no per-layer KL";
        if (plan_.workDir.empty())
            offers +=
                ", or give a work folder (quantscope-cli --work-dir DIR): the finished layers and the hidden states "
                "that do not fit stay there";
        else if (!plan_.resultsOnDisk)
            offers += ", or keep the finished layers on disk (quantscope-cli --work-dir)";
        if (const std::string below = e.belowFixedPart(); !below.empty()) throw Error(below);
        if (e.limitedByMaxMemory) offers += ", or raise --max-memory";
        throw Error("this plan does not fit in memory: " + e.describe() + offers);
    }
    if (progress) progress({"plan", 0, 0, 0.0, e.describe()});
    if (progress && e.spilledBytes > 0)
        progress({"spill", 0, 0, 0.0,
                  formatBytes(e.spilledBytes) + " of hidden states (of " + formatBytes(e.hiddenBytes) +
                      ") stream from " + plan_.workDir.string() +
                      ": they do not fit in memory beside the rest of the run"});
    if (!plan_.backend) {
        BackendSelection selection = selectBackend(plan_.device);
        if (progress) progress({"plan", 0, 0, 0.0, selection.message});
        plan_.backend = std::move(selection.backend);
    }
    checkDeviceMemory(*plan_.backend, deviceWorkload(), force, progress);
    Runner runner(plan_, {e.spilledStreams.begin(), e.spilledStreams.end()}, progress, cancel, moduleLog);
    return runner.run();
}

}  // namespace qs::pipeline
