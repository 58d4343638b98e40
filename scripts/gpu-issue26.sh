#!/usr/bin/env bash
# Issue 26's comparison in device calls on one warm host: llama.cpp's CUDA and Vulkan
# llama-bench against `gpuscope bench`, alternated on the same files, 10 s between the
# engines, every repetition kept: both gpuscope and llama.cpp CUDA can run their first
# repetition while the GPU's clock still rises from idle (docs/bench.md, BENCHMARKS.md
# run 51), so compare the medians.
# Usage (repo root, on the host): scripts/gpu-issue26.sh DEV OUTDIR PHASE
#   DEV as for scripts/gpu-llama-lib.sh (bin/gpuscope[.xz], vkdeb/*.deb, llama.tgz), plus
#   optional tests/*.xz (release test binaries) and smol.part* (the real SmolLM2 file,
#   xz'd and split so that each part travels in a call of its own).
#   PHASE build:   both llama.cpp builds in the background; meanwhile `peak`, the
#                  synthetic 8B file, the GPU tests.
#   PHASE check8b: `check --precision f64` on the 8B preset (after the builds: the CPU
#                  reference wants the cores).
#   PHASE 8b:      three rounds: CUDA, gpuscope, Vulkan on the synthetic Llama-8B q4_0.
#   PHASE smol:    the real SmolLM2 joined from its parts, `check --precision f64` on it,
#                  then three rounds as for 8b.
# The state (builds, files) stays in /tmp/w26 between calls on the same host.
# OUTDIR/summary.txt has the figures.
set -uo pipefail
DEV=${1:?dev dir}; OUT=${2:?outdir}; PHASE=${3:?phase}
. "$(dirname "$0")/gpu-llama-lib.sh"
S=$OUT/summary.txt; W=/tmp/w26; mkdir -p "$W"
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; } >> "$S" 2>&1
vulkan_sdk
# Parts of the real model, whichever this call carried, kept for a later call.
cp "$DEV"/smol.part* "$W"/ 2>/dev/null

build_llama() { # NAME JOBS CMAKE-OPTIONS...
  local name=$1 jobs=$2; shift 2
  [ -x "$W/$name/bin/llama-bench" ] && return 0
  cmake -S "$W/llama.cpp" -B "$W/$name" "${LLAMA_COMMON[@]}" "$@" > "$OUT/$name-cmake.txt" 2>&1 &&
    cmake --build "$W/$name" --target llama-bench -j "$jobs" > "$W/$name-build.txt" 2>&1
  local rc=$?
  tail -5 "$W/$name-build.txt" > "$OUT/$name-build.txt"
  echo "$name build exit $rc at $((SECONDS - T0)) s" >> "$S"
}

# compare NAME FILE: three rounds (or $ROUNDS) of the three engines, llama-bench's JSON lines kept
# (every repetition's tok/s, not only the mean and deviation its table prints).
compare() {
  local name=$1 f=$2
  for i in $(seq "${ROUNDS:-3}"); do
    for e in cuda gpuscope vk; do
      if [ "$e" = gpuscope ]; then
        step "$name-$e-$i" 180 "$G" bench -m "$f" -p 512 -n 128 -r 5 -o jsonl
      else
        step "$name-$e-$i" 180 "$W/$e/bin/llama-bench" -m "$f" -p 512 -n 128 -r 5 -ngl 99 -o jsonl
      fi
      samples "$name-$e-$i" < "$OUT/$name-$e-$i.txt" >> "$S"
      sleep 10
    done
  done
}

# samples NAME: one line per test of a JSON-lines run: mean ± sd, then each repetition.
samples() {
  python3 -c '
import json, sys
for line in sys.stdin:
    line = line.strip()
    if not line.startswith("{"):
        continue
    d = json.loads(line)
    test = "pp%d" % d["n_prompt"] if d["n_gen"] == 0 else "tg%d" % d["n_gen"]
    reps = " ".join("%.1f" % t for t in d["samples_ts"])
    print("%s %s %.2f ± %.2f [%s]" % (sys.argv[1], test, d["avg_ts"], d["stddev_ts"], reps))
' "$1"
}

case $PHASE in
build)
  [ -d "$W/llama.cpp" ] || tar xzf "$DEV/llama.tgz" -C "$W"
  build_llama cuda 11 -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DGGML_CUDA_NCCL=OFF &
  build_llama vk 5 "${VULKAN_OPTS[@]}" &
  step peak 120 "$G" peak --refresh
  grep -E "copy|dependent dispatch" "$OUT/peak.txt" | head -3 >> "$S"
  [ -e "$W/l8.gguf" ] || step synth-8b 180 "$G" synth --preset llama-8b --weights q4_0 -o "$W/l8.gguf"
  # The GPU tests of this build (CI runs them on lavapipe; here on the H100/H200).
  for t in "$DEV"/tests/*.xz; do
    [ -e "$t" ] || continue
    n=$(basename "$t" .xz)
    xz -dc "$t" > "$W/$n" && chmod +x "$W/$n"
    # The real-model tests need the models' cache, which does not travel.
    step "test-$n" 300 "$W/$n" --test-threads 4 --skip real_ --skip fuzz_seeds
    grep -E "^test result|FAILED|panicked" "$OUT/test-$n.txt" | head -8 | sed "s/^/test-$n /" >> "$S"
  done
  wait
  ;;
check8b)
  # After the builds, so that the CPU reference has the cores.
  step check-8b 300 "$G" check --preset llama-8b --weights q4_0 --tokens 3 --precision f64
  tail -4 "$OUT/check-8b.txt" >> "$S"
  ;;
8b)
  compare l8 "$W/l8.gguf"
  ;;
smol)
  cat "$W"/smol.part* | xz -dc > "$W/smol.gguf"
  sha256sum "$W/smol.gguf" >> "$S"
  step check-smol 300 "$G" check "$W/smol.gguf" --prompt "The capital of France is" --tokens 8 --precision f64
  tail -4 "$OUT/check-smol.txt" >> "$S"
  compare smol "$W/smol.gguf"
  ;;
*) echo "unknown phase $PHASE" >&2; exit 2 ;;
esac
echo "phase $PHASE done at $((SECONDS - T0)) s" >> "$S"
