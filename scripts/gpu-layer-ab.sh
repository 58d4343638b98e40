#!/usr/bin/env bash
# A/B of two builds of the Vulkan layer on llama.cpp's Vulkan backend (issue 27: what
# attach costs): llama-bench tg128 on a synthetic Llama-8B q4_0 alone, under attach with
# DEV/bin/layer-before.so and with DEV/bin/libgpuscope_layer.so, alternated three times.
# Usage (repo root, on the host): scripts/gpu-layer-ab.sh DEV OUTDIR
set -uo pipefail
DEV=${1:?dev dir}; OUT=${2:?outdir}
. "$(dirname "$0")/gpu-llama-lib.sh"
S=$OUT/summary.txt; W=/tmp/gpuscope-ab; mkdir -p "$W"
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } > "$S"
vulkan_sdk
tar xzf "$DEV/llama.tgz" -C "$W"
cmake -S "$W/llama.cpp" -B "$W/vk" "${LLAMA_COMMON[@]}" "${VULKAN_OPTS[@]}" > "$W/cmake.log" 2>&1 &
"$G" synth --preset llama-8b --weights q4_0 -o "$W/l8.gguf" > /dev/null 2>&1
wait
cmake --build "$W/vk" --target llama-bench -j "$(nproc)" > "$W/build.log" 2>&1
LB=$W/vk/bin/llama-bench
for i in 1 2 3; do
  "$LB" -m "$W/l8.gguf" -p 0 -n 128 -r 3 -ngl 99 2>/dev/null | grep tg128 | sed "s/^/plain-$i /" >> "$S"
  for l in layer-before.so libgpuscope_layer.so; do
    "$G" attach --layer "$DEV/bin/$l" -- "$LB" -m "$W/l8.gguf" -p 0 -n 128 -r 3 -ngl 99 \
      2> "$W/$l-$i.err" | grep tg128 | sed "s/^/$l-$i /" >> "$S"
  done
done
grep -E "^Timing|^Sampled" "$W/libgpuscope_layer.so-3.err" | cut -c1-200 >> "$S"
cat "$S"
