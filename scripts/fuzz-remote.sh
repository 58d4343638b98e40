#!/usr/bin/env bash
# Runs the fuzz targets built by `scripts/fuzz.sh build DIR` on another machine, one
# after the other, each on every core, and prints the total executions per target:
#
#   DIR/fuzz-remote.sh DIR [SECONDS] [JOBS]
#
# SECONDS per target (default 1800), JOBS parallel fuzzer processes (default: the number
# of cores); TARGETS="gguf_reader capture_pipeline" in the environment runs only those.
# Each target starts from DIR/seeds/TARGET and keeps what it finds in DIR/corpus/TARGET;
# crashes, hangs (an input over 10 s) and out-of-memory inputs (over 2 GiB) go to
# DIR/artifacts/TARGET/, logs to DIR/logs/TARGET/. Needs only the binaries
# (linked against the C library and libstdc++ of the build machine: a machine with the
# same or a newer glibc). Exit 0 when no target found anything.
set -uo pipefail
DIST=${1:?usage: fuzz-remote.sh DIR [SECONDS] [JOBS]}
DIST=$(cd "$DIST" && pwd)
SECS=${2:-1800}
JOBS=${3:-$(nproc)}
FOUND=0
for t in ${TARGETS:-gguf_reader profile_pipeline capture_pipeline recording_pipeline}; do
  bin="$DIST/bin/$t"
  [ -x "$bin" ] || { echo "fuzz-remote.sh: no $bin (run scripts/fuzz.sh build DIR first)" >&2; exit 2; }
  mkdir -p "$DIST/corpus/$t" "$DIST/artifacts/$t" "$DIST/logs/$t"
  rm -f "$DIST/logs/$t"/fuzz-*.log
  echo "fuzz-remote.sh: $t for $SECS s on $JOBS jobs ($(date -u +%Y-%m-%dT%H:%M:%SZ))" >&2
  # libFuzzer writes each job's log to fuzz-N.log in the working directory.
  (cd "$DIST/logs/$t" && "$bin" "$DIST/corpus/$t" "$DIST/seeds/$t" \
    -jobs="$JOBS" -workers="$JOBS" -max_total_time="$SECS" \
    -rss_limit_mb=1024 -malloc_limit_mb=512 -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$DIST/artifacts/$t/" >/dev/null 2>&1)
  runs=$(cat "$DIST/logs/$t"/fuzz-*.log 2>/dev/null |
    sed -n 's/^stat::number_of_executed_units: *//p' | awk '{s += $1} END {print s + 0}')
  found=$(find "$DIST/artifacts/$t" -type f | wc -l)
  echo "$t: $runs executions in $SECS s on $JOBS jobs; $found crash/hang/oom inputs in $DIST/artifacts/$t"
  grep -h -E 'ERROR: libFuzzer|panicked at|SUMMARY:' "$DIST/logs/$t"/fuzz-*.log 2>/dev/null | sort | uniq -c | head -5
  [ "$found" -eq 0 ] || FOUND=1
done
exit $FOUND
