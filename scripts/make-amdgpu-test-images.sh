#!/bin/sh
# Builds c_tests/gpu/cuda_module.c for gfx906, gfx90a, gfx940, gfx1030 and gfx1100 with clang-16 and
# Debian's rocm-device-libs (from scripts/setup-gpu-toolchains.sh) and extracts the code objects into
# tests/data/amdgpu/, where the AMDGPU backend's unit tests read them. The images are committed, so the
# tests need no ROCm; rerun this after changing the program or the device header. Also builds
# c_tests/gpu/global_ctors.c for gfx90a (device constructors and destructors), and
# c_tests/gpu/hidden_args_v5.cl for gfx90a as a code object of version 5 (whose kernels take hidden
# arguments: block counts, group sizes, grid dimensions), which clang-16 cannot build from OpenMP
# (its device runtime is version 4).
# Debian 12's rocm-device-libs (5.2) stop at gfx1036: gfx1100 gets a copy of them from
# scripts/rocm-device-libs.sh.
set -eu
cd "$(dirname "$0")/.."
libs=/usr/lib/x86_64-linux-gnu/amdgcn/bitcode
[ -d "$libs" ] || { echo "no $libs; run: sh scripts/setup-gpu-toolchains.sh" >&2; exit 1; }
out=tests/data/amdgpu
work=target/amdgpu-test-images
mkdir -p "$out" "$work"
for arch in gfx906 gfx90a gfx940 gfx1030 gfx1100; do
  arch_libs=$(sh scripts/rocm-device-libs.sh "$arch" "$work")
  clang-16 -O2 -Wall -Werror -fopenmp \
    -fopenmp-targets=amdgcn-amd-amdhsa -Xopenmp-target=amdgcn-amd-amdhsa -march=$arch \
    --rocm-device-lib-path="$arch_libs" -Iinclude \
    c_tests/gpu/cuda_module.c -o "$work/cuda_module-$arch"
  clang-offload-packager-16 "$work/cuda_module-$arch" \
    --image=file="$out/cuda_module-$arch.hsaco",triple=amdgcn-amd-amdhsa,arch=$arch
  echo "$out/cuda_module-$arch.hsaco: $(wc -c < "$out/cuda_module-$arch.hsaco") bytes"
done
# Device code with global constructors and destructors: its image has amdgcn.device.init and
# amdgcn.device.fini kernels, which the plugin runs at load and unload.
arch_libs=$(sh scripts/rocm-device-libs.sh gfx90a "$work")
clang-16 -O2 -Wall -Werror -fopenmp \
  -fopenmp-targets=amdgcn-amd-amdhsa -Xopenmp-target=amdgcn-amd-amdhsa -march=gfx90a \
  --rocm-device-lib-path="$arch_libs" -Iinclude \
  c_tests/gpu/global_ctors.c -o "$work/global_ctors-gfx90a"
clang-offload-packager-16 "$work/global_ctors-gfx90a" \
  --image=file="$out/global_ctors-gfx90a.hsaco",triple=amdgcn-amd-amdhsa,arch=gfx90a
echo "$out/global_ctors-gfx90a.hsaco: $(wc -c < "$out/global_ctors-gfx90a.hsaco") bytes"
clang-16 -x cl -cl-std=CL2.0 -target amdgcn-amd-amdhsa -mcpu=gfx90a -mcode-object-version=5 -nogpulib -O2 \
  -Wall -Werror c_tests/gpu/hidden_args_v5.cl -o "$out/hidden_args_v5-gfx90a.hsaco"
echo "$out/hidden_args_v5-gfx90a.hsaco: $(wc -c < "$out/hidden_args_v5-gfx90a.hsaco") bytes"
