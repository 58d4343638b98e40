#!/usr/bin/env bash
# The analysis sections on a real GPU: measured ceilings, then profiles of SmolLM2
# (synthetic q4_1) and Llama-8B (synthetic q4_0) with per-dispatch timing, their
# reports, and the scale check of `report` on a million-dispatch profile.
#
# Usage (repo root, on the GPU host, release builds):
#   cargo build --release -p gpuscope && cargo build --release -p gpuscope-trace --examples
#   scripts/gpu-analysis.sh target/release/gpuscope OUTDIR [TOKENS]
# Expects the Vulkan loader .debs in .gl/ when the host has no loader (see
# shared/docs/GPU-HOSTS.md). Everything lands in OUTDIR/results.tgz.
set -uo pipefail
BIN=${1:?binary}; OUT=${2:?outdir}; TOKENS=${3:-32}
EXAMPLE=$(dirname "$BIN")/examples/large_profile
mkdir -p "$OUT"
. "$(dirname "$0")/gpu-host-env.sh"
# A cache of this run's own: the ceilings measured below are the ones embedded.
export GPUSCOPE_CACHE_DIR="$OUT/cache"
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; } > "$OUT/host.txt" 2>&1
"$BIN" devices >> "$OUT/host.txt" 2>&1
run() { # name, args...
  local name=$1; shift
  echo "== $name: gpuscope $*" | tee -a "$OUT/summary.txt"
  /usr/bin/time -v "$BIN" "$@" > "$OUT/$name.txt" 2> "$OUT/$name.err"; echo "exit $?" >> "$OUT/$name.txt"
  grep -E "^Ceilings|^  copy|^  f32|^  dependent|Steady state|slow start|outliers|wall is|what it would take|a token would take|utilization|launch efficiency|idle |WARN|Bottleneck" "$OUT/$name.txt" | tee -a "$OUT/summary.txt"
  grep -E "Elapsed|Maximum resident" "$OUT/$name.err" | tee -a "$OUT/summary.txt"
}
run peak peak --refresh
run peak-cached peak
run smollm2-q4_1-dispatch profile --preset smollm2-135m --weights q4_1 --tokens 64 --timing dispatch --overhead --compact "$OUT/smollm2-q4_1.gpuprof"
run smollm2-q4_1-pass profile --preset smollm2-135m --weights q4_1 --tokens 64 --timing pass
# The issue's case: 16 tokens after the default 3 warm-up tokens (clock ramp visible),
# then enough tokens for a steady state.
run llama8b-q4_0-dispatch-16 profile --preset llama-8b --weights q4_0 --tokens 16 --timing dispatch --compact "$OUT/llama8b-q4_0-16.gpuprof"
run llama8b-q4_0-dispatch profile --preset llama-8b --weights q4_0 --tokens "$TOKENS" --timing dispatch --compact "$OUT/llama8b-q4_0.gpuprof"
run llama8b-q4_0-report report "$OUT/llama8b-q4_0.gpuprof"
if [ -x "$EXAMPLE" ]; then
  "$EXAMPLE" 1000000 "$OUT/large.gpuprof" 2>> "$OUT/summary.txt"
  run large-report report "$OUT/large.gpuprof"
  rm -f "$OUT/large.gpuprof"
fi
# The device tool brings back at most 8 files: pack everything into one.
tar czf /tmp/results.tgz -C "$OUT" . && rm -rf "${OUT:?}"/* && mv /tmp/results.tgz "$OUT/"
true
