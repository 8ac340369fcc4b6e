// Calibration of one decoder layer, as the Job does it: N sequences of T tokens of hidden states go
// through the layer while the hook accumulates the Hessians of its four distinct linear inputs
// (q/k/v, o, gate/up, down), which are then finalized (H = 2XᵀX/n). `hook=0` runs the layer alone,
// so the two rows show what the statistics cost on top of the forward pass. Times are CPU seconds of
// the process (the machine is shared; wall time would measure the other processes).
#include <ctime>
#include <stdexcept>

#include <benchmark/benchmark.h>
#include <omp.h>

#include "qs/model/bf16_layer_math.h"
#include "qs/model/transformer.h"
#include "qs/pipeline/layer_statistics.h"

#include "synthetic_model.h"

namespace {

using namespace qs;

constexpr int kSequences = 8;
constexpr int kTokens = 512;

// The Hessians of a layer's four distinct linear inputs, finalized (H = 2XᵀX/n).
void finalizeHessians(pipeline::LayerStatistics& statistics) {
    for (const auto module : {"self_attn.q_proj", "self_attn.o_proj", "mlp.gate_proj", "mlp.down_proj"})
        benchmark::DoNotOptimize(statistics.hessian(module).data());
}

// The Job's calibration of one layer: every sequence through it, the hook accumulating the Hessians
// of its four distinct linear inputs, which are then finalized.
void calibrate(const model::Transformer& transformer, const model::LayerWeights& layer,
               const std::vector<MatrixF>& inputs, bool hook) {
    pipeline::LayerStatistics statistics;
    for (const auto& input : inputs) {
        MatrixF h = input;
        transformer.runLayer(0, layer, h, hook ? statistics.hook() : model::LinearInputHook{});
        benchmark::DoNotOptimize(h.data());
    }
    if (hook) finalizeHessians(statistics);
}

// Args: hidden size, hook (0/1), threads (0 = all cores).
void calibrateLayer(benchmark::State& state) {
    const int hidden = int(state.range(0));
    const bool hook = state.range(1) != 0;
    const int previousThreads = omp_get_max_threads();
    if (state.range(2) > 0) omp_set_num_threads(int(state.range(2)));
    const model::ModelConfig config = bench::llamaShape(hidden, 1, 256);
    const model::Transformer transformer(config, bench::randomModel(config));
    const model::LayerWeights layer = bench::randomLayer(config, 1);
    std::vector<MatrixF> inputs;
    for (int s = 0; s < kSequences; ++s) inputs.push_back(bench::benchInputs(kTokens, hidden, 30u + unsigned(s)));
    for (auto _ : state) calibrate(transformer, layer, inputs, hook);
    state.counters["tokens/s"] =
        benchmark::Counter(double(kSequences) * kTokens, benchmark::Counter::kIsIterationInvariantRate);
    state.counters["threads"] = omp_get_max_threads();
    omp_set_num_threads(previousThreads);
}

// One Llama-3-8B-shaped layer over `sequences` x 2048 tokens, as the Job calibrates a GPTQ stream:
// hook=1 is a pass that accumulates the Hessians of the layer's four inputs (then finalized) and moves
// the stream, hook=2 the Job's observation of a stream it does not move (the same Hessians, without the
// down_proj GEMM whose output nobody reads), hook=0 a plain forward pass (the Job runs one more over the
// calibration tokens once the layer is quantized, to feed the next layer). Each sequence is timed on its own: the first pays the layer's
// one-off costs (the accumulators' f64 sums, 1.0 GB here, zeroed and faulted in), the later ones only
// what a token costs, and finalize() is once per layer too. The projection to the 128 x 2048
// calibration tokens of issue 17's end-to-end target is the later sequences' cost per token times
// 128 x 2048, plus the one-off part (bench/README.md adds GPTQ's time per layer). CPU seconds.
// bf16=1: the layer's GEMMs in BF16 (--matmul bf16, oneDNN), and the Hessians' products of the same
// bfloat16 inputs (summed in f32 / f64), as the Job runs them.
void calibrateLayer8B(benchmark::State& state) {
    const int sequences = int(state.range(0)), tokens = 2048;
    const bool hook = state.range(1) != 0, observe = state.range(1) == 2;
    const auto math = state.range(2) != 0 ? model::bf16LayerMath() : nullptr;
    if (sequences < 2)
        throw std::invalid_argument("calibrateLayer8B needs 2 sequences or more: the first pays the one-off costs");
    const model::ModelConfig config = bench::llama3_8bShape(1, 256);
    const model::Transformer transformer(config, bench::randomModel(config));
    const model::LayerWeights layer = bench::randomLayer(config, 1);
    std::vector<MatrixF> inputs;
    for (int s = 0; s < sequences; ++s)
        inputs.push_back(bench::benchInputs(tokens, config.hiddenSize, 40u + unsigned(s)));
    const auto cpuSince = [](std::clock_t c0) { return double(std::clock() - c0) / CLOCKS_PER_SEC; };
    double first = 0.0, later = 0.0, finalize = 0.0;
    const auto resident = math ? math->keepResident(layer) : nullptr;
    for (auto _ : state) {
        pipeline::LayerStatistics statistics(nullptr, math ? quant::GramInputs::Bf16 : quant::GramInputs::F32);
        for (int s = 0; s < sequences; ++s) {
            const std::clock_t c0 = std::clock();
            if (observe) {
                transformer.observeLayer(0, layer, inputs[std::size_t(s)], statistics.hook(), {}, math.get());
            } else {
                MatrixF h = inputs[std::size_t(s)];
                transformer.runLayer(0, layer, h, hook ? statistics.hook() : model::LinearInputHook{}, {}, math.get());
                benchmark::DoNotOptimize(h.data());
            }
            (s == 0 ? first : later) += cpuSince(c0);
        }
        const std::clock_t c0 = std::clock();
        if (hook) finalizeHessians(statistics);
        finalize += cpuSince(c0);
    }
    const double n = double(state.iterations());
    const double perToken = later / n / (double(sequences - 1) * tokens);
    const double oneOff = first / n - perToken * tokens + finalize / n;
    state.counters["cpu_ms_per_1k_tokens"] = perToken * 1e6;
    state.counters["one_off_cpu_s"] = oneOff;
    state.counters["finalize_cpu_s"] = finalize / n;
    state.counters["cpu_s_at_128x2048"] = perToken * 128.0 * 2048.0 + oneOff;
    state.counters["threads"] = omp_get_max_threads();
}

}  // namespace

BENCHMARK(calibrateLayer8B)
    ->ArgNames({"sequences", "hook", "bf16"})
    ->Args({2, 0, 0})
    ->Args({3, 1, 0})
    ->Args({3, 2, 0})
    ->Args({2, 0, 1})
    ->Args({3, 1, 1})
    ->Args({3, 2, 1})
    ->Unit(benchmark::kSecond)
    ->Iterations(1);

BENCHMARK(calibrateLayer)
    ->ArgNames({"hidden", "hook", "threads"})
    ->Args({1024, 0, 1})
    ->Args({1024, 1, 1})
    ->Args({1024, 0, 0})
    ->Args({1024, 1, 0})
    ->Args({2048, 1, 0})
    ->Unit(benchmark::kSecond)
    ->Iterations(1);
