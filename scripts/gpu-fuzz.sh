#!/usr/bin/env bash
# The fuzz targets on a GPU host's CPUs (docs/fuzzing.md, "On a bigger machine"), from a
# carried folder FZ: bin/TARGET.xz (stripped builds of `scripts/fuzz.sh build`, xz'd to
# travel), seeds/, fuzz-remote.sh and corpus-TARGET.tar.xz (corpora of earlier runs).
# The corpus grows in .fzrun/ (kept on a warm host between calls) and comes back as
# OUT/corpus-TARGET.tar.xz, with OUT/summary.txt (fuzz-remote.sh's lines) and any
# findings (OUT/artifacts.tar.xz).
# Usage (repo root, on the host): scripts/gpu-fuzz.sh FZ OUT SECONDS [JOBS]
set -uo pipefail
FZ=$(cd "${1:?FZ}" && pwd); OUT=${2:?OUT}; SECS=${3:?SECONDS}; JOBS=${4:-$(nproc)}
D=$PWD/.fzrun; mkdir -p "$D/bin" "$D/corpus" "$OUT"
cp -r "$FZ/seeds" "$FZ/fuzz-remote.sh" "$D/"
for f in "$FZ"/bin/*.xz; do
  t=$(basename "$f" .xz)
  xz -dc "$f" > "$D/bin/$t" && chmod +x "$D/bin/$t"
done
for c in "$FZ"/corpus-*.tar.xz; do [ -e "$c" ] && tar xJf "$c" -C "$D/corpus"; done
rm -rf "$D/artifacts"
{ date -u; nproc; } > "$OUT/summary.txt"
"$D/fuzz-remote.sh" "$D" "$SECS" "$JOBS" >> "$OUT/summary.txt" 2>&1; rc=$?
echo "fuzz-remote.sh exit $rc" >> "$OUT/summary.txt"
# Each target's corpus comes back whole (OUT/corpus-TARGET.tar.xz); merging it (keeping
# the inputs that add coverage: fuzz.sh's `-merge=1`) is slow on one core, do it after.
for t in $(ls "$D/bin"); do
  echo "$t: corpus $(ls "$D/corpus/$t" | wc -l) inputs" >> "$OUT/summary.txt"
  tar cf - -C "$D/corpus" "$t" | xz -T0 -3 > "$OUT/corpus-$t.tar.xz"
done
[ -n "$(find "$D/artifacts" -type f 2>/dev/null)" ] && tar cJf "$OUT/artifacts.tar.xz" -C "$D" artifacts
cat "$OUT/summary.txt"
exit $rc
