// GPTQ on Llama-sized layers (4096x4096, 14336x4096 as the MLP's gate/up) with H from 4096 correlated
// samples. Counters: the trailing-update GEMM work (rows * cols² flops) and the time it would take at
// this machine's SGEMM rate, measured in the same process, so "GPTQ / GEMM work" reads off directly:
// vs_gemm_work on wall time (an idle machine's figure), cpu_vs_gemm_work on the process's CPU time,
// GPTQ's and the SGEMM's alike, which a shared machine's load does not dilute (with one thread it
// is the idle ratio; with more, time the threads spend waiting at barriers counts too).
//
// `bench_gptq --write-problem=DIR` runs no benchmark: it writes the 4096² problem of the gptq rows
// (W, H) with our codes, scales and zeros for it to DIR/model.safetensors, for another GPTQ to solve
// and be compared with (bench/gptq_vs_pytorch.sh).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <span>
#include <string>
#include <string_view>

#include <benchmark/benchmark.h>
#include <omp.h>

#include "qs/io/checkpoint_writer.h"
#include "qs/quant/gptaq.h"
#include "qs/quant/gptq.h"
#include "qs/quant/hessian.h"
#include "qs/quant/input_deviation.h"

#include "bench_common.h"

namespace {

double cpuSeconds() {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

struct SgemmRate {
    double wall = 0;  // GFLOP per second
    double cpu = 0;   // GFLOP per CPU second of the process
};

// SGEMM of n x n x n, as the bench's products are written (Eigen, which calls OpenBLAS); best of 3.
SgemmRate sgemmRate(std::int64_t n) {
    const qs::MatrixF a = qs::bench::benchWeights(n, n, 11), b = qs::bench::benchWeights(n, n, 12);
    qs::MatrixF c(n, n);
    c.noalias() = a * b;  // warm up
    double wall = 1e30, cpu = 1e30;
    for (int i = 0; i < 3; ++i) {
        const double c0 = cpuSeconds();
        const auto t0 = std::chrono::steady_clock::now();
        c.noalias() = a * b;
        wall = std::min(wall, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        cpu = std::min(cpu, cpuSeconds() - c0);
    }
    benchmark::DoNotOptimize(c.data());
    const double flops = 2.0 * static_cast<double>(n) * n * n;
    return {flops / wall / 1e9, flops / cpu / 1e9};
}

// The settings every row quantizes with: 4-bit, group 128, asymmetric (what a user's gptq4 gets).
qs::quant::GptqOptions benchOptions(bool actOrder, bool measureError) {
    return {.bits = 4, .groupSize = 128, .actOrder = actOrder, .sym = false, .measureError = measureError};
}

void gptq(benchmark::State& state) {
    const std::int64_t rows = state.range(0), cols = state.range(1);
    const int previousThreads = omp_get_max_threads();
    if (state.range(3) > 0) omp_set_num_threads(static_cast<int>(state.range(3)));
    const qs::MatrixF w = qs::bench::benchWeights(rows, cols);
    const qs::MatrixF x = qs::bench::benchInputs(4096, cols);
    const qs::MatrixF h = qs::quant::hessian(x);
    const bool actOrder = (state.range(2) & 1) != 0;
    const bool measure = (state.range(2) & 2) != 0;  // the output error costs one more GEMM, W·H
    const bool gptaq = (state.range(2) & 4) != 0;    // GPTAQ: P's two triangular solves and its corrections
    qs::MatrixF d;
    if (gptaq) {  // the "full-precision" inputs: X plus a tenth of other inputs of the same shape
        qs::quant::InputDeviationAccumulator deviation(cols);
        deviation.add(x + 0.1f * qs::bench::benchInputs(4096, cols, 3), x);
        d = deviation.finalize();
    }
    double loss = 0, cpu = 0;
    for (auto _ : state) {
        const double c0 = cpuSeconds();
        const qs::quant::GptqOptions options = benchOptions(actOrder, measure);
        const qs::quant::QuantizedLinear q =
            gptaq ? qs::quant::quantizeGptaq(w, h, d, options) : qs::quant::quantizeGptq(w, h, options);
        loss = q.gptqLoss;
        benchmark::DoNotOptimize(q.codes.data());
        cpu += cpuSeconds() - c0;
    }
    const double gemmFlops = static_cast<double>(rows) * cols * cols;  // Σ over blocks of 2 * rows * bs * rest
    const SgemmRate rate = sgemmRate(4096);
    state.counters["sgemm_GFLOPs"] = rate.wall;
    state.counters["gemm_work_s"] = gemmFlops / rate.wall / 1e9;
    state.counters["vs_gemm_work"] = benchmark::Counter(
        gemmFlops / rate.wall / 1e9, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
    state.counters["cpu_s"] = cpu / static_cast<double>(state.iterations());
    state.counters["cpu_gemm_work_s"] = gemmFlops / rate.cpu / 1e9;
    state.counters["cpu_vs_gemm_work"] = cpu / static_cast<double>(state.iterations()) / (gemmFlops / rate.cpu / 1e9);
    state.counters["loss"] = loss;
    state.counters["threads"] = omp_get_max_threads();
    omp_set_num_threads(previousThreads);
}

}  // namespace

// Arguments: rows, cols, flags (bit 0 act-order, bit 1 measure the output error, bit 2 GPTAQ), threads
// (0: the team).
BENCHMARK(gptq)
    ->Args({4096, 4096, 0, 0})
    ->Args({4096, 4096, 1, 0})
    ->Args({4096, 4096, 2, 0})
    ->Unit(benchmark::kSecond)
    ->Iterations(2)
    ->UseRealTime();
BENCHMARK(gptq)->Args({14336, 4096, 0, 0})->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();
// 1 -> 2 threads on the same layer (issue 17: >= 1.8x on an idle machine)
BENCHMARK(gptq)
    ->Name("gptq_threads")
    ->Args({4096, 4096, 0, 1})
    ->Args({4096, 4096, 0, 2})
    ->Unit(benchmark::kSecond)
    ->Iterations(2)
    ->UseRealTime();
// The other shapes of a Llama-3-8B layer: k/v (1024 x 4096) and down_proj (4096 x 14336, H 14336 wide)
BENCHMARK(gptq)
    ->Name("gptq_8b")
    ->Args({1024, 4096, 0, 0})
    ->Args({4096, 14336, 0, 0})
    ->Unit(benchmark::kSecond)
    ->Iterations(1)
    ->UseRealTime();
// GPTAQ beside GPTQ on the same layer, the output error measured by both (GPTAQ measures it on H).
BENCHMARK(gptq)
    ->Name("gptaq")
    ->Args({2048, 2048, 2, 0})
    ->Args({2048, 2048, 6, 0})
    ->Args({4096, 4096, 2, 0})
    ->Args({4096, 4096, 6, 0})
    ->Unit(benchmark::kSecond)
    ->Iterations(1)
    ->UseRealTime();

namespace {

void addMatrix(qs::io::CheckpointWriter& writer, const std::string& name, const qs::MatrixF& m) {
    writer.addTensorF32(name, qs::io::DType::F32, {m.rows(), m.cols()}, std::span(m.data(), m.size()));
}

// The gptq/4096/4096/0 row's W and H and what quantizeGptq makes of them; prints our figures as JSON.
int writeProblem(const std::string& folder) {
    constexpr std::int64_t kSize = 4096;
    const qs::MatrixF w = qs::bench::benchWeights(kSize, kSize);
    const qs::MatrixF h = qs::quant::hessian(qs::bench::benchInputs(4096, kSize));
    const qs::quant::QuantizedLinear q = qs::quant::quantizeGptq(w, h, benchOptions(false, true));
    qs::io::CheckpointWriter writer(folder, {.overwrite = true});
    addMatrix(writer, "W", w);
    addMatrix(writer, "H", h);
    writer.addTensor("qs.codes", qs::io::DType::U8, {kSize, kSize}, std::as_bytes(std::span(q.codes)));
    addMatrix(writer, "qs.scales", q.scales);
    addMatrix(writer, "qs.zeros", q.zeros);
    writer.finish();
    std::printf("{\"output_mse\": %.9g, \"gptq_loss\": %.9g, \"damp_percent\": %.9g}\n", q.outputMse, q.gptqLoss,
                q.dampPercent);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    constexpr std::string_view kWriteProblem = "--write-problem=";
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg.starts_with(kWriteProblem)) return writeProblem(std::string(arg.substr(kWriteProblem.size())));
    }
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
