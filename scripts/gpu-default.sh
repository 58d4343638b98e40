#!/usr/bin/env bash
# The default report at 8B on an NVIDIA host (issue 29): `profile --preset llama-8b
# --weights q4_0 --overhead` (sampled) against `--timing dispatch` (corrected), twice.
# Usage (repo root, on the host): scripts/gpu-default.sh DEV OUTDIR
set -uo pipefail
DEV=${1:?dev dir}; OUT=${2:?outdir}
. "$(dirname "$0")/gpu-llama-lib.sh"
S=$OUT/summary.txt
export GPUSCOPE_CACHE_DIR=/tmp/gpuscope-cache
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } > "$S"
"$G" peak --refresh 2>&1 | grep -E "dependent" >> "$S"
for i in 1 2; do
  "$G" profile --preset llama-8b --weights q4_0 --overhead > /tmp/d-$i.txt 2>&1
  grep -E "^Sampled|^  steady tokens|^Overhead|^  busy|^Bottleneck|^  layers:" /tmp/d-$i.txt | cut -c1-260 >> "$S"
  sed -n '/^Corrected for the instrument/,/^$/p' /tmp/d-$i.txt >> "$S"
  "$G" profile --preset llama-8b --weights q4_0 --timing dispatch > /tmp/x-$i.txt 2>&1
  sed -n '/^Corrected for the instrument/,/^$/p' /tmp/x-$i.txt >> "$S"
done
cat "$S"
