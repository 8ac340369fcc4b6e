// Job::estimate and Job::deviceWorkload: what a plan will ask of the memory, the time and the device,
// from the checkpoint's headers alone (before any work, and in the estimate the GUI shows).
#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "qs/error.h"
#include "qs/io/checkpoint.h"
#include "qs/pipeline/job.h"

#include "stream_budget.h"

namespace qs::pipeline {
namespace {

// Work per weight of each method, for the time estimate (GPTQ's column loop, the trellis search).
double quantizeFlopsPerWeight(const MethodSpec& m, const model::ModelConfig& c) {
    switch (m.kind) {
        case MethodKind::Gptq:  // GPTAQ: P's two triangular solves beside the column loop
            return (m.gptaq ? 6.0 : 4.0) * std::max(c.hiddenSize, c.intermediateSize);
        case MethodKind::Awq: return 40.0 * c.hiddenSize;
        case MethodKind::Trellis: return 3.0 * std::pow(2.0, m.trellisL + m.bits);
        default: return 20.0;
    }
}

// Bytes per weight of a finished layer as the Job keeps it (CompactLinear): codes of at most four bits
// two per byte, else one; f32 scales (and zeros on the integer grids) per group or block. With
// results on disk the codes (and a GGUF method's blocks) stay in the work folder.
double keptBytesPerWeight(const MethodSpec& m, bool resultsOnDisk) {
    if (resultsOnDisk && m.kind == MethodKind::Gguf) return 0.0;
    const double codes = resultsOnDisk ? 0.0 : m.bits <= 4 ? 0.5 : 1.0;
    switch (m.kind) {
        case MethodKind::Rtn:
        case MethodKind::Gptq:
        case MethodKind::Awq: return codes + 8.0 / (m.groupSize > 0 ? m.groupSize : 128);
        case MethodKind::Fp8: return (resultsOnDisk ? 0.0 : 1.0) + 4.0 / 128;
        case MethodKind::Mxfp4: return codes + 4.0 / 32;
        case MethodKind::Nvfp4: return codes + 4.0 / 16;
        case MethodKind::Nf4: return codes + 5.0 / 64;
        case MethodKind::Trellis: return codes + 4.0 / 256;
        case MethodKind::Gguf: return 1.1;  // at most Q8_0's 8.5 bits
    }
    return 1.1;
}

// What a plan cannot do with DeepSeek's latent attention yet, refused before any work: an FP8 KV cache
// (vLLM's MLA caches the latent and the rotary key, not the k_proj / v_proj outputs k_scale and v_scale
// describe), and the per-group KL of a mix's measurement (its groups are Llama's q/k/v, o, gate/up, down).
void requireLatentAttentionPlan(const JobPlan& plan, const model::ModelConfig& config, const std::string& source) {
    for (const MethodSpec& m : plan.methods)
        if (m.kvCacheFp8)
            throw Error(source + ": " + m.label() + ": model_type '" + config.modelType +
                        "' caches its latent attention's latent and rotary key, which an FP8 KV cache's k_scale and "
                        "v_scale (k_proj's and v_proj's outputs) do not describe");
    if (plan.perGroupKl)
        throw Error(source + ": the per-group KL measures Llama's q/k/v, o, gate/up and down groups, and model_type '" +
                    config.modelType + "' has a latent attention");
}

// What a plan cannot do with Qwen3.5's linear attention yet, refused before any work: an FP8 KV cache (only its
// full attention layers have keys and values; untested), and mixes of methods (their groups are Llama's q/k/v, o,
// gate/up and down, and vLLM loads in_proj_qkv with in_proj_z as one linear of one scheme).
void requireLinearAttentionPlan(const JobPlan& plan, const model::ModelConfig& config, const std::string& source) {
    for (const MethodSpec& m : plan.methods)
        if (m.kvCacheFp8)
            throw Error(source + ": " + m.label() + ": an FP8 KV cache is not offered for model_type '" +
                        config.modelType + "' yet: only its full attention layers cache keys and values");
    if (!plan.mixed.empty() || plan.perGroupKl)
        throw Error(source + ": a mix of methods is not offered for model_type '" + config.modelType +
                    "' yet: its groups are Llama's q/k/v, o, gate/up and down, and its linear attention's are not; "
                    "quantize it with one method");
}

// The bytes of the tensor the logits multiply: lm_head, or the embedding when tied.
std::uint64_t lmHeadFileBytes(const io::Checkpoint& checkpoint, const model::ModelConfig& config) {
    const io::TensorRole role = config.tieWordEmbeddings ? io::TensorRole::Embedding : io::TensorRole::LmHead;
    std::uint64_t bytes = 0;
    for (const auto& t : checkpoint.tensors())
        if (t.naming.role == role && t.naming.layer < 0) bytes = std::max<std::uint64_t>(bytes, t.info->byteSize());
    return bytes;
}

}  // namespace

ResourceEstimate Job::estimate() const {
    const io::Checkpoint checkpoint = io::Checkpoint::open(plan_.checkpoint);
    WorkloadShape shape;
    shape.config = model::ModelConfig::fromCheckpoint(checkpoint);
    if (shape.config.isMoe() && !plan_.mixed.empty())  // before any work, and in the estimate the GUI shows
        throw Error(
            checkpoint.configSource().string() +
            ": a mix of methods is not offered for a mixture of experts yet: vLLM's compressed-tensors MoE loader "
            "gives all of a model's experts one scheme (its 'Linear' target, or one matching down_proj, gate_proj "
            "and up_proj), and a mix names each linear; quantize it with one method");
    if (shape.config.mla.active()) requireLatentAttentionPlan(plan_, shape.config, checkpoint.configSource().string());
    if (shape.config.linearAttention.active())
        requireLinearAttentionPlan(plan_, shape.config, checkpoint.configSource().string());
    shape.methods = int(plan_.methods.size());
    shape.resultsOnDisk = plan_.resultsOnDisk && !plan_.workDir.empty();
    shape.keptBytesPerWeight = 0.0;  // the methods' own, summed below
    for (const auto& m : plan_.methods) {
        if (plan_.trueSequential && m.sequential()) ++shape.sequentialMethods;
        if (plan_.trueSequential && m.gptaq) ++shape.gptaqMethods;
        shape.quantizeFlopsPerWeight += quantizeFlopsPerWeight(m, shape.config);
        shape.keptBytesPerWeight += keptBytesPerWeight(m, shape.resultsOnDisk);
    }
    for (const auto& mix : plan_.mixed) {  // a mix costs at most what its heaviest method does
        shape.methods += 1;
        if (plan_.trueSequential && mix.sequential()) ++shape.sequentialMethods;
        double flops = 0, kept = 0;
        for (const auto& layer : mix.layers)
            for (const auto& [module, m] : layer) {
                flops = std::max(flops, quantizeFlopsPerWeight(m, shape.config));
                kept = std::max(kept, keptBytesPerWeight(m, shape.resultsOnDisk));
            }
        shape.quantizeFlopsPerWeight += flops;
        shape.keptBytesPerWeight += kept;
    }
    shape.calibrationTokens = tokenCount(plan_.calibration);
    shape.moeAllExperts = plan_.moeCalibrateAllExperts;
    shape.evaluationTokens = tokenCount(plan_.evaluation);
    shape.evaluationSequenceLength = plan_.evaluation.empty() ? 0 : int(plan_.evaluation.front().size());
    shape.perLayerKl = plan_.perLayerKl || plan_.perGroupKl;  // the same inputs kept per layer
    shape.lmHeadFileBytes = lmHeadFileBytes(checkpoint, shape.config);
    shape.rotated = plan_.rotate;
    ResourceEstimate e = estimateResources(shape);
    if (plan_.maxMemory > 0 && (e.availableBytes == 0 || plan_.maxMemory < e.availableBytes)) {
        e.availableBytes = plan_.maxMemory;
        e.limitedByMaxMemory = true;
        // --max-memory bounds the process's peak, and what it has already reached counts (the dynamic
        // loader's relocations of the CUDA libraries peak above the resident set they leave behind).
        e.peakBytes = std::max(e.peakBytes, e.highWaterBytes);
    }
    const std::vector<TravellingStream> streams = travellingStreams(plan_, shape.config.hiddenSize);
    e.hiddenBytes = totalBytes(streams);
    if (plan_.workDir.empty() || e.availableBytes == 0) return e;  // nowhere to spill to, or no limit known
    // The travelling streams get what the rest of the run leaves of the memory; those that do not fit spill.
    WorkloadShape withoutStreams = shape;
    withoutStreams.spilledHiddenBytes = e.hiddenBytes;
    const std::uint64_t rest = e.fixedBytes + predictedJobBytes(withoutStreams);
    const std::set<std::string> spilled =
        spilledStreams(streams, e.availableBytes > rest ? e.availableBytes - rest : 0);
    for (const auto& s : streams)
        if (spilled.contains(s.name)) {
            e.spilledStreams.push_back(s.name);
            e.spilledBytes += s.bytes;
        }
    shape.spilledHiddenBytes = e.spilledBytes;
    e.peakBytes = std::max(e.fixedBytes + predictedJobBytes(shape), e.limitedByMaxMemory ? e.highWaterBytes : 0);
    return e;
}

DeviceWorkload Job::deviceWorkload() const {
    const io::Checkpoint checkpoint = io::Checkpoint::open(plan_.checkpoint);
    DeviceWorkload w;
    w.config = model::ModelConfig::fromCheckpoint(checkpoint);
    for (const TokenSequences* sequences : {&plan_.calibration, &plan_.evaluation})
        for (const auto& s : *sequences)
            w.sequenceLength = std::max<std::int64_t>(w.sequenceLength, std::int64_t(s.size()));
    w.groupSize = 0;
    const auto account = [&](const MethodSpec& m) {
        w.statistics = w.statistics || (m.needsCalibration() && !plan_.calibration.empty());
        w.gptq = w.gptq || (m.kind == MethodKind::Gptq && !m.gptaq);  // GPTAQ runs on the CPU
        w.awq = w.awq || m.kind == MethodKind::Awq;
        // The smallest group has the most scales; -1 (a group per row) the fewest.
        if (m.kind == MethodKind::Gptq && m.groupSize > 0 && (w.groupSize <= 0 || m.groupSize < w.groupSize))
            w.groupSize = m.groupSize;
    };
    for (const auto& m : plan_.methods) account(m);
    for (const auto& mix : plan_.mixed)  // each linear's method, as the mix quantizes it
        for (const auto& layer : mix.layers)
            for (const auto& [module, m] : layer) account(m);
    if (w.groupSize == 0) w.groupSize = -1;
    return w;
}

}  // namespace qs::pipeline
