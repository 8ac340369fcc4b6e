#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan, a separate build folder) and runs every
# target found (fuzz/fuzz_<name>.cpp -> fuzz_<name>), one after another at nice 10, on its seed
# corpus fuzz/corpus/<name> (plus its dictionary fuzz/dict/<name>.dict when there is one).
#   scripts/fuzz.sh [--time SECONDS | --runs EXECUTIONS] [TARGET...]
# --time and --runs are totals, split evenly over the targets run (default: --time 60). Prints the
# executions per target (also written to <build>/fuzz-report.txt). A crashing input is copied to
# fuzz/regressions/<name>/, where ctest replays it (fuzz_replay_<name>); the script then exits 1.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${QS_FUZZ_BUILD_DIR:-$root/build-fuzz}"
jobs="${QS_JOBS:-$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)}"
mode=time
total=60
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --time) mode=time; total="$2"; shift 2 ;;
    --runs) mode=runs; total="$2"; shift 2 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    fuzz_*) targets+=("$1"); shift ;;
    *) targets+=("fuzz_$1"); shift ;;
  esac
done

# libFuzzer ships with clang's compiler-rt; install both only when a fuzzer cannot be linked.
probe="$(mktemp -d)"
trap 'rm -rf "$probe"' EXIT
echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' > "$probe/probe.cpp"
if ! clang++ -fsanitize=fuzzer "$probe/probe.cpp" -o "$probe/probe" >/dev/null 2>&1; then
  echo "fuzz: installing clang and libclang-rt-14-dev for libFuzzer" >&2
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends clang libclang-rt-14-dev >&2
fi

if [ ${#targets[@]} -eq 0 ]; then
  for source in "$root"/fuzz/fuzz_*.cpp; do targets+=("$(basename "$source" .cpp)"); done
fi
# ccache, when there is one; it caches nothing that compiles against a precompiled header, so the
# fuzz build (rebuilt rarely, instrumented anyway) goes without them.
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
CC=clang CXX=clang++ nice -n 10 cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" \
  -DQS_FUZZ=ON -DQS_WITH_GUI=OFF -DQS_WITH_CUDA=OFF -DQS_BUILD_TESTS=OFF -DQS_BUILD_BENCH=OFF -DQS_NATIVE=OFF -DQS_PCH=OFF >&2
nice -n 10 cmake --build "$build" --target "${targets[@]}" -j "$jobs" >&2

share=$(( total / ${#targets[@]} ))
[ "$share" -gt 0 ] || share=1
report="$build/fuzz-report.txt"
printf '%-28s %14s %10s  %s\n' target executions seconds result | tee "$report"
failed=0
for target in "${targets[@]}"; do
  name="${target#fuzz_}"
  work="$build/fuzz-corpus/$name"       # new interesting inputs; the committed seeds stay as they are
  artifacts="$build/fuzz-artifacts/$name/"
  mkdir -p "$work" "$artifacts"
  limit=(-max_total_time="$share")
  if [ "$mode" = runs ]; then limit=(-runs="$share"); fi
  dict=()
  if [ -f "$root/fuzz/dict/$name.dict" ]; then dict=(-dict="$root/fuzz/dict/$name.dict"); fi
  max_len=65536                         # a GGUF's interesting structure sits in its first few KB
  if [ "$name" = gguf ]; then max_len=16384; fi
  log="$build/fuzz-$name.log"
  start=$(date +%s)
  set +e
  (cd "$build" && nice -n 10 "$build/fuzz/$target" "${limit[@]}" "${dict[@]}" -timeout=30 -rss_limit_mb=4096 \
     -max_len="$max_len" -print_final_stats=1 -artifact_prefix="$artifacts" "$work" "$root/fuzz/corpus/$name") >"$log" 2>&1
  status=$?
  set -e
  seconds=$(( $(date +%s) - start ))
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  result=ok
  if [ "$status" -ne 0 ]; then
    result="FAILED (exit $status, see $log)"
    failed=1
    mkdir -p "$root/fuzz/regressions/$name"
    for crash in "$artifacts"*; do
      [ -f "$crash" ] && cp "$crash" "$root/fuzz/regressions/$name/" && result="$result; kept $(basename "$crash")"
    done
  fi
  printf '%-28s %14s %10s  %s\n' "$target" "${runs:-?}" "$seconds" "$result" | tee -a "$report"
done
exit "$failed"
