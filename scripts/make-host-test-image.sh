#!/bin/sh
# Builds c_tests/gpu/cuda_module.c for the host device (x86-64) with clang-16 and extracts its device
# image, a shared object, into tests/data/host/, where the host backend's unit tests read it (the same
# program as the CUDA backend's cubins, so both backends' tests name the same kernels and global). The
# image is committed; rerun this after changing the program or the device header.
set -eu
cd "$(dirname "$0")/.."
out=tests/data/host
work=target/host-test-image
mkdir -p "$out" "$work"
clang-16 -O2 -Wall -Werror -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu -Iinclude \
  c_tests/gpu/cuda_module.c -o "$work/cuda_module"
clang-offload-packager-16 "$work/cuda_module" \
  --image=file="$out/cuda_module-x86_64.so",triple=x86_64-pc-linux-gnu
echo "$out/cuda_module-x86_64.so: $(wc -c < "$out/cuda_module-x86_64.so") bytes"
