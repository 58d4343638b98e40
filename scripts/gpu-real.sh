#!/usr/bin/env bash
# The real SmolLM2 file on a GPU host, beside llama.cpp's llama-bench (CUDA) built in the
# same session (scripts/gpu-llama-build.sh), for BENCHMARKS.md (issue 13).
# Usage (repo root, on the host): scripts/gpu-real.sh BIN MODEL.gguf LLAMA_BENCH OUTDIR [LLAMA_BENCH_VULKAN]
# (a llama-bench built with -DGGML_VULKAN=ON elsewhere and carried: the same GGUF through
# llama.cpp's Vulkan backend).
set -uo pipefail
BIN=${1:?binary}; M=${2:?model}; LB=${3:?llama-bench}; OUT=${4:?outdir}; LBV=${5:-}
mkdir -p "$OUT"
. "$(dirname "$0")/gpu-host-env.sh"
PROMPT=$(printf 'The quick brown fox jumps over the lazy dog near the river bank. %.0s' $(seq 1 10))
S="$OUT/summary.txt"
step() { # name, command...
  local name=$1; shift
  echo "== $name: $*" >> "$S"
  local t0=$SECONDS
  timeout 180 "$@" > "$OUT/$name.txt" 2> "$OUT/$name.err"; local rc=$?
  echo "exit $rc, $((SECONDS - t0)) s" >> "$S"
}
for i in 1 2 3; do
  step "run-$i" "$BIN" run "$M" --prompt "$PROMPT" -n 128 --ignore-eos
  grep -E "generation|prompt" "$OUT/run-$i.txt" "$OUT/run-$i.err" | tail -3 >> "$S"
done
step run-split "$BIN" run "$M" --prompt "$PROMPT" -n 128 --ignore-eos --kernel attention=split
grep -E "generation|prompt" "$OUT/run-split.txt" "$OUT/run-split.err" | tail -3 >> "$S"
# The decode loop at run's contexts (the same prompt first): how far run is from it.
step profile-prompt "$BIN" profile "$M" --prompt "$PROMPT" --tokens 128 --warmup 1 --timing off
grep -E "^  steady tokens|CPU per token" "$OUT/profile-prompt.txt" | head -2 >> "$S"
step bench "$BIN" bench -m "$M" -p 512 -n 128 -r 5
grep -E "pp512|tg128" "$OUT/bench.txt" >> "$S"
step profile "$BIN" profile "$M" --tokens 128 --warmup 16 --timing off
grep -E "^  steady tokens|CPU per token" "$OUT/profile.txt" | head -2 >> "$S"
step check "$BIN" check "$M" --prompt "The capital of France is" --tokens 4 --precision f64
tail -1 "$OUT/check.txt" >> "$S"
if [ -n "$LBV" ] && [ -x "$LBV" ]; then
  step llama-bench-vulkan "$LBV" -m "$M" -p 512 -n 128 -r 5
  grep -E "pp512|tg128|ggml_vulkan|build" "$OUT/llama-bench-vulkan.txt" "$OUT/llama-bench-vulkan.err" >> "$S"
fi
# A llama-bench still building in the background (scripts/gpu-llama-build.sh): wait for
# it, at most 5 minutes.
for _ in $(seq 1 60); do
  if [ -x "$LB" ] || ! pgrep -f gpu-llama-build.sh > /dev/null; then break; fi
  sleep 5
done
if [ -x "$LB" ]; then
  step llama-bench "$LB" -m "$M" -p 512 -n 128 -r 5
  grep -E "pp512|tg128|build" "$OUT/llama-bench.txt" >> "$S"
else
  echo "llama-bench: not built ($LB)" >> "$S"
fi
cat "$S"
cp "$S" /tmp/real-summary.txt
tar czf /tmp/real.tgz -C "$OUT" . && rm -rf "${OUT:?}"/* && mv /tmp/real.tgz "$OUT/" && mv /tmp/real-summary.txt "$OUT/summary.txt"
true
