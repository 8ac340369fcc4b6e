#pragma once
// Predicts a job's peak memory and run time before it starts, so a plan that cannot fit is refused
// with the numbers instead of dying half-way.
#include <cstdint>
#include <string>
#include <vector>

#include "qs/model/model_config.h"

namespace qs::pipeline {

struct ResourceEstimate {
    // The process's resident set at its peak: what it holds when estimated (residentBytes(): the
    // program, its libraries, what the caller has loaded) plus the job's own peak (predictedJobBytes),
    // and, under --max-memory, at least the high-water mark the process has already reached.
    std::uint64_t peakBytes = 0;
    std::uint64_t residentAtStartBytes = 0;  // residentBytes() when estimated
    // The fixed part: residentAtStartBytes and what the run adds outside the job's modelled work
    // (kRunOverheadBytes, and kHugePageOverheadBytes on huge pages). peakBytes = fixedBytes + predictedJobBytes (at least highWaterBytes under a limit).
    std::uint64_t fixedBytes = 0;
    std::uint64_t highWaterBytes = 0;  // the process's peak resident set so far (VmHWM)
    double seconds = 0.0;
    std::uint64_t availableBytes = 0;  // MemAvailable when estimated, or the plan's maxMemory when less
    bool limitedByMaxMemory = false;   // availableBytes is the plan's maxMemory
    double gemmFlopsPerSecond = 0.0;   // the rate the time is predicted from (measured here)
    // The travelling hidden states: all of them, and those that spill to the work folder (not counted
    // in peakBytes), by the names the work folder gives them.
    std::uint64_t hiddenBytes = 0;
    std::uint64_t spilledBytes = 0;
    std::vector<std::string> spilledStreams;
    // One decoder layer's weights in f32 (a MoE layer's: every expert, the shared one and the router),
    // which the Job converts and holds a layer at a time: what one machine needs however deep the model.
    std::uint64_t layerWeightBytes = 0;

    bool fits() const { return peakBytes <= availableBytes; }
    // "predicted peak memory 1.2 GiB of 20.1 GiB available (a decoder layer's weights in f32: 0.3 GiB),
    // about 40 s" (", 3.1 GiB of hidden states stream from the work folder" when some spill)
    std::string describe() const;
    // Under --max-memory, when the process already holds more than the limit before any work: one
    // line naming both numbers; else empty.
    std::string belowFixedPart() const;
};

// What a run adds to the resident set outside the job's modelled work, measured with the plan of
// bench/README.md's "fixed part" table (2 x 512 wide, gptq4 + rtn4, 2026-12-02): the code pages the
// run touches after the estimate (1.7 MiB in smaps: BLAS kernels, the methods' own code) and the
// heap's partly used pages once malloc_trim has returned the free ones. The peak exceeded the
// modelled part by 3.8 to 7.0 MiB over four plans (unlimited, 400M, 560M, 16 samples); 8 MiB covers them.
constexpr std::uint64_t kRunOverheadBytes = 8ull << 20;
// On huge pages (qs/huge_pages.h: the programs' default where THP is "madvise") each large mapping and
// the heap's top are resident in 2 MiB steps: the same plan peaked 12.5 MiB higher than on 4 KiB pages
// under --max-memory 400M, 5.7 MiB under 560M (bench/README.md, 2026-12-03). Added to the fixed part then.
constexpr std::uint64_t kHugePageOverheadBytes = 16ull << 20;

struct WorkloadShape {
    model::ModelConfig config;
    int methods = 0;            // methods to quantize
    int sequentialMethods = 0;  // of those, with their own calibration stream (GPTQ, AWQ)
    // Of those, GPTAQ: their inputs are paired with the original stream's (which travels, and runs each
    // layer once more), and D = 2 ΔXᵀX̃ / n accumulates beside H in f64 (all features², twice H's sums);
    // while a linear is quantized D (then P, in its memory), a copy of H and the quantized weights.
    int gptaqMethods = 0;
    // The finished layers as the Job keeps them (codes, packed two per byte when they fit in four
    // bits, plus scales), in bytes per weight summed over the methods; negative: 1.1 per method. 0 is
    // what it says: a GGUF method's blocks in the work folder leave nothing in memory.
    double keptBytesPerWeight = -1.0;
    // The finished layers' codes are in the work folder (JobPlan::resultsOnDisk): keptBytesPerWeight
    // counts only what stays in RAM, and nothing is unpacked at the end.
    bool resultsOnDisk = false;
    std::size_t calibrationTokens = 0;
    std::size_t evaluationTokens = 0;
    int evaluationSequenceLength = 0;
    bool perLayerKl = false;
    // A MoE model calibrates every expert on every token (JobPlan::moeCalibrateAllExperts): one
    // Hessian for all the experts' gate/up input; else one per expert.
    bool moeAllExperts = true;
    // Travelling hidden states that live in the work folder instead of memory (JobPlan::maxMemory).
    std::uint64_t spilledHiddenBytes = 0;
    double quantizeFlopsPerWeight = 0.0;  // the methods' own work per weight, summed (trellis, GPTQ dominate)
    // The lm_head's bytes in the checkpoint (the tied embedding's when tied): its mapped pages stay
    // resident while the logits are computed block by block (released after each sequence's logits).
    std::uint64_t lmHeadFileBytes = 0;
    // --rotate (JobPlan::rotate): a layer is rotated as it is read, beside a transposed copy of its largest
    // residual writer (down_proj); the rotation itself keeps only its signs.
    bool rotated = false;
};

ResourceEstimate estimateResources(const WorkloadShape& shape);
// The memory the job adds to the process's current resident set at its peak (estimateResources'
// peakBytes less residentBytes()), following the Job's design: see resource_estimate.cpp.
std::uint64_t predictedJobBytes(const WorkloadShape& shape);

// The f32 GEMM rate of this machine in FLOP/s, measured on first use (about 0.1 s: call it off a GUI
// thread) and the same for the rest of the process.
double machineGemmRate();

// MemAvailable of /proc/meminfo, or 0 when unknown.
std::uint64_t availableMemoryBytes();
// The process's current resident set size.
std::uint64_t residentBytes();
// Hands the heap's free pages back to the system (glibc keeps what the layers' work freed, up to tens
// of MB in holes and at the top of the heap, where the next phase's large blocks do not reuse it).
void returnFreedHeapToSystem();
// The largest resident set the process has had so far (VmHWM of /proc/self/status), 0 when unknown.
std::uint64_t residentHighWaterBytes();
// A short f32 GEMM measured now, in FLOP/s.
double measureGemmRate();

std::string formatBytes(std::uint64_t bytes);  // "1.23 GiB"

}  // namespace qs::pipeline
