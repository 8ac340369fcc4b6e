#!/usr/bin/env bash
# The README's second command: set up, build (warnings are errors) and run every test through ctest.
#
# The tests run a build without -march=native (QS_NATIVE=OFF), the build the Debian package ships:
# its own arithmetic and its compiler diagnostics are the same on every CI machine, whatever the CPU
# (OpenBLAS still picks its kernels), and its hand-vectorised kernels are chosen at run time
# (qs/cpu_features.h) as in the package. At the end the core is compiled once more as scripts/run.sh
# builds it (-march=native with precompiled headers; x86-64-v4 where the CPU lacks AVX-512), warnings
# as errors, so that no compiler warning reaches a newcomer's first command on any x86-64
# (scripts/check-portable-build.sh native). Its other targets (x86-64-v4 and plain x86-64 without
# precompiled headers: 7 minutes each on CI's 2 cores) are not run here: run them after changing
# includes or ISA-specific code.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${QS_BUILD_DIR:-$root/build}"
# GNU nproc answers OMP_NUM_THREADS when it is set, and this script sets it to 1 below: count the
# cores without it, or ctest would run one test at a time.
jobs="${QS_JOBS:-$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)}"

"$root/scripts/setup-deps.sh"
# The layout first: seconds, and a misformatted file fails before twenty minutes of build.
"$root/scripts/check-format.sh"
"$root/scripts/setup-interop.sh"   # llama.cpp, the judge of ctest -L interop
"$root/scripts/build.sh" -DQS_WARNINGS_AS_ERRORS=ON -DQS_NATIVE=OFF
# The core as run.sh builds it, which the test build does not compile (before ctest, whose summary
# stays the last thing printed).
"$root/scripts/check-portable-build.sh" native

export QT_QPA_PLATFORM=offscreen
# ctest runs one test per core side by side; OpenMP teams inside each would only contend for the
# same cores (each barrier then waits for a descheduled thread), which made the suite several times
# slower than its work. Thread-count-dependent code sets its thread count explicitly in its tests.
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
export OMP_WAIT_POLICY=PASSIVE
cd "$build"
ctest --output-on-failure -j "$jobs" --timeout 900

# OpenBLAS picks its kernels by CPU (Haswell, SkylakeX, Cooperlake, ... each rounds differently), so a
# tolerance that only covers one machine's kernels would fail on another. The tests that compute
# through the BLAS run once more under a kernel that no CI machine picks for itself and that every
# x86-64 CI machine runs (AVX without FMA), so such a test fails in every CI run, wherever it runs.
second_kernel="${QS_SECOND_OPENBLAS_CORETYPE:-Sandybridge}"
echo "test.sh: the numerics tests again under OpenBLAS's $second_kernel kernels" >&2
OPENBLAS_CORETYPE="$second_kernel" ctest --output-on-failure -j "$jobs" --timeout 900 -L numerics
