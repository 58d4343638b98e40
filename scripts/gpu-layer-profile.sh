#!/usr/bin/env bash
# Where the layer's CPU time goes in llama.cpp (issue 27): llama-bench tg128 (-r REPS,
# default 5) on a synthetic Llama-8B q4_0, with GGML_VK_DEBUG_MARKERS=1, alone and with
# the layer loaded as `attach --timing off` loads it (but without attach's report, so
# the CPU seconds are the program's): bash's `time` gives each run's user and system
# CPU seconds, and `perf record` (cpu-clock, 999 Hz) where the host allows it splits
# them by thread, library and symbol (OUT/perf-*.txt). perf comes from
# DEV/perfb.tar.xz (the dev machine's, with its libraries) when the host has none.
# DEV/bin/layer-syms.so is the layer with its symbols (objcopy --strip-debug).
# Usage (repo root, on the host): scripts/gpu-layer-profile.sh DEV OUTDIR [REPS]
set -uo pipefail
DEV=${1:?dev dir}; OUT=${2:?outdir}; REPS=${3:-5}
. "$(dirname "$0")/gpu-llama-lib.sh"
S=$OUT/summary.txt; W=/tmp/gpuscope-prof; mkdir -p "$W/m" "$W/rec"
export GGML_VK_VISIBLE_DEVICES=0 GGML_VK_DEBUG_MARKERS=1
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; lscpu | grep 'Model name'; } > "$S"
llama_bench_8b "$W"
LB=("${LB8[@]}" -r "$REPS")
LAYER=$DEV/bin/layer-syms.so
cat > "$W/m/layer.json" <<J
{"file_format_version":"1.2.0","layer":{"name":"VK_LAYER_GPUSCOPE_profile","type":"GLOBAL","library_path":"$LAYER","api_version":"1.3.0","implementation_version":"1","description":"gpuscope","functions":{"vkNegotiateLoaderLayerInterfaceVersion":"vkNegotiateLoaderLayerInterfaceVersion"},"instance_extensions":[{"name":"VK_EXT_debug_utils","spec_version":"2"}]}}
J
# What attach sets for the program (timing off), as `env` arguments.
LENV=(VK_ADD_LAYER_PATH="$W/m" VK_LOADER_LAYERS_ENABLE=VK_LAYER_GPUSCOPE_profile
  VK_INSTANCE_LAYERS=VK_LAYER_GPUSCOPE_profile GPUSCOPE_LAYER_OUT="$W/rec"
  GPUSCOPE_LAYER_TIMING=off)
layered() { rm -rf "$W/rec"; mkdir -p "$W/rec"; env "${LENV[@]}" "$@"; }
PERF=()
if command -v perf >/dev/null; then PERF=(perf)
elif [ -e "$DEV/perfb.tar.xz" ]; then
  tar xJf "$DEV/perfb.tar.xz" -C /tmp && PERF=(env LD_LIBRARY_PATH=/tmp/perfb/lib /tmp/perfb/perf)
  # (The program runs with the library path it had: see `record` below.)
fi
TIMEFORMAT="%R s wall, %U s user, %S s system"
for i in 1 2 3; do
  { time "${LB[@]}" 2>/dev/null | grep tg128 | sed "s/^/markers-$i /" >> "$S"; } 2>> "$S"
  { time layered "${LB[@]}" 2>/dev/null | grep tg128 | sed "s/^/layer-off-$i /" >> "$S"; } 2>> "$S"
done
echo "recording: $(du -sh "$W/rec" | cut -f1)" >> "$S"
if [ ${#PERF[@]} -gt 0 ]; then
  for v in markers layer-off; do
    e=(); [ "$v" = layer-off ] && e=("${LENV[@]}") && rm -rf "$W/rec" && mkdir -p "$W/rec"
    env "${e[@]}" "${PERF[@]}" record -e cpu-clock -F 999 -o "$W/$v.data" -- \
      env LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}" "${LB[@]}" > /dev/null 2> "$OUT/perf-$v.err"
    { "${PERF[@]}" report -i "$W/$v.data" --stdio --sort comm,dso --percent-limit 0.3 2>&1 | head -60
      "${PERF[@]}" report -i "$W/$v.data" --stdio --sort comm,dso,sym --percent-limit 0.3 2>&1 | head -120
    } > "$OUT/perf-$v.txt"
  done
fi
cat "$S"
