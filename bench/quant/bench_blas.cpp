// The BLAS under Eigen (cmake/QsBlas.cmake), measured against the libraries it could be, in one run:
// each row times Eigen's product as our code writes it (which EIGEN_USE_BLAS sends to OpenBLAS), then
// alternates best-of-7 CPU-time measurements of the same shape through OpenBLAS's own sgemm_, Eigen's built-in
// kernel (bench/quant/eigen_native_gemm.cpp, a library built without EIGEN_USE_BLAS) and BLIS's sgemm_
// when libblis is installed (loaded privately, so its sgemm_ does not replace OpenBLAS's). All on the
// OpenMP team's threads (OMP_NUM_THREADS). Rates are GFLOP per CPU second; vs_openblas = Eigen's rate /
// OpenBLAS's own (target ≥ 0.95).
#include <algorithm>
#include <ctime>
#include <functional>

#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <omp.h>

#include "bench_common.h"
#include "eigen_native_gemm.h"

extern "C" void spotrf_(const char* uplo, const int* n, float* a, const int* lda, int* info);

namespace {

using ColMatrix = Eigen::MatrixXf;
using SgemmFn = int(const char*, const char*, const int*, const int*, const int*, const float*, const float*,
                    const int*, const float*, const int*, const float*, float*, const int*);

// CPU seconds of the process (every thread) spent in f: on a shared machine the other processes'
// load stretches wall time by whatever the scheduler gives them, CPU time much less.
double cpuSeconds(const std::function<void()>& f) {
    timespec t0{}, t1{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
    f();
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
    return static_cast<double>(t1.tv_sec - t0.tv_sec) + 1e-9 * static_cast<double>(t1.tv_nsec - t0.tv_nsec);
}

// Best of `rounds` alternating runs of each variant, in CPU time (alternating exposes every variant
// to the same moments of the machine's load). Returns GFLOP per CPU second per variant: with one
// thread the single-core rate; with more, OpenBLAS's threads waiting for work count too.
std::vector<double> alternatingRates(const std::vector<std::function<void()>>& variants, double flops, int rounds = 7) {
    std::vector<double> best(variants.size(), 1e30);
    for (const auto& f : variants) f();  // warm-up: threads started, pages touched
    for (int r = 0; r < rounds; ++r)
        for (std::size_t i = 0; i < variants.size(); ++i) best[i] = std::min(best[i], cpuSeconds(variants[i]));
    std::vector<double> rates;
    for (double s : best) rates.push_back(flops / s * 1e-9);
    return rates;
}

// BLIS's sgemm_, from a privately loaded libblis (null when it is not installed).
SgemmFn* blisSgemm() {
    static SgemmFn* fn = []() -> SgemmFn* {
        void* lib = dlopen("libblis.so.4", RTLD_NOW | RTLD_LOCAL);
        if (!lib) return nullptr;
        if (auto* setThreads = reinterpret_cast<void (*)(long)>(dlsym(lib, "bli_thread_set_num_threads")))
            setThreads(omp_get_max_threads());  // BLIS reads its own setting, not the OpenMP team's
        return reinterpret_cast<SgemmFn*>(dlsym(lib, "sgemm_"));
    }();
    return fn;
}

ColMatrix randomMatrix(std::int64_t rows, std::int64_t cols, unsigned seed) {
    return qs::bench::benchWeights(rows, cols, seed);  // row-major N(0, 0.02²), copied column-major
}

// args: m, n, k of C[m, n] = A[m, k] B[k, n], column-major; update: 1 for C -= A B (GPTQ's lazy
// trailing update, BLAS's beta = 1), 0 for C = A B
void sgemm(benchmark::State& state) {
    const int m = static_cast<int>(state.range(0)), n = static_cast<int>(state.range(1)),
              k = static_cast<int>(state.range(2));
    const bool update = state.range(3) != 0;
    const ColMatrix a = randomMatrix(m, k, 1), b = randomMatrix(k, n, 2);
    ColMatrix c = ColMatrix::Zero(m, n);
    const double flops = 2.0 * m * n * k;
    auto eigen = [&] {
        if (update)
            c.noalias() -= a * b;
        else
            c.noalias() = a * b;
    };
    for (auto _ : state) {
        eigen();
        benchmark::DoNotOptimize(c.data());
    }
    const float alpha = update ? -1.0f : 1.0f, beta = update ? 1.0f : 0.0f;
    auto direct = [&](SgemmFn* fn) {
        return [&, fn] { fn("N", "N", &m, &n, &k, &alpha, a.data(), &m, b.data(), &k, &beta, c.data(), &m); };
    };
    std::vector<std::function<void()>> variants = {eigen, direct(&sgemm_)};
    if (!update) variants.push_back([&] { qsEigenNativeGemm(m, n, k, a.data(), b.data(), c.data()); });
    if (SgemmFn* blis = blisSgemm()) variants.push_back(direct(blis));
    const std::vector<double> r = alternatingRates(variants, flops);
    state.counters["threads"] = omp_get_max_threads();
    state.counters["eigen_GFLOPs"] = r[0];
    state.counters["openblas_GFLOPs"] = r[1];
    state.counters["vs_openblas"] = r[0] / r[1];
    if (!update) state.counters["eigen_native_GFLOPs"] = r[2];
    if (blisSgemm()) state.counters["blis_GFLOPs"] = r.back();  // the last variant when present
}

// H += XᵀX on the lower triangle (n features, k samples): Eigen's rankUpdate, which EIGEN_USE_BLAS
// sends to ssyrk_, against the full SGEMM of the same product. Rates count the SGEMM's 2 n² k flops,
// so a SYRK that saves its half of the work reads above the SGEMM.
void syrk(benchmark::State& state) {
    const std::int64_t n = state.range(0), k = state.range(1);
    const ColMatrix x = randomMatrix(k, n, 3);
    ColMatrix h = ColMatrix::Zero(n, n);
    for (auto _ : state) {
        h.selfadjointView<Eigen::Lower>().rankUpdate(x.transpose());
        benchmark::DoNotOptimize(h.data());
    }
    const std::vector<double> r =
        alternatingRates({[&] { h.selfadjointView<Eigen::Lower>().rankUpdate(x.transpose()); },
                          [&] { h.noalias() = x.transpose() * x; }},
                         2.0 * static_cast<double>(n) * n * k);
    state.counters["threads"] = omp_get_max_threads();
    state.counters["syrk_GFLOPs"] = r[0];
    state.counters["sgemm_GFLOPs"] = r[1];
    state.counters["vs_sgemm"] = r[0] / r[1];
}

// Cholesky of an n x n SPD matrix: Eigen's LLT (its blocked algorithm, whose products now run in
// OpenBLAS) against OpenBLAS's own LAPACK spotrf_, i.e. what EIGEN_USE_LAPACKE would buy. Rates count
// n³/3 flops.
void cholesky(benchmark::State& state) {
    const int n = static_cast<int>(state.range(0));
    const ColMatrix x = randomMatrix(2 * n, n, 4);
    ColMatrix spd = x.transpose() * x;
    spd.diagonal().array() += 0.01f;
    ColMatrix work = spd;
    for (auto _ : state) {
        Eigen::LLT<ColMatrix> llt(spd);
        benchmark::DoNotOptimize(llt.matrixLLT().data());
    }
    int info = 0;
    const std::vector<double> r = alternatingRates({[&] {
                                                        Eigen::LLT<ColMatrix> llt(spd);
                                                        benchmark::DoNotOptimize(llt.matrixLLT().data());
                                                    },
                                                    [&] {
                                                        work = spd;
                                                        spotrf_("L", &n, work.data(), &n, &info);
                                                    }},
                                                   static_cast<double>(n) * n * n / 3.0);
    state.counters["threads"] = omp_get_max_threads();
    state.counters["eigen_llt_GFLOPs"] = r[0];
    state.counters["spotrf_GFLOPs"] = r[1];
    state.counters["spotrf_info"] = info;
}

}  // namespace

// shapes: square; a calibration linear (2048 tokens, 4096 -> 14336); GPTQ's trailing update of a
// 4096-row layer by one 128-column block
BENCHMARK(sgemm)
    ->Args({4096, 4096, 4096, 0})
    ->Args({2048, 14336, 4096, 0})
    ->Args({4096, 2048, 128, 1})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3)
    ->UseRealTime();
BENCHMARK(syrk)->Args({4096, 4096})->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();
BENCHMARK(cholesky)->Arg(128)->Arg(4096)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();
BENCHMARK_MAIN();
