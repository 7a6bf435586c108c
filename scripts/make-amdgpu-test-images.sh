#!/bin/sh
# Builds c_tests/gpu/cuda_module.c for gfx906, gfx90a, gfx1030 and gfx1100 with clang-16 and Debian's
# rocm-device-libs (from scripts/setup-gpu-toolchains.sh) and extracts the code objects into
# tests/data/amdgpu/, where the simulated HSA runtime's unit tests read them. The images are
# committed, so the tests need no ROCm toolchain; rerun this after changing the program or the device
# header. A target whose device library is missing (Debian 12's rocm-device-libs 5.2 has none for
# gfx1100) is skipped with a message.
set -eu
cd "$(dirname "$0")/.."
libs="${ROCM_DEVICE_LIB_PATH:-/usr/lib/x86_64-linux-gnu/amdgcn/bitcode}"
[ -f "$libs/ocml.bc" ] || { echo "no ROCm device libraries in $libs; run: sh scripts/setup-gpu-toolchains.sh" >&2; exit 1; }
out=tests/data/amdgpu
work=target/amdgpu-test-images
mkdir -p "$out" "$work"
for arch in gfx906 gfx90a gfx1030 gfx1100; do
  isa="$libs/oclc_isa_version_${arch#gfx}.bc"
  if [ ! -f "$isa" ]; then
    echo "skipped $arch: $isa is missing (the device libraries predate it)" >&2
    continue
  fi
  clang-16 -O2 -Wall -Werror -fopenmp --offload-arch=$arch --rocm-device-lib-path="$libs" -Iinclude \
    c_tests/gpu/cuda_module.c -o "$work/cuda_module-$arch"
  clang-offload-packager-16 "$work/cuda_module-$arch" \
    --image=file="$out/cuda_module-$arch.hsaco",triple=amdgcn-amd-amdhsa,arch=$arch
  echo "$out/cuda_module-$arch.hsaco: $(wc -c < "$out/cuda_module-$arch.hsaco") bytes"
done
