#!/usr/bin/env bash
# Real-model and capture measurements for BENCHMARKS.md on a GPU host.
# Usage (repo root, on the host): scripts/gpu-bench-real.sh BINARY MODEL.gguf OUTDIR
set -uo pipefail
BIN=${1:?binary}; M=${2:?model}; OUT=${3:?outdir}
mkdir -p "$OUT"
. "$(dirname "$0")/gpu-host-env.sh"
PROMPT=$(printf 'The quick brown fox jumps over the lazy dog near the river bank. %.0s' $(seq 1 10))
run() { # name, args...
  local name=$1; shift
  echo "== $name: gpuscope $*" | tee -a "$OUT/summary.txt"
  local s=$(date +%s.%N)
  "$BIN" "$@" > "$OUT/$name.txt" 2> "$OUT/$name.err"; local rc=$?
  echo "exit $rc, $(echo "$(date +%s.%N) - $s" | bc) s" | tee -a "$OUT/summary.txt"
  grep -E "first skipped|CPU per token|prompt|generation|load|Bottleneck|Overhead|weights streamed|unique commands|slowest" "$OUT/$name.txt" "$OUT/$name.err" | head -12 | tee -a "$OUT/summary.txt"
}
run real-gpu-run run "$M" --prompt "$PROMPT" -n 128 --ignore-eos
run real-cpu-run run "$M" --prompt "$PROMPT" -n 128 --ignore-eos --cpu
run real-profile-pass profile "$M" --tokens 128 --timing pass --overhead
run real-profile-dispatch profile "$M" --tokens 64 --timing dispatch
run syn-nocapture profile --preset smollm2-135m --weights q4_1 --tokens 64 --timing pass
run syn-capture profile --preset smollm2-135m --weights q4_1 --tokens 64 --timing pass --capture /tmp/cap64
du -sb /tmp/cap64 | tee -a "$OUT/summary.txt"
run syn-capture8 profile --preset smollm2-135m --weights q4_1 --tokens 8 --timing pass --capture /tmp/cap8
run replay8-per-command replay /tmp/cap8 --per-command
run replay8 replay /tmp/cap8
tar czf /tmp/results.tgz -C "$OUT" . && rm -rf "${OUT:?}"/* && mv /tmp/results.tgz "$OUT/"
true
