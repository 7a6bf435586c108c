#!/bin/sh
# Builds c_tests/gpu/cuda_module.c for sm_70, sm_80 and sm_90 with clang-16 and ptxas (CUDA 11.8, from
# scripts/setup-gpu-toolchains.sh) and extracts the cubins into tests/data/nvptx/, where the CUDA
# backend's unit tests read them. The images are committed, so the tests need no CUDA toolkit; rerun
# this after changing the program or the device header.
set -eu
cd "$(dirname "$0")/.."
cuda="${OMPRPC_TOOLCHAINS:-target/toolchains}/cuda"
[ -x "$cuda/bin/ptxas" ] || { echo "no ptxas in $cuda; run: sh scripts/setup-gpu-toolchains.sh" >&2; exit 1; }
out=tests/data/nvptx
work=target/nvptx-test-images
mkdir -p "$out" "$work"
for arch in sm_70 sm_80 sm_90; do
  PATH="$cuda/bin:$PATH" clang-16 -O2 -Wall -Werror -fopenmp \
    -fopenmp-targets=nvptx64-nvidia-cuda -Xopenmp-target=nvptx64-nvidia-cuda -march=$arch \
    --cuda-path="$cuda" -Wno-unknown-cuda-version -Iinclude \
    c_tests/gpu/cuda_module.c -o "$work/cuda_module-$arch"
  clang-offload-packager-16 "$work/cuda_module-$arch" \
    --image=file="$out/cuda_module-$arch.cubin",triple=nvptx64-nvidia-cuda,arch=$arch
  echo "$out/cuda_module-$arch.cubin: $(wc -c < "$out/cuda_module-$arch.cubin") bytes"
done
# With -foffload-lto clang-16 internalises hidden device globals: the client object becomes a local
# symbol, which the driver's cuModuleGetGlobal does not find.
PATH="$cuda/bin:$PATH" clang-16 -O2 -Wall -Werror -fopenmp -foffload-lto \
  -fopenmp-targets=nvptx64-nvidia-cuda -Xopenmp-target=nvptx64-nvidia-cuda -march=sm_80 \
  --cuda-path="$cuda" -Wno-unknown-cuda-version -Iinclude \
  c_tests/gpu/cuda_module.c -o "$work/cuda_module_lto-sm_80"
clang-offload-packager-16 "$work/cuda_module_lto-sm_80" \
  --image=file="$out/cuda_module_lto-sm_80.cubin",triple=nvptx64-nvidia-cuda,arch=sm_80
echo "$out/cuda_module_lto-sm_80.cubin: $(wc -c < "$out/cuda_module_lto-sm_80.cubin") bytes"
