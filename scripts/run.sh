#!/usr/bin/env bash
# The README's first command: set up, build, and open QuantScope on the bundled demo checkpoint
# (or on the checkpoint given as the first argument).
#
# It builds what it runs and nothing else: the app and the CLI (and the CUDA backend where nvcc is
# found), optimised for this machine's CPU, in a build folder of its own (build-app/, or
# $QS_APP_BUILD_DIR), so that scripts/test.sh's build/ (every test program and benchmark, for plain
# x86-64) and this one never rebuild each other.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${QS_APP_BUILD_DIR:-$root/build-app}"
jobs="${QS_JOBS:-$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)}"

"$root/scripts/setup-deps.sh"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DQS_BUILD_TESTS=OFF -DQS_BUILD_BENCH=OFF -DQS_FUZZ=OFF >&2
targets=(quantscope-cli)
grep -q '^QS_WITH_GUI:BOOL=ON' "$build/CMakeCache.txt" && targets+=(quantscope)
cmake --build "$build" -j "$jobs" --target "${targets[@]}" >&2

default="$root/resources/models/stories260K"
[ -d "$root/resources/demo" ] && default="$root/resources/demo"
checkpoint="${1:-$default}"

if [ -x "$build/app/gui/quantscope" ]; then
  if [ -z "${DISPLAY:-}" ] && [ -z "${WAYLAND_DISPLAY:-}" ] && [ -z "${QT_QPA_PLATFORM:-}" ]; then
    echo "run.sh: no display found; starting the app under xvfb-run" >&2
    exec xvfb-run -a "$build/app/gui/quantscope" "$checkpoint"
  fi
  exec "$build/app/gui/quantscope" "$checkpoint"
fi
exec "$build/app/cli/quantscope-cli" inspect "$checkpoint"
