#!/bin/sh
# Installs what building and testing omprpc needs on Debian 12 (bookworm): clang-16 and libomptarget 16
# (the runtime the plugin plugs into), llvm-16 (llvm-as and llvm-dis, for the AMDGPU device library of
# gfx1100 that Debian lacks), LLVM 19's libc RPC server, binutils, valgrind (memory checks),
# xz-utils (to unpack LLVM's source) and libhsakmt-dev (the kernel-driver thunk's headers, for the
# fake driver under which tests run the real HSA runtime: tests/fake_kfd/); then the GPU toolchains
# that the tests build NVPTX and AMDGPU images with (scripts/setup-gpu-toolchains.sh), and LLVM libc 19.1.7's client sources
# (scripts/fetch-libc-source.sh). Run as root or
# with sudo. The Rust toolchain (1.88 or newer) must already be installed, e.g. with rustup.
set -eu

packages="clang-16 clang-tools-16 llvm-16 libomp-16-dev libllvmlibc-19-dev binutils valgrind xz-utils libhsakmt-dev"

missing=""
for p in $packages; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done

if [ -n "$missing" ]; then
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  echo "omprpc setup: installing$missing"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "omprpc setup: cargo is not installed; install Rust 1.88 or newer with rustup or your distribution's packages and retry" >&2
  exit 1
fi

sh "$(dirname "$0")/setup-gpu-toolchains.sh"

# LLVM libc 19.1.7's own RPC client and GPU stdio, which the tests build device code from.
sh "$(dirname "$0")/fetch-libc-source.sh" >/dev/null
