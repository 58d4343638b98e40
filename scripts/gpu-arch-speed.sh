#!/usr/bin/env bash
# One device call for issue 25's speed targets: the other architectures' shapes against
# llama.cpp CUDA, prompt processing (pp512) and decode (tg128), engines alternated.
# Usage (repo root, on the host): scripts/gpu-arch-speed.sh DEV OUTDIR [ROUNDS]
#   DEV holds bin/gpuscope (or bin/gpuscope.xz, release) and llama.tgz (a `llama.cpp/`
#   tree with ggml-cuda); with DEV/bin/before.xz (another gpuscope build), that build
#   and this one alternate in step 1.
#   MODELS="preset:weights ..." overrides the files (default: Gemma 3 270M, Qwen2.5
#   0.5B and Qwen3 0.6B in q4_k).
#
# 1. llama.cpp's CUDA llama-bench built (about 5 minutes on 16 cores); meanwhile the
#    synthetic files of the presets' shapes (`gpuscope synth`, read by both engines)
#    and one gpuscope round on each (and the `before` build's), marked as run beside
#    the build.
# 2. Per file: llama-bench CUDA `-p 512 -n 128 -r 3` and `gpuscope bench -p 512 -n 128
#    -r 3` (and the `before` build's), alternated ROUNDS times (default 2).
# OUTDIR/summary.txt has the figures.
set -uo pipefail
DEV=${1:?dev dir}; OUT=${2:?outdir}; ROUNDS=${3:-2}
. "$(dirname "$0")/gpu-llama-lib.sh"
export GPUSCOPE_CACHE_DIR=$OUT/cache
S=$OUT/summary.txt; W=/tmp/gpuscope-arch; mkdir -p "$W"
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } > "$S" 2>&1
MODELS=${MODELS:-gemma3-270m:q4_k qwen2.5-0.5b:q4_k qwen3-0.6b:q4_k}
BEFORE=
if [ -e "$DEV/bin/before.xz" ]; then
  xz -dc "$DEV/bin/before.xz" > /tmp/gpuscope-before && chmod +x /tmp/gpuscope-before && BEFORE=/tmp/gpuscope-before
fi

# The ops test binary, where carried (DEV/bin/opstests.xz, `cargo test --release -p
# gpuscope-ops --test tests --no-run`): the tests named by OPSTESTS (default: the batched
# kernels and the gemms against their oracles; coopmat runs only here).
if [ -e "$DEV/bin/opstests.xz" ]; then
  xz -dc "$DEV/bin/opstests.xz" > /tmp/opstests && chmod +x /tmp/opstests
  # shellcheck disable=SC2086 # a list of test-name filters
  step opstests 120 /tmp/opstests ${OPSTESTS:-batched::}
  grep -E "^test |test result" "$OUT/opstests.txt" >> "$S"
fi

if [ ! -x "$W/cuda/bin/llama-bench" ]; then
  tar xzf "$DEV/llama.tgz" -C "$W"
  (
    cmake -S "$W/llama.cpp" -B "$W/cuda" "${LLAMA_COMMON[@]}" -DGGML_CUDA=ON \
      -DCMAKE_CUDA_ARCHITECTURES=90 -DGGML_CUDA_NCCL=OFF > "$OUT/cuda-cmake.txt" 2>&1 &&
      cmake --build "$W/cuda" --target llama-bench -j 14 > "$OUT/cuda-build.txt" 2>&1
    echo "cuda build exit $? at $((SECONDS - T0)) s" >> "$S"
  ) &
fi
for m in $MODELS; do
  f=$W/${m%%:*}.gguf
  [ -e "$f" ] || step "synth-${m%%:*}" 120 "$G" synth --preset "${m%%:*}" --weights "${m##*:}" -o "$f"
  for which in before gpuscope; do
    bin=$G; [ "$which" = before ] && bin=$BEFORE
    [ -n "$bin" ] || continue
    step "${m%%:*}-$which-0" 180 "$bin" bench -m "$f" -p 512 -n 128 -r 3
    grep -E "pp512|tg128" "$OUT/${m%%:*}-$which-0.txt" \
      | sed "s/^/${m%%:*}-$which-0 (beside the build) /" >> "$S"
  done
done
wait
CB=$W/cuda/bin/llama-bench
for i in $(seq 1 "$ROUNDS"); do
  for m in $MODELS; do
    m=${m%%:*}; f=$W/$m.gguf
    step "$m-cuda-$i" 180 "$CB" -m "$f" -p 512 -n 128 -r 3 -ngl 99
    grep -E "pp512|tg128" "$OUT/$m-cuda-$i.txt" | sed "s/^/$m-cuda-$i /" >> "$S"
    for which in before gpuscope; do
      bin=$G; [ "$which" = before ] && bin=$BEFORE
      [ -n "$bin" ] || continue
      step "$m-$which-$i" 180 "$bin" bench -m "$f" -p 512 -n 128 -r 3
      grep -E "pp512|tg128" "$OUT/$m-$which-$i.txt" | sed "s/^/$m-$which-$i /" >> "$S"
    done
  done
done
echo "total $((SECONDS - T0)) s" >> "$S"
