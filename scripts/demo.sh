#!/bin/sh
# omprpc's main job: installs the prerequisites, builds the plugin and the `omprpc` command, builds an
# ordinary OpenMP program with clang-16, and runs it through libomptarget 16 with omprpc, by
# `omprpc run` (LIBOMPTARGET_INFO=16 shows the plugin at work); nothing on the system is changed.
# Then an unchanged program with printf, fopen, malloc and assert in a target region: run through
# omprpc on the host device, and built for an AMD (gfx90a) and an NVIDIA (sm_80) GPU with omprpc's
# device library, which is all such a program needs to link. Last, `omprpc info` says what omprpc
# finds on this machine.
set -eu
cd "$(dirname "$0")/.."
sh scripts/setup-debian.sh
cargo build --release
omprpc="$PWD/target/release/omprpc"

dir=target/demo
mkdir -p "$dir"
clang-16 -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu -O2 -Wall -I include examples/hello_offload.c -o "$dir/hello_offload"

echo "== omprpc run $dir/hello_offload"
LIBOMPTARGET_INFO=16 "$omprpc" run "$dir/hello_offload"

echo "== an unchanged program (examples/unchanged_offload.c) through omprpc on the host device"
clang-16 -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu -O2 -Wall examples/unchanged_offload.c -o "$dir/unchanged_offload"
(cd "$dir" && "$omprpc" run ./unchanged_offload && echo "unchanged_offload.txt: $(cat unchanged_offload.txt)")

echo "== the same program for GPUs: link omprpc's device library, keep the code"
sh scripts/build-device-lib.sh "$dir/device"
cuda=${OMPRPC_TOOLCHAINS:-$PWD/target/toolchains}/cuda
amd_libs=$(sh scripts/rocm-device-libs.sh gfx90a "$dir/rocm")
calls='malloc|free|fopen|fputs|fclose|printf|__llvm_omp_vprintf|__assert_fail'
# Fails unless the device image of $1 for $2/$3 leaves none of the program's C library calls undefined.
check_image() {
  clang-offload-packager-16 "$1" --image=file="$1.image",triple="$2",arch="$3"
  undefined=$(llvm-readelf-16 -s --wide "$1.image" | awk '$7 == "UND" && $8 != "" { print $8 }' | grep -xE "$calls" || true)
  [ -z "$undefined" ] || { echo "undefined in the $3 image: $undefined" >&2; exit 1; }
  echo "$3: linked; printf, fopen, fputs, fclose, malloc, free and assert come from libomprpc-device.a"
}
echo "without the library, the AMD link fails as it does for every such program:"
clang-16 -fopenmp --offload-arch=gfx90a --rocm-device-lib-path="$amd_libs" -O2 examples/unchanged_offload.c \
  -o "$dir/unchanged_offload-nolib" 2>&1 | grep -m1 "undefined symbol" || { echo "it linked" >&2; exit 1; }
clang-16 -fopenmp --offload-arch=gfx90a --rocm-device-lib-path="$amd_libs" -O2 -Wall examples/unchanged_offload.c \
  -L"$dir/device" -lomprpc-device -o "$dir/unchanged_offload-gfx90a"
check_image "$dir/unchanged_offload-gfx90a" amdgcn-amd-amdhsa gfx90a
# On NVIDIA, printf needs the opt-in header too (else CUDA's own printf is used).
# (The device link repeats a warning about the CUDA version that -Wno-unknown-cuda-version silences
# for the compile: it is filtered out.)
{ PATH="$cuda/bin:$PATH" clang-16 -fopenmp --offload-arch=sm_80 --cuda-path="$cuda" -Wno-unknown-cuda-version \
  -O2 -Wall -include "$dir/device/omprpc_libc.h" examples/unchanged_offload.c -L"$dir/device" -lomprpc-device \
  -o "$dir/unchanged_offload-sm_80" 2>&1 1>&3 | grep -v "is only partially supported" >&2 || true; } 3>&1
check_image "$dir/unchanged_offload-sm_80" nvptx64-nvidia-cuda sm_80
echo "on a machine with such a GPU, \`omprpc run\` serves these calls there too"

echo "== omprpc info: what omprpc finds on this machine"
OMPRPC_DEVICE_LIBRARY="$dir/device/libomprpc-device.a" "$omprpc" info
