#!/usr/bin/env bash
# A/B of two release binaries in one device call: the new one at .bench/gpuscope against
# the one before at .bench/gpuscope-prev, alternated, for BENCHMARKS.md (issue 13).
# Edit the configurations per round (2026-11-25 round 2: the dp4a gemm's register
# prefetch with pp512 and the split threshold over contexts; round 4: the fused attention
# kernel's loads, decode at run's contexts).
# Usage (repo root, on the GPU host): scripts/gpu-ab.sh OUTDIR
set -uo pipefail
OUT=${1:?outdir}; mkdir -p "$OUT"
. scripts/gpu-host-env.sh
T="$OUT/table.txt"; : > "$T"
p() { local name=$1 bin=$2; shift 2; timeout 120 "$bin" profile "$@" --timing off > "$OUT/$name.txt" 2> "$OUT/$name.err"; echo "$name: exit $? $(grep -m1 '^  steady tokens (' "$OUT/$name.txt" | sed -E 's/.* ([0-9.]+) tok\/s at median.*/\1/')" >> "$T"; }
S=(--preset smollm2-135m --weights q4_1 --prompt-tokens 141 --tokens 128 --warmup 2)
for i in 1 2 3; do
  p smol-ctx141-prev-$i .bench/gpuscope-prev "${S[@]}"
  p smol-ctx141-new-$i .bench/gpuscope "${S[@]}"
done
p smol-ctx1-prev .bench/gpuscope-prev --preset smollm2-135m --weights q4_1 --tokens 128 --warmup 16
p smol-ctx1-new .bench/gpuscope --preset smollm2-135m --weights q4_1 --tokens 128 --warmup 16
p l8-ctx141-prev .bench/gpuscope-prev --preset llama-8b --weights q4_0 --prompt-tokens 141 --tokens 64 --warmup 2
p l8-ctx141-new .bench/gpuscope --preset llama-8b --weights q4_0 --prompt-tokens 141 --tokens 64 --warmup 2
cat "$T"
