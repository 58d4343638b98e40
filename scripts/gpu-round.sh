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

# The ops test binary (cargo test --release -p gpuscope-ops --test tests --no-run,
# stripped), when carried: the dp4a gemv and gemm against their oracles on this GPU.
if [ -x .bench/ops-tests ]; then
  echo "== ops tests dp4a/gemm"
  CI=1 timeout "$LIMIT" .bench/ops-tests dp4a gemm packed_layout > "$OUT/ops-tests.txt" 2>&1
  echo "ops tests (dp4a, gemm, packed): exit $?" >> "$TABLE"; grep -E "test result|FAILED|panicked" "$OUT/ops-tests.txt" >> "$TABLE"
fi
bench bench-smol --preset smollm2-135m --weights q4_1 -p 512 -n 0
bench bench-smol-float_prefill --preset smollm2-135m --weights q4_1 -p 512 -n 0 --kernel gemv_large=none
bench bench-l8 --preset llama-8b --weights q4_0 -p 512 -n 0
finish
