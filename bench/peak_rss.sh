#!/usr/bin/env bash
# Peak memory of calibrating and GPTQ-quantizing a Llama-shaped BF16 checkpoint layer by layer,
# against the 4 GB target and the pipeline's own prediction.
#
#   bench/peak_rss.sh            8 layers, 4096 wide, intermediate 14336, 32 heads, 8 KV heads
#
# Writes the checkpoint (about 4 GB, random weights, the demo's tokenizer) into a temporary folder
# under $TMPDIR (default /tmp) and deletes it at the end. Runs `quantscope-cli compare --methods
# gptq4` on 16 x 512 calibration tokens (one 512-token evaluation sequence, the least compare takes)
# under /usr/bin/time -v and prints its "Maximum resident set size".
# Environment: QS_BUILD_DIR (default build-cli, else build), LAYERS, HIDDEN, INTERMEDIATE, HEADS,
# KV_HEADS, VOCAB, SAMPLES, SEQ_LEN; WORK_DIR=1: the run keeps its finished layers on disk
# (--work-dir, a folder beside the checkpoint) instead of in RAM; MAX_MEMORY=2G (with WORK_DIR=1):
# --max-memory, the hidden states that do not fit stream from the work folder; METHODS (default gptq4);
# CALIB_REPEAT=N: the demo's calibration text N times over (it holds 34 x 512 tokens), for more samples; TIME_LIMIT (seconds): Ctrl-C the run then (it stops at its next
# cancellation check), and report the peak over the layers it got through; MODULE_LOG=file keeps the
# per-module log (JSON lines with the process's RSS as each module finished).
# Besides /usr/bin/time's maximum, /proc/PID/status is sampled every second for the largest RssAnon
# (heap: weights, Hessians, codes) and RssFile (mapped checkpoint pages) seen.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${QS_BUILD_DIR:-}"
if [ -z "$build" ]; then
  build="$root/build-cli"
  [ -d "$build" ] || build="$root/build"
fi
layers="${LAYERS:-8}" hidden="${HIDDEN:-4096}" intermediate="${INTERMEDIATE:-14336}"
heads="${HEADS:-32}" kv_heads="${KV_HEADS:-8}" vocab="${VOCAB:-32000}"
samples="${SAMPLES:-16}" seq_len="${SEQ_LEN:-512}" methods="${METHODS:-gptq4}"
target_bytes=$((4 * 1000 * 1000 * 1000))

cmake --build "$build" --target quantscope-cli make_checkpoint plan_estimate -j "${QS_JOBS:-2}" >&2
[ -x /usr/bin/time ] || { echo "peak_rss.sh: /usr/bin/time is needed (apt install time)" >&2; exit 2; }

work="$(mktemp -d "${TMPDIR:-/tmp}/qs_peak_rss.XXXXXX")"
trap 'rm -rf "$work"' EXIT
model="$work/model"
calib="$root/resources/demo/calibration.txt"
if [ -n "${CALIB_REPEAT:-}" ]; then
  for _ in $(seq "$CALIB_REPEAT"); do cat "$calib"; done > "$work/calibration.txt"
  calib="$work/calibration.txt"
fi

echo "writing a ${layers}-layer, ${hidden}-wide BF16 checkpoint (intermediate ${intermediate}, ${heads} heads, ${kv_heads} KV heads, vocab ${vocab})" >&2
start=$(date +%s)
"$build/bench-tools/make_checkpoint" "$model" --layers "$layers" --hidden "$hidden" --intermediate "$intermediate" \
  --heads "$heads" --kv-heads "$kv_heads" --vocab "$vocab" --dtype bf16 --tokenizer-from "$root/resources/demo"
echo "written in $(( $(date +%s) - start )) s: $(du -sh "$model" | cut -f1)" >&2

work_dir=()
[ -z "${WORK_DIR:-}" ] || work_dir=(--work-dir "$work/run")
[ -z "${MAX_MEMORY:-}" ] || [ -n "${WORK_DIR:-}" ] || { echo "peak_rss.sh: MAX_MEMORY needs WORK_DIR=1" >&2; exit 2; }
predicted="$("$build/bench-tools/plan_estimate" "$model" "$methods" "$samples" "$seq_len" 1 ${work_dir[1]:+"${work_dir[1]}"} ${MAX_MEMORY:+"$MAX_MEMORY"})"
[ -z "${MAX_MEMORY:-}" ] || work_dir+=(--max-memory "$MAX_MEMORY")
predicted_bytes="$(echo "$predicted" | head -n1)"

