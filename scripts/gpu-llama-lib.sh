# Sourced by the GPU-host scripts that run llama.cpp beside gpuscope (gpu-attach.sh, gpu-coopmat.sh,
# gpu-models.sh, gpu-two.sh, gpu-default.sh, gpu-layer-ab.sh, gpu-layer-cost.sh), from the repository root
# with DEV (the carried folder: bin/gpuscope or bin/gpuscope.xz,
# bin/libgpuscope_layer.so, vkdeb/*.deb, llama.tgz) and OUT set.
. "$(dirname "${BASH_SOURCE[0]}")/gpu-host-env.sh"
DEV=$(cd "$DEV" && pwd)
mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
# gpuscope, unpacked when it travelled compressed.
G=$DEV/bin/gpuscope
[ -x "$G" ] || { xz -dc "$G.xz" > /tmp/gpuscope && chmod +x /tmp/gpuscope && G=/tmp/gpuscope; }
export GPUSCOPE_LAYER_LIBRARY=$DEV/bin/libgpuscope_layer.so
T0=$SECONDS

# step NAME LIMIT COMMAND...: stdout/stderr to OUT/NAME.{txt,err}, exit and time to $S.
step() {
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS
  timeout "$limit" "$@" > "$OUT/$name.txt" 2> "$OUT/$name.err"; local rc=$?
  echo "== $name: exit $rc, $((SECONDS - t0)) s (at $((SECONDS - T0)) s): $*" >> "$S"
}

# vulkan_sdk: Debian 13's glslc, shaderc and Vulkan headers from DEV/vkdeb, unpacked
# into /tmp/vk (never into /), on the library path (shared/docs/GPU-HOSTS.md); sets
# VULKAN_OPTS, the cmake options of llama.cpp's Vulkan backend built with them.
vulkan_sdk() {
  mkdir -p /tmp/vk && for f in "$DEV"/vkdeb/*.deb; do dpkg -x "$f" /tmp/vk; done
  export LD_LIBRARY_PATH=/tmp/vk/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  VULKAN_OPTS=(-DGGML_VULKAN=ON -DVulkan_INCLUDE_DIR=/tmp/vk/usr/include
    -DVulkan_LIBRARY="$(ldconfig -p | awk '/libvulkan.so.1 /{print $NF; exit}')"
    -DVulkan_GLSLC_EXECUTABLE=/tmp/vk/usr/bin/glslc
    -DSPIRV-Headers_DIR=/tmp/vk/usr/share/cmake/SPIRV-Headers)
}

# The cmake options every llama.cpp build here shares.
LLAMA_COMMON=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF
  -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF)

# llama_bench_8b W: llama.cpp's Vulkan llama-bench in W/vk/bin (built from DEV/llama.tgz
# unless a warm host kept it) and a synthetic Llama-8B q4_0 in W/l8.gguf (made once);
# sets LB8, the llama-bench command on that file for tg128 with every layer on the GPU.
llama_bench_8b() {
  local w=$1
  vulkan_sdk
  if [ ! -x "$w/vk/bin/llama-bench" ]; then
    tar xzf "$DEV/llama.tgz" -C "$w"
    cmake -S "$w/llama.cpp" -B "$w/vk" "${LLAMA_COMMON[@]}" "${VULKAN_OPTS[@]}" > "$w/cmake.log" 2>&1
    cmake --build "$w/vk" --target llama-bench -j "$(nproc)" > "$w/build.log" 2>&1
  fi
  [ -e "$w/l8.gguf" ] || "$G" synth --preset llama-8b --weights q4_0 -o "$w/l8.gguf" > /dev/null 2>&1
  LB8=("$w/vk/bin/llama-bench" -m "$w/l8.gguf" -p 0 -n 128 -ngl 99)
}
