// Hessian accumulation (H = 2 XᵀX / n over 4096-row chunks) next to a plain Eigen SGEMM of the same
// shape in the same process. Both rates count 2·n·f² flops (the GEMM that XᵀX is), so
// hessian_GFLOPs / sgemm_GFLOPs is the efficiency the target (≥ 70%) refers to; the accumulator only
// computes the lower triangle, so it can exceed 100%.
#include <benchmark/benchmark.h>

#include <chrono>

#include "bench_common.h"
#include "qs/quant/hessian.h"

namespace {

void hessianAccumulate(benchmark::State& state) {
    const std::int64_t f = state.range(0), n = 4096;
    const qs::MatrixF x = qs::bench::benchInputs(n, f);
    for (auto _ : state) {
        qs::quant::HessianAccumulator acc(f);
        acc.add(x, 4096);
        const qs::MatrixF h = acc.finalize();
        benchmark::DoNotOptimize(h.data());
    }
    const double flops = 2.0 * n * f * f;
    state.counters["hessian_GFLOPs"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
    // the same GEMM, plain Eigen (threaded), timed here
    Eigen::MatrixXf g(f, f);
    g.noalias() = x.transpose() * x;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 3; ++i) g.noalias() = x.transpose() * x;
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 3;
    benchmark::DoNotOptimize(g.data());
    state.counters["sgemm_GFLOPs"] = flops / s * 1e-9;
}

}  // namespace

BENCHMARK(hessianAccumulate)->Arg(4096)->Arg(1024)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_MAIN();
