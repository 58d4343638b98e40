#!/usr/bin/env bash
# One device call's round of decode measurements (issue 13): synthetic SmolLM2-135M q4_1
# and Llama-8B q4_0 with the adapter's default plan and its alternatives, `profile
# --timing off` per configuration, pass- and dispatch-timed runs of the default, and
# llama-bench's pp512 / tg128. Edit the configurations for the round at hand; BENCHMARKS.md
# records each round's command and table.
# Usage (repo root, on the GPU host): scripts/gpu-round.sh BIN OUTDIR [TOKENS]
# Prints the summary table last; everything else goes to OUTDIR/results.tgz.
set -uo pipefail
BIN=${1:?binary}; OUT=${2:?outdir}; TOKENS=${3:-128}
LIMIT=120
PEAK=(peak --refresh)
. "$(dirname "$0")/gpu-lib.sh"

SMOL=(--preset smollm2-135m --weights q4_1 --warmup 16)
profile smol-default off "${SMOL[@]}" --tokens "$TOKENS"
profile smol-auto-overhead auto "${SMOL[@]}" --tokens "$TOKENS" --overhead

L8=(--preset llama-8b --weights q4_0 --warmup 32)
profile l8-default off "${L8[@]}" --tokens "$TOKENS"
profile l8-auto-overhead auto "${L8[@]}" --tokens "$TOKENS" --overhead

bench bench-smol --preset smollm2-135m --weights q4_1 -p 512 -n 128
bench bench-smol-float_prefill --preset smollm2-135m --weights q4_1 -p 512 -n 0 --kernel gemv_large=none
bench bench-l8 --preset llama-8b --weights q4_0 -p 512 -n 128
bench bench-l8-float_prefill --preset llama-8b --weights q4_0 -p 512 -n 0 --kernel gemv_large=none
echo "== gate experiment"
timeout 300 "$(dirname "$0")/gate-experiment.sh" "$BIN" "$OUT/gate" smollm2-135m q4_1 256 20 > "$OUT/gate.txt" 2>&1
echo "gate experiment: exit $?" >> "$TABLE"; tail -6 "$OUT/gate.txt" >> "$TABLE"
finish
