// Decode and encode throughput of ggml's block types (qs::io::ggmlDecodeRow, qs::quant::ggmlEncodeRow)
// on one thread, next to memcpy of the same f32 bytes measured in the same process: "vs_memcpy" is the
// f32 bytes/s (decoded, or encoded) over memcpy's. "block_bytes_vs_memcpy" counts the type's block
// bytes instead (the bytes a decoder reads), over the same memcpy rate. Rates are per second of the
// thread's CPU time, memcpy's too: on a shared machine wall time also counts the time the thread
// waited for a core, which is not the code's.
#include <algorithm>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "qs/io/ggml_type.h"
#include "qs/quant/ggml_encode.h"

namespace {

using qs::io::GgmlType;

constexpr std::int64_t kRows = 2048, kCols = 4096;  // 32 MiB of f32: well outside the caches
constexpr std::int64_t kCount = kRows * kCols;

const std::vector<float>& weights() {
    static const std::vector<float> w = [] {
        std::mt19937_64 rng(1);
        std::normal_distribution<float> normal(0.0f, 0.02f);
        std::vector<float> v(static_cast<std::size_t>(kCount));
        for (float& x : v) x = normal(rng);
        return v;
    }();
    return w;
}

// llama.cpp-style importance: mean x^2 of activations per input column, a few hot channels.
const std::vector<float>& importance() {
    static const std::vector<float> imp = [] {
        std::mt19937_64 rng(2);
        std::chi_squared_distribution<float> chi2(4.0f);
        std::vector<float> v(static_cast<std::size_t>(kCols));
        for (float& x : v) x = chi2(rng) / 4.0f;
        for (std::int64_t c = 0; c < kCols; c += 509) v[static_cast<std::size_t>(c)] *= 100.0f;
        return v;
    }();
    return imp;
}

double f32Bytes() { return static_cast<double>(kCount) * sizeof(float); }

// Best of a few single-threaded copies of the weights' bytes, in bytes per CPU second.
double memcpyBytesPerSecond() {
    static const double rate = [] {
        std::vector<float> dst(static_cast<std::size_t>(kCount), 1.0f);
        auto cpuSeconds = [] {
            timespec t{};
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
            return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
        };
        double best = 1e30;
        for (int i = 0; i < 8; ++i) {
            const double t0 = cpuSeconds();
            std::memcpy(dst.data(), weights().data(), static_cast<std::size_t>(f32Bytes()));
            benchmark::DoNotOptimize(dst.data());
            best = std::min(best, cpuSeconds() - t0);
        }
        return f32Bytes() / best;
    }();
    return rate;
}

void setUp(const benchmark::State&) {
    weights();
    importance();
    memcpyBytesPerSecond();
}

void reportRate(benchmark::State& state, double blockBytes) {
    const double iterations = static_cast<double>(state.iterations());
    state.SetBytesProcessed(static_cast<std::int64_t>(f32Bytes() * iterations));
    state.counters["vs_memcpy"] =
        benchmark::Counter(f32Bytes() * iterations / memcpyBytesPerSecond(), benchmark::Counter::kIsRate);
    state.counters["block_bytes_vs_memcpy"] =
        benchmark::Counter(blockBytes * iterations / memcpyBytesPerSecond(), benchmark::Counter::kIsRate);
    state.counters["memcpy_GBps"] = memcpyBytesPerSecond() / 1e9;
}

void BM_Memcpy(benchmark::State& state) {
    std::vector<float> dst(static_cast<std::size_t>(kCount), 1.0f);  // pages touched before timing
    for (auto _ : state) {
        std::memcpy(dst.data(), weights().data(), static_cast<std::size_t>(f32Bytes()));
        benchmark::DoNotOptimize(dst.data());
        benchmark::ClobberMemory();
    }
    reportRate(state, f32Bytes());
}
BENCHMARK(BM_Memcpy)->Setup(setUp)->Unit(benchmark::kMillisecond);

// Blocks of `type` for the decode benchmarks: encoded from the weights where QuantScope encodes the
// type, else random bytes (every code and grid entry; a decoder's speed does not depend on values).
std::vector<std::uint8_t> blocksOf(GgmlType type) {
    const std::size_t rowBytes = qs::io::ggmlRowBytes(type, kCols);
    std::vector<std::uint8_t> q(rowBytes * kRows);
    if (qs::quant::ggmlEncodes(type)) {
        for (std::int64_t r = 0; r < kRows; ++r)
            qs::quant::ggmlEncodeRow(type, weights().data() + r * kCols, q.data() + r * rowBytes, kCols);
    } else {
        std::mt19937 rng(3);
        for (auto& b : q) b = static_cast<std::uint8_t>(rng());
    }
    return q;
}

void BM_Decode(benchmark::State& state, GgmlType type) {
    const std::vector<std::uint8_t> q = blocksOf(type);
    const std::size_t rowBytes = qs::io::ggmlRowBytes(type, kCols);
    std::vector<float> out(static_cast<std::size_t>(kCount), 0.0f);
    for (auto _ : state) {
        for (std::int64_t r = 0; r < kRows; ++r)
            qs::io::ggmlDecodeRow(type, q.data() + r * rowBytes, out.data() + r * kCols, kCols);
        benchmark::DoNotOptimize(out.data());
        benchmark::ClobberMemory();
    }
    reportRate(state, static_cast<double>(q.size()));
}

void BM_Encode(benchmark::State& state, GgmlType type, bool withImportance) {
    const std::size_t rowBytes = qs::io::ggmlRowBytes(type, kCols);
    std::vector<std::uint8_t> q(rowBytes * kRows, 0);
    const float* imp = withImportance ? importance().data() : nullptr;
    for (auto _ : state) {
        for (std::int64_t r = 0; r < kRows; ++r)
            qs::quant::ggmlEncodeRow(type, weights().data() + r * kCols, q.data() + r * rowBytes, kCols, imp);
        benchmark::DoNotOptimize(q.data());
        benchmark::ClobberMemory();
    }
    reportRate(state, static_cast<double>(q.size()));
}

const int kRegistered = [] {
    for (std::uint32_t t = 0; t < 64; ++t) {
        const qs::io::GgmlTypeTraits* traits = qs::io::ggmlTypeTraits(t);
        if (!traits || !traits->decodes || traits->isFloat) continue;
        const std::string name(traits->name);
        benchmark::RegisterBenchmark((name + "/decode").c_str(), BM_Decode, traits->type)
            ->Setup(setUp)
            ->Unit(benchmark::kMillisecond);
    }
    for (std::uint32_t t = 0; t < 64; ++t) {
        const qs::io::GgmlTypeTraits* traits = qs::io::ggmlTypeTraits(t);
        if (!traits || traits->isFloat || !qs::quant::ggmlEncodes(traits->type)) continue;
        const std::string name(traits->name);
        benchmark::RegisterBenchmark((name + "/encode").c_str(), BM_Encode, traits->type, false)
            ->Setup(setUp)
            ->Unit(benchmark::kMillisecond);
        benchmark::RegisterBenchmark((name + "/encode_importance").c_str(), BM_Encode, traits->type, true)
            ->Setup(setUp)
            ->Unit(benchmark::kMillisecond);
    }
    return 0;
}();

}  // namespace

BENCHMARK_MAIN();
