// Encode and decode throughput of the float formats, next to memcpy of the same f32 bytes measured
// in the same process (the "vs_memcpy" counter is the format's bytes/s over memcpy's).
#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>
#include <vector>

#include <benchmark/benchmark.h>

#include "qs/quant/fp8.h"
#include "qs/quant/mxfp4.h"
#include "qs/quant/nf4.h"
#include "qs/quant/nvfp4.h"

namespace {

using qs::MatrixF;
using qs::quant::QuantizedLinear;

constexpr std::int64_t kRows = 2048, kCols = 4096;  // 32 MiB of f32: well outside the caches

const MatrixF& weights() {
    static const MatrixF w = [] {
        std::mt19937_64 rng(1);
        std::normal_distribution<float> normal(0.0f, 0.02f);
        MatrixF m(kRows, kCols);
        for (std::int64_t i = 0; i < m.size(); ++i) m.data()[i] = normal(rng);
        return m;
    }();
    return w;
}

double f32Bytes() { return static_cast<double>(kRows * kCols) * sizeof(float); }

// Best of a few single-threaded copies of the weight's bytes, in bytes per second.
double memcpyBytesPerSecond() {
    static const double rate = [] {
        std::vector<float> dst(static_cast<std::size_t>(kRows * kCols), 1.0f);
        double best = 1e30;
        for (int i = 0; i < 8; ++i) {
            const auto t0 = std::chrono::steady_clock::now();
            std::memcpy(dst.data(), weights().data(), static_cast<std::size_t>(f32Bytes()));
            benchmark::DoNotOptimize(dst.data());
            best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        }
        return f32Bytes() / best;
    }();
    return rate;
}

// The input and the memcpy reference are made before any timing starts.
void setUp(const benchmark::State&) {
    weights();
    memcpyBytesPerSecond();
}

void reportRate(benchmark::State& state) {
    const double bytes = f32Bytes() * static_cast<double>(state.iterations());
    state.SetBytesProcessed(static_cast<std::int64_t>(bytes));
    state.counters["vs_memcpy"] = benchmark::Counter(bytes / memcpyBytesPerSecond(), benchmark::Counter::kIsRate);
    state.counters["memcpy_GBps"] = memcpyBytesPerSecond() / 1e9;
}

void BM_Memcpy(benchmark::State& state) {
    std::vector<float> dst(static_cast<std::size_t>(kRows * kCols), 1.0f);  // pages touched before timing
    for (auto _ : state) {
        std::memcpy(dst.data(), weights().data(), static_cast<std::size_t>(f32Bytes()));
        benchmark::DoNotOptimize(dst.data());
        benchmark::ClobberMemory();
    }
    reportRate(state);
}
BENCHMARK(BM_Memcpy)->Setup(setUp)->Unit(benchmark::kMillisecond)->UseRealTime();

template <auto Encode>
void BM_Encode(benchmark::State& state) {
    const MatrixF& w = weights();
    for (auto _ : state) {
        QuantizedLinear q = Encode(w);
        benchmark::DoNotOptimize(q.codes.data());
    }
    reportRate(state);
}

// Into a buffer allocated once: the kernel's rate (a fresh 32 MiB matrix per call costs about as much
// again in page faults on these machines).
template <auto Encode, auto Decode>
void BM_Decode(benchmark::State& state) {
    const QuantizedLinear q = Encode(weights());
    MatrixF w(kRows, kCols);
    w.setZero();
    for (auto _ : state) {
        Decode(q, w.data());
        benchmark::DoNotOptimize(w.data());
        benchmark::ClobberMemory();
    }
    reportRate(state);
}

QuantizedLinear fp8Block(const MatrixF& w) { return qs::quant::quantizeFp8(w, qs::quant::Fp8Scaling::Block); }
QuantizedLinear fp8Channel(const MatrixF& w) { return qs::quant::quantizeFp8(w, qs::quant::Fp8Scaling::PerChannel); }
QuantizedLinear mxfp4(const MatrixF& w) { return qs::quant::quantizeMxfp4(w); }
QuantizedLinear nvfp4(const MatrixF& w) { return qs::quant::quantizeNvfp4(w); }
QuantizedLinear nf4(const MatrixF& w) { return qs::quant::quantizeNf4(w); }
void fp8Decode(const QuantizedLinear& q, float* out) { qs::quant::dequantizeFp8(q, out); }
void mxfp4Decode(const QuantizedLinear& q, float* out) { qs::quant::dequantizeMxfp4(q, out); }
void nvfp4Decode(const QuantizedLinear& q, float* out) { qs::quant::dequantizeNvfp4(q, out); }
void nf4Decode(const QuantizedLinear& q, float* out) { qs::quant::dequantizeNf4(q, out); }

BENCHMARK(BM_Encode<fp8Block>)->Name("Fp8Block/encode")->Setup(setUp)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Decode<fp8Block, fp8Decode>)
    ->Name("Fp8Block/decode")
    ->Setup(setUp)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_Encode<fp8Channel>)->Name("Fp8Channel/encode")->Setup(setUp)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Encode<mxfp4>)->Name("Mxfp4/encode")->Setup(setUp)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Decode<mxfp4, mxfp4Decode>)
    ->Name("Mxfp4/decode")
    ->Setup(setUp)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_Encode<nvfp4>)->Name("Nvfp4/encode")->Setup(setUp)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Decode<nvfp4, nvfp4Decode>)
    ->Name("Nvfp4/decode")
    ->Setup(setUp)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_Encode<nf4>)->Name("Nf4/encode")->Setup(setUp)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Decode<nf4, nf4Decode>)->Name("Nf4/decode")->Setup(setUp)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
