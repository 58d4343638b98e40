#!/usr/bin/env bash
# attach and the truthful default report on a GPU host, one device call (issues 27, 29).
# Usage (repo root, on the host): scripts/gpu-attach.sh DEV OUTDIR [MODEL.gguf]
#   DEV holds: bin/gpuscope (or bin/gpuscope.xz), bin/libgpuscope_layer.so (release), vkdeb/*.deb
#   (Debian 13's glslc, libshaderc1, libvulkan-dev, spirv-headers) and llama.tgz (a
#   `llama.cpp/` tree); MODEL a real GGUF (default: a synth SmolLM2-135M q4_1).
#
# 1. llama.cpp with -DGGML_VULKAN=ON (shared/docs/GPU-HOSTS.md's recipe, ~1 minute).
# 2. `gpuscope peak --refresh` (ceilings with the timestamp cost, embedded below).
# 3. SmolLM2 (MODEL) and a synth Llama-8B q4_0: llama-bench tg128 alone, under attach
#    with timing off and as attach runs by default (sampled on NVIDIA), alternated
#    twice; attach's per-op report and steps; `diff --by family` against gpuscope's own
#    profile of the same file.
# 4. gpuscope's default `profile --preset llama-8b --weights q4_0` (sampled) with
#    --overhead.
# Reports go to OUTDIR/results.tgz; OUTDIR/summary.txt has the figures.
set -uo pipefail
DEV=${1:?dev dir}; OUT=${2:?outdir}; MODEL=${3:-}
. "$(dirname "$0")/gpu-llama-lib.sh"
export GPUSCOPE_CACHE_DIR=$OUT/cache
S=$OUT/summary.txt; W=/tmp/gpuscope-attach; mkdir -p "$W"
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > "$S" 2>&1

# 1. llama.cpp, Vulkan.
vulkan_sdk
tar xzf "$DEV/llama.tgz" -C "$W"
step llama-cmake 120 cmake -S "$W/llama.cpp" -B "$W/vk" "${LLAMA_COMMON[@]}" "${VULKAN_OPTS[@]}"
step llama-build 240 cmake --build "$W/vk" --target llama-bench -j "$(nproc)"
LB=$W/vk/bin/llama-bench
tail -3 "$OUT/llama-build.txt" >> "$S"

# 2. Ceilings.
step peak 120 "$G" peak --refresh
tail -4 "$OUT/peak.txt" >> "$S"

# 3. The models.
if [ -z "$MODEL" ]; then
  MODEL=$W/smol.gguf
  step synth-smol 60 "$G" synth --preset smollm2-135m --weights q4_1 -o "$MODEL"
fi
L8=$W/l8.gguf
step synth-l8 120 "$G" synth --preset llama-8b --weights q4_0 -o "$L8"
tg() { # NAME MODEL [attach args]: llama-bench tg128, under attach when args follow
  local name=$1 m=$2; shift 2
  if [ $# -gt 0 ]; then
    step "$name" 180 "$G" attach "$@" -- "$LB" -m "$m" -p 0 -n 128 -r 3 -ngl 99
  else
    step "$name" 180 "$LB" -m "$m" -p 0 -n 128 -r 3 -ngl 99
  fi
  grep -E "tg128" "$OUT/$name.txt" | sed "s/^/$name /" >> "$S"
}
# What attach costs, alternated: the program alone; under the layer with timing off;
# as attach runs by default (sampled on NVIDIA). Then attach's report and gpuscope's own
# profile of the same file, compared family by family.
for m in smol l8; do
  f=$MODEL; [ $m = l8 ] && f=$L8
  for i in 1 2; do
    tg "$m-plain-$i" "$f"
    tg "$m-off-$i" "$f" --timing off
    tg "$m-attach-$i" "$f" --json "$OUT/$m-attach-$i.json" --output "$W/rec-$m-$i"
  done
  grep -E "^Timing|^Workload|^Note|^Sampled|^  steady|^Bottleneck|^  busy|^  layers:" "$OUT/$m-attach-2.err" >> "$S"
  sed -n '/^Ops/,/^$/p' "$OUT/$m-attach-2.err" >> "$S"
  python3 - "$W/rec-$m-2/recording.jsonl" >> "$S" 2>&1 <<'PY'
import json, sys
steps = [r for r in map(json.loads, open(sys.argv[1])) if r.get("record") == "step"]
print(f"{len(steps)} steps; steps 100-111 (queue, dispatches, wall us, ended by):")
for s in steps[100:112]:
    n = sum(len(c["dispatches"]) for c in s["command_buffers"])
    print(f"  {s['queue']} {n} {(s['cpu_end_ns'] - s['cpu_start_ns']) / 1000:.0f} {s['ended_by']}")
PY
  step "$m-own" 120 "$G" profile "$f" --tokens 128 --json "$OUT/$m-own.json"
  grep -E "^  steady tokens|^Bottleneck" "$OUT/$m-own.txt" >> "$S"
  step "$m-diff" 60 "$G" diff "$OUT/$m-own.json" "$OUT/$m-attach-2.json" --by family
  sed -n '/^Headline/,$p' "$OUT/$m-diff.txt" | head -40 >> "$S"
done

# 4. The default report at 8B (sampled) and dispatch-timed with the correction.
step l8-default 180 "$G" profile --preset llama-8b --weights q4_0 --overhead --json "$OUT/l8-default.json"
grep -E "^Timing|^Sampled|^  steady tokens|^Overhead|^Bottleneck|^Layers|^  layers:|utilization" "$OUT/l8-default.txt" >> "$S"
sed -n '/^Ops/,/^$/p' "$OUT/l8-default.txt" >> "$S"
echo "total $((SECONDS - T0)) s" >> "$S"
rm -rf "$OUT/cache"
(cd "$OUT" && tar czf results.tgz --exclude results.tgz --exclude summary.txt ./*.txt ./*.err 2>/dev/null)
find "$OUT" -maxdepth 1 -type f ! -name results.tgz ! -name summary.txt -delete
cat "$S"
