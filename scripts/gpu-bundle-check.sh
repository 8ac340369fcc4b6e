#!/usr/bin/env bash
# Proves the GPU bundle self-contained (docs/gpu-check.md): unpacks gpu-bundle/qs-gpu.tar.xz and runs its
# programs in a private mount namespace whose system library folders (/usr/lib, and /lib through it;
# /usr/local/lib) hold nothing but glibc, libstdc++ and libgcc_s, with LD_LIBRARY_PATH empty. CUDA's
# own folders stay, as they are there on the GPU machine. So every other library a program loads must
# come from the bundle, as it must on a bare CUDA image. There:
#   - the loader resolves every library of every program, each from the bundle, the kept system
#     libraries or CUDA's folder;
#   - the GPU tests pass or, without a device, skip; test_gpu_device_plan runs;
#   - quantscope-cli computes the demo's logits on the CPU (through the bundled OpenBLAS) and its top
#     next token at every position is the reference's (tests/data/demo/reference.json);
#   - make_checkpoint writes a checkpoint that quantscope-cli inspects; bench_gpu starts and, without
#     a device, says why for every benchmark.
# Needs unshare (util-linux) and either root or unprivileged user namespaces. scripts/gpu-bundle.sh
# runs it on every bundle it writes.
#
#   scripts/gpu-bundle-check.sh [BUNDLE]     BUNDLE: the folder gpu-bundle.sh wrote (default gpu-bundle/)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# The system libraries a CUDA image always has (glibc's, the C++ runtime) and that stay visible.
kept=(ld-linux-x86-64.so.2 libc.so.6 libm.so.6 libpthread.so.0 libdl.so.2 librt.so.1 libstdc++.so.6 libgcc_s.so.1)

if [ "${1:-}" = --inside ]; then
  # In the namespace: hide the libraries, then only exec the bundle's programs (and bash's builtins):
  # no other program would start without its own libraries.
  qs="$2" scratch="$3"
  libdir="$(dirname "$(readlink -f /lib64/ld-linux-x86-64.so.2)")"  # /usr/lib/x86_64-linux-gnu
  case "$libdir" in /usr/lib/*) ;; *)
    echo "gpu-bundle-check: the loader is in $libdir, not under /usr/lib: this layout is not handled" >&2
    exit 1
    ;;
  esac
  fake="$scratch/usr-lib"
  mkdir -p "$fake"
  mount -t tmpfs -o size=64m tmpfs "$fake"
  mkdir -p "$fake/${libdir#/usr/lib/}"
  for so in "${kept[@]}"; do cp -L "$libdir/$so" "$fake/${libdir#/usr/lib/}/$so"; done
  [ -d /usr/local/lib ] && mount -t tmpfs tmpfs /usr/local/lib
  mount --bind "$fake" /usr/lib # the last program from the system that this shell starts
  export LD_LIBRARY_PATH='' LC_ALL=C OMP_NUM_THREADS=2
  unset LD_PRELOAD

  bad=0
  for p in "$qs"/bin/*; do
    if ! listing="$(/lib64/ld-linux-x86-64.so.2 --list "$p" 2>&1)"; then
      echo "  ${p##*/}: $listing"
      bad=1
      continue
    fi
    from_bundle="" from_cuda="" from_system=""
    while read -r soname arrow path _; do
      [ "$arrow" = "=>" ] || continue
      case "$path" in
        "$qs"/lib/* | "$qs"/bin/../lib/*) from_bundle+=" $soname" ;;
        /usr/lib/* | /lib/*) from_system+=" $soname" ;;
        /usr/local/cuda*) from_cuda+=" $soname" ;;
        *) echo "  ${p##*/}: $soname => $path" && bad=1 ;;
      esac
    done <<<"$listing"
    echo "  ${p##*/}: the bundle's${from_bundle:- none}; CUDA's${from_cuda:- none}; the system's${from_system}"
  done
  [ $bad -eq 0 ] || { echo "gpu-bundle-check: a library of the bundle is missing" >&2; exit 1; }

  for t in "$qs"/bin/test_gpu_*; do
    "$t" --gtest_color=no >"$scratch/test.log" 2>&1 || rc=$?
    summary=""
    count='^\[  (PASSED|SKIPPED|FAILED) *\] ([0-9]+) tests?[,.]'
    while read -r line; do
      [[ "$line" =~ $count ]] && summary+="${summary:+,} ${BASH_REMATCH[2]} ${BASH_REMATCH[1],,}"
    done <"$scratch/test.log"
    echo "  ${t##*/}:$summary"
    [ "${rc:-0}" -eq 0 ] || { echo "gpu-bundle-check: ${t##*/} failed" >&2; cat "$scratch/test.log" >&2; exit 1; }
  done
  "$qs/bin/quantscope-cli" --version
  "$qs/bin/quantscope-cli" logits "$root/resources/demo" --ids "$(<"$scratch/ids")" --device cpu >"$scratch/logits.txt"
  "$qs/bin/make_checkpoint" "$scratch/model" --layers 1 --hidden 64 --intermediate 128 --heads 4 --kv-heads 2 \
    --vocab 96 --dtype bf16
  "$qs/bin/quantscope-cli" inspect "$scratch/model" >"$scratch/inspect.txt"
  "$qs/bin/bench_gpu" --benchmark_min_time=0.01 >"$scratch/bench.txt" 2>&1
  exit 0
