// One linear's GEMM, y = x Wᵀ, in f32 (Eigen on OpenBLAS's SGEMM, the CPU LayerMath) and in BF16 with
// f32 accumulation (oneDNN, --matmul bf16), the weight kept resident as the calibration passes keep it:
// GFLOP/s of each in the same process, and their ratio is the speed-up of a calibration pass's GEMMs.
// Shapes of Llama-3-8B: q/o 4096x4096, gate/up 14336x4096 at 512 and 256 tokens. One thread unless
// threads=0 (all cores). Skipped where oneDNN has no BF16 matmul.
#include <benchmark/benchmark.h>
#include <omp.h>

#include "qs/error.h"
#include "qs/model/bf16_layer_math.h"

#include "synthetic_model.h"

namespace {

using namespace qs;

// Args: tokens, out, in, bf16 (0/1), threads (0 = all cores).
void linearGemm(benchmark::State& state) {
    const int tokens = int(state.range(0)), out = int(state.range(1)), in = int(state.range(2));
    const bool bf16 = state.range(3) != 0;
    const int previousThreads = omp_get_max_threads();
    if (state.range(4) > 0) omp_set_num_threads(int(state.range(4)));
    std::shared_ptr<const model::LayerMath> math;
    if (bf16) try {
            math = model::bf16LayerMath();
        } catch (const Error& e) {
            state.SkipWithError(e.what());
            return;
        }
    model::LayerWeights layer;
    layer.up.weight = bench::benchInputs(out, in, 7u);
    const MatrixF x = bench::benchInputs(tokens, in, 8u);
    const auto resident = math ? math->keepResident(layer) : nullptr;
    const model::LayerMath& m = math ? *math : model::cpuLayerMath();
    for (auto _ : state) benchmark::DoNotOptimize(m.linear(x, layer.up).data());
    state.counters["GFLOP/s"] =
        benchmark::Counter(2.0 * tokens * out * in * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
    state.counters["threads"] = omp_get_max_threads();
    omp_set_num_threads(previousThreads);
}

}  // namespace

BENCHMARK(linearGemm)
    ->ArgNames({"tokens", "out", "in", "bf16", "threads"})
    ->Args({512, 4096, 4096, 0, 1})
    ->Args({512, 4096, 4096, 1, 1})
    ->Args({256, 14336, 4096, 0, 1})
    ->Args({256, 14336, 4096, 1, 1})
    ->Args({512, 4096, 4096, 0, 0})
    ->Args({512, 4096, 4096, 1, 0})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
