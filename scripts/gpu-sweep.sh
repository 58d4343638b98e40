#!/usr/bin/env bash
# gemv sweeps and experiments on a GPU host, one device call (issue 10, feeding issue 13).
# Usage (repo root, on the host):
#   scripts/gpu-sweep.sh BIN OUTDIR [CRITERION_BENCH_BINARY]
#
# 1. `peak` (ceilings for the roofline columns; a cache of this run's own).
# 2. `bench --experiment all` for SmolLM2-135M q4_1 and Llama-8B q4_0 (synthetic), md + json + html.
# 3. Tile sweeps over every Llama-8B gemv shape for the subgroup, shared and blocks
#    variants (lanes 8..32 or 8..64 x rows 1, 2, 4), and fuse on/off at 4096x4096.
# 4. With a criterion gemv bench binary: every variant x format at 4096x4096.
# Everything goes to OUTDIR (packed into OUTDIR/results.tgz); the "best configuration"
# lines are printed last.
set -uo pipefail
BIN=${1:?binary}; OUT=${2:?outdir}; CRIT=${3:-}
mkdir -p "$OUT"
export GPUSCOPE_CACHE_DIR="$OUT/cache"
run() { # NAME LIMIT ARGS...: stdout to OUT/NAME, stderr to OUT/NAME.err
  local name=$1 limit=$2; shift 2
  local t0=$(date +%s.%N)
  timeout "$limit" "$BIN" "$@" > "$OUT/$name" 2> "$OUT/$name.err"
  echo "$name: rc=$? $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f s", b-a}')"
}
run peak.txt 120 peak --refresh
for m in "smollm2-135m q4_1" "llama-8b q4_0"; do
  set -- $m
  run "exp-$1.md" 200 bench --preset "$1" --weights "$2" --experiment all -r 5
  run "exp-$1.json" 200 bench --preset "$1" --weights "$2" --experiment all -r 5 -o json
done
run exp-llama-8b.html 200 bench --preset llama-8b --weights q4_0 --experiment all -r 3 -o html
run tile-subgroup.md 200 bench --preset llama-8b --weights q4_0 --sweep variant=subgroup --sweep lanes=8,16,32 --sweep rows=1,2,4 -r 3
run tile-shared.md 200 bench --preset llama-8b --weights q4_0 --sweep variant=shared --sweep lanes=8,16,32,64 --sweep rows=1,2,4 -r 3
run tile-blocks.md 200 bench --preset llama-8b --weights q4_0 --sweep variant=blocks --sweep lanes=4,8,16,32 --sweep rows=1,2,4 -r 3
run fuse.md 120 bench --preset llama-8b --weights q4_0 --sweep shape=4096x4096,14336x4096 --sweep fuse=on,off -r 5
run smol-tile.md 200 bench --preset smollm2-135m --weights q4_1 --sweep variant=subgroup,shared --sweep lanes=8,16,32 --sweep rows=1,2,4 -r 3
if [ -n "$CRIT" ]; then
  t0=$(date +%s)
  GPUSCOPE_GEMV_SHAPES=4096x4096 timeout 200 "$CRIT" --bench > "$OUT/criterion.txt" 2>&1
  echo "criterion: rc=$? $(( $(date +%s) - t0 )) s"
fi
(cd "$OUT" && tar czf results.tgz --exclude=results.tgz --exclude=cache *)
grep -h -A12 "Best configuration" "$OUT"/tile-*.md "$OUT"/smol-tile.md "$OUT"/fuse.md 2>/dev/null | grep "^- " | sort | uniq