fi

bundle="${1:-$root/gpu-bundle}"
archive="$bundle/qs-gpu.tar.xz"
[ -f "$archive" ] || { echo "gpu-bundle-check: no $archive (scripts/gpu-bundle.sh writes it)" >&2; exit 1; }
scratch="$(mktemp -d "${TMPDIR:-/tmp}/qs-gpu-bundle-check.XXXXXX")"
trap 'rm -rf "$scratch"' EXIT
tar -xJf "$archive" -C "$scratch"
# The demo's reference ids and its top next token at each (computed outside QuantScope: tests/data/demo).
python3 - "$root/tests/data/demo/reference.json" "$scratch" <<'EOF'
import json, sys
ref = json.load(open(sys.argv[1]))
open(sys.argv[2] + "/ids", "w").write(",".join(map(str, ref["token_ids"][:64])))
open(sys.argv[2] + "/argmax", "w").write(" ".join(map(str, ref["argmax"][:64])))
EOF

inside=(bash "$root/scripts/gpu-bundle-check.sh" --inside "$scratch/qs-gpu" "$scratch")
if ! unshare --mount --map-root-user true 2>/dev/null; then
  [ "$(id -u)" -eq 0 ] || { echo "gpu-bundle-check: needs root or unprivileged user namespaces (unshare)" >&2; exit 1; }
  unshare_args=(--mount)
else
  unshare_args=(--mount --map-root-user)
fi
echo "gpu-bundle-check: $archive, with only ${kept[*]} and CUDA's libraries from the system"
unshare "${unshare_args[@]}" --propagation private "${inside[@]}"

# Back outside: what the programs wrote.
ours="$(awk 'seen && NF == 4 { printf "%s ", $3 } /^--/ { seen = 1 }' "$scratch/logits.txt")"
if [ "${ours% }" != "$(cat "$scratch/argmax")" ]; then
  echo "gpu-bundle-check: the bundle's quantscope-cli ranks other next tokens first than the demo's reference:" >&2
  echo "  ours:      ${ours% }" >&2
  echo "  reference: $(cat "$scratch/argmax")" >&2
  exit 1
fi
skipped=$(grep -c 'ERROR OCCURRED' "$scratch/bench.txt" || true)
benchmarks=$(grep -c '^BM_' "$scratch/bench.txt" || true)
echo "gpu-bundle-check: demo logits at 64 positions: every top next token is the reference's;" \
  "bench_gpu: $benchmarks benchmarks, $skipped of them skipped for want of a device"
echo "gpu-bundle-check: self-contained"
