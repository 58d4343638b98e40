#!/usr/bin/env bash
# One device call for issues 25 and 27: the other architectures against llama.cpp CUDA,
# and attach on llama.cpp's Vulkan backend after the layer's changes.
# Usage (repo root, on the host): scripts/gpu-models.sh DEV OUTDIR
#   DEV holds bin/gpuscope, bin/libgpuscope_layer.so (release), vkdeb/*.deb and
#   llama.tgz (a `llama.cpp/` tree with ggml-cuda and ggml-vulkan).
#
# 1. llama.cpp with CUDA and with Vulkan, built side by side (shared/docs/GPU-HOSTS.md).
# 2. Synthetic GGUFs of real shapes, read by both engines: Gemma 3 270M, Qwen2.5 0.5B,
#    Qwen3 0.6B (all q4_k: their own files' main format is a K-quant mix), SmolLM2 q4_1,
#    Llama-8B q4_0.
# 3. Per model: llama-bench CUDA pp512+tg128 and `gpuscope bench` alternated twice.
# 4. attach: llama-bench Vulkan tg128 alone, under attach with timing off and as attach
#    runs by default, alternated twice; the steps of one recording listed.
# OUTDIR/summary.txt has the figures.
set -uo pipefail
DEV=${1:?dev dir}; OUT=${2:?outdir}
. "$(dirname "$0")/gpu-llama-lib.sh"
export GPUSCOPE_CACHE_DIR=$OUT/cache
S=$OUT/summary.txt; W=/tmp/gpuscope-models; mkdir -p "$W"
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > "$S" 2>&1

# 1. Both llama.cpp builds at once.
vulkan_sdk
tar xzf "$DEV/llama.tgz" -C "$W"
(
  cmake -S "$W/llama.cpp" -B "$W/cuda" "${LLAMA_COMMON[@]}" -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DGGML_CUDA_NCCL=OFF > "$OUT/cuda-cmake.txt" 2>&1 &&
  cmake --build "$W/cuda" --target llama-bench -j 10 > "$OUT/cuda-build.txt" 2>&1
  echo "cuda build exit $? at $((SECONDS - T0)) s" >> "$S"
) &
(
  cmake -S "$W/llama.cpp" -B "$W/vk" "${LLAMA_COMMON[@]}" "${VULKAN_OPTS[@]}" \
    > "$OUT/vk-cmake.txt" 2>&1 &&
  cmake --build "$W/vk" --target llama-bench -j 6 > "$OUT/vk-build.txt" 2>&1
  echo "vulkan build exit $? at $((SECONDS - T0)) s" >> "$S"
) &

# 2. Meanwhile: ceilings and the files.
step peak 120 "$G" peak --refresh
grep -E "copy|dependent dispatch" "$OUT/peak.txt" | head -3 >> "$S"
for m in gemma3-270m:q4_k qwen2.5-0.5b:q4_k qwen3-0.6b:q4_k smollm2-135m:q4_1 llama-8b:q4_0; do
  step "synth-${m%%:*}" 120 "$G" synth --preset "${m%%:*}" --weights "${m##*:}" -o "$W/${m%%:*}.gguf"
done
wait
CB=$W/cuda/bin/llama-bench VB=$W/vk/bin/llama-bench

# 3. CUDA against gpuscope, alternated, 10 s between the engines. Both engines can run
# their first repetition while the GPU's clock still rises from idle (docs/bench.md,
# BENCHMARKS.md run 51): scripts/gpu-issue26.sh keeps every repetition for medians.
for m in gemma3-270m qwen2.5-0.5b qwen3-0.6b smollm2-135m llama-8b; do
  f=$W/$m.gguf
  for i in 1 2; do
    step "$m-cuda-$i" 120 "$CB" -m "$f" -p 512 -n 128 -r 3 -ngl 99
    grep -E "pp512|tg128" "$OUT/$m-cuda-$i.txt" | sed "s/^/$m-cuda-$i /" >> "$S"
    sleep 10
    step "$m-gpuscope-$i" 120 "$G" bench -m "$f" -p 512 -n 128 -r 3
    grep -E "pp512|tg128" "$OUT/$m-gpuscope-$i.txt" | sed "s/^/$m-gpuscope-$i /" >> "$S"
    sleep 10
  done
done

# 4. attach.
tg() { # NAME MODEL [attach args]
  local name=$1 m=$2; shift 2
  if [ $# -gt 0 ]; then
    step "$name" 180 "$G" attach "$@" -- "$VB" -m "$m" -p 0 -n 128 -r 3 -ngl 99
  else
    step "$name" 180 "$VB" -m "$m" -p 0 -n 128 -r 3 -ngl 99
  fi
  grep -E "tg128" "$OUT/$name.txt" | sed "s/^/$name /" >> "$S"
}
for m in smollm2-135m llama-8b; do
  f=$W/$m.gguf
  for i in 1 2; do
    tg "$m-plain-$i" "$f"
    tg "$m-off-$i" "$f" --timing off
    tg "$m-attach-$i" "$f" --output "$W/rec-$m-$i" --json "$OUT/$m-attach-$i.json"
  done
  grep -E "^Timing|^Workload|^Note|^Sampled|^  steady|^Bottleneck|^  busy|^  layers:" "$OUT/$m-attach-2.err" >> "$S"
  python3 - "$W/rec-$m-2/recording.jsonl" >> "$S" 2>&1 <<'PY'
import json, sys
steps = [r for r in map(json.loads, open(sys.argv[1])) if r.get("record") == "step"]
print(f"{len(steps)} steps; steps 100-123 (queue, dispatches, wall us, ended by):")
for s in steps[100:124]:
    n = sum(len(c["dispatches"]) for c in s["command_buffers"])
    print(f"  {s['queue']} {n} {(s['cpu_end_ns'] - s['cpu_start_ns']) / 1000:.0f} {s['ended_by']}")
PY
done

step l8-own 120 "$G" profile "$W/llama-8b.gguf" --tokens 128 --json "$OUT/l8-own.json"
step l8-diff 60 "$G" diff "$OUT/l8-own.json" "$OUT/llama-8b-attach-2.json" --by family
sed -n '/^Ops/,/^$/p' "$OUT/l8-diff.txt" >> "$S"
echo "total $((SECONDS - T0)) s" >> "$S"
rm -rf "$OUT/cache"
(cd "$OUT" && tar czf results.tgz --exclude results.tgz --exclude summary.txt ./*.txt ./*.err 2>/dev/null)
rm -f "$OUT"/*.json
find "$OUT" -maxdepth 1 -type f ! -name results.tgz ! -name summary.txt -delete
cat "$S"
