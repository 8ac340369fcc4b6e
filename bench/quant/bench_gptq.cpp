// GPTQ on Llama-sized layers (4096x4096, 14336x4096 as the MLP's gate/up) with H from 4096 correlated
// samples. Counters: the trailing-update GEMM work (rows * cols² flops) and the time it would take at
// this machine's SGEMM rate, measured in the same process, so "GPTQ / GEMM work" reads off directly.
#include <benchmark/benchmark.h>

#include <chrono>

#include "bench_common.h"
#include "qs/quant/gptq.h"
#include "qs/quant/hessian.h"

namespace {

double sgemmGflops(std::int64_t n) {
    const qs::MatrixF a = qs::bench::benchWeights(n, n, 11), b = qs::bench::benchWeights(n, n, 12);
    qs::MatrixF c(n, n);
    c.noalias() = a * b;   // warm up
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 3; ++i) c.noalias() = a * b;
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 3;
    benchmark::DoNotOptimize(c.data());
    return 2.0 * n * n * n / s / 1e9;
}

void gptq(benchmark::State& state) {
    const std::int64_t rows = state.range(0), cols = state.range(1);
    const qs::MatrixF w = qs::bench::benchWeights(rows, cols);
    const qs::MatrixF h = qs::quant::hessian(qs::bench::benchInputs(4096, cols));
    const bool actOrder = (state.range(2) & 1) != 0;
    const bool measure = (state.range(2) & 2) != 0;   // the output error costs one more GEMM, W·H
    double loss = 0;
    for (auto _ : state) {
        const qs::quant::QuantizedLinear q = qs::quant::quantizeGptq(
            w, h, {.bits = 4, .groupSize = 128, .actOrder = actOrder, .sym = false, .measureError = measure});
        loss = q.gptqLoss;
        benchmark::DoNotOptimize(q.codes.data());
    }
    const double gemmFlops = static_cast<double>(rows) * cols * cols;   // Σ over blocks of 2 * rows * bs * rest
    const double rate = sgemmGflops(4096);
    state.counters["sgemm_GFLOPs"] = rate;
    state.counters["gemm_work_s"] = gemmFlops / rate / 1e9;
    state.counters["loss"] = loss;
}

}  // namespace

// Third argument: bit 0 act-order, bit 1 measure the output error.
BENCHMARK(gptq)->Args({4096, 4096, 0})->Args({4096, 4096, 1})->Args({4096, 4096, 2})->Unit(benchmark::kSecond)->Iterations(2)->UseRealTime();
BENCHMARK(gptq)->Args({14336, 4096, 0})->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();
BENCHMARK_MAIN();
