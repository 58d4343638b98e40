#!/usr/bin/env bash
# The statistical tests: each times real runs and decides from many repetitions, so a
# loaded machine can fail them; they are benchmarks, kept out of the default suite and
# CI (see crates/model/Cargo.toml). Run them on a quiet machine (lavapipe or a GPU) and
# record the results in BENCHMARKS.md:
#
#   scripts/statistical-tests.sh [TEST...]      # default: gate bench_agree sampling
#
# Each test binary runs alone (cargo runs test binaries one after another), with its
# output shown (--nocapture prints the counts and sizes the tests measure).
set -euo pipefail
cd "$(dirname "$0")/.."
tests=("$@")
[ ${#tests[@]} -gt 0 ] || tests=(gate bench_agree sampling)
args=()
for t in "${tests[@]}"; do args+=(--test "$t"); done
exec cargo test --locked -p gpuscope-model --features statistical-tests \
  "${args[@]}" -- --nocapture --test-threads=1
