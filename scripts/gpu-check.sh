#!/usr/bin/env bash
# One prepared check for a machine with an NVIDIA GPU: configures a CUDA build for this GPU's own
# architecture only, builds the GPU parity tests and benchmarks (and the CLI for the end-to-end run),
# runs them and prints the figures. Meant to finish in well under 8 minutes on 16 cores.
#
#   scripts/gpu-check.sh            build into build-gpu-check/ ($QS_BUILD_DIR to change)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${QS_BUILD_DIR:-$root/build-gpu-check}"
jobs="${QS_JOBS:-$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)}"
start=$(date +%s)
step() { echo "== [$(( $(date +%s) - start )) s] $*"; }

command -v nvidia-smi >/dev/null || { echo "gpu-check: nvidia-smi not found: no NVIDIA driver here" >&2; exit 1; }
nvidia-smi --query-gpu=name,memory.total,memory.free,compute_cap,driver_version --format=csv
cap="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n1 | tr -d ' .')"
[ -n "$cap" ] || { echo "gpu-check: nvidia-smi reports no compute capability" >&2; exit 1; }

step "configure (CUDA architecture $cap)"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DQS_WITH_CUDA=ON -DQS_WITH_GUI=OFF \
  -DQS_BUILD_TESTS=ON -DQS_BUILD_BENCH=ON -DCMAKE_CUDA_ARCHITECTURES="$cap" >/dev/null

targets=(test_gpu_device test_gpu_formats test_gpu_hessian test_gpu_gptq test_gpu_trellis test_gpu_awq test_gpu_layer_math test_backend bench_gpu)
step "build ${targets[*]}"
cmake --build "$build" -j "$jobs" --target "${targets[@]}" quantscope-cli make_checkpoint

export OMP_NUM_THREADS="${OMP_NUM_THREADS:-$(nproc)}"
status=0
for t in "${targets[@]}"; do
  [[ "$t" == test_* ]] || continue
  step "run $t"
  exe="$(find "$build/tests" -type f -name "$t" -perm -u+x | head -n1)"
  timeout 600 "$exe" --gtest_brief=1 || status=1
done

step "benchmarks"
timeout 300 "$build/bench/gpu/bench_gpu" --benchmark_min_time=0.2 --benchmark_counters_tabular=true || status=1

# The end-to-end target on the first layers of the 8B shape, projected to 32 (E2E_LAYERS=0 skips it).
e2e_layers="${E2E_LAYERS:-2}"
if [ "$e2e_layers" -gt 0 ]; then
  step "end-to-end GPTQ, ${e2e_layers} layers of the Llama-3-8B shape, 128 x 2048 calibration tokens"
  QS_BUILD_DIR="$build" LAYERS="$e2e_layers" timeout 240 "$root/bench/gpu/e2e_gptq.sh" || status=1
fi

step "done (status $status)"
exit $status
