#!/usr/bin/env bash
# The GPU check in one command, for a bare CUDA machine (docs/gpu-check.md): unpacks the bundle that
# scripts/gpu-bundle.sh made here (gpu-bundle/, carried with the tree), then runs, each step under its
# own time limit,
#   1. the GPU parity tests (tests/gpu: every kernel against the CPU backend),
#   2. our forward pass against transformers' on the tiny checkpoint of every family, on the CPU and on
#      the device (scripts/transformers-kl.py; KL per checkpoint),
#   3. the GPU benchmarks (bench/gpu/bench_gpu),
#   4. the end-to-end GPTQ of two Llama-3-8B-shaped layers, projected to 32 (bench/gpu/e2e_gptq.sh),
# and writes summary.txt and one log per step into $OUT (at most 7 files, no folders), printing the
# summary last. Each step has a time limit, and none runs past 450 s from the start (7.5 minutes; the
# end-to-end run takes what the others left), so that a rerun of some steps fits the 15 minutes of
# device time a task is lent.
#
#   scripts/gpu-bundle-run.sh [BUNDLE]      BUNDLE: the folder gpu-bundle.sh wrote (default gpu-bundle/)
#
# Environment: OUT (default out/gpu-check/); QS_STEPS, the steps to run (tests,kl,bench,e2e: a rerun
# can take fewer); QS_E2E_LAYERS (2), QS_E2E_SAMPLES (128); QS_LIMIT_TESTS, QS_LIMIT_KL, QS_LIMIT_BENCH,
# QS_LIMIT_E2E (seconds: 120, 120, 60, 240); QS_DEADLINE (450: no step runs past this many seconds).
# Exit: 0 every step passed on a GPU; 1 a step failed; 2 nothing ran (no bundle, or a library it needs is
# not on this machine); 3 no GPU here: the steps that need none ran and passed, nothing was measured.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bundle="${1:-$root/gpu-bundle}"
out="${OUT:-$root/out/gpu-check}"
deadline="${QS_DEADLINE:-450}"
steps=",${QS_STEPS:-tests,kl,bench,e2e},"
e2e_layers="${QS_E2E_LAYERS:-2}"
start=$(date +%s)
elapsed() { echo $(($(date +%s) - start)); }

mkdir -p "$out"
summary="$out/summary.txt"
: >"$summary"
note() { echo "$*" | tee -a "$summary"; }
rows=()
failed=0
# record STEP RESULT SECONDS FIGURES: a row of the summary's table; FAIL anywhere makes the exit 1.
record() {
  rows+=("$(printf '%-16s %-6s %5s s  %s' "$1" "$2" "$3" "$4")")
  [ "$2" = FAIL ] && failed=1
  return 0
}
wanted() { [[ "$steps" == *",$1,"* ]]; }
# The seconds a step may take: its own limit, or less when the deadline is nearer.
limit() {
  local left=$((deadline - $(elapsed)))
  echo $(($1 < left ? $1 : left))
}

# --- the bundle ---------------------------------------------------------------------------------
archive="$bundle/qs-gpu.tar.xz"
if [ ! -f "$archive" ]; then
  echo "gpu-run: no bundle at $archive: build it with scripts/gpu-bundle.sh and carry its folder (docs/gpu-check.md)" >&2
  exit 2
fi
work="$(mktemp -d "${TMPDIR:-/tmp}/qs-gpu-run.XXXXXX")"
trap 'rm -rf "$work"' EXIT
# xz through tar, or through Python's tarfile where the image has no xz program.
if ! tar -xJf "$archive" -C "$work" 2>/dev/null; then
  python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2], filter="data")' "$archive" "$work" ||
    { echo "gpu-run: cannot unpack $archive (no xz, no python3)" >&2; exit 2; }
fi
bin="$work/qs-gpu/bin"

# The bundle carries every library but CUDA's: find those where this image keeps them, if the loader does not.
# ldd where the image has it (it lists what it cannot find); else the loader, which stops at the first.
libs() { if command -v ldd >/dev/null; then ldd "$1"; else /lib64/ld-linux-x86-64.so.2 --list "$1"; fi; }
unresolved() { for p in "$bin"/*; do libs "$p" 2>&1; done | grep -E 'not found|cannot open' | sort -u; }
cuda_dirs() {
  ls -d /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda-*/lib64 \
    /usr/local/cuda-*/targets/x86_64-linux/lib 2>/dev/null
  python3 -c 'import nvidia, os; [print(os.path.join(p, d, "lib")) for p in nvidia.__path__ for d in sorted(os.listdir(p))]' 2>/dev/null
}
if [ -n "$(unresolved)" ]; then
  for soname in $(unresolved | awk '$2 == "=>" && $3 == "not" { print $1 }'); do
    for dir in $(cuda_dirs); do
      if [ -e "$dir/$soname" ]; then
        export LD_LIBRARY_PATH="$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
        break
      fi
    done
  done
