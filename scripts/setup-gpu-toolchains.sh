#!/bin/sh
# Installs what building GPU OpenMP programs with clang-16 needs, so that omprpc's tests can build real
# NVPTX and AMDGPU images on a machine without a GPU:
#   * AMDGPU: Debian's rocm-device-libs and lld-16 (apt, bookworm main);
#   * NVPTX: ptxas, nvlink and libdevice from Debian's non-free nvidia-cuda-toolkit 11.8, downloaded with
#     a private apt configuration (the system's sources are not changed) and unpacked, not installed,
#     into a minimal CUDA root: $OMPRPC_TOOLCHAINS/cuda (default target/toolchains/cuda), for
#     `clang-16 --cuda-path=...`;
#   * the CUDA driver library from Debian's non-free libcuda1, unpacked (not installed) into
#     $OMPRPC_TOOLCHAINS/libcuda, so that tests load the real driver on a machine without a GPU;
#   * the HSA runtime from Debian's libhsa-runtime64-1 (ROCm 5.2.3) with the libraries it loads
#     (libhsakmt1, libdrm-amdgpu1, libdrm2, libnuma1, libelf1), unpacked (not installed) into
#     $OMPRPC_TOOLCHAINS/libhsa, so that tests load the real runtime on a machine without an AMD GPU;
#   * Debian 11's C library (bullseye's libc6, glibc 2.31, older than Debian 12's 2.36), downloaded with
#     a private apt configuration whose only source is bullseye main, with Debian's static busybox,
#     unpacked into $OMPRPC_TOOLCHAINS/old-glibc: a root in which the GPU check's test starts its bundle
#     as on a machine with an older glibc. A root left by an earlier version of this script (Ubuntu
#     22.04's glibc 2.35) is rebuilt.
# Every download goes through the Debian archive that apt's own sources already name
# (scripts/apt-mirror.sh), so a site that reaches only its own mirror or proxy needs nothing more; apt's
# configuration (a proxy, say) applies too, as only the source list is replaced.
# Run as root or with sudo (for apt-get install). Downloads about 110 MB once.
set -eu
cd "$(dirname "$0")/.."
cache=${OMPRPC_TOOLCHAINS:-$PWD/target/toolchains}

if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
missing=""
for p in rocm-device-libs lld-16 busybox-static; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "omprpc setup: installing$missing"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi

# The archive apt already uses ($archive) and its keyring ($keyring), looked up once and only when
# something must be downloaded, so that a set-up with everything in place needs no apt sources.
find_archive() {
  [ -z "${archive:-}" ] || return 0
  found=$(sh scripts/apt-mirror.sh) || exit 1
  archive=$(echo "$found" | sed -n 1p)
  keyring=$(echo "$found" | sed -n 2p)
}

# Downloads Debian packages into $cache/debs with a private apt configuration (the system's sources
# and package lists are not changed).
download() {
  find_archive
  apt="$cache/apt"
  mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$cache/debs"
  # bookworm-updates lives in the same archive as bookworm.
  cat > "$apt/sources.list" <<SOURCES
deb [signed-by=$keyring] $archive bookworm main contrib non-free
deb [signed-by=$keyring] $archive bookworm-updates main contrib non-free
SOURCES
  aptopts="-o Dir::Etc::SourceList=$apt/sources.list -o Dir::Etc::SourceParts=/nonexistent \
    -o Dir::State::Lists=$apt/lists -o Dir::Cache=$apt/cache -o APT::Sandbox::User=root"
  # Fresh package lists on every download: a kept cache's lists may name versions gone from the mirror.
  # shellcheck disable=SC2086 # the options are words
  apt-get $aptopts update -qq
  # shellcheck disable=SC2086
  (cd "$cache/debs" && apt-get $aptopts download "$@" >/dev/null)
}

cuda="$cache/cuda"
if [ ! -x "$cuda/bin/ptxas" ] || [ ! -f "$cuda/nvvm/libdevice/libdevice.10.bc" ]; then
  echo "omprpc setup: fetching Debian's nvidia-cuda-toolkit (non-free) for ptxas, nvlink and libdevice"
  download nvidia-cuda-toolkit libcuda1
  rm -rf "$cache/cuda-deb" "$cuda.tmp"
  dpkg-deb -x "$(ls "$cache"/debs/nvidia-cuda-toolkit_*.deb | head -1)" "$cache/cuda-deb"
  mkdir -p "$cuda.tmp/bin" "$cuda.tmp/nvvm/libdevice" "$cuda.tmp/include"
  cp "$cache/cuda-deb/usr/bin/ptxas" "$cache/cuda-deb/usr/bin/nvlink" "$cuda.tmp/bin/"
  cp "$cache/cuda-deb/usr/lib/nvidia-cuda-toolkit/libdevice/libdevice.10.bc" "$cuda.tmp/nvvm/libdevice/"
  # clang reads the CUDA version from cuda.h; the toolkit's own header is in another 700 MB package.
  echo '#define CUDA_VERSION 11080' > "$cuda.tmp/include/cuda.h"
  rm -rf "$cache/cuda-deb" "$cuda"
  mv "$cuda.tmp" "$cuda"
fi

