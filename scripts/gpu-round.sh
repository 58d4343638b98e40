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
# Prompt processing: the dp4a gemm now reads x quantized once per input.
bench bench-smol --preset smollm2-135m --weights q4_1 -p 512 -n 0
bench bench-l8 --preset llama-8b --weights q4_0 -p 512 -n 0
# Decode at the contexts of `run` (141-token prompt, 128 tokens): attention variants.
S=(--preset smollm2-135m --weights q4_1 --prompt-tokens 141 --tokens "$TOKENS" --warmup 2)
profile smol-ctx141 off "${S[@]}"
profile smol-ctx141-split off "${S[@]}" --kernel attention=split
profile smol-ctx141-wg off "${S[@]}" --kernel attention=workgroup
profile smol-ctx1 off --preset smollm2-135m --weights q4_1 --tokens "$TOKENS" --warmup 2
profile smol-ctx1-split off --preset smollm2-135m --weights q4_1 --tokens "$TOKENS" --warmup 2 --kernel attention=split
profile smol-ctx141-split dispatch "${S[@]}" --kernel attention=split
profile smol-ctx141-wg dispatch "${S[@]}" --kernel attention=workgroup
L=(--preset llama-8b --weights q4_0 --tokens 64 --warmup 2)
profile l8 off "${L[@]}"
profile l8-ctx512-split off "${L[@]}" --prompt-tokens 512 --kernel attention=split
profile l8-ctx512-wg off "${L[@]}" --prompt-tokens 512 --kernel attention=workgroup
finish
