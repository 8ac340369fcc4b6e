// AWQ's 20-point α search for the q/k/v of a 4096-wide block (4096 + 1024 + 1024 outputs sharing one
// input) on 512 calibration tokens, group 128, 4 bits.
#include <benchmark/benchmark.h>

#include "qs/quant/awq.h"

#include "bench_common.h"

namespace {

void awqSearch(benchmark::State& state) {
    const std::int64_t width = 4096;
    const qs::MatrixF q = qs::bench::benchWeights(4096, width, 1), k = qs::bench::benchWeights(1024, width, 2),
                      v = qs::bench::benchWeights(1024, width, 3);
    const qs::MatrixF x = qs::bench::benchInputs(state.range(0), width);
    double alpha = 0;
    for (auto _ : state) {
        const qs::quant::AwqResult r = qs::quant::quantizeAwq({&q, &k, &v}, x, {.bits = 4, .groupSize = 128});
        alpha = r.alpha;
        benchmark::DoNotOptimize(r.linears.data());
    }
    state.counters["alpha"] = alpha;
}

}  // namespace

BENCHMARK(awqSearch)->Arg(512)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();
BENCHMARK_MAIN();
