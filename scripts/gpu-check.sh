#!/usr/bin/env bash
# Correctness and per-op speed on a GPU host (see shared/docs/GPU-HOSTS.md): the ops
# harness over every shape (Llama-3-8B's and the largest binding included), per-op timings
# with % of the measured copy bandwidth, and `check` of a synthetic SmolLM2 against the CPU
# in f64 and against the same GPU run serially.
# Usage (repo root, on the host): scripts/gpu-check.sh BINARY OUTDIR
set -uo pipefail
BIN=${1:?binary}; OUT=${2:?outdir}
mkdir -p "$OUT"
if ! ldconfig -p | grep -q libvulkan.so.1 && ls .gl/*.deb >/dev/null 2>&1; then
  for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
fi
if [ -z "${VK_DRIVER_FILES:-}" ]; then
  icd=$(ls /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd.json /etc/vulkan/icd.d/nvidia_icd.json 2>/dev/null | head -1)
  [ -n "$icd" ] && export VK_DRIVER_FILES=$icd
fi
export GPUSCOPE_BACKEND=${GPUSCOPE_BACKEND:-vulkan}
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; } > "$OUT/host.txt" 2>&1
"$BIN" devices >> "$OUT/host.txt" 2>&1
run() { # name, args...
  local name=$1; shift
  echo "== $name: gpuscope $*" | tee -a "$OUT/summary.txt"
  "$BIN" "$@" > "$OUT/$name.txt" 2> "$OUT/$name.err"; echo "exit $?" | tee -a "$OUT/summary.txt" >> "$OUT/$name.txt"
  grep -E "passed|PASS|FAIL|error:" "$OUT/$name.txt" "$OUT/$name.err" | tail -3 | tee -a "$OUT/summary.txt"
}
run peak peak --mib 1024
run ops-test ops test --all-shapes --json "$OUT/ops-test.json"
run ops-perf ops perf --all-shapes --output csv --timing dispatch
run check-f64 check --preset smollm2-135m --weights q4_1 --tokens 8 --precision f64 --json "$OUT/check-f64.json"
run check-serial check --preset smollm2-135m --weights q8_0 --tokens 8 --against serial
gzip -f "$OUT"/*.json 2>/dev/null
tar czf /tmp/results.tgz -C "$OUT" . && rm -rf "${OUT:?}"/* && mv /tmp/results.tgz "$OUT/"
true
