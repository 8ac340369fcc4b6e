#!/usr/bin/env bash
# The README's second command: set up, build (warnings are errors), and run every test through ctest.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${QS_BUILD_DIR:-$root/build}"

"$root/scripts/setup-deps.sh"

# tests/interop's judge: llama.cpp's ggml from the npm package node-llama-cpp (pinned in
# tests/interop/package-lock.json), installed again only when node_modules is missing or the lock
# changed. The interop tests fail, saying how to install it, when it is missing.
interop="$root/tests/interop"
lock_stamp="$interop/node_modules/.qs-package-lock.sha256"
lock_sum="$(sha256sum "$interop/package-lock.json" | cut -d' ' -f1)"
if [ ! -f "$lock_stamp" ] || [ "$(cat "$lock_stamp")" != "$lock_sum" ]; then
  if ! command -v npm >/dev/null; then
    echo "test.sh: installing npm (for tests/interop)" >&2
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends npm >&2
  fi
  (cd "$interop" && npm ci --omit=optional --ignore-scripts --no-audit --no-fund)
  echo "$lock_sum" > "$lock_stamp"
fi
"$root/scripts/build.sh" -DQS_WARNINGS_AS_ERRORS=ON

export QT_QPA_PLATFORM=offscreen
# ctest runs one test per core side by side; OpenMP teams inside each would only contend for the
# same cores (each barrier then waits for a descheduled thread), which made the suite several times
# slower than its work. Thread-count-dependent code sets its thread count explicitly in its tests.
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
export OMP_WAIT_POLICY=PASSIVE
cd "$build"
ctest --output-on-failure -j "${QS_JOBS:-$(nproc)}" --timeout 900
