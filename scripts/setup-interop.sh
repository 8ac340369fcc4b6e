#!/usr/bin/env bash
# Installs the tests' independent judge: llama.cpp's CPU build as shipped by the npm package
# node-llama-cpp (pinned in tests/interop/package-lock.json) into tests/interop/node_modules. Test-only:
# the product never links it. Runs `npm ci` only when node_modules is missing or the lock changed
# (a checksum, not file times: a fresh clone's times say nothing).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
interop="$root/tests/interop"
stamp="$interop/node_modules/.qs-package-lock.sha256"
lock_sum="$(sha256sum "$interop/package-lock.json" | cut -d' ' -f1)"

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$lock_sum" ]; then
  exit 0
fi
if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
  echo "setup-interop: installing Node.js and npm (Debian's nodejs, npm)" >&2
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends nodejs npm >&2
fi
echo "setup-interop: npm ci in tests/interop (node-llama-cpp, llama.cpp's CPU build)" >&2
# --omit=optional: only the linux-x64 CPU binaries (a direct dependency), not the CUDA/Vulkan builds;
# --ignore-scripts: its postinstall would try to download or build llama.cpp, which the tests do not need.
(cd "$interop" && npm ci --omit=optional --ignore-scripts --no-audit --no-fund >&2)
echo "$lock_sum" > "$stamp"
