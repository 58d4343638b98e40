#!/usr/bin/env bash
# Issue 29 on an NVIDIA host: the default (sampled) report at 8B against dispatch timing
# corrected, `ops perf` cold against warm on Llama-8B's gemvs, and `ops test` / `ops
# perf` of the default plan's kernels.
# Usage (repo root, on the host): scripts/gpu-truth.sh DEV OUTDIR
set -uo pipefail
DEV=${1:?dev dir}; OUT=${2:?outdir}
. "$(dirname "$0")/gpu-llama-lib.sh"
S=$OUT/summary.txt
export GPUSCOPE_CACHE_DIR=/tmp/gpuscope-cache
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } > "$S"
step peak 120 "$G" peak --refresh
grep -E "copy|dependent|timestamp" "$OUT/peak.txt" | head -8 >> "$S"
step default 240 "$G" profile --preset llama-8b --weights q4_0 --overhead
grep -E "^Sampled|^  steady tokens|^Overhead|^  busy|^Bottleneck|^  layers:|tok/s" "$OUT/default.txt" | cut -c1-260 | head -20 >> "$S"
sed -n '/^Corrected for the instrument/,/^$/p' "$OUT/default.txt" >> "$S"
sed -n '/^Layers/,/^$/p' "$OUT/default.txt" | head -6 >> "$S"
# Attention's cost grows with the KV cache, so the dispatch-timed run that checks the
# sampled estimates decodes as many tokens as the default run did (sampled, it decodes
# enough for every site's samples: 400 at 8B on an H100; dispatch-timed, 32 by default).
n=$(grep -o 'decoding [0-9]* tokens' "$OUT/default.err" | grep -o '[0-9]*' | head -1)
step dispatch 240 "$G" profile --preset llama-8b --weights q4_0 --timing dispatch --tokens "${n:-400}"
sed -n '/^Corrected for the instrument/,/^$/p' "$OUT/dispatch.txt" >> "$S"
grep -E "grows with context|^  steady tokens" "$OUT/default.txt" "$OUT/dispatch.txt" | cut -c1-300 >> "$S"
step dispatch32 240 "$G" profile --preset llama-8b --weights q4_0 --timing dispatch
sed -n '/^Corrected for the instrument/,/^$/p' "$OUT/dispatch32.txt" >> "$S"
step perf-cold 180 "$G" ops perf --op gemv_q4_0 --format q4_0 --all-shapes --shape llama8b --no-plan
step perf-warm 180 "$G" ops perf --op gemv_q4_0 --format q4_0 --all-shapes --shape llama8b --no-plan --warm-caches
cat "$OUT/perf-cold.txt" "$OUT/perf-warm.txt" >> "$S"
step plan-test 180 "$G" ops test --format q4_0 --shape smollm2-135m
step plan-perf 180 "$G" ops perf --format q4_0 --shape smollm2-135m
cat "$OUT/plan-test.txt" "$OUT/plan-perf.txt" >> "$S"
cat "$S"
