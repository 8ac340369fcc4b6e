#!/usr/bin/env bash
# Compiles the core for CPUs other than this one, compile only, warnings as errors: once for
# x86-64-v4 (AVX-512, where GCC 12 reports false -Wmaybe-uninitialized inside its intrinsics
# headers) and once with QS_NATIVE=OFF (plain x86-64, what the .deb is built for). Without
# precompiled headers (QS_PCH=OFF): each source must include what it uses, and GCC's
# -Wstringop-overflow and -Warray-bounds, off under a precompiled header
# (cmake/QsPrecompiledHeaders.cmake), apply. scripts/test.sh does not run it (it says why): run it
# after changing includes or code for a particular instruction set.
# The target "native" compiles the core as scripts/run.sh configures it (-march=native, precompiled
# headers), for x86-64-v4 as well where this CPU has no AVX-512, so that GCC 12's false positives in
# its AVX-512 headers, which a precompiled header lets through, are caught on any CI machine:
# scripts/test.sh runs this one.
# Build folders: build-check-<target>/ (or $QS_CHECK_BUILD_ROOT/<target>).
#   scripts/check-portable-build.sh [TARGET...]     TARGET: x86-64-v4, baseline, native (default: the first two)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
jobs="${QS_JOBS:-$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)}"
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(x86-64-v4 baseline)
core_libs=(qs_io qs_quant qs_analysis qs_model qs_formats qs_pipeline)

for target in "${targets[@]}"; do
  native=OFF pch=OFF
  case "$target" in
    baseline) flags="" ;;
    x86-64-v[234]) flags="-march=$target" ;;
    native)
      native=ON pch=ON flags=""
      # A later -march=native would override x86-64-v4: one or the other.
      grep -qw avx512f /proc/cpuinfo || native=OFF flags="-march=x86-64-v4" ;;
    *) echo "check-portable-build: unknown target '$target' (x86-64-v2|v3|v4, baseline, native)" >&2; exit 2 ;;
  esac
  build="${QS_CHECK_BUILD_ROOT:-$root}/build-check-$target"
  echo "check-portable-build: core for $target (${flags:-no extra -march}, precompiled headers $pch), warnings as errors" >&2
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DQS_NATIVE=$native -DCMAKE_CXX_FLAGS="$flags" \
    -DQS_WARNINGS_AS_ERRORS=ON -DQS_WITH_GUI=OFF -DQS_WITH_CUDA=OFF -DQS_BUILD_TESTS=OFF -DQS_BUILD_BENCH=OFF \
    -DQS_FUZZ=OFF -DQS_PCH=$pch >/dev/null
  cmake --build "$build" -j "$jobs" --target "${core_libs[@]}" >&2
done
