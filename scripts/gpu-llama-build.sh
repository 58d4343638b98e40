#!/usr/bin/env bash
# Builds llama.cpp's llama-bench with CUDA on a GPU host, from the llama.cpp source in the
# llama-cpp-python sdist (PyPI), for same-call comparisons (issue 13). The source and the
# binary are never committed. Usage: scripts/gpu-llama-build.sh SRC.tgz BUILDDIR
# (SRC.tgz holds a `llama.cpp/` tree; one architecture, sm_90, to keep the build short.)
set -euo pipefail
SRC=${1:?source tarball}; DIR=${2:?build dir}
mkdir -p "$DIR"
tar xzf "$SRC" -C "$DIR"
cmake -S "$DIR/llama.cpp" -B "$DIR/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DBUILD_SHARED_LIBS=OFF \
  -DGGML_CUDA_NCCL=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
  -DLLAMA_BUILD_SERVER=OFF > "$DIR/cmake.log" 2>&1
cmake --build "$DIR/build" --target llama-bench -j "$(nproc)" > "$DIR/build.log" 2>&1
ls -la "$DIR/build/bin/llama-bench"
