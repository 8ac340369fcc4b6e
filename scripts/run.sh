#!/usr/bin/env bash
# The README's first command: set up, build, and open QuantScope on the bundled demo checkpoint
# (or on the checkpoint given as the first argument).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${QS_BUILD_DIR:-$root/build}"

"$root/scripts/setup-deps.sh"
"$root/scripts/build.sh"

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
