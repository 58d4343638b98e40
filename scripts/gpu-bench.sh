#!/usr/bin/env bash
# Runs the BENCHMARKS.md measurements on a GPU host (see shared/docs/GPU-HOSTS.md).
# Usage (repo root, on the host): scripts/gpu-bench.sh BINARY OUTDIR [TOKENS]
# Expects the Vulkan loader .debs in .gl/ when the host has no loader.
set -uo pipefail
BIN=${1:?binary}; OUT=${2:?outdir}; TOKENS=${3:-128}
mkdir -p "$OUT"
. "$(dirname "$0")/gpu-host-env.sh"
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; } > "$OUT/host.txt" 2>&1
"$BIN" devices >> "$OUT/host.txt" 2>&1
run() { # name, args...
  local name=$1; shift
  echo "== $name: gpuscope $*" | tee -a "$OUT/summary.txt"
  "$BIN" "$@" > "$OUT/$name.txt" 2> "$OUT/$name.err"; echo "exit $?" >> "$OUT/$name.txt"
  grep -E "first skipped|Bottleneck|overhead|Overhead|copy kernel|tiny dispatch" "$OUT/$name.txt" | tee -a "$OUT/summary.txt"
}
run peak peak --mib 1024 --repetitions 20
for w in q8_0 q4_1; do
  for t in dispatch pass; do
    run "smollm2-$w-$t" profile --preset smollm2-135m --weights $w --tokens "$TOKENS" --timing $t --overhead
  done
done
run "llama8b-q4_0-pass" profile --preset llama-8b --weights q4_0 --tokens 64 --timing pass --overhead
run "llama8b-q4_0-dispatch" profile --preset llama-8b --weights q4_0 --tokens 32 --timing dispatch --json "$OUT/llama8b-q4_0-dispatch.json"
run "smollm2-q4_1-json" profile --preset smollm2-135m --weights q4_1 --tokens 32 --timing dispatch --json "$OUT/smollm2-q4_1-dispatch.json"
# The device tool brings back at most 8 files: pack everything into one.
gzip -f "$OUT"/*.json 2>/dev/null
tar czf /tmp/results.tgz -C "$OUT" . && rm -rf "${OUT:?}"/* && mv /tmp/results.tgz "$OUT/"
true
