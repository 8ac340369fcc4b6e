#!/usr/bin/env bash
# Builds the Debian package: a Release build in build-package/ (or $QS_PACKAGE_BUILD_DIR) for any
# x86-64 (no -march=native, no CUDA backend, no tests or benchmarks), then cpack. Prints the .deb's
# path on standard output; everything else goes to standard error. Extra args go to cmake.
#   scripts/package.sh && sudo apt install ./build-package/quantscope_*.deb
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${QS_PACKAGE_BUILD_DIR:-$root/build-package}"
jobs="${QS_JOBS:-$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)}"

"$root/scripts/setup-deps.sh"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DQS_NATIVE=OFF -DQS_WITH_CUDA=OFF \
  -DQS_WITH_GUI=ON -DQS_BUILD_TESTS=OFF -DQS_BUILD_BENCH=OFF -DQS_FUZZ=OFF "$@" >&2
cmake --build "$build" -j "$jobs" >&2

rm -f "$build"/quantscope_*.deb
(cd "$build" && cpack -G DEB >&2)
debs=("$build"/quantscope_*.deb)
[ -f "${debs[0]}" ] || { echo "package.sh: cpack wrote no quantscope_*.deb in $build" >&2; exit 1; }
echo "${debs[0]}"
