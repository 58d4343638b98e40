#!/usr/bin/env bash
# The viewer exports on a real GPU (issue 9's "Done when"), with a release binary:
# profile smollm2-135m q4_1 (synthetic preset) with per-dispatch timing, then write the
# Perfetto trace, the Markdown document and the HTML report from the saved profile,
# timing each export (wall seconds and peak RSS from /usr/bin/time when present).
#
# Usage (repo root, on the GPU host; see shared/docs/GPU-HOSTS.md):
#   scripts/gpu-viewers.sh target/release/gpuscope OUTDIR [TOKENS]
# Writes OUTDIR/{profile.json,profile.pftrace,RESULTS.md,report.html,summary.txt} and
# prints summary.txt (for BENCHMARKS.md).
set -euo pipefail
BIN=${1:?binary}; OUT=${2:?outdir}; TOKENS=${3:-128}
. "$(dirname "$0")/gpu-host-env.sh"
mkdir -p "$OUT"
S="$OUT/summary.txt"
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || true; } > "$S"

timed() { # label, command...
  local label=$1; shift
  local t0 t1
  t0=$(date +%s.%N)
  if [ -x /usr/bin/time ]; then
    /usr/bin/time -f "%M" -o "$OUT/.rss" "$@" 2> "$OUT/.err" > "$OUT/.out" || { cat "$OUT/.err"; exit 1; }
  else
    "$@" 2> "$OUT/.err" > "$OUT/.out" || { cat "$OUT/.err"; exit 1; }
    echo "?" > "$OUT/.rss"
  fi
  t1=$(date +%s.%N)
  printf '%-28s %8.3f s  peak RSS %s kB\n' "$label" "$(awk "BEGIN{print $t1 - $t0}")" "$(cat "$OUT/.rss")" >> "$S"
  grep -h "written to" "$OUT/.err" >> "$S" || true
}

"$BIN" peak > /dev/null 2>&1 || echo "peak failed: reports without ceilings" >> "$S"
timed "profile (+ --trace)" "$BIN" profile --preset smollm2-135m --weights q4_1 --tokens "$TOKENS" \
  --warmup 8 --timing dispatch --json "$OUT/profile.json" --trace "$OUT/profile.pftrace"
grep -E "^(Adapter|Timing):" "$OUT/.out" >> "$S"
timed "report --format perfetto" "$BIN" report "$OUT/profile.json" --format perfetto -o "$OUT/profile.pftrace"
timed "report --format md" "$BIN" report "$OUT/profile.json" --format md -o "$OUT/RESULTS.md"
timed "report --format html" "$BIN" report "$OUT/profile.json" --format html -o "$OUT/report.html"
ls -l "$OUT/profile.json" "$OUT/profile.pftrace" "$OUT/RESULTS.md" "$OUT/report.html" >> "$S"
rm -f "$OUT/.rss" "$OUT/.err" "$OUT/.out"
cat "$S"
