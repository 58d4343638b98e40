#!/usr/bin/env bash
# One device call's round of measurements (issue 13): synthetic SmolLM2-135M q4_1 and
# Llama-8B q4_0 with the adapter's default plan and its alternatives (`profile --timing
# off` per configuration, `bench` for llama-bench's pp512 / tg128). Edit the
# configurations for the round at hand; BENCHMARKS.md records each round's command and
# table.
# Usage (repo root, on the GPU host): scripts/gpu-round.sh BIN OUTDIR [TOKENS]
# Prints the summary table last; everything else goes to OUTDIR/results.tgz.
set -uo pipefail
BIN=${1:?binary}; OUT=${2:?outdir}; TOKENS=${3:-128}
LIMIT=120
PEAK=(peak --refresh)
. "$(dirname "$0")/gpu-lib.sh"

# The ops test binary (cargo test --release -p gpuscope-ops --test tests --no-run,
# stripped), when carried: the dp4a gemv and gemm, the attention variants against their
# oracles on this GPU.
if [ -x .bench/ops-tests ]; then
  echo "== ops tests dp4a/gemm/attention"
  CI=1 timeout "$LIMIT" .bench/ops-tests dp4a gemm packed_layout fused_attention_variants > "$OUT/ops-tests.txt" 2>&1
  echo "ops tests (dp4a, gemm, packed, attention variants): exit $?" >> "$TABLE"; grep -E "test result|FAILED|panicked" "$OUT/ops-tests.txt" >> "$TABLE"
fi
# Per-op profiling cost with auto's sampling at about 2 timed dispatches per step, and the
# dispatch-timed shares to compare with (the JSONs).
profile smol auto --preset smollm2-135m --weights q4_1 --tokens 256 --warmup 16 --overhead
profile smol dispatch --preset smollm2-135m --weights q4_1 --tokens 256 --warmup 16
profile l8 auto --preset llama-8b --weights q4_0 --tokens 128 --warmup 16 --overhead
profile l8 dispatch --preset llama-8b --weights q4_0 --tokens 128 --warmup 16
# A sweep saved as this adapter's tuning, then the default profile that starts from it.
echo "== sweep --save-tuning" 
timeout "$LIMIT" "$BIN" bench --preset llama-8b --weights q4_0 -r 5 --sweep variant=subgroup,blocks,dp4a --sweep layout=packed --save-tuning > "$OUT/sweep-tuning.md" 2> "$OUT/sweep-tuning.err"
echo "sweep --save-tuning: exit $? $(grep 'kernel tuning saved' "$OUT/sweep-tuning.err")" >> "$TABLE"
profile l8-tuned off --preset llama-8b --weights q4_0 --tokens 128 --warmup 16
finish
