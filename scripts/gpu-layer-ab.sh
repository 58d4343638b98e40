#!/usr/bin/env bash
# A/B of two builds of the Vulkan layer on llama.cpp's Vulkan backend (issue 27: what
# attach costs): llama-bench tg128 on a synthetic Llama-8B q4_0 alone, under attach with
# timing off (DEV/bin/libgpuscope_layer.so), and sampled (auto) with
# DEV/bin/layer-before.so and with DEV/bin/libgpuscope_layer.so, alternated ROUNDS times
# (default 3). Each attached run's report lines on timing go to OUT/*.err.
# Usage (repo root, on the host): scripts/gpu-layer-ab.sh DEV OUTDIR [ROUNDS]
set -uo pipefail
DEV=${1:?dev dir}; OUT=${2:?outdir}
. "$(dirname "$0")/gpu-llama-lib.sh"
S=$OUT/summary.txt; W=/tmp/gpuscope-ab; mkdir -p "$W"
# One GPU (on a two-GPU host llama.cpp would split the model over both).
export GGML_VK_VISIBLE_DEVICES=0
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } > "$S"
llama_bench_8b "$W"
LB=("${LB8[@]}" -r 3)
for i in $(seq "${3:-3}"); do
  "${LB[@]}" 2>/dev/null | grep tg128 | sed "s/^/plain-$i /" >> "$S"
  for v in off:libgpuscope_layer.so auto:layer-before.so auto:libgpuscope_layer.so; do
    t=${v%%:*}; l=${v#*:}
    "$G" attach --timing "$t" --layer "$DEV/bin/$l" -- "${LB[@]}" \
      2> "$( [ "$i" = 1 ] && echo "$OUT" || echo "$W")/$t-$l-$i.err" | grep tg128 | sed "s/^/$t-$l-$i /" >> "$S"
  done
done
grep -E "^Timing|^Sampled|layer_query_resets" "$OUT/auto-libgpuscope_layer.so-1.err" | cut -c1-200 >> "$S"
cat "$S"
