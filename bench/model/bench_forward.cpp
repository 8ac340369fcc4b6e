// Forward pass of a 2-layer Llama-shaped model (random weights in memory) over T tokens, against the
// SGEMM rate of this machine measured in the same process, on the MLP's shape [T, hidden] x
// [hidden, intermediate] with the same threads. `vs_sgemm` = the forward pass's FLOP rate (linears,
// attention as computed, lm_head) over that SGEMM rate: 1.0 would mean every cycle went to GEMMs at
// peak; the rest is attention's small products, softmax, RoPE, RMSNorm, SiLU and copies.
// Rates are per CPU second (Google Benchmark's default CPU time, and the SGEMM timed the same way),
// so that the ratio holds on a loaded machine; with several threads, time spent waiting at OpenMP
// barriers counts too.
#include <ctime>
#include <map>
#include <numeric>
#include <tuple>
#include <vector>

#include <benchmark/benchmark.h>
#include <omp.h>

#include "qs/model/transformer.h"

#include "synthetic_model.h"

namespace {

using namespace qs;

constexpr int kVocab = 8192;

// CPU seconds of this process (all threads): the machine is shared, and under load wall time
// measures the other processes; both rates below are per CPU second.
double cpuSeconds() {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

double sgemmGflops(std::int64_t tokens, std::int64_t in, std::int64_t out) {
    static std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t, int>, double> cache;
    const auto key = std::make_tuple(tokens, in, out, omp_get_max_threads());
    if (auto it = cache.find(key); it != cache.end()) return it->second;
    const MatrixF x = bench::benchInputs(tokens, in, 21), w = bench::benchWeights(out, in, 22);
    MatrixF y(tokens, out);
    y.noalias() = x * w.transpose();  // warm up
    double best = 1e30;
    for (int i = 0; i < 5; ++i) {
        const double t0 = cpuSeconds();
        y.noalias() = x * w.transpose();
        best = std::min(best, cpuSeconds() - t0);
    }
    benchmark::DoNotOptimize(y.data());
    return cache[key] = 2.0 * double(tokens) * double(in) * double(out) / best / 1e9;
}

std::vector<model::TokenId> tokenIds(int count) {
    std::vector<model::TokenId> ids(static_cast<std::size_t>(count));
    for (int i = 0; i < count; ++i) ids[std::size_t(i)] = (i * 7919) % kVocab;
    return ids;
}

// Args: tokens, hidden size, threads (0 = all cores).
void forward(benchmark::State& state) {
    const int tokens = int(state.range(0)), hidden = int(state.range(1)), threads = int(state.range(2));
    const int previousThreads = omp_get_max_threads();
    if (threads > 0) omp_set_num_threads(threads);
    const model::ModelConfig config = bench::llamaShape(hidden, 2, kVocab);
    model::Transformer transformer(config, bench::randomModel(config), {.keepAllLayers = true});
    const auto ids = tokenIds(tokens);
    benchmark::DoNotOptimize(transformer.forward(ids).data());  // loads the layers once
    for (auto _ : state) {
        const MatrixF logits = transformer.forward(ids);
        benchmark::DoNotOptimize(logits.data());
    }
    const double flops =
        config.numLayers * (bench::linearFlops(config, tokens) + bench::attentionFlops(config, tokens)) +
        2.0 * tokens * double(hidden) * kVocab;
    const double sgemm = sgemmGflops(tokens, hidden, config.intermediateSize);
    state.counters["tokens/s"] = benchmark::Counter(double(tokens), benchmark::Counter::kIsIterationInvariantRate);
    state.counters["GFLOP/s"] = benchmark::Counter(flops / 1e9, benchmark::Counter::kIsIterationInvariantRate);
    state.counters["sgemm_GFLOP/s"] = sgemm;
    // A rate counter of flops / sgemm rate reads as the forward FLOP rate over the SGEMM rate.
    state.counters["vs_sgemm"] = benchmark::Counter(flops / 1e9 / sgemm, benchmark::Counter::kIsIterationInvariantRate);
    state.counters["threads"] = omp_get_max_threads();
    omp_set_num_threads(previousThreads);
}

}  // namespace

BENCHMARK(forward)
    ->ArgNames({"T", "hidden", "threads"})
    ->Args({64, 1024, 1})
    ->Args({256, 1024, 1})
    ->Args({1024, 1024, 1})
    ->Args({256, 2048, 1})
    ->Args({256, 1024, 0})
    ->Args({1024, 1024, 0})
    ->Args({256, 2048, 0})
    ->Unit(benchmark::kMillisecond)
    ->MinTime(1.0);
