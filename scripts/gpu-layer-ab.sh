#!/usr/bin/env bash
# A/B of two builds of the Vulkan layer on llama.cpp's Vulkan backend (issue 27: what
# attach costs): llama-bench tg128 on a synthetic Llama-8B q4_0 alone, under attach with
# DEV/bin/layer-before.so and with DEV/bin/libgpuscope_layer.so, alternated three times.
# Usage (repo root, on the host): scripts/gpu-layer-ab.sh DEV OUTDIR
set -uo pipefail
DEV=$(cd "${1:?dev dir}" && pwd); OUT=${2:?outdir}
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
. "$(dirname "$0")/gpu-host-env.sh"
G=$DEV/bin/gpuscope
[ -x "$G" ] || { xz -dc "$G.xz" > /tmp/gpuscope && chmod +x /tmp/gpuscope && G=/tmp/gpuscope; }
S=$OUT/summary.txt; W=/tmp/gpuscope-ab; mkdir -p "$W"
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } > "$S"
mkdir -p /tmp/vk && for f in "$DEV"/vkdeb/*.deb; do dpkg -x "$f" /tmp/vk; done
tar xzf "$DEV/llama.tgz" -C "$W"
export LD_LIBRARY_PATH=/tmp/vk/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
cmake -S "$W/llama.cpp" -B "$W/vk" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_VULKAN=ON \
  -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF \
  -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DVulkan_INCLUDE_DIR=/tmp/vk/usr/include \
  -DVulkan_LIBRARY="$(ldconfig -p | awk '/libvulkan.so.1 /{print $NF; exit}')" \
  -DVulkan_GLSLC_EXECUTABLE=/tmp/vk/usr/bin/glslc \
  -DSPIRV-Headers_DIR=/tmp/vk/usr/share/cmake/SPIRV-Headers > "$W/cmake.log" 2>&1 &
"$G" synth --preset llama-8b --weights q4_0 -o "$W/l8.gguf" > /dev/null 2>&1
wait
cmake --build "$W/vk" --target llama-bench -j "$(nproc)" > "$W/build.log" 2>&1
LB=$W/vk/bin/llama-bench
for i in 1 2 3; do
  "$LB" -m "$W/l8.gguf" -p 0 -n 128 -r 3 -ngl 99 2>/dev/null | grep tg128 | sed "s/^/plain-$i /" >> "$S"
  for l in layer-before.so libgpuscope_layer.so; do
    "$G" attach --layer "$DEV/bin/$l" -- "$LB" -m "$W/l8.gguf" -p 0 -n 128 -r 3 -ngl 99 \
      2> "$W/$l-$i.err" | grep tg128 | sed "s/^/$l-$i /" >> "$S"
  done
done
grep -E "^Timing|^Sampled" "$W/libgpuscope_layer.so-3.err" | cut -c1-200 >> "$S"
cat "$S"
