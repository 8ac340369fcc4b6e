#!/usr/bin/env bash
# Builds the Google Benchmark suites (bench/io, bench/quant, ...) when needed and runs every bench
# executable found under the build folders' bench/, printing Google Benchmark's console table.
#
#   bench/run.sh [benchmark options...]     e.g. bench/run.sh --benchmark_filter=convert
#
# Build folders: $QS_BUILD_DIR when set; otherwise every build*/ folder configured as a Release
# build with benchmarks (fuzzing/sanitizer builds are skipped: their timings mean nothing);
# otherwise build/, configured here. QS_JOBS sets the build parallelism (default: all cores).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
jobs="${QS_JOBS:-$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)}"

cache_value() {   # cache_value BUILD_DIR NAME -> the CMakeCache.txt value, or ""
  sed -n "s/^$2:[A-Z]*=//p" "$1/CMakeCache.txt" | head -n1
}

build_dirs=()
if [ -n "${QS_BUILD_DIR:-}" ]; then
  build_dirs=("$QS_BUILD_DIR")
else
  for dir in "$root"/build*/; do
    dir="${dir%/}"
    [ -f "$dir/CMakeCache.txt" ] || continue
    [ "$(cache_value "$dir" QS_BUILD_BENCH)" != "OFF" ] || continue
    [ "$(cache_value "$dir" QS_FUZZ)" != "ON" ] || continue
    [ "$(cache_value "$dir" CMAKE_BUILD_TYPE)" = "Release" ] || continue
    build_dirs+=("$dir")
  done
  [ ${#build_dirs[@]} -gt 0 ] || build_dirs=("$root/build")
fi

# The programs run on huge pages where the kernel gives them only on request (qs/huge_pages.h), and
# so do the benches, unless GLIBC_TUNABLES already sets the tunable (glibc.malloc.hugetlb=0: 4 KiB pages).
if grep -q '\[madvise\]' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null &&
   [[ "${GLIBC_TUNABLES:-}" != *glibc.malloc.hugetlb* ]]; then
  export GLIBC_TUNABLES="${GLIBC_TUNABLES:+$GLIBC_TUNABLES:}glibc.malloc.hugetlb=1"
fi

status=0
for build in "${build_dirs[@]}"; do
  if [ ! -f "$build/CMakeCache.txt" ]; then
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DQS_BUILD_BENCH=ON >&2
  fi
  # Every target under bench/: Ninja names the folder's "all" target, Makefiles have one per folder.
  if [ "$(cache_value "$build" CMAKE_GENERATOR)" = "Ninja" ]; then
    cmake --build "$build" --target bench/all -j "$jobs" >&2
  else
    make -C "$build/bench" -j "$jobs" >&2
  fi
  while IFS= read -r exe; do
    echo
    echo "=== ${exe#"$root"/} ==="
    "$exe" --benchmark_format=console --benchmark_counters_tabular=true "$@" || status=1
  done < <(find "$build/bench" -path '*/CMakeFiles' -prune -o -type f -executable -print | sort)
done
exit "$status"
