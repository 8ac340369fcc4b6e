// Conversion to f32 (qs::io::convertToF32) next to memcpy of the same source bytes. bytes_per_second
// counts source bytes; vs_memcpy is conversion throughput over memcpy throughput measured in the
// same run, so it stays comparable across machines. Threads: 1, and all cores (OpenMP).
#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>
#include <vector>

#include <benchmark/benchmark.h>
#include <omp.h>

#include "qs/io/dtype.h"

namespace {

using qs::io::DType;

constexpr std::size_t kElements = std::size_t{1} << 24;  // 16 Mi elements: far beyond the caches

std::vector<std::byte> randomBytes(std::size_t count) {
    std::mt19937_64 rng(42);
    std::vector<std::byte> bytes(count);
    for (auto& b : bytes) b = static_cast<std::byte>(rng() & 0xFF);
    return bytes;
}

// Best of a few repetitions: the baseline the conversion is compared with.
double memcpySeconds(const std::vector<std::byte>& src, std::vector<std::byte>& dst) {
    double best = 1e30;
    for (int rep = 0; rep < 5; ++rep) {
        const auto start = std::chrono::steady_clock::now();
        std::memcpy(dst.data(), src.data(), src.size());
        benchmark::ClobberMemory();
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    return best;
}

void convertToF32(benchmark::State& state, DType dtype) {
    const int threads = state.range(0) == 0 ? omp_get_max_threads() : static_cast<int>(state.range(0));
    const std::size_t srcBytes = kElements * qs::io::dtypeSize(dtype);
    const std::vector<std::byte> src = randomBytes(srcBytes);
    std::vector<std::byte> copy(srcBytes);
    std::vector<float> out(kElements);
    const double memcpyBytesPerSecond = static_cast<double>(srcBytes) / memcpySeconds(src, copy);

    const int previousThreads = omp_get_max_threads();
    omp_set_num_threads(threads);
    qs::io::convertToF32(dtype, src.data(), kElements, out.data());  // fault the output pages in
    double seconds = 0.0;
    for (auto _ : state) {
        const auto start = std::chrono::steady_clock::now();
        qs::io::convertToF32(dtype, src.data(), kElements, out.data());
        benchmark::ClobberMemory();
        seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    omp_set_num_threads(previousThreads);

    const double bytes = static_cast<double>(srcBytes) * static_cast<double>(state.iterations());
    state.SetBytesProcessed(static_cast<std::int64_t>(bytes));
    state.SetItemsProcessed(static_cast<std::int64_t>(kElements) * state.iterations());
    state.counters["threads"] = threads;
    state.counters["vs_memcpy"] = (bytes / seconds) / memcpyBytesPerSecond;
}

void memcpyBaseline(benchmark::State& state, DType dtype) {
    const std::size_t srcBytes = kElements * qs::io::dtypeSize(dtype);
    const std::vector<std::byte> src = randomBytes(srcBytes);
    std::vector<std::byte> dst(srcBytes);
    std::memcpy(dst.data(), src.data(), srcBytes);
    for (auto _ : state) {
        std::memcpy(dst.data(), src.data(), srcBytes);
        benchmark::ClobberMemory();
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(srcBytes) * state.iterations());
    state.SetItemsProcessed(static_cast<std::int64_t>(kElements) * state.iterations());
    state.counters["threads"] = 1;
    state.counters["vs_memcpy"] = 1.0;
}

// Argument: threads (0 = all cores).
BENCHMARK_CAPTURE(memcpyBaseline, bf16_bytes, DType::BF16)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(convertToF32, bf16, DType::BF16)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(convertToF32, f16, DType::F16)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(memcpyBaseline, fp8_bytes, DType::F8_E4M3)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(convertToF32, fp8_e4m3, DType::F8_E4M3)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
