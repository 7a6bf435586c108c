#!/bin/sh
# Builds omprpc's device library, libomprpc-device.a, from the sources in device/ for every GPU target
# omprpc serves (NVIDIA sm_70 to sm_90 as LLVM 16 builds them: 70 72 75 80 86 89 90; AMD gfx906, gfx908,
# gfx90a, gfx940, gfx1030, gfx1100): one object per
# target, each a host object carrying the device code in its .llvm.offloading section, which is what
# clang-16's offload linker (clang-linker-wrapper) takes from an archive given with -l. The archive
# and the headers a program needs with it (omprpc_libc.h, the opt-in one, and those it includes;
# omprpc_stdbit.h, C23's <stdbit.h>, which glibc 2.36 lacks) go to OUTDIR. Needs clang-16 and the
# GPU toolchains (sh scripts/setup-debian.sh installs them).
# Usage: sh scripts/build-device-lib.sh [OUTDIR]   (default: target/device)
set -eu
cd "$(dirname "$0")/.."
out=${1:-target/device}
work=$out/build
cuda=${OMPRPC_TOOLCHAINS:-$PWD/target/toolchains}/cuda
[ -x "$cuda/bin/ptxas" ] || { echo "no ptxas in $cuda; run: sh scripts/setup-debian.sh" >&2; exit 1; }
command -v clang-16 >/dev/null || { echo "no clang-16; run: sh scripts/setup-debian.sh" >&2; exit 1; }
rm -rf "$work"
mkdir -p "$work"
flags="-O2 -Wall -Werror -fno-builtin -fopenmp -Iinclude -c"
# One object per source and target: the linker takes a member only when the program calls into it.
compiler() { case $1 in *.cpp) echo "clang++-16 -std=c++17" ;; *) echo clang-16 ;; esac; }
object() { basename "$1" | sed 's/\.[a-z]*$//'; }
for arch in sm_70 sm_72 sm_75 sm_80 sm_86 sm_89 sm_90; do
  for source in device/*.c device/*.cpp; do
    # shellcheck disable=SC2086 # the flags are words
    PATH="$cuda/bin:$PATH" $(compiler "$source") $flags "$source" -fopenmp-targets=nvptx64-nvidia-cuda \
      -Xopenmp-target=nvptx64-nvidia-cuda -march=$arch --cuda-path="$cuda" -Wno-unknown-cuda-version \
      -o "$work/$(object "$source")-$arch.o"
  done
done
for arch in gfx906 gfx908 gfx90a gfx940 gfx1030 gfx1100; do
  libs=$(sh scripts/rocm-device-libs.sh "$arch" "$work")
  for source in device/*.c device/*.cpp; do
    # shellcheck disable=SC2086
    $(compiler "$source") $flags "$source" -fopenmp-targets=amdgcn-amd-amdhsa -Xopenmp-target=amdgcn-amd-amdhsa \
      -march=$arch --rocm-device-lib-path="$libs" -o "$work/$(object "$source")-$arch.o"
  done
done
rm -f "$out/libomprpc-device.a"
ar rcs "$out/libomprpc-device.a" "$work"/*.o
cp include/omprpc_libc.h include/omprpc_device.h include/omprpc.h include/omprpc_stdbit.h "$out/"
echo "$out/libomprpc-device.a: $(wc -c <"$out/libomprpc-device.a") bytes, for sm_70 to sm_90 and gfx906, gfx908, gfx90a, gfx940, gfx1030, gfx1100"
