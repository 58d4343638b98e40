#!/usr/bin/env bash
# Issue 26 (BENCHMARKS run 39): what tensor-core configurations the driver lists and
# which wgpu 30 keeps (vk_coopmat); llama.cpp Vulkan's 8B pp512 with its matrix features
# turned off one by one, beside gpuscope's bench on the same file, alternated twice.
set -u
# DEV holds bin/gpuscope.xz, bin/vk_coopmat (the release example, stripped), vkdeb/ and
# llama.tgz (see gpu-llama-lib.sh). Usage (repo root, on the host):
# scripts/gpu-coopmat.sh DEV OUTDIR
DEV=${1:?dev dir}; OUT=${2:?outdir}
. scripts/gpu-llama-lib.sh
S=$OUT/summary.txt; W=/tmp/gpuscope-ab; mkdir -p "$W"
export GGML_VK_VISIBLE_DEVICES=0
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } > "$S"
"$DEV/bin/vk_coopmat" > "$OUT/coopmat.txt" 2>&1; cat "$OUT/coopmat.txt" >> "$S"
llama_bench_8b "$W"
LBP=("$W/vk/bin/llama-bench" -m "$W/l8.gguf" -p 512 -n 0 -ngl 99 -r 3)
variant() { # NAME ENV...
  local name=$1; shift
  env "$@" "${LBP[@]}" > "$OUT/$name-$i.txt" 2> "$OUT/$name-$i.err"
  echo "$name-$i: $(cat "$OUT/$name-$i.err" "$OUT/$name-$i.txt" | grep -o 'matrix cores: [^|]*\|int dot: [0-9]' | head -2 | tr '\n' ' ')$(grep pp512 "$OUT/$name-$i.txt" | awk -F'|' '{print $(NF-1)}')" >> "$S"
}
for i in 1 2; do
  variant all
  variant no-coopmat2 GGML_VK_DISABLE_COOPMAT2=1
  variant no-coopmat GGML_VK_DISABLE_COOPMAT2=1 GGML_VK_DISABLE_COOPMAT=1
  variant no-matrix-no-intdot GGML_VK_DISABLE_COOPMAT2=1 GGML_VK_DISABLE_COOPMAT=1 GGML_VK_DISABLE_INTEGER_DOT_PRODUCT=1
  "$G" bench -m "$W/l8.gguf" -p 512 -n 0 -r 3 > "$OUT/gpuscope-$i.txt" 2> "$OUT/gpuscope-$i.err"
  echo "gpuscope-$i: $(grep pp512 "$OUT/gpuscope-$i.txt" | awk -F'|' '{print $(NF-1)}')" >> "$S"
done
echo "total $((SECONDS - T0)) s" >> "$S"
cat "$S"
