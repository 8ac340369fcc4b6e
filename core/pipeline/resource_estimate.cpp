#include "qs/pipeline/resource_estimate.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "qs/matrix.h"

namespace qs::pipeline {
namespace {

double layerParameters(const model::ModelConfig& c) {
    const double h = c.hiddenSize;
    return h * c.qDim() + 2.0 * h * c.kvDim() + c.qDim() * h + 3.0 * h * c.intermediateSize;
}

// Each distinct linear input's Hessian: f64 running sum + the f32 result.
double hessianBytes(const model::ModelConfig& c) {
    const double h = c.hiddenSize;
    const double inputs = h * h * 2 + double(c.qDim()) * c.qDim() + double(c.intermediateSize) * c.intermediateSize;
    return inputs * (sizeof(double) + sizeof(float));
}

double hessianFlopsPerToken(const model::ModelConfig& c) {
    const double h = c.hiddenSize;
    return 2.0 * (h * h * 2 + double(c.qDim()) * c.qDim() + double(c.intermediateSize) * c.intermediateSize) / 2.0;
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
        << " available, about " << (seconds < 10 ? std::round(seconds * 10) / 10 : std::round(seconds)) << " s";
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
    c.noalias() = a * b;   // warm up the threads
    const auto start = std::chrono::steady_clock::now();
    const int repeats = 4;
    for (int i = 0; i < repeats; ++i) c.noalias() = a * b;
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return 2.0 * n * n * n * repeats / std::max(seconds, 1e-9);
}

ResourceEstimate estimateResources(const WorkloadShape& s) {
    const model::ModelConfig& c = s.config;
    const double L = c.numLayers;
    const double layerBytes = layerParameters(c) * sizeof(float);
    const double calibStreams = s.calibrationTokens > 0 ? 1.0 + s.sequentialMethods : 0.0;
    const double evalStreams = 1.0 + s.methods + (s.perLayerKl ? L : 0.0);
    const double hidden = (double(s.calibrationTokens) * calibStreams + double(s.evaluationTokens) * evalStreams) *
                          c.hiddenSize * sizeof(float);
    // Every method keeps its quantized linears (about a byte per weight plus scales) for evaluation.
    const double quantized = s.methods * layerParameters(c) * L * 1.1;
    const double working = layerBytes * (2.0 + s.methods) + hessianBytes(c) * std::max(1.0, calibStreams) +
                           double(std::max(s.evaluationSequenceLength, 1)) * (c.vocabSize * 2.0 + c.intermediateSize * 3.0) * sizeof(float);

    ResourceEstimate e;
    e.availableBytes = availableMemoryBytes();
    e.peakBytes = residentBytes() + static_cast<std::uint64_t>(hidden + quantized + working);
    e.gemmFlopsPerSecond = measureGemmRate();

    const double forwardPerToken = 2.0 * layerParameters(c) + 4.0 * double(std::max(s.evaluationSequenceLength, 1)) * c.qDim();
    const double logitsPerToken = 2.0 * double(c.hiddenSize) * c.vocabSize;
    const double calibPasses = s.calibrationTokens > 0 ? 1.0 + 2.0 * s.sequentialMethods : 0.0;
    double flops = double(s.calibrationTokens) * L * (calibPasses * forwardPerToken + calibStreams * hessianFlopsPerToken(c));
    flops += double(s.evaluationTokens) * (1.0 + s.methods) * (L * forwardPerToken + logitsPerToken);
    if (s.perLayerKl)
        flops += double(s.evaluationTokens) * s.methods * (L * (L + 1) / 2 * forwardPerToken + L * logitsPerToken);
    flops += s.quantizeFlopsPerWeight * layerParameters(c) * L;
    // Attention, norms and conversions run well below the GEMM rate: count them at half of it.
    e.seconds = flops / std::max(e.gemmFlopsPerSecond * 0.5, 1e6);
    return e;
}

}  // namespace qs::pipeline
