#!/bin/sh
# Builds the fake kernel-driver thunk (tests/fake_kfd/fake_hsakmt.c) as OUTDIR/libhsakmt.so.1 and
# puts next to it the real HSA runtime (Debian's ROCr 5.2.3) and the libraries it loads, all but
# the real thunk, from ${OMPRPC_TOOLCHAINS:-target/toolchains}/libhsa. Then
#   LD_LIBRARY_PATH=OUTDIR program
# runs the real ROCr over the fake on a machine without a GPU (a process already running loads the
# libraries listed in OUTDIR/load-order first, by path: the fake thunk in place of the real one).
# Also builds OUTDIR/fake-kfd-smoke (tests/fake_kfd/smoke.c) when the HSA headers are installed.
# What is up to date is not built again.
#
# Usage: sh scripts/build-fake-kfd.sh OUTDIR      (CC overrides the compiler, default cc)
# Needs: a C compiler, /usr/include/hsakmt.h (Debian package libhsakmt-dev) and, for the smoke
# test, /usr/include/hsa/hsa.h (libhsa-runtime-dev).
set -eu
if [ $# -ne 1 ]; then
  echo "usage: sh scripts/build-fake-kfd.sh OUTDIR" >&2
  exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)
toolchains=${OMPRPC_TOOLCHAINS:-$root/target/toolchains}
case $toolchains in /*) ;; *) toolchains=$root/$toolchains ;; esac
libhsa=$toolchains/libhsa
cc=${CC:-cc}

if [ ! -f "$libhsa/libhsa-runtime64.so.1" ] || [ ! -f "$libhsa/load-order" ]; then
  echo "build-fake-kfd: no HSA runtime in $libhsa; run 'sh scripts/setup-gpu-toolchains.sh' first" >&2
  exit 1
fi
if [ ! -f /usr/include/hsakmt.h ]; then
  echo "build-fake-kfd: /usr/include/hsakmt.h is missing; install it with 'apt-get install libhsakmt-dev'" >&2
  exit 1
fi

# The runtime and its dependencies, as links, without the real thunk (and without anything left
# from an earlier copy of it).
for f in "$libhsa"/*; do
  name=$(basename "$f")
  case $name in
    libhsakmt.so*) continue ;;
  esac
  ln -sf "$f" "$out/$name"
done
[ -e "$out/libhsa-runtime64.so" ] || ln -sf libhsa-runtime64.so.1 "$out/libhsa-runtime64.so"

src=$root/tests/fake_kfd
up_to_date() { # $1 is newer than every source of the fake
  [ -f "$1" ] && [ "$1" -nt "$src/fake_hsakmt.c" ] && [ "$1" -nt "$src/fake_kfd.h" ] &&
    [ "$1" -nt "$src/hsakmt.map" ] && [ "$1" -nt "$0" ]
}
if ! up_to_date "$out/libhsakmt.so.1"; then
  # shellcheck disable=SC2086 # CFLAGS are words
  $cc -std=c11 -Wall -Wextra -Werror -O2 -g ${CFLAGS:-} -fPIC -fvisibility=hidden -shared \
    -Wl,-soname,libhsakmt.so.1 -Wl,--version-script="$src/hsakmt.map" -Wl,-z,defs \
    -o "$out/libhsakmt.so.1.$$" "$src/fake_hsakmt.c" -lpthread
  mv -f "$out/libhsakmt.so.1.$$" "$out/libhsakmt.so.1"
fi
echo "build-fake-kfd: $out/libhsakmt.so.1 (fake thunk) with the real runtime from $libhsa"

if [ -f /usr/include/hsa/hsa.h ] && up_to_date "$out/fake-kfd-smoke" && [ "$out/fake-kfd-smoke" -nt "$src/smoke.c" ]; then
  : # built already
elif [ -f /usr/include/hsa/hsa.h ]; then
  # shellcheck disable=SC2086
  $cc -std=c11 -Wall -Wextra -Werror -O2 -g ${CFLAGS:-} -o "$out/fake-kfd-smoke.$$" \
    "$src/smoke.c" -ldl -lpthread
  mv -f "$out/fake-kfd-smoke.$$" "$out/fake-kfd-smoke"
  echo "build-fake-kfd: $out/fake-kfd-smoke (run: LD_LIBRARY_PATH=$out $out/fake-kfd-smoke tests/data/amdgpu/cuda_module-gfx90a.hsaco)"
else
  echo "build-fake-kfd: /usr/include/hsa/hsa.h is missing ('apt-get install libhsa-runtime-dev'); smoke test not built" >&2
fi
