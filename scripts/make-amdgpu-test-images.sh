#!/bin/sh
# Builds c_tests/gpu/cuda_module.c for gfx906, gfx90a, gfx940 and gfx1030 with clang-16 and Debian's
# rocm-device-libs (from scripts/setup-gpu-toolchains.sh) and extracts the code objects into
# tests/data/amdgpu/, where the AMDGPU backend's unit tests read them. The images are committed, so the
# tests need no ROCm; rerun this after changing the program or the device header.
# gfx1100 is left out: Debian 12's rocm-device-libs (5.2) has no device library for it, and clang-16
# cannot link the OpenMP device runtime without one.
set -eu
cd "$(dirname "$0")/.."
libs=/usr/lib/x86_64-linux-gnu/amdgcn/bitcode
[ -d "$libs" ] || { echo "no $libs; run: sh scripts/setup-gpu-toolchains.sh" >&2; exit 1; }
out=tests/data/amdgpu
work=target/amdgpu-test-images
mkdir -p "$out" "$work"
for arch in gfx906 gfx90a gfx940 gfx1030; do
  clang-16 -O2 -Wall -Werror -fopenmp \
    -fopenmp-targets=amdgcn-amd-amdhsa -Xopenmp-target=amdgcn-amd-amdhsa -march=$arch \
    --rocm-device-lib-path="$libs" -Iinclude \
    c_tests/gpu/cuda_module.c -o "$work/cuda_module-$arch"
  clang-offload-packager-16 "$work/cuda_module-$arch" \
    --image=file="$out/cuda_module-$arch.hsaco",triple=amdgcn-amd-amdhsa,arch=$arch
  echo "$out/cuda_module-$arch.hsaco: $(wc -c < "$out/cuda_module-$arch.hsaco") bytes"
done
