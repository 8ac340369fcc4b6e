#!/usr/bin/env bash
# Builds the GPU check here, on a CPU machine with nvcc, for a bare CUDA machine (docs/gpu-check.md):
# the GPU parity tests, bench_gpu, quantscope-cli and make_checkpoint for Hopper (sm_90), with every
# shared library they need that a CUDA image may lack (OpenBLAS's OpenMP build, libgfortran,
# libquadmath, libgomp, PCRE2, Google Benchmark), packed as gpu-bundle/qs-gpu.tar.xz (git-ignored):
# the folder that travels with the tree to the GPU machine, where scripts/gpu-bundle-run.sh runs it.
#
# Inside the archive: qs-gpu/bin (the programs, stripped), qs-gpu/lib (the libraries), MANIFEST.txt.
# The programs find lib/ through their run path, $ORIGIN/../lib, written as DT_RPATH (not RUNPATH) so
# that it also serves the libraries' own needs (libopenblas needs libgfortran). The system keeps
# providing glibc, libstdc++, libgcc_s and CUDA's own libraries (cudart, cuBLAS, cuSOLVER: there on a
# CUDA image, and too large to carry: cuBLAS's Lt alone is 500 MB).
#
# The archive is xz-compressed because the device call carries the working tree (about 33 MiB) and the
# carried folders together in 64 MiB: OpenBLAS alone is 36 MB unpacked, 4 MB packed.
# At the end, scripts/gpu-bundle-check.sh runs the archive's programs here with every other system
# library hidden: a bundle that is not self-contained is not left behind.
#
#   scripts/gpu-bundle.sh          builds in build-gpu-bundle/ ($QS_BUILD_DIR), writes gpu-bundle/ ($QS_GPU_BUNDLE_DIR)
# Environment: QS_JOBS (parallel jobs; default all cores), QS_CUDA_ARCHITECTURES (90).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${QS_BUILD_DIR:-$root/build-gpu-bundle}"
dest="${QS_GPU_BUNDLE_DIR:-$root/gpu-bundle}"
archs="${QS_CUDA_ARCHITECTURES:-90}"
jobs="${QS_JOBS:-$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)}"
limit_mib=64

"$root/scripts/setup-deps.sh"
nvcc="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)"   # where cmake/QsCuda.cmake looks too
if [ ! -x "$nvcc" ]; then
  echo "gpu-bundle: no nvcc (PATH or /usr/local/cuda/bin): the CUDA backend cannot be built here" >&2
  exit 1
fi

# A build of its own: CUDA on, for the lent GPUs only; no -march=native (the GPU machine's CPU is not
# this one); every program linked with the run path it will have in the bundle ($ORIGIN is the loader's).
# shellcheck disable=SC2016
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DQS_WITH_CUDA=ON -DQS_WITH_GUI=OFF \
  -DQS_BUILD_TESTS=ON -DQS_BUILD_BENCH=ON -DQS_NATIVE=OFF -DCMAKE_CUDA_ARCHITECTURES="$archs" \
  -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON '-DCMAKE_INSTALL_RPATH=$ORIGIN/../lib' \
  -DCMAKE_EXE_LINKER_FLAGS=-Wl,--disable-new-dtags >/dev/null
tests=(test_gpu_device test_gpu_device_plan test_gpu_formats test_gpu_hessian test_gpu_gptq test_gpu_trellis
  test_gpu_awq test_gpu_layer_math)
cmake --build "$build" -j "$jobs" --target "${tests[@]}" bench_gpu quantscope-cli make_checkpoint

stage="$build/gpu-bundle-stage"
rm -rf "$stage"
mkdir -p "$stage/qs-gpu/bin" "$stage/qs-gpu/lib"
programs=()
for t in "${tests[@]}"; do programs+=("$build/tests/gpu/$t"); done
programs+=("$build/bench/gpu/bench_gpu" "$build/app/cli/quantscope-cli" "$build/bench-tools/make_checkpoint")
for p in "${programs[@]}"; do strip -o "$stage/qs-gpu/bin/$(basename "$p")" "$p"; done

# The libraries: whatever the loader finds for the programs, but the ones every CUDA image has.
system_lib() {
  case "$1" in
    linux-vdso.so.* | ld-linux-*.so.* | libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | librt.so.* | \
      libstdc++.so.* | libgcc_s.so.*) return 0 ;;
    libcuda.so.* | libcudart.so.* | libcublas.so.* | libcublasLt.so.* | libcusolver.so.* | libcusparse.so.* | \
      libnvJitLink.so.*) return 0 ;;
  esac
  return 1
}
for p in "$stage"/qs-gpu/bin/*; do
  ldd "$p" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }'
done | sort -u | while read -r soname path; do
  system_lib "$soname" || cp -L "$path" "$stage/qs-gpu/lib/$soname"
done

commit="$(git -C "$root" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
[ -z "$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null)" ] || commit="$commit+changes"
{
  echo "commit: $commit"
  echo "built: $(date -u '+%Y-%m-%d %H:%M UTC') on $(sed -n 's/^PRETTY_NAME="\(.*\)"/\1/p' /etc/os-release), nvcc $("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')"
  echo "cuda architectures: $archs"
  echo "needs from the system: glibc $(objdump -T "$stage"/qs-gpu/bin/* "$stage"/qs-gpu/lib/* 2>/dev/null |
    grep -o 'GLIBC_[0-9.]*' | sort -Vu | tail -n1), libstdc++ $(objdump -T "$stage"/qs-gpu/bin/* \
    "$stage"/qs-gpu/lib/* 2>/dev/null | grep -o 'GLIBCXX_[0-9.]*' | sort -Vu | tail -n1), libgcc_s, and CUDA's" \
    "$(for p in "$stage"/qs-gpu/bin/*; do ldd "$p"; done | awk '{ print $1 }' | grep -E '^lib(cudart|cublas|cusolver)' |
      sort -u | tr '\n' ' ')"
  echo "files:"
  (cd "$stage/qs-gpu" && find bin lib -type f -printf '%s\t%p\n' | sort -k2)
} >"$stage/qs-gpu/MANIFEST.txt"

mkdir -p "$dest"
rm -f "$dest/qs-gpu.tar.xz"
XZ_OPT="-9 -T$jobs" tar -cJf "$dest/qs-gpu.tar.xz" -C "$stage" qs-gpu
cp "$stage/qs-gpu/MANIFEST.txt" "$dest/MANIFEST.txt"

# What the device call carries: the tree (tracked files and untracked ones git does not ignore) and this
# folder, 64 MiB in all.
unpacked=$(du -sb "$stage/qs-gpu" | cut -f1)
packed=$(du -sb "$dest" | cut -f1)
tree=$(git -C "$root" ls-files -z --cached --others --exclude-standard |
  (cd "$root" && xargs -0 du -cb 2>/dev/null) | awk '$2 == "total" { t += $1 } END { print t + 0 }')
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
echo "gpu-bundle: $dest: $(mib "$packed") ($(mib "$unpacked") unpacked); with the tree ($(mib "$tree"))" \
  "the device call carries $(mib $((packed + tree))) of its $limit_mib MiB"
if [ $((packed + tree)) -ge $((limit_mib * 1048576)) ]; then
  echo "gpu-bundle: too large to travel: the tree and the bundle exceed $limit_mib MiB" >&2
  exit 1
fi

"$root/scripts/gpu-bundle-check.sh" "$dest"
