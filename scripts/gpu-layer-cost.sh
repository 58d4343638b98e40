#!/usr/bin/env bash
# Where attach's cost on llama.cpp's Vulkan backend comes from (issue 27): llama-bench
# tg128 (-r REPS, default 10) on a synthetic Llama-8B q4_0, ROUNDS times (default 3)
# alternating: the program alone; alone with GGML_VK_DEBUG_MARKERS=1 (the labels attach
# turns on); under attach with timing off and sampled (auto). BENCHMARKS.md run 20.
# Usage (repo root, on the host): scripts/gpu-layer-cost.sh DEV OUTDIR [ROUNDS] [REPS]
set -uo pipefail
DEV=${1:?dev dir}; OUT=${2:?outdir}; ROUNDS=${3:-3}; REPS=${4:-10}
. "$(dirname "$0")/gpu-llama-lib.sh"
S=$OUT/summary.txt; W=/tmp/gpuscope-cost; mkdir -p "$W"
# One GPU (on a two-GPU host llama.cpp would split the model over both).
export GGML_VK_VISIBLE_DEVICES=0
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } > "$S"
llama_bench_8b "$W"
LB=("${LB8[@]}" -r "$REPS")
tg() { grep tg128 | sed "s/^/$1 /" >> "$S"; }
for i in $(seq "$ROUNDS"); do
  "${LB[@]}" 2>/dev/null | tg "plain-$i"
  GGML_VK_DEBUG_MARKERS=1 "${LB[@]}" 2>/dev/null | tg "markers-$i"
  for t in off auto; do
    err=$W/$t-$i.err; [ "$i" = 1 ] && err=$OUT/$t-$i.err
    "$G" attach --timing "$t" -- "${LB[@]}" 2> "$err" | tg "attach-$t-$i"
  done
done
cat "$S"
