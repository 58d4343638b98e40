#!/usr/bin/env bash
# The regression gate's A/A and planted-slowdown experiment on a real GPU, with a
# release binary: TRIALS times, profile the same build three times (base, base again,
# base with a planted slowdown in ffn_down) and gate `base -> again` (must pass) and
# `base -> planted` (must fail) with `diff --max-regress 5% --max-counter-increase 0`.
# The planted pass count is first calibrated to ~10% of the token time on this GPU.
#
# Usage (repo root, on the GPU host; see shared/docs/GPU-HOSTS.md for the Vulkan loader):
#   scripts/gate-experiment.sh target/release/gpuscope OUTDIR [PRESET] [WEIGHTS] [TOKENS] [TRIALS]
# Prints (and writes to OUTDIR/summary.txt) both counts, the A/A changes and the
# planted changes, for BENCHMARKS.md. Needs python3 to read `diff --format json`.
set -uo pipefail
BIN=${1:?binary}; OUT=${2:?outdir}
PRESET=${3:-smollm2-135m}; WEIGHTS=${4:-q4_1}; TOKENS=${5:-256}; TRIALS=${6:-20}
PROBE=${PROBE:-8}
mkdir -p "$OUT"
if ! ldconfig -p | grep -q libvulkan.so.1 && ls .gl/*.deb >/dev/null 2>&1; then
  for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
fi
if [ -z "${VK_DRIVER_FILES:-}" ]; then
  icd=$(ls /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd.json /etc/vulkan/icd.d/nvidia_icd.json 2>/dev/null | head -1)
  [ -n "$icd" ] && export VK_DRIVER_FILES=$icd
fi
S="$OUT/summary.txt"
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null; "$BIN" devices; } > "$S" 2>&1

profile() { # name, extra args...
  local name=$1; shift
  "$BIN" profile --preset "$PRESET" --weights "$WEIGHTS" --tokens "$TOKENS" --warmup 8 \
    --json "$OUT/$name.json" "$@" > /dev/null 2> "$OUT/$name.err" || { cat "$OUT/$name.err"; exit 1; }
}
# Prints the change of the wall time per token (percent) and the gate's exit code.
gate() { # base, new
  "$BIN" diff "$OUT/$1.json" "$OUT/$2.json" --format json \
    --max-regress 5% --max-counter-increase 0 > "$OUT/diff.json" 2>/dev/null
  local code=$?
  python3 -c 'import json,sys; print("%+.2f" % (100 * json.load(open(sys.argv[1]))["headline"]["wall"]["change"]), end=" ")' "$OUT/diff.json"
  echo "$code"
}

profile calib-base
profile calib-probe --plant-slowdown "ffn_down=$PROBE"
read -r probe_change _ < <(gate calib-base calib-probe)
PASSES=$(python3 -c "print(max(1, round($PROBE * 10 / $probe_change)))")
echo "calibration: ffn_down=$PROBE -> $probe_change% per token; planting ffn_down=$PASSES" | tee -a "$S"

aa_failed=0; pl_failed=0; aa=(); pl=()
for i in $(seq 1 "$TRIALS"); do
  profile base; profile again; profile planted --plant-slowdown "ffn_down=$PASSES"
  read -r c code < <(gate base again); aa+=("$c"); [ "$code" = 5 ] && aa_failed=$((aa_failed + 1))
  read -r c code < <(gate base planted); pl+=("$c"); [ "$code" = 5 ] && pl_failed=$((pl_failed + 1))
  echo "trial $i: A/A ${aa[-1]}%, planted ${pl[-1]}%" >> "$S"
done
{
  echo "$PRESET $WEIGHTS, $TOKENS tokens per profile, gate --max-regress 5% --max-counter-increase 0"
  echo "A/A: $aa_failed of $TRIALS failed; changes (%): ${aa[*]}"
  echo "planted ffn_down=$PASSES: $pl_failed of $TRIALS failed; changes (%): ${pl[*]}"
} | tee -a "$S"
rm -f "$OUT"/*.json
