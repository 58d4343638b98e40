#!/usr/bin/env bash
# Kernel variants and fusions on a GPU host, one device call (issue 13).
# Usage (repo root, on the host):
#   cargo build --release -p gpuscope
#   scripts/gpu-perf.sh [--quick] target/release/gpuscope OUTDIR
#
# 1. `peak` first (the ceilings the profiles embed; a cache of this run's own).
# 2. SmolLM2-135M q4_1 and Llama-8B q4_0 (synthetic weights), `profile --tokens 128
#    --timing off` for each kernel variant, weight layout, gemv spread and fusion set
#    that could win on an NVIDIA GPU (subgroup size 32), and `--timing pass --overhead`
#    for the adapter's default plan and for packed weights with `blocks` (per-layer GPU
#    time).
# 3. pp512 and tg128 as llama-bench measures them (`bench -p 512 -n 128 -r 3`) for both
#    models with the adapter's plan (prompts go through the batched prefill kernels,
#    which have no variants; on a CPU adapter, through decode steps).
# Reports and JSON profiles go to OUTDIR (packed into OUTDIR/results.tgz); a summary table
# (tok/s, dispatches and barriers per token, seconds per run) is printed last and kept as
# OUTDIR/table.txt. About 5 minutes on an H200 (round 2's set took 98 s): each Llama-8B
# process synthesizes its 4.5 GB of weights (~10 s); every run has a time limit.
#
# --quick: the tiny preset for both models, 8 tokens, pp 32, a short `peak`: a dry run of
# the script itself (about 2 minutes on lavapipe).
set -uo pipefail
QUICK=0
if [ "${1:-}" = --quick ]; then QUICK=1; shift; fi
BIN=${1:?binary}; OUT=${2:?outdir}
if [ "$QUICK" = 1 ]; then
  SMOL_PRESET=tiny; BIG_PRESET=tiny; TOKENS=8; PP=32; LIMIT=120
  PEAK=(peak --refresh --mib 16 --repetitions 3 --target-ms 1 --chain 50)
else
  SMOL_PRESET=smollm2-135m; BIG_PRESET=llama-8b; TOKENS=128; PP=512; LIMIT=120
  PEAK=(peak --refresh)
fi
. "$(dirname "$0")/gpu-lib.sh"

FUSIONS="norm rope silu residual attention"
# Every fusion but $1, as a --fuse list.
all_but() { echo $FUSIONS | tr ' ' '\n' | grep -vx "$1" | paste -sd,; }

# Round 3 (issue 13): the gemv over packed weights (--kernel weights=packed: q4 quants
# 16-byte aligned, scales apart) and the `blocks` variant (a whole block per lane step, one
# 16-byte load), with fixed spreads (gemv=blocks:LANESxROWS) to find the best per model.
# The default plan is now every fusion but `attention` on GPUs (round 2: SmolLM2 833 tok/s
# without it vs 790-809 with it); `--fuse all` runs check that on both models.
PACKED=(--kernel weights=packed)
GGUF=(--kernel weights=gguf)

# SmolLM2: cheap to build, so every candidate.
SMOL=(--preset "$SMOL_PRESET" --weights q4_1 --tokens "$TOKENS")
profile smollm2-q4_1-default off "${SMOL[@]}"
profile smollm2-q4_1-default pass "${SMOL[@]}"
profile smollm2-q4_1-fuse_all off "${SMOL[@]}" --fuse all
profile smollm2-q4_1-fuse_none off "${SMOL[@]}" --fuse none
for g in shared subgroup blocks; do
  profile "smollm2-q4_1-gemv_$g" off "${SMOL[@]}" --kernel gemv=$g "${GGUF[@]}"
  profile "smollm2-q4_1-gemv_$g-packed" off "${SMOL[@]}" --kernel gemv=$g "${PACKED[@]}"
done
profile smollm2-q4_1-gemv_blocks-packed pass "${SMOL[@]}" --kernel gemv=blocks "${PACKED[@]}"
# Small matrices (576 wide = 18 blocks): few lanes per row, more rows per workgroup.
for s in 4x1 8x1 8x2 16x1 32x1; do
  profile "smollm2-q4_1-gemv_blocks_$s-packed" off "${SMOL[@]}" --kernel gemv=blocks:$s "${PACKED[@]}"
done
profile smollm2-q4_1-attention_split off "${SMOL[@]}" --kernel attention=split
for f in norm rope silu residual; do
  profile "smollm2-q4_1-no_$f" off "${SMOL[@]}" --fuse "$(all_but "$f" | tr ',' '\n' | grep -vx attention | paste -sd,)"
done

# Llama-8B (each run synthesizes 4.5 GB of weights, ~10 s): the gemv is the lever here
# (round 2: ~860 GB/s of 4187). The default (subgroup over GGUF bytes) against packed
# weights and the blocks variant, then spreads of `blocks` over packed
# weights (4096-14336 wide: 128-448 blocks per row).
L8=(--preset "$BIG_PRESET" --weights q4_0 --tokens "$TOKENS")
profile llama8b-q4_0-default off "${L8[@]}"
profile llama8b-q4_0-fuse_all off "${L8[@]}" --fuse all
profile llama8b-q4_0-gemv_subgroup-packed off "${L8[@]}" --kernel gemv=subgroup "${PACKED[@]}"
profile llama8b-q4_0-gemv_shared-packed off "${L8[@]}" --kernel gemv=shared "${PACKED[@]}"
profile llama8b-q4_0-gemv_blocks off "${L8[@]}" --kernel gemv=blocks "${GGUF[@]}"
profile llama8b-q4_0-gemv_blocks-packed off "${L8[@]}" --kernel gemv=blocks "${PACKED[@]}"
profile llama8b-q4_0-gemv_blocks-packed pass "${L8[@]}" --kernel gemv=blocks "${PACKED[@]}"
for s in 32x1 32x4 16x2 16x4 8x4; do
  profile "llama8b-q4_0-gemv_blocks_$s-packed" off "${L8[@]}" --kernel gemv=blocks:$s "${PACKED[@]}"
done
profile llama8b-q4_0-gemv_subgroup_32x4-packed off "${L8[@]}" --kernel gemv=subgroup:32x4 "${PACKED[@]}"
profile llama8b-q4_0-default pass "${L8[@]}"

# pp512 / tg128 as llama-bench reports them (batched prefill; the decode loop), with the
# adapter's plan and with packed weights + blocks.
bench bench-smollm2-q4_1 --preset "$SMOL_PRESET" --weights q4_1 -p "$PP" -n "$TOKENS"
bench bench-smollm2-q4_1-blocks-packed --preset "$SMOL_PRESET" --weights q4_1 -p "$PP" -n "$TOKENS" --kernel gemv=blocks "${PACKED[@]}"
bench bench-llama8b-q4_0 --preset "$BIG_PRESET" --weights q4_0 -p "$PP" -n "$TOKENS"
bench bench-llama8b-q4_0-blocks-packed --preset "$BIG_PRESET" --weights q4_0 -p "$PP" -n "$TOKENS" --kernel gemv=blocks "${PACKED[@]}"

finish
