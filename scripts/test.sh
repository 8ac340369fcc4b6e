#!/usr/bin/env bash
# The README's second command: set up, build (warnings are errors), and run every test through ctest.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${QS_BUILD_DIR:-$root/build}"

"$root/scripts/setup-deps.sh"
"$root/scripts/build.sh" -DQS_WARNINGS_AS_ERRORS=ON

export QT_QPA_PLATFORM=offscreen
# ctest runs tests side by side: OpenMP threads that spin while waiting would steal the cores from
# each other and make the suite many times slower than its work.
export OMP_WAIT_POLICY=PASSIVE
cd "$build"
ctest --output-on-failure -j "${QS_JOBS:-$(nproc)}" --timeout 900
