#!/usr/bin/env bash
# The whole tree's C++ and CUDA sources as .clang-format lays them out (clang-format 14, Debian 12's):
#   scripts/check-format.sh          list the files clang-format would change; exit 1 if any
#   scripts/check-format.sh --fix    reformat them in place
# Only tracked files are checked, and not tests/data/ (files taken from other projects as they are).
# A table that keeps its source's layout says so with "// clang-format off" (core/io/ggml_iq_grid_data.h).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
tool=clang-format-14
command -v "$tool" >/dev/null || { echo "check-format.sh: $tool not found (scripts/setup-deps.sh installs it)" >&2; exit 2; }

mapfile -t files < <(git ls-files -- '*.cpp' '*.h' '*.cu' '*.cuh' ':!:tests/data/**')
if [[ "${1:-}" == "--fix" ]]; then
    printf '%s\0' "${files[@]}" | xargs -0 -n 64 "$tool" -i
    exit 0
fi
# --dry-run --Werror reports each replacement it would make as "FILE:LINE:COL: error: ...".
mapfile -t unformatted < <(printf '%s\0' "${files[@]}" | xargs -0 -n 64 "$tool" --dry-run --Werror 2>&1 |
    sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error: .*/\1/p' | sort -u)
if [[ ${#unformatted[@]} -gt 0 ]]; then
    echo "check-format.sh: ${#unformatted[@]} file(s) not formatted as .clang-format says (scripts/check-format.sh --fix):" >&2
    printf '  %s\n' "${unformatted[@]}" >&2
    exit 1
fi
echo "check-format.sh: ${#files[@]} files formatted" >&2
