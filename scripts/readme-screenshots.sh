#!/usr/bin/env bash
# The README's pictures, taken by the app's own --screenshot at 1366x768 (a laptop) under Xvfb:
#   docs/screenshot.png            a GPTQ act-order export of the demo in the Quantized tab (codes,
#                                  scales, zero points, g_idx, rounding error against the demo) beside
#                                  the Results page of six methods run on the demo
#   docs/screenshot-quantized.png  that export's packed qweight histogrammed as the weights it decodes to
#   docs/screenshot-gguf.png       the demo's Q4_K_M GGUF in the GGUF tab (metadata, the layer x module map of
#                                  its ggml types, every tensor by both names), a q6_K tensor selected
#   docs/screenshot-side-by-side.png  a GPTQ int4 export and a Q4_K_M GGUF of the demo side by side (per
#                                  linear type, bits and error of each, the selected one's A − B and both
#                                  errors) beside the Results page with both evaluated against the demo
# Needs a Release build (build/) and ImageMagick's convert (crop, append, 8-bit palette: < 200 KB).
set -euo pipefail
cd "$(dirname "$0")/.."
app=build/app/gui/quantscope
cli=build/app/cli/quantscope-cli
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
shot() { xvfb-run -a -s "-screen 0 1920x1080x24" "$app" --size 1366x768 --timeout 240 "$@"; }

OMP_NUM_THREADS=1 "$cli" quantize resources/demo --method gptq4-act --samples 8 --seq-len 64 --out "$tmp/gptq4-act" >/dev/null
shot "$tmp/gptq4-act" --original resources/demo --tab quantized --screenshot "$tmp/quantized.png"
shot resources/demo --quantize --methods gptq4,awq4,nvfp4,fp8,mxfp4,q4_k_m --tab results --screenshot "$tmp/results.png"
shot "$tmp/gptq4-act" --tab histogram --screenshot "$tmp/histogram.png"
OMP_NUM_THREADS=1 "$cli" quantize resources/demo --method q4_k_m --out "$tmp/demo-Q4_K_M.gguf" >/dev/null
shot "$tmp/demo-Q4_K_M.gguf" --tab gguf --select blk.1.attn_v.weight --screenshot "$tmp/gguf.png"

# The quantized window up to its centre's right edge, and the Results page's centre beside it.
convert "$tmp/quantized.png" -crop 990x568+0+0 +repage "$tmp/left.png"
convert "$tmp/results.png" -crop 580x568+412+0 +repage "$tmp/right.png"
convert "$tmp/left.png" "$tmp/right.png" +append -colors 96 +dither PNG8:docs/screenshot.png
convert "$tmp/histogram.png" -colors 96 +dither PNG8:docs/screenshot-quantized.png
convert "$tmp/gguf.png" -crop 990x568+0+0 +repage -colors 96 +dither PNG8:docs/screenshot-gguf.png

OMP_NUM_THREADS=1 "$cli" quantize resources/demo --method gptq4 --samples 8 --seq-len 64 --out "$tmp/gptq4" >/dev/null
OMP_NUM_THREADS=1 "$cli" quantize resources/demo --method q4_k_m --samples 8 --seq-len 64 \
    --out "$tmp/demo-q4_k_m.gguf" >/dev/null
shot "$tmp/gptq4" --second "$tmp/demo-q4_k_m.gguf" --original resources/demo --tab side-by-side \
    --screenshot "$tmp/side.png"
shot "$tmp/gptq4" --second "$tmp/demo-q4_k_m.gguf" --original resources/demo --evaluate --tab results \
    --screenshot "$tmp/both.png"
convert "$tmp/side.png" -crop 990x568+0+0 +repage "$tmp/left.png"
convert "$tmp/both.png" -crop 580x568+412+0 +repage "$tmp/right.png"
convert "$tmp/left.png" "$tmp/right.png" +append -colors 96 +dither PNG8:docs/screenshot-side-by-side.png
ls -l docs/screenshot.png docs/screenshot-quantized.png docs/screenshot-gguf.png docs/screenshot-side-by-side.png
