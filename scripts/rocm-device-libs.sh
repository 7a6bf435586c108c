#!/bin/sh
# Prints the folder of AMDGPU device libraries to build for ARCH with: Debian's, or, for a processor
# they stop short of (Debian 12's rocm-device-libs 5.2 end at gfx1036, so gfx1100 is missing), a copy
# of them in WORK/rocm-device-libs-ARCH with the one library that names the ISA version
# (oclc_isa_version_N.bc, a single constant) made from gfx1036's with llvm-dis-16 and llvm-as-16.
# Usage: sh scripts/rocm-device-libs.sh ARCH WORK   (tests/support/mod.rs does the same for the tests)
set -eu
arch=$1
work=$2
libs=/usr/lib/x86_64-linux-gnu/amdgcn/bitcode
[ -d "$libs" ] || { echo "no $libs; run: sh scripts/setup-gpu-toolchains.sh" >&2; exit 1; }
number=${arch#gfx}
if [ -f "$libs/oclc_isa_version_$number.bc" ]; then
  echo "$libs"
  exit 0
fi
# gfxABCD is ISA version AB.C.D: 11000 for gfx1100.
version=$(echo "$number" | sed 's/^\(..\)\(.\)\(.\)$/\1 \2 \3/' | awk '{ printf "%d%d%02d\n", $1, $2, $3 }')
dir="$work/rocm-device-libs-$arch"
rm -rf "$dir"
mkdir -p "$dir"
for f in "$libs"/*; do ln -s "$f" "$dir/"; done
llvm-dis-16 "$libs/oclc_isa_version_1036.bc" -o - | sed "s/i32 10306/i32 $version/" >"$dir/oclc_isa_version_$number.ll"
llvm-as-16 "$dir/oclc_isa_version_$number.ll" -o "$dir/oclc_isa_version_$number.bc"
echo "$dir"
