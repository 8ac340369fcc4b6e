#include "qs/pipeline/job.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <set>
#include <string>

#include "qs/error.h"
#include "qs/io/checkpoint.h"
#include "qs/io/checkpoint_fingerprint.h"
#include "qs/io/dtype.h"
#include "qs/io/ggml_type.h"
#include "qs/pipeline/quantized_source.h"
#include "qs/pipeline/resource_estimate.h"

#include "gguf_method.h"
#include "hidden_states.h"
#include "job_kl.h"
#include "job_layer_loop.h"
#include "job_run.h"
#include "job_save_resume.h"
#include "stream_budget.h"

namespace qs::pipeline {
namespace {

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

// The bytes an export stores of a tensor it keeps: a GGUF tensor of ggml blocks (a Q8_0 embedding) is
// written decoded, in F32 where BF16 would round its values (export_source.h), as they mostly do.
std::uint64_t keptBytes(const io::TensorInfo& t) {
    if (t.ggmlType && !io::ggmlTypeTraits(*t.ggmlType).isFloat)
        return static_cast<std::uint64_t>(t.numel()) * io::dtypeSize(io::DType::F32);
    return t.byteSize();
}

// The bytes of the tensors the result keeps: all but the decoder's linear weights (of a quantized
// source, every part they are stored in), whose quantized bytes the result counts; their biases, a
// MoE's routers and the layers stored after the decoder's (next-token prediction) stay.
std::uint64_t nonLinearBytes(const io::Checkpoint& checkpoint, const model::ModelConfig& config) {
    std::uint64_t bytes = 0;
    for (const auto& t : checkpoint.tensors()) {
        const bool router = config.isMoe() && t.naming.module == config.moe.names.router();
        const bool linear = t.naming.role == io::TensorRole::Linear && t.naming.layer >= 0 &&
                            t.naming.layer < config.numLayers && !router && t.naming.part != "bias";
        if (!linear && !isStackedExpertWeight(t, config.moe)) bytes += keptBytes(*t.info);
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

// The streams' first hidden states, the embeddings; on a resumed run restoreFinishedLayers reads them instead.
void setUpStreams(JobRun& run) {
    const bool embed = !run.work || run.work->completeLayers() == 0;
    const auto embedded = [&](const model::Transformer& model, const TokenSequences& text, const std::string& name) {
        return embed ? embedStream(model, text, spillFile(run, name)) : HiddenStream();
    };
    const auto copied = [&](const HiddenStream& from, const std::string& name) {
        return embed ? from.copy(spillFile(run, name)) : HiddenStream();
    };
    bool baseCalibration = false;  // the original's calibration stream travels (as travellingStreams says)
    for (const auto& t : travellingStreams(run.plan, run.config.hiddenSize))
        baseCalibration = baseCalibration || t.name == "calibration";
    if (baseCalibration) run.calibration = embedded(run.base, run.plan.calibration, "calibration");
    run.evaluation = embedded(run.base, run.plan.evaluation, "evaluation");
    for (const auto& m : run.plan.methods) {
        const std::string name = "s" + std::to_string(run.streams.size());
        MethodStream s{MethodResult{}, run.makeModel(), {}, {}, false, {}, {}};
        s.result.method = m;
        s.ownCalibration = run.plan.trueSequential && m.sequential() && !run.plan.calibration.empty();
        if (s.ownCalibration) s.calibration = embedded(run.base, run.plan.calibration, name + ".calibration");
        if (m.ggufFileMix()) {  // its own token_embd and output, so its evaluation starts from its own embedding
            const model::ModelConfig file = ggufFileConfig(run.config, run.plan.rotate);
            // The types the source's own file would get (a tied source's token_embd keeps the output's type).
            s.ggufTypes = ggufMethodChooser(m, run.config, !run.plan.calibration.empty() || run.plan.imatrix);
            // Rotated: the embedding and lm_head the file will hold (writeGgufResult takes them from one too).
            const std::optional<ExportRotation> rotation =
                run.plan.rotate ? std::make_optional<ExportRotation>(run.checkpoint, run.plan.rotationSeed)
                                : std::nullopt;
            s.model = run.makeModel(
                ggufEdgeWeights(run.weights, run.checkpoint, file, s.ggufTypes, rotation ? &*rotation : nullptr));
            s.evaluation = embedded(s.model, run.plan.evaluation, name + ".evaluation");
        } else {
            s.evaluation = copied(run.evaluation, name + ".evaluation");
        }
        if (!s.ownCalibration && !run.plan.calibration.empty()) run.baseStatistics = true;
        if (s.ownCalibration && m.gptaq) run.fullPrecisionInputs = true;
        run.kvCache = run.kvCache || m.kvCacheFp8;
        run.streams.push_back(std::move(s));
    }
    for (const auto& mix : run.plan.mixed) {
        const std::string name = "s" + std::to_string(run.streams.size());
        MethodStream s{
            MethodResult{}, run.makeModel(), {}, copied(run.evaluation, name + ".evaluation"), false, {}, {}, &mix};
        s.result.method = mix.summary();
        s.result.mixed = true;
        s.ownCalibration = run.plan.trueSequential && mix.sequential() && !run.plan.calibration.empty();
        if (s.ownCalibration)
            s.calibration = embedded(run.base, run.plan.calibration, name + ".calibration");
        else if (!run.plan.calibration.empty())
            run.baseStatistics = true;
        run.streams.push_back(std::move(s));
    }
    // The KV cache's scales come from the original model's calibration stream, shared by every method.
    if (run.kvCache) {
        run.baseStatistics = true;
        run.kvEvaluation = copied(run.evaluation, "kv_evaluation");
    }
    if ((run.baseStatistics || run.fullPrecisionInputs) != baseCalibration)
        throw Error("internal: the Job's streams differ from its estimate's");
}

// The kept layers back as QuantizedLinears (each freed from the compact store as it is unpacked).
void unpackKept(MethodStream& s, const CancelToken& cancel) {
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

// The finished run's result: each method's layers (held, or named in the work folder), its sizes and
// its KL, and the run's own figures.
JobResult gatherResult(JobRun& run) {
    // Unpacking every layer of every method takes a while on a large model: it polls too, and a
    // cancel that arrives by the end still wins over the finished result.
    for (std::size_t m = 0; m < run.streams.size(); ++m) {
        if (run.resultsOnDisk())
            storeKept(run, m);
        else
            unpackKept(run.streams[m], run.cancel);
    }
    JobResult result;
    result.source = io::fingerprintOf(run.checkpoint);
    result.quantizedSource = quantizedSource(run.format);
    const std::uint64_t kept = nonLinearBytes(run.checkpoint, run.config);
    for (auto& s : run.streams) {
        run.cancel.throwIfCancelled();
        if (!s.failed())
            summarize(s.result,
                      s.ggufTypes
                          ? ggufNonLinearBytes(run.checkpoint, ggufFileConfig(run.config, run.plan.rotate), s.ggufTypes)
                          : kept);
        else
            s.result.layers.clear(), s.result.stored.reset();
        s.result.source = result.source;
        s.result.quantizedSource = result.quantizedSource;
        if (run.plan.rotate) s.result.rotationSeed = run.plan.rotationSeed;
        result.methods.push_back(std::move(s.result));
    }
    run.cancel.throwIfCancelled();
    result.kvCacheOnlyKl = run.cacheOnlyKl;
    result.calibrationTokens = tokenCount(run.plan.calibration);
    result.evaluationTokens = tokenCount(run.plan.evaluation);
    result.bf16Calibration = run.calibrationMath != nullptr;
    return result;
}

// The plan's work: every layer of every stream in turn (after those a resumed run finds in its work
// folder), each saved as it is finished; then the KL scoring and the result.
JobResult runLayerByLayer(JobRun& run) {
    const auto start = std::chrono::steady_clock::now();
    setUpStreams(run);
    for (int layer = restoreFinishedLayers(run); layer < run.config.numLayers; ++layer) {
        calibrateAndQuantizeLayer(run, layer);
        saveLayer(run, layer);
        leaveCodesOnDisk(run, layer);
    }
    returnFreedHeapToSystem();  // the logits' blocks come on top of what the layers' work left in the heap
    scoreFinalKl(run);
    if (run.plan.perLayerKl && !run.plan.evaluation.empty()) scorePerLayerKl(run);
    if (run.plan.perGroupKl && !run.plan.evaluation.empty()) scorePerGroupKl(run);
    JobResult result = gatherResult(run);
    result.seconds = secondsSince(start);
    run.report("done", run.config.numLayers, run.config.numLayers, 1.0, "finished");
    return result;
}

}  // namespace

Job::Job(JobPlan plan) : plan_(std::move(plan)) {
    if (plan_.methods.empty() && plan_.mixed.empty()) throw Error("the plan has no methods");
    for (const auto& mix : plan_.mixed) {
        mix.check();
        for (const auto& layer : mix.layers)
            for (const auto& [module, m] : layer)
                if (m.gptaq)
                    throw Error(mix.name + ": " + m.label() +
                                " pairs its inputs with the full-precision model's, which a mix's stream does not do: "
                                "quantize with it alone");
        if (mix.needsCalibration() && plan_.calibration.empty())
            throw Error(mix.name + " needs calibration text (GPTQ), and none was given");
    }
    for (const auto& m : plan_.methods)
        if (m.needsCalibration() && plan_.calibration.empty())
            throw Error(m.label() + " needs calibration text, and none was given");
    for (const auto& m : plan_.methods)
        if (m.gptaq && !plan_.trueSequential)
            throw Error(m.label() +
                        " corrects towards the full-precision model's inputs from the quantized model's, which only "
                        "true-sequential calibration sees");
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
    JobRun run(plan_, {e.spilledStreams.begin(), e.spilledStreams.end()}, progress, cancel, moduleLog);
    // Said once the work folder is accepted, so that a refusal stays the run's only line.
    if (progress) progress({"matmul", 0, 0, 0.0, selectMatmul(plan_).message});
    return runLayerByLayer(run);
}

}  // namespace qs::pipeline