fi
{
  echo "== $(date -u '+%Y-%m-%d %H:%M:%S UTC') on $(uname -srm)"
  cat "$work/qs-gpu/MANIFEST.txt"
  echo "== LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
  for p in "$bin"/*; do echo "== libraries of $(basename "$p")"; libs "$p" 2>&1; done
  echo "== nvidia-smi"
  timeout 20 nvidia-smi 2>&1 || echo "(no nvidia-smi, or it failed)"
} >"$out/env.log" 2>&1
if [ -n "$(unresolved)" ]; then
  echo "gpu-run: libraries the bundle needs are not on this machine (env.log has each program's ldd):" >&2
  unresolved >&2
  exit 2
fi

gpu=""
if command -v nvidia-smi >/dev/null; then
  gpu="$(timeout 20 nvidia-smi --query-gpu=name,memory.total,compute_cap,driver_version --format=csv,noheader 2>/dev/null | head -n1)"
fi
note "QuantScope GPU check, $(date -u '+%Y-%m-%d %H:%M UTC'); bundle: $(sed -n 's/^commit: //p' "$work/qs-gpu/MANIFEST.txt")"
if [ -n "$gpu" ]; then
  note "device: $gpu (name, memory, compute capability, driver)"
else
  note "device: NO GPU (nvidia-smi $(command -v nvidia-smi >/dev/null && echo 'lists none' || echo 'not found')):" \
    "the steps that need none run; the GPU tests skip"
fi
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)}"

# --- 1. the parity tests ------------------------------------------------------------------------
count() { sed -n "s/^\[  $1 *\] \([0-9][0-9]*\) tests\?[,.].*/\1/p" "$work/test.log" | head -n1; }
step_start=$(elapsed)
tests_end=$((step_start + ${QS_LIMIT_TESTS:-120}))
status=PASS
figures=()
: >"$out/tests.log"
for t in "$bin"/test_gpu_*; do
  wanted tests || break
  name="$(basename "$t")"
  seconds=$(limit $((tests_end - $(elapsed))))
  if [ "$seconds" -le 0 ]; then
    figures+=("$name not run (time)")
    status=FAIL
    continue
  fi
  t0=$(elapsed)
  timeout "$seconds" "$t" --gtest_color=no >"$work/test.log" 2>&1
  rc=$?
  cat "$work/test.log" >>"$out/tests.log"
  passed=$(count PASSED) skipped=$(count SKIPPED) failures=$(count FAILED)
  line="$name: ${passed:-0} passed, ${skipped:-0} skipped, ${failures:-0} failed ($(($(elapsed) - t0)) s)"
  [ $rc -eq 124 ] && line="$name: TIMED OUT after $seconds s"
  [ $rc -ne 0 ] && status=FAIL
  # On a GPU a skip means the device could not be used: that is a failed check, not a pass.
  [ -n "$gpu" ] && [ "${skipped:-0}" -gt 0 ] && status=FAIL && line="$line: skipped on a GPU machine"
  figures+=("$line")
done
if wanted tests; then
  record "parity tests" "$status" $(($(elapsed) - step_start)) "${#figures[@]} programs (tests.log)"
else
  record "parity tests" SKIP 0 "not in QS_STEPS"
fi
test_figures=("${figures[@]}")

# --- 2. our forward pass against transformers' -------------------------------------------------
step_start=$(elapsed)
devices=cpu
[ -n "$gpu" ] && devices=cpu,cuda
if ! wanted kl; then
  record "transformers KL" SKIP 0 "not in QS_STEPS"
elif ! command -v python3 >/dev/null; then
  record "transformers KL" SKIP 0 "no python3 here"
else
  timeout "$(limit "${QS_LIMIT_KL:-120}")" python3 "$root/scripts/transformers-kl.py" --cli "$bin/quantscope-cli" \
    --make-checkpoint "$bin/make_checkpoint" --devices "$devices" --json "$out/kl.json" >"$out/kl.log" 2>&1
  rc=$?
  verdict="$(grep '^transformers KL:' "$out/kl.log" | tail -n1 | sed 's/^transformers KL: //')"
  if [ $rc -eq 0 ]; then status=PASS; elif [ $rc -eq 124 ]; then status=FAIL verdict="timed out; $verdict"; else status=FAIL; fi
  grep -q '^reference: none' "$out/kl.log" && [ "$status" = PASS ] && status=SKIP verdict="no transformers: our side only; $verdict"
  record "transformers KL" "$status" $(($(elapsed) - step_start)) "on $devices: ${verdict:-no verdict (kl.log)}"
fi

# --- 3. the benchmarks --------------------------------------------------------------------------
step_start=$(elapsed)
if ! wanted bench; then
  record "benchmarks" SKIP 0 "not in QS_STEPS"
elif [ -n "$gpu" ]; then
  timeout "$(limit "${QS_LIMIT_BENCH:-60}")" "$bin/bench_gpu" --benchmark_min_time=0.2 \
    --benchmark_counters_tabular=true >"$out/bench.log" 2>&1
  rc=$?
  status=PASS
  [ $rc -ne 0 ] && status=FAIL
  grep -q 'ERROR OCCURRED' "$out/bench.log" && status=FAIL
  record "benchmarks" "$status" $(($(elapsed) - step_start)) "$(grep -c '^BM_' "$out/bench.log") rows (bench.log)"
else
  # Without a device each benchmark skips with the reason: this proves the program loads and says why.
  timeout "$(limit 30)" "$bin/bench_gpu" --benchmark_min_time=0.01 >"$out/bench.log" 2>&1
  rc=$?
  status=SKIP
  [ $rc -ne 0 ] && status=FAIL
  record "benchmarks" "$status" $(($(elapsed) - step_start)) "no GPU: $(grep -c 'ERROR OCCURRED' "$out/bench.log") benchmarks said why"
fi

# --- 4. end-to-end GPTQ -------------------------------------------------------------------------
step_start=$(elapsed)
if ! wanted e2e; then
  record "e2e gptq4" SKIP 0 "not in QS_STEPS"
elif [ -z "$gpu" ]; then
  record "e2e gptq4" SKIP 0 "needs a GPU (--device cuda)"
elif [ "$e2e_layers" -le 0 ]; then
  record "e2e gptq4" SKIP 0 "QS_E2E_LAYERS=0"
else
  QS_BIN_DIR="$bin" LAYERS="$e2e_layers" SAMPLES="${QS_E2E_SAMPLES:-128}" \
    timeout "$(limit "${QS_LIMIT_E2E:-240}")" bash "$root/bench/gpu/e2e_gptq.sh" >"$out/e2e.log" 2>&1
  rc=$?
  status=PASS
  [ $rc -ne 0 ] && status=FAIL
  what="$(sed -n 's/^end to end: //p' "$out/e2e.log")"
  [ $rc -eq 124 ] && what="timed out (e2e.log has how far it got)"
  record "e2e gptq4" "$status" $(($(elapsed) - step_start)) "${what:-no result (e2e.log)}"
fi

# --- the summary --------------------------------------------------------------------------------
{
  echo
  printf '%-16s %-6s %7s  %s\n' step result time figures
  printf '%s\n' "${rows[@]}"
  echo
  echo "parity tests:"
  printf '  %s\n' "${test_figures[@]}"
  if [ -f "$out/kl.log" ]; then
    echo
    sed -n '/^family /,/^transformers KL:/p' "$out/kl.log"
  fi
  if [ -n "$gpu" ] && [ -f "$out/bench.log" ]; then
    echo
    grep -E '^(Benchmark|-{10}|BM_)' "$out/bench.log"
  fi
  if [ -f "$out/e2e.log" ]; then
    echo
    grep -E '^(checkpoint:|end to end:|quantization|projected)' "$out/e2e.log"
  fi
  echo
} | tee -a "$summary"

if [ $failed -ne 0 ]; then
  note "gpu-run: FAILED (a step above failed; its log is in $out), after $(elapsed) s"
  exit 1
fi
if [ -z "$gpu" ]; then
  note "gpu-run: NO GPU here: nothing was measured on a device; the bundle's programs ran and the GPU tests skipped" \
    "(exit 3), after $(elapsed) s"
  exit 3
fi
note "gpu-run: all steps passed, after $(elapsed) s"
exit 0
