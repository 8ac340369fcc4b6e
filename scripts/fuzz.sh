#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (separate build folder) and runs one of them for SECONDS
# seconds (default 60) on its seed corpus in fuzz/corpus/<target>. Exits 0 when no input crashed it;
# a crashing input is left as crash-* in the build folder.
#   scripts/fuzz.sh [SECONDS] [TARGET]     TARGET: safetensors_header (default) or gguf
#   QS_FUZZ_RUNS=N scripts/fuzz.sh 0 gguf  stops after N executions instead of after a time
set -euo pipefail
seconds="${1:-60}"
target="${2:-safetensors_header}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${QS_FUZZ_BUILD_DIR:-$root/build-fuzz}"
jobs="${QS_JOBS:-$(nproc)}"
case "$target" in
  safetensors_header) max_len=65536 ;;
  gguf) max_len=16384 ;;
  *) echo "fuzz: unknown target '$target' (safetensors_header, gguf)" >&2; exit 2 ;;
esac

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

CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DQS_FUZZ=ON -DQS_WITH_GUI=OFF -DQS_WITH_CUDA=OFF -DQS_BUILD_TESTS=OFF -DQS_BUILD_BENCH=OFF >&2
cmake --build "$build" --target "fuzz_$target" -j "$jobs" >&2

# New interesting inputs go to a work corpus in the build folder; the committed seeds stay as they are.
work="$build/fuzz-corpus/$target"
mkdir -p "$work"
cd "$build"
limits=(-max_total_time="$seconds")
if [ -n "${QS_FUZZ_RUNS:-}" ]; then limits=(-runs="$QS_FUZZ_RUNS"); fi
"$build/fuzz/fuzz_$target" "${limits[@]}" -timeout=10 -rss_limit_mb=4096 \
  -max_len="$max_len" -print_final_stats=1 "$work" "$root/fuzz/corpus/$target"
