#!/usr/bin/env bash
# GPTQ on the bench's 4096 x 4096 layer (4-bit, group 128, asymmetric: what gptq4 gets), QuantScope's
# against the chapter's PyTorch gptq_quantize (bench/reference/gptq_pytorch.py), in one run on the same
# problem, at 1 and 2 threads each (issue 42: ours >= 5x faster).
#
#   bench/gptq_vs_pytorch.sh            QS_BUILD_DIR (default build/), QS_JOBS, TORCH_REPEATS (default 2)
#
# Steps: installs Debian's python3-torch when no python3 on PATH, nor /usr/bin/python3, imports torch
# (apt-get install --no-install-recommends python3-torch, with sudo when not root: it brings numpy and
# OpenBLAS's libblas); builds bench_gptq when needed (the build folder configured as bench/run.sh does);
# checks that the PyTorch GPTQ reproduces the seeds' own vectors (tests/data/quant/seed_reference);
# writes W, H and our codes (`bench_gptq --write-problem`) to a temporary folder; runs ours
# (bench_gptq's gptq_threads rows: 1 and 2 threads, each the mean of 2 iterations, with the SGEMM rate
# at the same threads measured in the same process), then the PyTorch one on 1 and 2 threads (best of
# TORCH_REPEATS, torch's own SGEMM rate; after the 1-thread run a float64 control of the codes, untimed);
# prints the table. The environment is bench/run.sh's: huge pages on request (GLIBC_TUNABLES),
# OPENBLAS_CORETYPE and OMP_WAIT_POLICY as set (both programs' OpenMP spins at barriers unless it is
# PASSIVE, which on a loaded machine decides the 2-thread figures). The problem (H and our codes) is
# written at the environment's thread count.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${QS_BUILD_DIR:-$root/build}"
jobs="${QS_JOBS:-$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)}"
repeats="${TORCH_REPEATS:-2}"

torch_python() {   # the first python3 that imports torch, or nothing
  for py in python3 /usr/bin/python3; do
    if command -v "$py" >/dev/null && "$py" -c 'import torch' 2>/dev/null; then
      command -v "$py"
      return
    fi
  done
}

python="$(torch_python)"
if [ -z "$python" ]; then
  echo "gptq_vs_pytorch: installing python3-torch (Debian)" >&2
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends python3-torch >&2
  python="$(torch_python)"
  [ -n "$python" ] || { echo "gptq_vs_pytorch: torch still not importable" >&2; exit 1; }
fi

if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DQS_BUILD_BENCH=ON >&2
fi
cmake --build "$build" --target bench_gptq -j "$jobs" >&2
bench="$build/bench/quant/bench_gptq"

# As bench/run.sh: huge pages where the kernel gives them only on request, unless the tunable is set.
if grep -q '\[madvise\]' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null &&
   [[ "${GLIBC_TUNABLES:-}" != *glibc.malloc.hugetlb* ]]; then
  export GLIBC_TUNABLES="${GLIBC_TUNABLES:+$GLIBC_TUNABLES:}glibc.malloc.hugetlb=1"
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/qs_gptq_vs_pytorch.XXXXXX")"
trap 'rm -rf "$work"' EXIT

echo "machine: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1), $(nproc) CPUs;" \
  "OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-(unset)} GLIBC_TUNABLES=${GLIBC_TUNABLES:-(unset)}" \
  "OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-(unset)};" \
  "$("$python" -c 'import torch; print("torch", torch.__version__)') ($python)"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

"$python" "$root/bench/reference/gptq_pytorch.py" --check "$root/tests/data/quant/seed_reference.safetensors" \
  > "$work/seed_check.json"
"$bench" --write-problem="$work/problem" > "$work/qs_problem.json"
problem="$work/problem/model.safetensors"

"$bench" --benchmark_filter='^gptq_threads/' --benchmark_out="$work/qs.json" --benchmark_out_format=json \
  --benchmark_counters_tabular=true >&2
for threads in 1 2; do
  control=()
  [ "$threads" -eq 1 ] && control=(--control-f64)
  OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads "$python" "$root/bench/reference/gptq_pytorch.py" \
    "$problem" --threads "$threads" --repeats "$repeats" "${control[@]}" > "$work/torch_$threads.json"
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"

"$python" - "$work" <<'EOF'
import json, os, sys
work = sys.argv[1]
read = lambda name: json.load(open(os.path.join(work, name)))
ours = {int(b["threads"]): b for b in read("qs.json")["benchmarks"]}
torch_runs = {t: read("torch_%d.json" % t) for t in (1, 2)}
print()
print("| threads | QuantScope wall s | CPU s | SGEMM GFLOP/s | PyTorch wall s | CPU s | torch SGEMM GFLOP/s "
      "| PyTorch / QuantScope, wall | CPU |")
print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for t in (1, 2):
    q, p = ours[t], torch_runs[t]
    print("| %d | %.2f | %.2f | %.0f | %.2f | %.2f | %.0f | **%.1f×** | %.1f× |" % (
        t, q["real_time"], q["cpu_s"], q["sgemm_GFLOPs"], p["wall_s"], p["cpu_s"], p["sgemm_GFLOPs"],
        p["wall_s"] / q["real_time"], p["cpu_s"] / q["cpu_s"]))
print()
seed = read("seed_check.json")["seed_vectors"]
print("PyTorch GPTQ on the seeds' vectors: codes equal %.4f %% (act-order %.4f %%)" % (
    100 * seed["gptq_g128"]["codes_equal_share"], 100 * seed["gptq_g128_act"]["codes_equal_share"]))
for t in (1, 2):
    p = torch_runs[t]
    print("PyTorch on %d thread(s): codes equal to ours %.3f %% (first 4 groups %.3f %%, last group %.3f %%), "
          "sha256 %s" % (t, 100 * p["codes_equal_share"], 100 * p["codes_equal_share_first_4_groups"],
                         100 * p["codes_equal_share_last_group"], p["codes_sha256"][:16]))
p = torch_runs[1]
print("output MSE: ours %.6g, PyTorch %.6g (1 thread) / %.6g (2 threads), float64 GPTQ %.6g" % (
    p["qs_output_mse"], p["output_mse"], torch_runs[2]["output_mse"], p["f64_output_mse"]))
print("codes equal to the float64 GPTQ's: ours %.3f %%, PyTorch (1 thread) %.3f %%" % (
    100 * p["f64_codes_equal_share_qs"], 100 * p["f64_codes_equal_share_torch"]))
print("ours as bench_gptq --write-problem reports it: %s" % json.dumps(read("qs_problem.json")))
EOF
