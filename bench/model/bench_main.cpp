// One executable for the model benchmarks (forward pass, calibration).
#include <benchmark/benchmark.h>

BENCHMARK_MAIN();
