#!/usr/bin/env bash
# Installs the independent judge of the interop tests (ctest -L interop): llama.cpp as the npm package
# node-llama-cpp, pinned by tests/interop/package-lock.json, with its prebuilt CPU binaries. Does
# nothing when tests/interop/node_modules already matches the lock file; reinstalls when it is stale.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="$root/tests/interop"
stamp="$dir/node_modules/.quantscope-package-lock.json"

if [ -f "$stamp" ] && cmp -s "$stamp" "$dir/package-lock.json"; then
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "setup-interop: npm is not installed; the interop tests (ctest -L interop) will fail until" \
       "'cd tests/interop && npm ci --omit=optional --ignore-scripts --no-audit --no-fund' has run" >&2
  exit 0
fi
echo "setup-interop: installing node-llama-cpp into tests/interop/node_modules" >&2
(cd "$dir" && npm ci --omit=optional --ignore-scripts --no-audit --no-fund >&2)
cp "$dir/package-lock.json" "$stamp"
