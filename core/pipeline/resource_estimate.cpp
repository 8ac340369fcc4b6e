#include "qs/pipeline/resource_estimate.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iomanip>
#include <sstream>
#include <vector>

#include <unistd.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "qs/huge_pages.h"
#include "qs/matrix.h"
#include "qs/model/attention_linears.h"

namespace qs::pipeline {
namespace {

// A MoE model is counted as if every layer were sparse (its widest case): experts replace the MLP.
double mlpWidth(const model::ModelConfig& c) { return c.isMoe() ? c.moe.expertIntermediateSize : c.intermediateSize; }
double experts(const model::ModelConfig& c) { return c.isMoe() ? c.moe.numExperts : 1.0; }

double attentionParameters(const model::ModelConfig& c, int layer) {
    double n = 0;
    for (const model::LinearShape& l : model::attentionLinears(c, layer)) n += double(l.out) * double(l.in);
    return n;
}

// The layer whose attention has the most weights (-1: the full attention layers'; Qwen3.5's linear-attention
// layers may be wider), counted for every layer as the MoE's widest case is.
int widestAttentionLayer(const model::ModelConfig& c) {
    for (int layer = 0; layer < c.numLayers; ++layer)
        if (c.isLinearAttentionLayer(layer))
            return attentionParameters(c, layer) > attentionParameters(c, -1) ? layer : -1;
    return -1;
}

// The attention's linears (Llama's q/k/v/o or DeepSeek's latent attention: attention_linears.h).
double attentionParameters(const model::ModelConfig& c) { return attentionParameters(c, widestAttentionLayer(c)); }

// A MoE block's shared expert (GLM-4.5, DeepSeek-V3), which every token runs: 0 without one.
double sharedExpertParameters(const model::ModelConfig& c) {
    return c.isMoe() ? 3.0 * c.hiddenSize * double(c.moe.sharedExpertIntermediateSize) : 0.0;
}

// Every weight of a layer: attention, and the MLP or every expert, the shared expert and the router.
double layerParameters(const model::ModelConfig& c) {
    const double h = c.hiddenSize, router = c.isMoe() ? double(c.moe.numExperts) * h : 0.0;
    return attentionParameters(c) + experts(c) * 3.0 * h * mlpWidth(c) + sharedExpertParameters(c) + router;
}

// The weights one token's forward pass multiplies: a MoE token runs its top-k experts (and the shared one).
double activeParameters(const model::ModelConfig& c) {
    if (!c.isMoe()) return layerParameters(c);
    const double h = c.hiddenSize;
    return attentionParameters(c) + double(c.moe.numExpertsPerToken) * 3.0 * h * mlpWidth(c) +
           sharedExpertParameters(c) + double(c.moe.numExperts) * h;
}

// The widths of a decoder layer's distinct linear inputs: the attention's (q/k/v and o; DeepSeek's
// normed input, its two latents and o), gate/up, down (each expert's own down input, the shared
// expert's; with all-expert calibration every expert's gate/up read one input, the block's).
std::vector<double> inputWidths(const model::ModelConfig& c, bool moeAllExperts) {
    std::vector<double> widths;
    for (const auto& group : model::attentionInputGroups(c, widestAttentionLayer(c)))
        widths.push_back(double(group.front().in));
    if (moeAllExperts && c.isMoe()) widths.push_back(double(c.hiddenSize));
    for (int e = 0; e < int(experts(c)); ++e) {
        if (!(moeAllExperts && c.isMoe())) widths.push_back(double(c.hiddenSize));
        widths.push_back(mlpWidth(c));
    }
    if (c.isMoe() && c.moe.sharedExpertIntermediateSize > 0) {
        if (!moeAllExperts) widths.push_back(double(c.hiddenSize));
        widths.push_back(double(c.moe.sharedExpertIntermediateSize));
    }
    return widths;
}

// The most output rows of a linear of the layer (the largest one GPTQ copies beside its codes).
double widestRows(const model::ModelConfig& c) {
    double rows = std::max<double>(double(c.hiddenSize), mlpWidth(c));
    for (const model::LinearShape& l : model::attentionLinears(c, widestAttentionLayer(c)))
        rows = std::max(rows, double(l.out));
    return rows;
}

// The f64 running sums of every input, lower-triangle tiles of 256 only (HessianAccumulator).
double runningSumBytes(const model::ModelConfig& c, bool moeAllExperts) {
    double bytes = 0;
    for (double n : inputWidths(c, moeAllExperts)) bytes += n * (n + 256.0) / 2.0 * sizeof(double);
    return bytes;
}

// Every input accumulates every token (all-expert calibration shows each expert all of them; routed
// only, a token reaches its top-k experts' inputs).
double hessianFlopsPerToken(const model::ModelConfig& c, bool moeAllExperts) {
    double flops = 0;
    for (double n : inputWidths(c, moeAllExperts)) flops += n * n;
    if (c.isMoe() && !moeAllExperts) {
        const double h = c.hiddenSize, w = mlpWidth(c);
        flops -= (experts(c) - double(c.moe.numExpertsPerToken)) * (h * h + w * w);
    }
    return flops;
}

// CheckpointWeights::lmHead multiplies the head 8192 vocabulary rows at a time: one block in f32 and
// its product with the sequence, beside the head's mapped pages (resident until the logits are done).
double lmHeadWorkingBytes(const WorkloadShape& s) {
    const double block = std::min(8192.0, double(s.config.vocabSize));
    const double sequence = std::max(s.evaluationSequenceLength, 1);
    return block * (double(s.config.hiddenSize) + sequence) * sizeof(float) + double(s.lmHeadFileBytes);
}

}  // namespace

std::string formatBytes(std::uint64_t bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = static_cast<double>(bytes);
    int u = 0;
    while (v >= 1024.0 && u < 4) v /= 1024.0, ++u;
    char text[32];
    std::snprintf(text, sizeof text, u == 0 ? "%.0f %s" : "%.2f %s", v, units[u]);
    return text;
}

std::string ResourceEstimate::describe() const {
    std::ostringstream out;
    out << "predicted peak memory " << formatBytes(peakBytes) << " of " << formatBytes(availableBytes)
        << (limitedByMaxMemory ? " allowed (--max-memory)" : " available");
    if (layerWeightBytes > 0) out << " (a decoder layer's weights in f32: " << formatBytes(layerWeightBytes) << ")";
    // Whole seconds past 10, never in the stream's exponent notation (a 671B model's 8.5e+06 s).
    out << ", about " << std::fixed << std::setprecision(seconds < 10 ? 1 : 0) << seconds << " s";
    if (spilledBytes > 0) out << ", " << formatBytes(spilledBytes) << " of hidden states stream from the work folder";
    return out.str();
}

std::uint64_t availableMemoryBytes() {
    std::ifstream in("/proc/meminfo");
    std::string key;
    std::uint64_t value = 0;
    std::string unit;
    while (in >> key >> value >> unit)
        if (key == "MemAvailable:") return value * 1024;
    return 0;
}

std::string ResourceEstimate::belowFixedPart() const {
    if (!limitedByMaxMemory || residentAtStartBytes <= availableBytes) return {};
    return "--max-memory " + formatBytes(availableBytes) +
           " is below what the process holds before any work: " + formatBytes(residentAtStartBytes) +
           " resident (the program, its libraries and the loaded texts)";
}

void returnFreedHeapToSystem() {
#if defined(__GLIBC__)
    ::malloc_trim(0);
#endif
}

std::uint64_t residentHighWaterBytes() {
    std::ifstream in("/proc/self/status");
    std::string key, unit;
    std::uint64_t value = 0;
    for (std::string line; std::getline(in, line);)
        if (std::istringstream(line) >> key >> value >> unit && key == "VmHWM:") return value * 1024;
    return 0;
}

std::uint64_t residentBytes() {
    std::ifstream in("/proc/self/statm");
    std::uint64_t size = 0, resident = 0;
    in >> size >> resident;
    return resident * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
}

double measureGemmRate() {
    const int n = 384;
    const MatrixF a = MatrixF::Random(n, n), b = MatrixF::Random(n, n);
    MatrixF c(n, n);
    c.noalias() = a * b;  // warm up the threads
    const auto start = std::chrono::steady_clock::now();
    const int repeats = 4;
    for (int i = 0; i < repeats; ++i) c.noalias() = a * b;
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return 2.0 * n * n * n * repeats / std::max(seconds, 1e-9);
}

// Measured per estimate, the rate followed whatever else the cores were doing: one plan's prediction
// moved between 4.9 s and 49 s, and more samples could predict less time. It is measured once per
// process (the best of a few short runs: other work slows a run, nothing speeds it up), so every
// estimate of a process uses the same rate and grows with the work it counts.
double machineGemmRate() {
    static const double rate = [] {
        double best = 0.0;
        for (int run = 0; run < 5; ++run) best = std::max(best, measureGemmRate());
        return best;
    }();
    return rate;
}

// The Job's peak, phase by phase, for one decoder layer (the last: every earlier layer is kept by then):
//  - hidden states: one calibration stream per true-sequential method, plus the original's when some
//    method quantizes from it; one evaluation stream per method and the original (per layer for
//    per-layer KL);
//  - the finished layers of every method (codes packed, scales);
//  - the layer's f32 weights, converted once, and the BF16 pages of its largest linear while it is
//    converted; with several methods a stream's quantized layer is decoded beside the original for
//    its forward passes; with one method the original linears are freed as they are quantized, so
//    when the widest input (down_proj) comes only its weight is left;
//  - statistics: the original stream's (sums and every input's cached H: the methods without their own
//    stream measure their output error from it), and a true-sequential method's own, freed input by
//    input: all its sums during the hook pass and while the narrower inputs are quantized (the cached H
//    of one of them, GPTQ's copy factored in place, its copy of the weight and codes), then the widest
//    input's H factored in place beside GPTQ's copy of the weight and codes;
//  - one forward pass's temporaries (a sequence's MLP activations);
//  - --rotate: while a layer is read and rotated, a transposed copy of its down_proj beside it;
//  - at the end, every method's layers unpacked for the result (with results on disk: only their
//    headers, as during the run) and the logits of one sequence.
std::uint64_t predictedJobBytes(const WorkloadShape& s) {
    const model::ModelConfig& c = s.config;
    const double L = c.numLayers;
    const double layerBytes = layerParameters(c) * sizeof(float);
    const bool baseStatistics = s.calibrationTokens > 0 && s.methods > s.sequentialMethods;
    const bool baseStream = baseStatistics || (s.calibrationTokens > 0 && s.gptaqMethods > 0);
    const double calibStreams = s.calibrationTokens > 0 ? (baseStream ? 1.0 : 0.0) + s.sequentialMethods : 0.0;
    // Per-layer KL keeps the original stream at every layer's input, in RAM or (results on disk) in the
    // layers' records, from which one layer's is read back at a time beside each method's copy of it.
    const double layerInputs = !s.perLayerKl ? 0.0 : s.resultsOnDisk ? 1.0 + s.methods : L;
    const double evalStreams = 1.0 + s.methods + layerInputs;
    const double hidden =
        std::max(0.0, (double(s.calibrationTokens) * calibStreams + double(s.evaluationTokens) * evalStreams) *
                              c.hiddenSize * sizeof(float) -
                          double(s.spilledHiddenBytes));
    const double keptPerWeight = s.keptBytesPerWeight >= 0 ? s.keptBytesPerWeight : 1.1 * s.methods;
    const double kept = keptPerWeight * layerParameters(c) * L;

    auto widths = inputWidths(c, s.moeAllExperts);
    std::sort(widths.begin(), widths.end(), std::greater<>());
    const double widest = widths[0], narrow = widths[1];  // down_proj's, and the next (q/k/v, gate/up)
    const double hWidest = widest * widest * sizeof(float);
    double hessians = 0;
    for (double n : widths) hessians += n * n * sizeof(float);
    const double sums = runningSumBytes(c, s.moeAllExperts);
    const double baseSet = baseStatistics ? sums + hessians : 0.0;
    const bool gptaq = s.gptaqMethods > 0;
    const double ownSums = s.sequentialMethods > 0 ? sums * (gptaq ? 3.0 : 1.0) : 0.0;  // GPTAQ's D: 2x H's sums
    const double rows = widestRows(c);
    // GPTQ's working set on a narrower input (H cached and its copy factored in place; the weight's copy
    // and codes of the largest linear reading it), and on the widest (H factored in place, the weight and
    // codes). GPTAQ adds D (P in its memory), a copy of H and the quantized weights.
    const double gptaqNarrow = gptaq ? 2.0 * narrow * narrow * sizeof(float) + rows * narrow * sizeof(float) : 0.0;
    const double gptaqWidest = gptaq ? 2.0 * hWidest + widest * c.hiddenSize * sizeof(float) : 0.0;
    const double gptqNarrow =
        2.0 * narrow * narrow * sizeof(float) + rows * narrow * (sizeof(float) + 2.0) + gptaqNarrow;
    const double gptqWidest = hWidest + widest * c.hiddenSize * (sizeof(float) + 2.0) + gptaqWidest;
    const bool downWidest = mlpWidth(c) >= widest;
    const double weightsAtWidest =
        (s.methods == 1 && downWidest) ? double(c.hiddenSize) * mlpWidth(c) * sizeof(float) : layerBytes;
    const double activations =
        double(std::max(s.evaluationSequenceLength, 1)) * (mlpWidth(c) * 3.0 + c.hiddenSize * 6.0) * sizeof(float);
    double working = layerBytes * (s.methods > 1 ? 2.0 : 1.0) + baseSet + activations;  // the quantized layer's passes
    if (s.rotated)  // reading the layer: its f32 weights and the transposed copy of down_proj rotateLayer makes
        working = std::max(working, layerBytes + baseSet + double(c.hiddenSize) * mlpWidth(c) * sizeof(float));
    if (s.calibrationTokens > 0) {
        working = std::max(working, layerBytes + baseSet + ownSums + activations);  // hook passes
        working = std::max(working, layerBytes + baseSet + ownSums + gptqNarrow);   // q/k/v, o, gate/up
        working = std::max(working, weightsAtWidest + baseSet + gptqWidest);        // down_proj
    }
    const double pages = double(c.hiddenSize) * mlpWidth(c) * 2.0;
    const double during = kept + working + pages;
    // The end: the layers unpacked (a byte per code), one sequence's logits of the original and of a
    // method, and the lm_head's working set while the second is computed.
    const double unpacked = s.resultsOnDisk ? kept : (keptPerWeight + 0.5 * s.methods) * layerParameters(c) * L;
    const double end = unpacked + double(std::max(s.evaluationSequenceLength, 1)) * c.vocabSize * 2.0 * sizeof(float) +
                       lmHeadWorkingBytes(s);
    return static_cast<std::uint64_t>(hidden + std::max(during, end));
}

ResourceEstimate estimateResources(const WorkloadShape& s) {
    const model::ModelConfig& c = s.config;
    const double L = c.numLayers;
    // The original's calibration pass only runs when a method quantizes from its statistics, or GPTAQ
    // pairs its inputs with the original's (one more pass of the original per GPTAQ method, and D's
    // full-square GEMM beside H's half).
    const double base = s.methods > s.sequentialMethods || s.gptaqMethods > 0 ? 1.0 : 0.0;
    const double calibStreams = s.calibrationTokens > 0 ? base + s.sequentialMethods + 2.0 * s.gptaqMethods : 0.0;

    ResourceEstimate e;
    e.availableBytes = availableMemoryBytes();
    e.residentAtStartBytes = residentBytes();
    e.fixedBytes = e.residentAtStartBytes + kRunOverheadBytes + (mallocOnHugePages() ? kHugePageOverheadBytes : 0);
    e.highWaterBytes = residentHighWaterBytes();
    e.peakBytes = e.fixedBytes + predictedJobBytes(s);
    e.layerWeightBytes = static_cast<std::uint64_t>(layerParameters(c) * sizeof(float));
    e.gemmFlopsPerSecond = machineGemmRate();

    const double forwardPerToken =
        2.0 * activeParameters(c) + 4.0 * double(std::max(s.evaluationSequenceLength, 1)) * c.qDim();
    const double logitsPerToken = 2.0 * double(c.hiddenSize) * c.vocabSize;
    const double calibPasses = s.calibrationTokens > 0 ? base + 2.0 * s.sequentialMethods + s.gptaqMethods : 0.0;
    double flops = double(s.calibrationTokens) * L *
                   (calibPasses * forwardPerToken + calibStreams * hessianFlopsPerToken(c, s.moeAllExperts));
    flops += double(s.evaluationTokens) * (1.0 + s.methods) * (L * forwardPerToken + logitsPerToken);
    if (s.perLayerKl)
        flops += double(s.evaluationTokens) * s.methods * (L * (L + 1) / 2 * forwardPerToken + L * logitsPerToken);
    flops += s.quantizeFlopsPerWeight * layerParameters(c) * L;
    // Attention, norms and conversions run well below the GEMM rate: count them at half of it.
    e.seconds = flops / std::max(e.gemmFlopsPerSecond * 0.5, 1e6);
    return e;
}

}  // namespace qs::pipeline
