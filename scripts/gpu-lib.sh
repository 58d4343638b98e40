# Helpers for the GPU-host profiling scripts (gpu-perf.sh, gpu-round.sh): sourced after
# BIN, OUT and LIMIT are set. Runs the peak benchmark, then `profile NAME TIMING ARGS...`
# and `bench NAME ARGS...` append rows to $OUT/table.txt; `finish` prints the table and
# packs every report into $OUT/results.tgz (the device tool brings back few files).
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
. "$(dirname "${BASH_SOURCE[0]}")/gpu-host-env.sh"
export GPUSCOPE_CACHE_DIR="$OUT/cache"
START=$SECONDS
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; } > "$OUT/host.txt" 2>&1
"$BIN" devices >> "$OUT/host.txt" 2>&1
TABLE="$OUT/table.txt"
echo "config | timing | tok/s | same run, timing off (--overhead) | dispatches/token | barriers/token | s | kernels" > "$TABLE"

echo "== peak: gpuscope ${PEAK[*]}"
timeout "$LIMIT" "$BIN" "${PEAK[@]}" > "$OUT/peak.txt" 2> "$OUT/peak.err"
echo "peak: exit $? ($((SECONDS - START)) s)" >> "$TABLE"

# profile NAME TIMING ARGS...: one run; appends a table row.
profile() {
  local name=$1 timing=$2; shift 2
  local extra=()
  [ "$timing" = pass ] && extra=(--overhead)
  local f="$OUT/$name-$timing" t0=$SECONDS
  echo "== $name ($timing): gpuscope profile $* --timing $timing ${extra[*]}"
  timeout "$LIMIT" "$BIN" profile "$@" --timing "$timing" "${extra[@]}" --json "$f.json" > "$f.txt" 2> "$f.err"
  local rc=$?
  local rate off disp barr kernels
  # The steady-state tokens' rate (the report leaves out the slow start and outliers).
  rate=$(grep -m1 "^  steady tokens (" "$f.txt" | sed -E 's/.* ([0-9.]+) tok\/s at median.*/\1/')
  off=$(grep -m1 "^Overhead:" "$f.txt" | sed -E 's/.*, ([0-9.]+) tok\/s with timing off.*/\1/')
  disp=$(awk '$1 == "dispatches" {print $3; exit}' "$f.txt")
  barr=$(awk '$1 == "barriers" {print $3; exit}' "$f.txt")
  kernels=$(grep -m1 "^Settings:" "$f.txt" | sed 's/^Settings: *//')
  [ "$rc" = 0 ] || rate="exit $rc: $(head -c 200 "$f.err" | tr '\n' ' ')"
  echo "$name | $timing | ${rate:-?} | ${off:--} | ${disp:-?} | ${barr:-?} | $((SECONDS - t0)) | $kernels" >> "$TABLE"
}

# bench NAME ARGS...: llama-bench's pp and tg; appends its table rows.
bench() {
  local name=$1; shift
  local f="$OUT/$name" t0=$SECONDS
  echo "== $name: gpuscope bench $*"
  timeout "$LIMIT" "$BIN" bench "$@" -r 3 > "$f.md" 2> "$f.err"
  local rc=$?
  { echo "$name: exit $rc ($((SECONDS - t0)) s); $(grep -m1 'kernels:' "$f.err" | sed 's/^gpuscope: //')"
    grep -E "^\| .*(pp|tg)[0-9]" "$f.md"; } >> "$TABLE"
}


finish() {
  echo "total: $((SECONDS - START)) s" >> "$TABLE"
  echo
  echo "== summary (device: $(grep -m1 -h '^Adapter:' "$OUT"/*-off.txt 2>/dev/null | sed 's/^Adapter: *//'))"
  cat "$TABLE"
  cp "$TABLE" /tmp/gpu-table.txt
  gzip -f "$OUT"/*.json 2>/dev/null
  tar czf /tmp/gpu-results.tgz -C "$OUT" . && rm -rf "${OUT:?}"/* \
    && mv /tmp/gpu-results.tgz "$OUT/results.tgz" && mv /tmp/gpu-table.txt "$OUT/table.txt"
  true
}
