// Hessian accumulation (H = 2 XᵀX / n over 4096-row chunks) next to a plain Eigen SGEMM of the same
// shape in the same process. Both rates count 2·n·f² flops (the GEMM that XᵀX is), so
// hessian_GFLOPs / sgemm_GFLOPs is the efficiency the target (≥ 70%) refers to; the accumulator only
// computes the lower triangle, so it can exceed 100%. Both are timed in CPU seconds of the process as
// well (cpu_* counters), which the load of a shared machine does not dilute.
#include <algorithm>
#include <chrono>
#include <ctime>

#include <benchmark/benchmark.h>

#include "qs/quant/hessian.h"

#include "bench_common.h"

namespace {

double cpuSeconds() {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

void hessianAccumulate(benchmark::State& state) {
    const std::int64_t f = state.range(0), n = 4096;
    const qs::MatrixF x = qs::bench::benchInputs(n, f);
    double cpu = 1e30;
    for (auto _ : state) {
        const double c0 = cpuSeconds();
        qs::quant::HessianAccumulator acc(f);
        acc.add(x, 4096);
        const qs::MatrixF h = acc.finalize();
        benchmark::DoNotOptimize(h.data());
        cpu = std::min(cpu, cpuSeconds() - c0);
    }
    const double flops = 2.0 * n * f * f;
    state.counters["hessian_GFLOPs"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
    // the same GEMM as the code writes products (Eigen, which calls OpenBLAS), timed here
    Eigen::MatrixXf g(f, f);
    g.noalias() = x.transpose() * x;
    double sgemmCpu = 1e30;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 3; ++i) {
        const double c0 = cpuSeconds();
        g.noalias() = x.transpose() * x;
        sgemmCpu = std::min(sgemmCpu, cpuSeconds() - c0);
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 3;
    benchmark::DoNotOptimize(g.data());
    state.counters["sgemm_GFLOPs"] = flops / s * 1e-9;
    state.counters["cpu_hessian_GFLOPs"] = flops / cpu * 1e-9;
    state.counters["cpu_sgemm_GFLOPs"] = flops / sgemmCpu * 1e-9;
    state.counters["cpu_vs_sgemm"] = sgemmCpu / cpu;
}

}  // namespace

BENCHMARK(hessianAccumulate)->Arg(4096)->Arg(1024)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_MAIN();
