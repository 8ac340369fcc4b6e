#!/usr/bin/env bash
# For developers (not run in CI): clang-format and clang-tidy on what a branch changed against a base.
#   scripts/lint.sh [BASE]          report: the formatting diff of the changed lines, then clang-tidy's
#                                   warnings on the changed lines of the changed C++ sources
#   scripts/lint.sh --fix [BASE]    apply clang-format to the changed lines instead of printing it
# BASE defaults to the merge base with main. clang-tidy reads the compile commands of a configured
# build folder ($QS_BUILD_DIR, default build/); CUDA sources (.cu, .cuh) are formatted but not tidied.
# Exit status 1 when there is anything to report.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${QS_BUILD_DIR:-$root/build}"
fix=0
if [[ "${1:-}" == "--fix" ]]; then
    fix=1
    shift
fi
cd "$root"
base="${1:-$(git merge-base HEAD main)}"

for tool in clang-format-14 clang-tidy-14 git-clang-format-14 clang-tidy-diff-14.py; do
    command -v "$tool" >/dev/null || { echo "lint.sh: $tool not found (apt install clang-format-14 clang-tidy-14)" >&2; exit 2; }
done

status=0
extensions=cpp,h,cu,cuh
if [[ $fix == 1 ]]; then
    git-clang-format-14 --binary clang-format-14 --extensions "$extensions" "$base" || true
else
    formatting="$(git-clang-format-14 --binary clang-format-14 --extensions "$extensions" --diff "$base" || true)"
    if [[ -n "$formatting" && "$formatting" != *"no modified files to format"* && "$formatting" != *"did not modify any files"* ]]; then
        echo "== clang-format (scripts/lint.sh --fix applies it)"
        echo "$formatting"
        status=1
    fi
fi

if [[ ! -f "$build/compile_commands.json" ]]; then
    echo "lint.sh: no $build/compile_commands.json: configure a build there first (cmake -S . -B build ...)" >&2
    exit 2
fi
# clang-tidy on the changed lines only (-p1: git's a/ b/ prefixes); GCC-only warning flags are not
# clang's business.
tidy="$(git diff -U0 --no-color "$base" -- '*.cpp' '*.h' |
    clang-tidy-diff-14.py -p1 -regex '.*\.cpp' -path "$build" -clang-tidy-binary clang-tidy-14 -quiet \
        -extra-arg=-Wno-unknown-warning-option -j "$(nproc)" 2>/dev/null || true)"
if grep -qE '(warning|error):' <<<"$tidy"; then
    echo "== clang-tidy"
    echo "$tidy"
    status=1
fi
exit $status
