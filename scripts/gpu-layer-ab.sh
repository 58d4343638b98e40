#!/usr/bin/env bash
# A/B of attach's cost on llama.cpp's Vulkan backend (issue 27): llama-bench tg128
# (-r REPS, default 10) on a synthetic Llama-8B q4_0 alone; alone with
# GGML_VK_DEBUG_MARKERS=1 (the labels attach turns on); under attach sampled (auto, 1 in
# 64 on NVIDIA) with DEV/bin/layer-before.so and with DEV/bin/libgpuscope_layer.so;
# with the latter sampling 1 in 128; and with it timing off. ROUNDS rounds (default 3),
# each starting one variant later than the last, so that no variant always runs first
# or last in a round (a GPU that warms up over a round would favour the first).
# Each attached run's report lines on timing go to OUT/*.err.
# AB_MODEL=smollm2 runs a synthetic SmolLM2-135M q4_1 in place of the 8B.
# hooks:LIB loads LIB without a recording (the hooks' cost without the writer's).
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
# AB_MODEL=smollm2: a `synth` SmolLM2-135M shape with q4_1 matrices in place of 8B.
if [ "${AB_MODEL:-}" = smollm2 ]; then
  [ -e "$W/smol.gguf" ] || "$G" synth --preset smollm2-135m --weights q4_1 -o "$W/smol.gguf" > /dev/null 2>&1
  LB=("$W/vk/bin/llama-bench" -m "$W/smol.gguf" -p 0 -n 128 -ngl 99 -r "${4:-10}")
fi
# AB_VARIANTS (space-separated) picks some of them.
read -r -a VARIANTS <<< "${AB_VARIANTS:-plain markers auto:layer-before.so auto:libgpuscope_layer.so auto128:libgpuscope_layer.so off:libgpuscope_layer.so}"
run_variant() { # VARIANT ROUND
  local v=$1 i=$2 err
  case $v in
    plain) "${LB[@]}" 2>/dev/null ;;
    markers) GGML_VK_DEBUG_MARKERS=1 "${LB[@]}" 2>/dev/null ;;
    hooks:*) # The layer loaded as attach loads it, recording nothing: its hooks run,
      # its writer thread never starts (no GPUSCOPE_LAYER_OUT).
      local m=$W/manifest-${v#*:}; mkdir -p "$m"
      sed "s|LIB|$DEV/bin/${v#*:}|" > "$m/layer.json" <<'J'
{"file_format_version":"1.2.0","layer":{"name":"VK_LAYER_GPUSCOPE_profile","type":"GLOBAL","library_path":"LIB","api_version":"1.3.0","implementation_version":"1","description":"gpuscope","functions":{"vkNegotiateLoaderLayerInterfaceVersion":"vkNegotiateLoaderLayerInterfaceVersion"},"instance_extensions":[{"name":"VK_EXT_debug_utils","spec_version":"2"}]}}
J
      VK_ADD_LAYER_PATH=$m VK_LOADER_LAYERS_ENABLE=VK_LAYER_GPUSCOPE_profile \
        VK_INSTANCE_LAYERS=VK_LAYER_GPUSCOPE_profile GGML_VK_DEBUG_MARKERS=1 \
        GPUSCOPE_LAYER_LABELS=stop "${LB[@]}" 2>/dev/null ;;
    *)
      local t=${v%%:*} l=${v#*:} stride=()
      [ "$t" = auto128 ] && t=auto && stride=(--stride 128)
      err=$W/$v-$i.err; [ "$i" = 1 ] && err=$OUT/${v/:/-}-$i.err
      "$G" attach --timing "$t" "${stride[@]}" --layer "$DEV/bin/$l" -- "${LB[@]}" 2> "$err" ;;
  esac | grep tg128 | sed "s/^/$v-$i /" >> "$S"
}
n=${#VARIANTS[@]}
for i in $(seq "${3:-3}"); do
  for k in $(seq 0 $((n - 1))); do
    run_variant "${VARIANTS[$(( (k + i - 1) % n ))]}" "$i"
  done
done
for e in "$OUT"/auto*-1.err; do
  [ -e "$e" ] && grep -E "^Timing|^Sampled|layer_query_resets" "$e" | cut -c1-200 >> "$S"
done
cat "$S"
