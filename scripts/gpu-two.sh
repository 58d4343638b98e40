#!/usr/bin/env bash
# attach on two GPUs (issue 27): llama.cpp's Vulkan backend split by layer over both
# devices (`-sm layer`) under `attach`, one profile and one Perfetto trace.
# Usage (repo root, on an nvidia-h100-x2 host): scripts/gpu-two.sh DEV OUTDIR
#   DEV as for scripts/gpu-attach.sh.
set -uo pipefail
DEV=${1:?dev dir}; OUT=${2:?outdir}
. "$(dirname "$0")/gpu-llama-lib.sh"
S=$OUT/summary.txt; W=/tmp/gpuscope-two; mkdir -p "$W"
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } > "$S"
vulkan_sdk
tar xzf "$DEV/llama.tgz" -C "$W"
cmake -S "$W/llama.cpp" -B "$W/vk" "${LLAMA_COMMON[@]}" "${VULKAN_OPTS[@]}" > "$W/cmake.log" 2>&1
cmake --build "$W/vk" --target llama-bench -j "$(nproc)" > "$W/build.log" 2>&1
echo "llama.cpp built: $?" >> "$S"
"$G" synth --preset llama-1b --weights q4_0 -o "$W/l1.gguf" 2>> "$S"
LB=$W/vk/bin/llama-bench
"$LB" -m "$W/l1.gguf" -p 0 -n 64 -r 1 -ngl 99 -sm layer 2>&1 | grep -E "ggml_vulkan: [0-9]|tg64" >> "$S"
"$G" attach --json "$W/two.json" --trace "$OUT/two.pftrace" -- \
  "$LB" -m "$W/l1.gguf" -p 0 -n 64 -r 1 -ngl 99 -sm layer > "$W/two.txt" 2> "$W/two.err"
echo "attach exit $?" >> "$S"
grep -E "tg64" "$W/two.txt" >> "$S"
grep -E "^Adapter|^Workload|^Note|^GPU q|^  GPU|steps" "$W/two.err" | cut -c1-300 >> "$S"
python3 - "$W/two.json" >> "$S" <<'PY'
import json, sys, collections
p = json.load(open(sys.argv[1]))
print("gpu_tracks:", p.get("gpu_tracks"))
by = collections.Counter(t["gpu_track"] for t in p["tokens"])
print("tokens per track:", dict(by))
d = collections.Counter(p["tokens"][x["token"]]["gpu_track"] for x in p["dispatches"] if x["token"] < len(p["tokens"]))
print("dispatches per track:", dict(d))
PY
ls -la "$OUT/two.pftrace" >> "$S"
"$G" report "$W/two.json" --format md > /dev/null 2>> "$S"; echo "report md exit $?" >> "$S"
cat "$S"
