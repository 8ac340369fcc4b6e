#!/usr/bin/env bash
# Configures and builds QuantScope (Release) into build/ (or $QS_BUILD_DIR). Extra args go to cmake.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${QS_BUILD_DIR:-$root/build}"
jobs="${QS_JOBS:-$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)}"

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >&2
cmake --build "$build" -j "$jobs" >&2
