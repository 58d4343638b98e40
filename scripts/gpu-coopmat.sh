#!/usr/bin/env bash
# The coopmat prompt gemm against dp4a on the GPU host (issue 13, 2026-11-25): the ops
# tests of both gemms against their oracles, then `bench` pp512 for SmolLM2-135M q4_1 and
# Llama-8B q4_0 (synthetic) with each `--kernel prefill=...`, alternated.
# Usage (repo root, on the GPU host): scripts/gpu-coopmat.sh BIN OUTDIR
set -uo pipefail
BIN=${1:?binary}; OUT=${2:?outdir}; mkdir -p "$OUT"
. scripts/gpu-host-env.sh
T="$OUT/table.txt"; : > "$T"
"$BIN" devices > "$OUT/adapters.txt" 2>&1
if [ -x .bench/ops-tests ]; then
  CI=1 timeout 120 .bench/ops-tests gemm > "$OUT/ops-tests.txt" 2>&1
  echo "ops tests gemm: exit $?" >> "$T"; grep -E "test |test result|panicked|skipping" "$OUT/ops-tests.txt" >> "$T"
fi
b() { local name=$1; shift; timeout 150 "$BIN" bench "$@" > "$OUT/$name.md" 2> "$OUT/$name.err"; echo "$name: exit $? $(grep -E 'pp[0-9]+' "$OUT/$name.md" | tr -s ' ' | tr '\n' ' ')" >> "$T"; tail -2 "$OUT/$name.err" | sed 's/^/    /' >> "$T"; }
for i in 1 2; do
  for k in coopmat dp4a; do
    b smol-$k-$i --preset smollm2-135m --weights q4_1 -p 512 -n 0 -r 3 --kernel prefill=$k
    b l8-$k-$i --preset llama-8b --weights q4_0 -p 512 -n 0 -r 3 --kernel prefill=$k
  done
done
cat "$T"