echo "running: quantscope-cli compare --methods $methods --samples $samples --seq-len $seq_len --eval-samples 1 (load: $(cut -d' ' -f1-3 /proc/loadavg))" >&2
limit=()
[ -z "${TIME_LIMIT:-}" ] || limit=(timeout -s INT --kill-after=120 "$TIME_LIMIT")
start=$(date +%s)
status=0
/usr/bin/time -v -o "$work/time.txt" "${limit[@]}" "$build/app/cli/quantscope-cli" compare "$model" --methods "$methods" \
  --calib "$calib" --eval "$root/resources/demo/eval.txt" \
  --samples "$samples" --seq-len "$seq_len" --eval-samples 1 --force --log "$work/modules.jsonl" "${work_dir[@]}" \
  > "$work/compare.txt" &
runner=$!
# The largest RssAnon and RssFile of quantscope-cli (a child of time, or of timeout under it), and
# every 60 s a line on stderr with its high-water mark so far (VmHWM) and the modules done.
max_anon=0 max_file=0 hwm=0 tick=0
while kill -0 "$runner" 2>/dev/null; do
  for pid in $(pgrep -f "quantscope-cli compare $model" || true); do
    read -r anon file peak < <(awk '/^RssAnon:/ { a = $2 } /^RssFile:/ { f = $2 } /^VmHWM:/ { h = $2 }
                                    END { print a + 0, f + 0, h + 0 }' "/proc/$pid/status" 2>/dev/null) || continue
    [ "$anon" -gt "$max_anon" ] && max_anon=$anon
    [ "$file" -gt "$max_file" ] && max_file=$file
    [ "$peak" -gt "$hwm" ] && hwm=$peak
  done
  tick=$((tick + 1))
  if [ $((tick % 60)) -eq 0 ]; then
    echo "[$(( $(date +%s) - start )) s] peak RSS so far $((hwm / 1024)) MiB (RssAnon max $((max_anon / 1024)) MiB, RssFile max $((max_file / 1024)) MiB); modules done: $(wc -l < "$work/modules.jsonl" 2>/dev/null || echo 0); load $(cut -d' ' -f1 /proc/loadavg)" >&2
  fi
  sleep 1
done
wait "$runner" || status=$?
seconds=$(( $(date +%s) - start ))
[ -z "${MODULE_LOG:-}" ] || cp "$work/modules.jsonl" "$MODULE_LOG"
if [ "$status" -ne 0 ]; then
  echo "the run stopped with status $status after ${seconds} s (130/124: TIME_LIMIT reached); modules done: $(wc -l < "$work/modules.jsonl")"
fi

peak_kb="$(sed -n 's/^[[:space:]]*Maximum resident set size (kbytes): //p' "$work/time.txt")"
peak_bytes=$((peak_kb * 1024))
gb() { awk -v b="$1" 'BEGIN { printf "%.2f GB", b / 1e9 }'; }
cat "$work/compare.txt"
echo
echo "Maximum resident set size: $(gb "$peak_bytes") (${peak_kb} kB)   target: < $(gb "$target_bytes")   $( [ "$peak_bytes" -lt "$target_bytes" ] && echo met || echo MISSED )"
echo "largest RssAnon sampled: $(gb $((max_anon * 1024))), largest RssFile sampled: $(gb $((max_file * 1024)))"
echo "pipeline's predicted peak:  $(gb "$predicted_bytes")   ($(echo "$predicted" | tail -n1))"
grep -E "Elapsed|User time|System time|Percent of CPU" "$work/time.txt" | sed 's/^[[:space:]]*/time: /'
echo "checkpoint on disk: $(du -sb "$model" | awk '{ printf "%.2f GB", $1 / 1e9 }'); wall time ${seconds} s; load after: $(cut -d' ' -f1-3 /proc/loadavg)"
