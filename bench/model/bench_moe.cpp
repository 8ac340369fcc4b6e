// Issue 16's MoE target: one Qwen3-30B-A3B-shaped decoder layer (hidden 2048, 32 query / 4 KV heads of
// 128, 128 experts of width 768, top 8) calibrated as the Job does it by default, with all-expert calibration
// (the layer routes as the model does while every expert's Hessians see every token), then GPTQ 4-bit g128
// of every linear, the experts one at a time, each input's statistics freed once its last module is
// done. Counters: CPU seconds of the calibration pass and of the GPTQ per expert (its three linears),
// the statistics' bytes at their peak, and the process's peak RSS (ru_maxrss) after the run.
#include <ctime>

#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include "qs/cancel_token.h"
#include "qs/model/transformer.h"
#include "qs/pipeline/layer_quantizer.h"
#include "qs/pipeline/layer_statistics.h"
#include "qs/pipeline/method_spec.h"

#include "synthetic_model.h"

namespace {

using namespace qs;

model::ModelConfig qwen3_30bA3bShape() {
    return model::ModelConfig::fromJson({{"model_type", "qwen3_moe"},
                                         {"hidden_size", 2048},
                                         {"intermediate_size", 6144},
                                         {"num_hidden_layers", 1},
                                         {"num_attention_heads", 32},
                                         {"num_key_value_heads", 4},
                                         {"head_dim", 128},
                                         {"vocab_size", 256},
                                         {"moe_intermediate_size", 768},
                                         {"num_experts", 128},
                                         {"num_experts_per_tok", 8},
                                         {"norm_topk_prob", true}},
                                        "Qwen3-30B-A3B shape");
}

model::LayerWeights randomMoeLayer(const model::ModelConfig& c) {
    model::LayerWeights w;
    const std::int64_t h = c.hiddenSize, width = c.moe.expertIntermediateSize;
    w.inputNorm = VectorF::Ones(h);
    w.postAttentionNorm = VectorF::Ones(h);
    w.qNorm = VectorF::Ones(c.headDim);
    w.kNorm = VectorF::Ones(c.headDim);
    w.q = bench::randomLinear(c.qDim(), h, 1);
    w.k = bench::randomLinear(c.kvDim(), h, 2);
    w.v = bench::randomLinear(c.kvDim(), h, 3);
    w.o = bench::randomLinear(h, c.qDim(), 4);
    w.moeNames = c.moe.names;
    w.router = bench::randomLinear(c.moe.numExperts, h, 5);
    w.experts.resize(static_cast<std::size_t>(c.moe.numExperts));
    for (std::size_t e = 0; e < w.experts.size(); ++e) {
        const unsigned seed = 10u + 3u * unsigned(e);
        w.experts[e] = {bench::randomLinear(width, h, seed), bench::randomLinear(width, h, seed + 1),
                        bench::randomLinear(h, width, seed + 2)};
    }
    return w;
}

double cpuSeconds() { return double(std::clock()) / CLOCKS_PER_SEC; }

// Args: calibration sequences of 512 tokens. (Routed-only calibration is not benchmarked: on random
// weights some of the 128 experts get no token, and GPTQ refuses them.)
void calibrateAndGptqMoeLayer30BA3B(benchmark::State& state) {
    const int sequences = int(state.range(0)), tokens = 512;
    const model::ModelConfig config = qwen3_30bA3bShape();
    // The layer is passed in; the model's own (dense) weights only give the transformer an embedding.
    model::Transformer transformer(config, bench::randomModel(bench::llamaShape(config.hiddenSize, 1, 256)));
    transformer.setHookSeesAllExpertTokens(true);
    std::vector<MatrixF> inputs;
    for (int s = 0; s < sequences; ++s)
        inputs.push_back(bench::benchInputs(tokens, config.hiddenSize, 40u + unsigned(s)));
    const pipeline::MethodSpec gptq = pipeline::parseMethod("gptq4", 128);
    double calibration = 0.0, quantization = 0.0, statisticsBytes = 0.0;
    for (auto _ : state) {
        model::LayerWeights layer = randomMoeLayer(config);
        pipeline::LayerStatistics statistics;
        double t0 = cpuSeconds();
        for (const auto& input : inputs) {
            MatrixF h = input;
            transformer.runLayer(0, layer, h, statistics.hook());
            benchmark::DoNotOptimize(h.data());
        }
        calibration += cpuSeconds() - t0;
        statisticsBytes = double(statistics.bytes());
        t0 = cpuSeconds();
        const auto quantized = pipeline::quantizeLayer(gptq, layer, statistics, 0, CancelToken{}, nullptr,
                                                       pipeline::LayerRelease{.statistics = true, .weights = true});
        quantization += cpuSeconds() - t0;
        benchmark::DoNotOptimize(quantized.size());
    }
    const double n = double(state.iterations());
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    state.counters["calibration_cpu_s"] = calibration / n;
    state.counters["gptq_cpu_s_per_expert"] = quantization / n / config.moe.numExperts;
    state.counters["statistics_GB"] = statisticsBytes / 1e9;
    state.counters["peak_rss_GB"] = double(usage.ru_maxrss) * 1024.0 / 1e9;
    state.counters["tokens"] = double(sequences) * tokens;
}

}  // namespace

BENCHMARK(calibrateAndGptqMoeLayer30BA3B)->ArgNames({"sequences"})->Arg(2)->Unit(benchmark::kSecond)->Iterations(1);