libcuda="$cache/libcuda"
if [ ! -f "$libcuda/libcuda.so.1" ]; then
  deb=$(ls "$cache"/debs/libcuda1_*.deb 2>/dev/null | head -1)
  if [ -z "$deb" ]; then
    echo "omprpc setup: no libcuda1 .deb in $cache/debs; remove $cuda and rerun to fetch it" >&2
    exit 1
  fi
  rm -rf "$cache/libcuda-deb" "$libcuda"
  dpkg-deb -x "$deb" "$cache/libcuda-deb"
  mkdir -p "$libcuda"
  cp -L "$cache/libcuda-deb/usr/lib/x86_64-linux-gnu/nvidia/current/libcuda.so.1" "$libcuda/libcuda.so.1"
  rm -rf "$cache/libcuda-deb"
  echo "omprpc setup: CUDA driver library (no GPU needed to load it) in $libcuda"
fi

libhsa="$cache/libhsa"
if [ ! -f "$libhsa/libhsa-runtime64.so.1" ] || [ ! -f "$libhsa/load-order" ]; then
  echo "omprpc setup: fetching Debian's HSA runtime (libhsa-runtime64-1) and the libraries it loads"
  packages="libhsa-runtime64-1 libhsakmt1 libdrm-amdgpu1 libdrm2 libnuma1 libelf1"
  download $packages
  rm -rf "$cache/libhsa-deb" "$libhsa.tmp"
  mkdir -p "$libhsa.tmp"
  for p in $packages; do
    deb=$(ls "$cache"/debs/"${p}"_*.deb 2>/dev/null | head -1)
    [ -n "$deb" ] || { echo "omprpc setup: $p was not downloaded into $cache/debs" >&2; exit 1; }
    dpkg-deb -x "$deb" "$cache/libhsa-deb"
  done
  # The shared objects under their sonames, so that the runtime finds its dependencies here.
  find "$cache/libhsa-deb" \( -name 'lib*.so.*' -o -name 'lib*.so' \) \( -type f -o -type l \) \
    -exec cp -P {} "$libhsa.tmp/" \;
  # The stock AMDGPU plugin opens the unversioned name, which only the -dev package provides.
  ln -sf libhsa-runtime64.so.1 "$libhsa.tmp/libhsa-runtime64.so"
  # What a running process (a test) loads first, by path and in this order, so that the runtime
  # finds its dependencies by soname already loaded: the thunk last, as it needs the others.
  printf '%s\n' libnuma.so.1 libdrm.so.2 libdrm_amdgpu.so.1 libelf.so.1 libhsakmt.so.1 >"$libhsa.tmp/load-order"
  rm -rf "$cache/libhsa-deb" "$libhsa"
  mv "$libhsa.tmp" "$libhsa"
  echo "omprpc setup: HSA runtime (no AMD GPU needed to load it) in $libhsa"
fi

oldroot="$cache/old-glibc"
# The version of the libc6 package the root was built from. A root without one is an earlier script's,
# holding Ubuntu's glibc 2.35, which the GPU check's test no longer accepts; it is built again.
marker="$oldroot/omprpc-libc6-version"
case $(cat "$marker" 2>/dev/null) in
  2.31-*) ;;
  *) rm -rf "$oldroot" ;;
esac
if [ ! -x "$oldroot/bin/sh" ] || [ ! -f "$oldroot/lib/x86_64-linux-gnu/libc.so.6" ]; then
  echo "omprpc setup: fetching Debian 11's C library (bullseye's libc6, glibc 2.31) for a root with an older glibc"
  find_archive
  apt="$cache/apt-bullseye"
  debs="$cache/debs/bullseye"
  rm -rf "$debs"
  mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$debs"
  # Only bullseye: with bookworm beside it, the name would pick the newer glibc. apt checks the package
  # against the signed Release file, so no checksum is pinned here.
  echo "deb [signed-by=$keyring] $archive bullseye main" >"$apt/sources.list"
  set -- -o Dir::Etc::SourceList="$apt/sources.list" -o Dir::Etc::SourceParts=/nonexistent \
    -o Dir::State::Lists="$apt/lists" -o Dir::Cache="$apt/cache" -o APT::Sandbox::User=root
  # Without /bullseye, apt would take the installed libc6's version (2.36), which bullseye lacks.
  if ! apt-get "$@" update -qq || ! (cd "$debs" && apt-get "$@" download libc6/bullseye >/dev/null); then
    echo "omprpc setup: could not download bullseye's libc6 from $archive; the archive in apt's sources must also carry Debian 11 (bullseye) main" >&2
    exit 1
  fi
  set -- "$debs"/libc6_*.deb
  deb=$1
  rm -rf "$oldroot.tmp"
  dpkg-deb -x "$deb" "$oldroot.tmp"
  mkdir -p "$oldroot.tmp/bin" "$oldroot.tmp/tmp"
  cp /bin/busybox "$oldroot.tmp/bin/busybox"
  for applet in $(/bin/busybox --list); do
    [ -e "$oldroot.tmp/bin/$applet" ] || ln -s busybox "$oldroot.tmp/bin/$applet"
  done
  dpkg-deb -f "$deb" Version >"$oldroot.tmp/omprpc-libc6-version"
  rm -rf "$oldroot" "$cache/debs/libc6_2.35-0ubuntu3_amd64.deb"
  mv "$oldroot.tmp" "$oldroot"
  echo "omprpc setup: a root with Debian's libc6 $(cat "$marker") and busybox in $oldroot"
fi
