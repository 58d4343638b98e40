#!/usr/bin/env bash
# A/B of two builds of the Vulkan layer on llama.cpp's Vulkan backend (issue 27: what
# attach costs): llama-bench tg128 (-r REPS, default 10) on a synthetic Llama-8B q4_0
# alone, alone with GGML_VK_DEBUG_MARKERS=1 (the labels attach turns on), under attach
# sampled (auto) with DEV/bin/layer-before.so and with DEV/bin/libgpuscope_layer.so, and
# with timing off (the latter), alternated ROUNDS times (default 3). Each attached run's
# report lines on timing go to OUT/*.err.
# Usage (repo root, on the host): scripts/gpu-layer-ab.sh DEV OUTDIR [ROUNDS] [REPS]
set -uo pipefail
DEV=${1:?dev dir}; OUT=${2:?outdir}
. "$(dirname "$0")/gpu-llama-lib.sh"
S=$OUT/summary.txt; W=/tmp/gpuscope-ab; mkdir -p "$W"
# One GPU (on a two-GPU host llama.cpp would split the model over both).
export GGML_VK_VISIBLE_DEVICES=0
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } > "$S"
llama_bench_8b "$W"
LB=("${LB8[@]}" -r "${4:-10}")
for i in $(seq "${3:-3}"); do
  "${LB[@]}" 2>/dev/null | grep tg128 | sed "s/^/plain-$i /" >> "$S"
  GGML_VK_DEBUG_MARKERS=1 "${LB[@]}" 2>/dev/null | grep tg128 | sed "s/^/markers-$i /" >> "$S"
  for v in auto:layer-before.so auto:libgpuscope_layer.so off:libgpuscope_layer.so; do
    t=${v%%:*}; l=${v#*:}
    "$G" attach --timing "$t" --layer "$DEV/bin/$l" -- "${LB[@]}" \
      2> "$( [ "$i" = 1 ] && echo "$OUT" || echo "$W")/$t-$l-$i.err" | grep tg128 | sed "s/^/$t-$l-$i /" >> "$S"
  done
done
grep -E "^Timing|^Sampled|layer_query_resets" "$OUT/auto-libgpuscope_layer.so-1.err" | cut -c1-200 >> "$S"
cat "$S"
