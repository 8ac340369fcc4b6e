// The GPU targets, each next to the rate it is judged against:
//   Hessian (cuBLAS SSYRK + the f64 sum) vs a plain cuBLAS SGEMM of the same product;
//   GPTQ of a 14336 x 4096 layer (upload, factorization, column loop, download);
//   FP8 block encoding vs a device-to-device memcpy of the same input (bytes/s);
//   the trellis search at L = 16, K = 2 (weights/s);
//   AWQ's α search of gate+up (two 14336 x 4096 linears) vs one cuBLAS SGEMM of the stacked D·H;
//   the forward pass's linear (with its transfers) vs the bare SGEMM, and its attention (TFLOP/s).
#include <chrono>
#include <random>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include "qs/error.h"
#include "qs/gpu/cuda_backend.h"
#include "qs/gpu/device_buffer.h"
#include "qs/gpu/device_info.h"
#include "qs/gpu/format_kernels.h"
#include "qs/model/layer_math.h"

#include "cuda_awq.h"
#include "cuda_context.h"
#include "cuda_hessian.h"

namespace {

using qs::MatrixF;

bool skipWithoutDevice(benchmark::State& state) {
    const qs::gpu::DeviceInfo info = qs::gpu::queryDevice();
    if (info.present) return false;
    state.SkipWithError(info.whyNot.c_str());
    for (auto _ : state) {}
    return true;
}

MatrixF randomMatrix(std::int64_t rows, std::int64_t cols, std::uint32_t seed, float sigma) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, sigma);
    MatrixF m(rows, cols);
    for (std::int64_t i = 0; i < m.size(); ++i) m.data()[i] = normal(rng);
    return m;
}

constexpr std::int64_t kTokens = 8192, kFeatures = 4096;

