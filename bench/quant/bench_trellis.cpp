// Trellis (QTIP-style) quantization speed in weights per second, Viterbi included, and the error
// it reaches on Gaussian weights (unit-variance MSE after the rotation, as a counter).
#include <ctime>
#include <random>

#include <benchmark/benchmark.h>
#include <omp.h>

#include "qs/quant/trellis.h"

namespace {

using qs::MatrixF;

MatrixF gaussian(std::int64_t rows, std::int64_t cols) {
    std::mt19937_64 rng(3);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    MatrixF m(rows, cols);
    for (std::int64_t i = 0; i < m.size(); ++i) m.data()[i] = normal(rng);
    return m;
}

// args: L, K, rows of 256 weights (fewer at large L, whose Viterbi costs 2^L per weight)
void BM_Trellis(benchmark::State& state) {
    const int L = static_cast<int>(state.range(0)), K = static_cast<int>(state.range(1));
    const MatrixF w = gaussian(state.range(2), 256);
    qs::quant::TrellisOptions options;
    options.L = L;
    options.K = K;
    double mse = 0.0, cpuSeconds = 0.0;
    for (auto _ : state) {
        const std::clock_t c0 = std::clock();  // CPU time of every thread of the process
        const qs::quant::QuantizedLinear q = qs::quant::quantizeTrellis(w, options);
        cpuSeconds += static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
        state.PauseTiming();
        mse = (qs::quant::trellisDecode(q) - w).squaredNorm() / static_cast<double>(w.size());
        state.ResumeTiming();
    }
    state.SetItemsProcessed(state.iterations() * w.size());
    state.counters["weights_per_s"] =
        benchmark::Counter(static_cast<double>(state.iterations() * w.size()), benchmark::Counter::kIsRate);
    // per core: weights per CPU second, which a shared machine's load does not dilute (each group is
    // one thread's work, so this is the single-core rate whatever the thread count)
    state.counters["weights_per_cpu_s"] = static_cast<double>(state.iterations() * w.size()) / cpuSeconds;
    state.counters["threads"] = omp_get_max_threads();
    state.counters["mse"] = mse;
    state.counters["bpw"] = qs::quant::trellisBitsPerWeight(L, K);
}
BENCHMARK(BM_Trellis)
    ->Args({8, 2, 512})
    ->Args({10, 2, 128})
    ->Args({12, 2, 32})
    ->Args({16, 2, 16})
    ->Args({8, 3, 512})
    ->Args({16, 3, 16})
    ->Args({16, 4, 8})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_TrellisDecode(benchmark::State& state) {
    const MatrixF w = gaussian(512, 256);
    qs::quant::TrellisOptions options;
    options.L = static_cast<int>(state.range(0));
    const qs::quant::QuantizedLinear q = qs::quant::quantizeTrellis(w, options);
    for (auto _ : state) {
        MatrixF d = qs::quant::trellisDecode(q);
        benchmark::DoNotOptimize(d.data());
    }
    state.counters["weights_per_s"] =
        benchmark::Counter(static_cast<double>(state.iterations() * w.size()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_TrellisDecode)->Arg(8)->Arg(12)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
