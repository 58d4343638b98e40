#!/usr/bin/env bash
# Runs one fuzz target for a given time: scripts/fuzz.sh TARGET SECONDS [libFuzzer options]
# TARGET: gguf_reader | profile_pipeline | capture_pipeline | recording_pipeline. See docs/fuzzing.md.
#
# Or builds the targets once (release, debug assertions on) into a folder to carry
# to a bigger machine: scripts/fuzz.sh build [DIR] (default fuzz/dist): DIR/bin/TARGET,
# DIR/seeds/TARGET (the seeds and the committed corpus), and DIR/fuzz-remote.sh, which
# runs them there (see that script).
#
# Or keeps, of corpora grown anywhere, the inputs that add coverage (libFuzzer's
# -merge=1), as the committed corpus fuzz/corpus-min/TARGET.tar.xz (replaced; a few
# hundred KB packed where the inputs are thousands of files and megabytes):
# scripts/fuzz.sh minimize TARGET CORPUS_DIR...
#
# The committed seeds (fuzz/seeds/TARGET, made by the project's writers; regenerate with
# GPUSCOPE_BLESS=1 cargo test ... fuzz_seeds) and the committed, minimized corpus
# (fuzz/corpus-min/TARGET.tar.xz, unpacked into the corpus) start the run; what the fuzzer finds goes
# to fuzz/corpus/TARGET (kept between runs, not committed), crashes to
# fuzz/artifacts/TARGET, the log to fuzz/logs/. Memory is capped at 1 GiB per input
# and a single allocation at 512 MiB (-rss_limit_mb=1024 -malloc_limit_mb=512: an
# allocation the input did not pay for counts as a crash); an input running over 10 s
# counts as a hang.
# Builds use nightly when rustup has it, else stable with RUSTC_BOOTSTRAP=1 (cargo-fuzz
# passes nightly-only -Z flags). The CPU is often shared: run it under `nice -n 19`.
set -euo pipefail
cd "$(dirname "$0")/.."
read -r -a TARGETS <<<"${TARGETS:-gguf_reader profile_pipeline capture_pipeline recording_pipeline}"

toolchain() {
  command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
  if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
    CARGO=(cargo +nightly)
  else
    export RUSTC_BOOTSTRAP=1
    CARGO=(cargo)
  fi
}

if [ "${1:-}" = build ]; then
  DIST=${2:-fuzz/dist}
  toolchain
  mkdir -p "$DIST/bin" "$DIST/seeds"
  for t in "${TARGETS[@]}"; do
    FEATURES=()
    [ "$t" = gguf_reader ] && FEATURES=(--features model)
    echo "fuzz.sh: building $t" >&2
    "${CARGO[@]}" fuzz build -a "${FEATURES[@]}" "$t"
    triple=$(rustc -vV | sed -n 's/^host: //p')
    cp "fuzz/target/$triple/release/$t" "$DIST/bin/$t"
    rm -rf "$DIST/seeds/$t"
    cp -r "fuzz/seeds/$t" "$DIST/seeds/$t"
    [ -f "fuzz/corpus-min/$t.tar.xz" ] && tar xJf "fuzz/corpus-min/$t.tar.xz" -C "$DIST/seeds/$t"
  done
  cp scripts/fuzz-remote.sh "$DIST/fuzz-remote.sh"
  echo "fuzz.sh: built into $DIST; on the fuzzing machine: $DIST/fuzz-remote.sh $DIST [SECONDS] [JOBS]" >&2
  exit 0
fi

if [ "${1:-}" = minimize ]; then
  TARGET=${2:?usage: scripts/fuzz.sh minimize TARGET CORPUS_DIR...}
  shift 2
  [ -d "fuzz/seeds/$TARGET" ] || { echo "fuzz.sh: no fuzz/seeds/$TARGET: unknown target" >&2; exit 2; }
  toolchain
  FEATURES=()
  [ "$TARGET" = gguf_reader ] && FEATURES=(--features model)
  "${CARGO[@]}" fuzz build -a "${FEATURES[@]}" "$TARGET"
  triple=$(rustc -vV | sed -n 's/^host: //p')
  OUTDIR=fuzz/corpus-min/$TARGET
  mkdir -p fuzz/logs
  rm -rf "$OUTDIR.new" && mkdir -p "$OUTDIR.new"
  "fuzz/target/$triple/release/$TARGET" -merge=1 \
    -rss_limit_mb=1024 -malloc_limit_mb=512 -timeout=10 \
    "$OUTDIR.new" "fuzz/seeds/$TARGET" "$@" >"fuzz/logs/minimize-$TARGET.log" 2>&1 ||
    { tail -5 "fuzz/logs/minimize-$TARGET.log" >&2; exit 1; }
  # The seeds are kept apart (fuzz/seeds); the corpus holds what they do not cover.
  for f in "fuzz/seeds/$TARGET"/*; do rm -f "$OUTDIR.new/$(sha1sum "$f" | cut -d' ' -f1)"; done
  n=$(ls "$OUTDIR.new" | wc -l)
  tar cf - -C "$OUTDIR.new" . | xz -9 > "$OUTDIR.tar.xz.tmp" && mv "$OUTDIR.tar.xz.tmp" "$OUTDIR.tar.xz"
  rm -rf "$OUTDIR.new"
  echo "fuzz.sh: $OUTDIR.tar.xz: $n inputs, $(du -h "$OUTDIR.tar.xz" | cut -f1)" >&2
  exit 0
fi

TARGET=${1:?usage: scripts/fuzz.sh TARGET SECONDS (gguf_reader, profile_pipeline, capture_pipeline, recording_pipeline)}
SECS=${2:?usage: scripts/fuzz.sh TARGET SECONDS}
shift 2
[ -d "fuzz/seeds/$TARGET" ] || { echo "fuzz.sh: no fuzz/seeds/$TARGET: unknown target" >&2; exit 2; }
toolchain
FEATURES=()
[ "$TARGET" = gguf_reader ] && FEATURES=(--features model)
mkdir -p "fuzz/corpus/$TARGET" fuzz/logs
[ -f "fuzz/corpus-min/$TARGET.tar.xz" ] && tar xJf "fuzz/corpus-min/$TARGET.tar.xz" -C "fuzz/corpus/$TARGET"
LOG="fuzz/logs/$TARGET-$(date -u +%Y%m%dT%H%M%SZ).log"
echo "fuzz.sh: $TARGET for $SECS s, log $LOG" >&2
set +e
# -a: debug assertions and overflow checks on, so an overflow is a crash.
"${CARGO[@]}" fuzz run -a "${FEATURES[@]}" "$TARGET" "fuzz/corpus/$TARGET" "fuzz/seeds/$TARGET" \
  -- \
  -max_total_time="$SECS" -rss_limit_mb=1024 -malloc_limit_mb=512 -timeout=10 -print_final_stats=1 "$@" \
  >"$LOG" 2>&1
RC=$?
set -e
grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb|Done [0-9]+ runs)' "$LOG" >&2 || true
grep -E 'ERROR: libFuzzer|panicked at|SUMMARY:|Test unit written' "$LOG" >&2 || true
echo "fuzz.sh: $TARGET exit $RC (0: no crash, hang or out-of-memory found)" >&2
exit $RC
