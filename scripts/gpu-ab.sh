#!/usr/bin/env bash
# A/B of two release binaries in one device call (prompt processing, pp512: the new
# binary at .bench/gpuscope against the one before at .bench/gpuscope-prev, alternated),
# then the attention variants over context lengths (decode tok/s, timing off), for
# BENCHMARKS.md (issue 13; 2026-11-25: the dp4a gemm's register prefetch, the split
# threshold). Usage (repo root, on the GPU host): scripts/gpu-ab.sh OUTDIR
set -uo pipefail
OUT=${1:?outdir}; mkdir -p "$OUT"
. scripts/gpu-host-env.sh
T="$OUT/table.txt"; : > "$T"
b() { local name=$1 bin=$2; shift 2; timeout 120 "$bin" bench "$@" -r 3 > "$OUT/$name.md" 2> "$OUT/$name.err"; echo "$name: exit $? $(grep -E 'pp512|tg' "$OUT/$name.md" | tr -s ' ')" >> "$T"; }
p() { local name=$1; shift; timeout 120 .bench/gpuscope profile "$@" --timing off > "$OUT/$name.txt" 2> "$OUT/$name.err"; echo "$name: exit $? $(grep -m1 '^  steady tokens (' "$OUT/$name.txt" | sed -E 's/.* ([0-9.]+) tok\/s at median.*/\1/')" >> "$T"; }
for i in 1 2; do
  b smol-prev-$i .bench/gpuscope-prev --preset smollm2-135m --weights q4_1 -p 512 -n 0
  b smol-new-$i .bench/gpuscope --preset smollm2-135m --weights q4_1 -p 512 -n 0
done
b l8-prev .bench/gpuscope-prev --preset llama-8b --weights q4_0 -p 512 -n 0
b l8-new .bench/gpuscope --preset llama-8b --weights q4_0 -p 512 -n 0
for ctx in 64 512 1000; do
  for v in workgroup split; do
    p smol-ctx$ctx-$v --preset smollm2-135m --weights q4_1 --prompt-tokens $ctx --tokens 128 --warmup 2 --kernel attention=$v
  done
done
for ctx in 141 1000; do
  for v in workgroup split; do
    p l8-ctx$ctx-$v --preset llama-8b --weights q4_0 --prompt-tokens $ctx --tokens 64 --warmup 2 --kernel attention=$v
  done
done
cat "$T"