void BM_HessianSyrkChunk(benchmark::State& state) {
    if (skipWithoutDevice(state)) return;
    const qs::gpu::CudaContext context;
    const MatrixF x = randomMatrix(kTokens, kFeatures, 1, 1.0f);
    const qs::gpu::DeviceBuffer<float> dx(x.data(), x.size());
    qs::gpu::DeviceBuffer<float> gram(kFeatures * kFeatures);
    for (auto _ : state) {
        qs::gpu::gramLowerOnDevice(context, dx.data(), kTokens, kFeatures, gram.data());
        cudaDeviceSynchronize();
    }
    // SYRK does half the multiply-adds of the GEMM; count the GEMM's flops so the rates compare as "XᵀX per second".
    state.counters["gemm_equiv_TFLOPs"] = benchmark::Counter(2.0 * kTokens * kFeatures * kFeatures * 1e-12,
                                                             benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_HessianSyrkChunk)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_HessianSinkAdd(benchmark::State& state) {
    if (skipWithoutDevice(state)) return;
    const MatrixF x = randomMatrix(kTokens, kFeatures, 2, 1.0f);
    std::string whyNot;
    const auto backend = qs::gpu::makeCudaBackend(whyNot);
    auto sink = backend->hessian(kFeatures);
    for (auto _ : state) {
        sink->add(x, 2048);  // with the upload from the host, as calibration does it
        cudaDeviceSynchronize();
    }
    state.counters["gemm_equiv_TFLOPs"] = benchmark::Counter(2.0 * kTokens * kFeatures * kFeatures * 1e-12,
                                                             benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_HessianSinkAdd)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_CublasSgemmSameProduct(benchmark::State& state) {
    if (skipWithoutDevice(state)) return;
    const qs::gpu::CudaContext context;
    const MatrixF x = randomMatrix(kTokens, kFeatures, 3, 1.0f);
    const qs::gpu::DeviceBuffer<float> dx(x.data(), x.size());
    qs::gpu::DeviceBuffer<float> out(kFeatures * kFeatures);
    const float one = 1.0f, zero = 0.0f;
    for (auto _ : state) {
        cublasSgemm(context.blas(), CUBLAS_OP_N, CUBLAS_OP_T, kFeatures, kFeatures, kTokens, &one, dx.data(), kFeatures,
                    dx.data(), kFeatures, &zero, out.data(), kFeatures);
        cudaDeviceSynchronize();
    }
    state.counters["gemm_equiv_TFLOPs"] = benchmark::Counter(2.0 * kTokens * kFeatures * kFeatures * 1e-12,
                                                             benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_CublasSgemmSameProduct)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Gptq14336x4096(benchmark::State& state) {
    if (skipWithoutDevice(state)) return;
    std::string whyNot;
    const auto backend = qs::gpu::makeCudaBackend(whyNot);
    const MatrixF w = randomMatrix(14336, 4096, 4, 0.02f);
    auto sink = backend->hessian(4096);
    sink->add(randomMatrix(2048, 4096, 5, 1.0f));
    const MatrixF h = sink->finalize();
    qs::quant::GptqOptions o;
    o.measureError = false;
    for (auto _ : state) benchmark::DoNotOptimize(backend->gptq(w, h, o));
}
BENCHMARK(BM_Gptq14336x4096)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

constexpr std::int64_t kFp8Rows = 8192, kFp8Cols = 8192;

void BM_Fp8BlockEncodeOnDevice(benchmark::State& state) {
    if (skipWithoutDevice(state)) return;
    const MatrixF w = randomMatrix(kFp8Rows, kFp8Cols, 6, 0.02f);
    const qs::gpu::DeviceBuffer<float> dw(w.data(), w.size());
    qs::gpu::DeviceBuffer<std::uint8_t> codes(w.size());
    qs::gpu::DeviceBuffer<float> scales((kFp8Rows / 128) * (kFp8Cols / 128));
    qs::gpu::DeviceBuffer<std::uint32_t> amax(scales.size());
    for (auto _ : state) {
        qs::gpu::kernels::fp8Encode(dw.data(), kFp8Rows, kFp8Cols, 128, 128, amax.data(), scales.data(), codes.data());
        cudaDeviceSynchronize();
    }
    // bytes the encoding must move at least: 4 read + 1 written per weight
    state.SetBytesProcessed(state.iterations() * kFp8Rows * kFp8Cols * 5);
}
BENCHMARK(BM_Fp8BlockEncodeOnDevice)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_DeviceMemcpySameInput(benchmark::State& state) {
    if (skipWithoutDevice(state)) return;
    qs::gpu::DeviceBuffer<float> a(kFp8Rows * kFp8Cols), b(kFp8Rows * kFp8Cols);
    a.fillZero();
    for (auto _ : state) {
        cudaMemcpy(b.data(), a.data(), static_cast<std::size_t>(a.size()) * 4, cudaMemcpyDeviceToDevice);
        cudaDeviceSynchronize();
    }
    state.SetBytesProcessed(state.iterations() * kFp8Rows * kFp8Cols * 8);  // read + write
}
BENCHMARK(BM_DeviceMemcpySameInput)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_TrellisL16K2(benchmark::State& state) {
    if (skipWithoutDevice(state)) return;
    std::string whyNot;
    const auto backend = qs::gpu::makeCudaBackend(whyNot);
    const MatrixF w = randomMatrix(state.range(0), 4096, 7, 0.02f);
    qs::quant::TrellisOptions o;
    o.L = 16;
    o.K = 2;
    for (auto _ : state) benchmark::DoNotOptimize(backend->trellis(w, o));
    state.counters["weights_per_s"] =
        benchmark::Counter(static_cast<double>(w.size()), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_TrellisL16K2)->Arg(64)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(2);

double secondsSince(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The search's one product, D·H for every α at once (M = grid x rows), as cudaAwqGridErrors runs it.
double stackedSgemmSeconds(const qs::gpu::CudaContext& context, std::int64_t m, std::int64_t n) {
    qs::gpu::requireDeviceMemory(2 * m * n * 4 + n * n * 4, "the stacked SGEMM");
    qs::gpu::DeviceBuffer<float> d(m * n), dh(m * n), h(n * n);
    d.fillZero();
    h.fillZero();
    const float one = 1.0f, zero = 0.0f;
    const auto run = [&] {
        cublasSgemm_64(context.blas(), CUBLAS_OP_N, CUBLAS_OP_N, n, m, n, &one, h.data(), n, d.data(), n, &zero,
                       dh.data(), n);
        cudaDeviceSynchronize();
    };
    run();  // warm up
    const auto start = std::chrono::steady_clock::now();
    run();
    run();
    return secondsSince(start) / 2;
}

// Whole backend call (device grid + the finish: RTN at the chosen α on the host, the output errors on the device)
// and the device grid alone, each next to the stacked SGEMM it contains.
void BM_AwqSearchGateUp14336x4096(benchmark::State& state) {
    if (skipWithoutDevice(state)) return;
    std::string whyNot;
    const auto backend = qs::gpu::makeCudaBackend(whyNot);
    const MatrixF gate = randomMatrix(14336, 4096, 8, 0.02f), up = randomMatrix(14336, 4096, 9, 0.02f);
    const std::vector<const MatrixF*> weights{&gate, &up};
    auto sink = backend->hessian(4096);
    sink->add(randomMatrix(2048, 4096, 10, 1.0f));
    const MatrixF h = sink->finalize();
    const qs::VectorF meanAbs = sink->meanAbs();
    const qs::quant::AwqOptions o;  // 4 bits, group 128, asymmetric, 20 α
    const qs::gpu::CudaContext context;
    double sgemm = 0.0, grid = 0.0;
    try {
        sgemm = stackedSgemmSeconds(context, o.grid * 2 * 14336, 4096);
    } catch (const qs::Error& e) {
        state.SkipWithError(e.what());
        for (auto _ : state) {}
        return;
    }
    double call = 0.0;
    for (auto _ : state) {
        auto start = std::chrono::steady_clock::now();
        benchmark::DoNotOptimize(backend->awq(weights, meanAbs, h, o));
        const double seconds = secondsSince(start);
        state.SetIterationTime(seconds);
        call += seconds;
        start = std::chrono::steady_clock::now();
        benchmark::DoNotOptimize(qs::gpu::cudaAwqGridErrors(context, weights, meanAbs, h, o));
        grid += secondsSince(start);
    }
    const double iterations = static_cast<double>(state.iterations());
    state.counters["sgemm_s"] = sgemm;
    state.counters["awq_s"] = call / iterations;
    state.counters["awq_per_sgemm"] = call / iterations / sgemm;
    state.counters["grid_s"] = grid / iterations;
    state.counters["grid_per_sgemm"] = grid / iterations / sgemm;
}
BENCHMARK(BM_AwqSearchGateUp14336x4096)->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(1);

// The forward pass's linear as calibration runs it: 2048 tokens through a resident 14336 x 4096 weight,
// with the input's upload and the output's download, next to the bare device SGEMM of the same product.
void BM_ForwardLinear2048x4096to14336(benchmark::State& state) {
    if (skipWithoutDevice(state)) return;
    std::string whyNot;
    const auto backend = qs::gpu::makeCudaBackend(whyNot);
    const auto math = backend->layerMath();
    constexpr std::int64_t tokens = 2048, in = 4096, out = 14336;
    qs::model::LayerWeights layer;
    layer.gate.weight = randomMatrix(out, in, 11, 0.02f);
    const MatrixF x = randomMatrix(tokens, in, 12, 1.0f);
    const qs::gpu::CudaContext context;
    qs::gpu::DeviceBuffer<float> dx(x.data(), x.size()), dw(layer.gate.weight.data(), layer.gate.weight.size()),
        dy(tokens * out);
    const float one = 1.0f, zero = 0.0f;
    const auto bare = [&] {
        cublasSgemm_64(context.blas(), CUBLAS_OP_T, CUBLAS_OP_N, out, tokens, in, &one, dw.data(), in, dx.data(), in,
                       &zero, dy.data(), out);
        cudaDeviceSynchronize();
    };
    bare();
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < 3; ++i) bare();
    const double sgemm = secondsSince(start) / 3;
    const auto resident = math->keepResident(layer);
    double total = 0.0;
    for (auto _ : state) {
        start = std::chrono::steady_clock::now();
        benchmark::DoNotOptimize(math->linear(x, layer.gate));
        const double seconds = secondsSince(start);
        state.SetIterationTime(seconds);
        total += seconds;
    }
    const double flops = 2.0 * tokens * in * out;
    state.counters["TFLOPs"] = benchmark::Counter(flops * 1e-12, benchmark::Counter::kIsIterationInvariantRate);
    state.counters["sgemm_TFLOPs"] = flops * 1e-12 / sgemm;
    state.counters["sgemm_per_call"] = sgemm / (total / static_cast<double>(state.iterations()));
}
BENCHMARK(BM_ForwardLinear2048x4096to14336)->Unit(benchmark::kMillisecond)->UseManualTime();

// Llama-3-8B's attention over one 2048-token calibration sequence: 32 query heads on 8 KV heads of 128.
void BM_ForwardAttention2048(benchmark::State& state) {
    if (skipWithoutDevice(state)) return;
    std::string whyNot;
    const auto backend = qs::gpu::makeCudaBackend(whyNot);
    const auto math = backend->layerMath();
    constexpr std::int64_t tokens = 2048;
    const MatrixF q = randomMatrix(tokens, 32 * 128, 13, 1.0f);
    const MatrixF k = randomMatrix(tokens, 8 * 128, 14, 1.0f), v = randomMatrix(tokens, 8 * 128, 15, 1.0f);
    for (auto _ : state) benchmark::DoNotOptimize(math->attention(q, k, v, {32, 8, 128, 0}));
    // q·k and p·v over the causal half: 2 x 2 x heads x d x T² / 2
    state.counters["TFLOPs"] = benchmark::Counter(2.0 * 32 * 128 * double(tokens) * double(tokens) * 1e-12,
                                                  benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_ForwardAttention2048)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
