// The per-layer KL of a MoE job whose results are on disk (--work-dir with results on disk), against
// the same job with its results in RAM: each stream's model reruns every finished layer from the work
// folder, one stored linear at a time, and a layer of 128 experts holds 384 linears per method. Args:
// 0 = results in RAM, 1 = on disk; the time of one whole job (3 methods, per-layer KL) on a small
// Mixtral-shaped checkpoint, so that the ratio of the two is what reading back costs.
#include <filesystem>

#include <benchmark/benchmark.h>
#include <unistd.h>

#include "qs/cancel_token.h"
#include "qs/pipeline/job.h"
#include "qs/pipeline/method_spec.h"

#include "synthetic_checkpoint.h"

namespace {

using namespace qs;
namespace fs = std::filesystem;

fs::path scratch(const std::string& name) {
    const fs::path dir = fs::temp_directory_path() / ("qs_bench_" + name + "_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    return dir;
}

void perLayerKlOfA128ExpertJob(benchmark::State& state) {
    const bool onDisk = state.range(0) != 0;
    const fs::path checkpoint = scratch("moe128");
    test::SyntheticModel model;
    model.layers = 2;
    model.hidden = 64;
    model.intermediate = 32;
    model.experts = 128;
    model.expertsPerToken = 8;
    test::writeSyntheticCheckpoint(checkpoint, model);
    pipeline::JobPlan plan;
    plan.checkpoint = checkpoint;
    plan.methods = pipeline::parseMethodList("rtn4,fp8,nvfp4", 32);
    plan.calibration = test::syntheticTokens(8, 64, 96, 11);
    plan.evaluation = test::syntheticTokens(4, 64, 96, 12);
    plan.perLayerKl = true;
    const fs::path work = scratch("moe128_work");
    for (auto _ : state) {
        if (onDisk) plan.workDir = work, plan.resultsOnDisk = true;
        const pipeline::JobResult result = pipeline::Job(plan).run({}, CancelToken{});
        benchmark::DoNotOptimize(result.methods.size());
        state.PauseTiming();
        fs::remove_all(work);
        state.ResumeTiming();
    }
    fs::remove_all(checkpoint);
}

}  // namespace

BENCHMARK(perLayerKlOfA128ExpertJob)
    ->ArgNames({"on_disk"})
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
