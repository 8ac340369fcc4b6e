#!/usr/bin/env bash
# End-to-end GPTQ of a synthetic Llama-3-8B-shaped checkpoint on the CUDA backend: the issue's target
# is the whole 32-layer model with 128 x 2048 calibration tokens in under 10 minutes.
#
#   bench/gpu/e2e_gptq.sh                 32 layers (writes ~16 GB of random BF16 weights)
#   LAYERS=2 bench/gpu/e2e_gptq.sh        the first 2 layers' shape, and the projection to 32
#
# Shape: hidden 4096, intermediate 14336, 32 heads, 8 KV heads, vocab 128256, untied lm_head.
# The calibration text is resources/text/the-verdict.txt repeated until it holds enough tokens (the
# weights are random, so only the amount of work matters). Runs `quantscope-cli compare --methods
# gptq4 --device cuda` with one 2048-token evaluation sequence and prints the wall time, the seconds
# per layer from the module log, and the time projected to 32 layers.
# Environment: QS_BUILD_DIR (default build-gpu-check), LAYERS, SAMPLES (128), SEQ_LEN (2048), DEVICE (cuda);
# QS_BIN_DIR, a folder that holds quantscope-cli and make_checkpoint already built (the GPU bundle's bin/,
# scripts/gpu-bundle-run.sh): then nothing is built and QS_BUILD_DIR is not read.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${QS_BUILD_DIR:-$root/build-gpu-check}"
layers="${LAYERS:-32}" samples="${SAMPLES:-128}" seq_len="${SEQ_LEN:-2048}" device="${DEVICE:-cuda}"

if [ -n "${QS_BIN_DIR:-}" ]; then
  cli="$QS_BIN_DIR/quantscope-cli" make_checkpoint="$QS_BIN_DIR/make_checkpoint"
else
  cmake --build "$build" --target quantscope-cli make_checkpoint -j "${QS_JOBS:-$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)}" >/dev/null
  cli="$build/app/cli/quantscope-cli" make_checkpoint="$build/bench-tools/make_checkpoint"
fi
work="$(mktemp -d "${TMPDIR:-/tmp}/qs_e2e.XXXXXX")"
trap 'rm -rf "$work"' EXIT

start=$(date +%s)
"$make_checkpoint" "$work/model" --layers "$layers" --hidden 4096 --intermediate 14336 \
  --heads 32 --kv-heads 8 --vocab 128256 --dtype bf16 --tokenizer-from "$root/resources/demo"
echo "checkpoint: $layers layers, $(du -sh "$work/model" | cut -f1), written in $(( $(date +%s) - start )) s"

# The demo tokenizer is byte-level: ~20k tokens per copy; enough copies for samples x seq_len.
copies=$(( samples * seq_len / 20000 + 2 ))
for _ in $(seq "$copies"); do cat "$root/resources/text/the-verdict.txt"; done > "$work/calibration.txt"

start=$(date +%s)
"$cli" compare "$work/model" --methods gptq4 --device "$device" \
  --calib "$work/calibration.txt" --eval "$root/resources/text/the-verdict.txt" \
  --samples "$samples" --seq-len "$seq_len" --eval-samples 1 --force --log "$work/modules.jsonl"
seconds=$(( $(date +%s) - start ))
modules=$(wc -l < "$work/modules.jsonl")
echo "end to end: ${seconds} s for ${layers} layers (${modules} modules) on --device ${device}"
# Where the time went: the modules' own quantization (the log's time_s) against everything else
# (forward passes, Hessians, transfers, evaluation).
quantize=$(grep -o '"time_s":[0-9.eE+-]*' "$work/modules.jsonl" | cut -d: -f2 | awk '{ s += $1 } END { printf "%.1f", s }')
awk -v q="$quantize" -v s="$seconds" 'BEGIN { printf "quantization (sum of the module times): %.1f s; forward passes, Hessians, transfers and evaluation: %.1f s\n", q, s - q }'
awk -v s="$seconds" -v l="$layers" 'BEGIN { printf "projected to 32 layers: %.0f s (%.1f min; target < 10 min), assuming the time scales with the layers\n", s / l * 32, s / l * 32 / 60 }'
