// Opening a checkpoint must cost its headers, not its size: the same 291-tensor layout at 0.1, 1
// and 4 GB (1 GB shards) should open in about the same time.
#include <benchmark/benchmark.h>

#include "qs/io/checkpoint.h"

#include "synthetic_checkpoint.h"

namespace {

void openCheckpoint(benchmark::State& state) {
    const std::uint64_t targetBytes = static_cast<std::uint64_t>(state.range(0)) * 1'000'000ULL;
    const qs::bench::SyntheticCheckpoint& synthetic = qs::bench::SyntheticCheckpoints::instance().get(targetBytes);
    for (auto _ : state) {
        qs::io::Checkpoint checkpoint = qs::io::Checkpoint::open(synthetic.dir);
        benchmark::DoNotOptimize(checkpoint);
    }
    state.counters["size_GB"] = static_cast<double>(synthetic.dataBytes) / 1e9;
    state.counters["shards"] = static_cast<double>(synthetic.shards);
    state.counters["tensors"] = static_cast<double>(synthetic.tensors);
}

void openAndSummarize(benchmark::State& state) {
    const std::uint64_t targetBytes = static_cast<std::uint64_t>(state.range(0)) * 1'000'000ULL;
    const qs::bench::SyntheticCheckpoint& synthetic = qs::bench::SyntheticCheckpoints::instance().get(targetBytes);
    for (auto _ : state) {
        const qs::io::Checkpoint checkpoint = qs::io::Checkpoint::open(synthetic.dir);
        qs::io::CheckpointSummary summary = checkpoint.summary();
        benchmark::DoNotOptimize(summary);
    }
    state.counters["size_GB"] = static_cast<double>(synthetic.dataBytes) / 1e9;
    state.counters["shards"] = static_cast<double>(synthetic.shards);
    state.counters["tensors"] = static_cast<double>(synthetic.tensors);
}

// Arguments are sizes in MB.
BENCHMARK(openCheckpoint)->Arg(100)->Arg(1000)->Arg(4000)->Unit(benchmark::kMillisecond);
BENCHMARK(openAndSummarize)->Arg(100)->Arg(1000)->Arg(4000)->Unit(benchmark::kMillisecond);

}  // namespace
