#!/bin/sh
# Fetches the sources of LLVM libc 19.1.7's GPU RPC client (the client that LLVM libc's own stdio,
# malloc and exit use on a GPU), so that the tests can build device code against a client this project
# did not write. Downloads Debian's llvm-toolchain-19 source package once (about 157 MiB, through a
# private apt configuration with a deb-src line for the Debian archive that apt's own sources already
# name, found by scripts/apt-mirror.sh; the system's sources are not changed), and keeps only
# what the client and libc's GPU stdio, stdlib and printf need (libc/src/{__support,stdio,stdlib,gpu,
# string,errno}, libc/include, libc/hdr, and LLVM's own tests of libc in target regions,
# offload/test/libc; about 20 MiB) under $OMPRPC_CACHE/libc-19.1.7 (default
# ~/.cache/omprpc), outside the checkout, so that later runs on the machine do not fetch it again.
# Prints the folder that holds libc/. Fails (exit 1) with the reason when the source cannot be had.
set -eu
cache=${OMPRPC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/omprpc}
dest="$cache/libc-19.1.7"
if [ -f "$dest/libc/src/__support/RPC/rpc_client.h" ] && [ -f "$dest/libc/src/gpu/rpc_fprintf.cpp" ] &&
  [ -f "$dest/offload/test/libc/host_call.c" ]; then
  echo "$dest"
  exit 0
fi
if ! ls "$cache"/src/llvm-toolchain-19_19.1.7.orig.tar.* >/dev/null 2>&1; then
  # The mirror or proxy this machine already reaches Debian through, not a fixed host it may not reach.
  found=$(sh "$(dirname "$0")/apt-mirror.sh") || exit 1
  archive=$(echo "$found" | sed -n 1p)
  keyring=$(echo "$found" | sed -n 2p)
  apt="$cache/apt-src"
  mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$cache/src"
  echo "deb-src [signed-by=$keyring] $archive bookworm main" >"$apt/sources.list"
  set -- -o Dir::Etc::SourceList="$apt/sources.list" -o Dir::Etc::SourceParts=/nonexistent \
    -o Dir::State::Lists="$apt/lists" -o Dir::Cache="$apt/cache" -o APT::Sandbox::User=root
  echo "omprpc setup: fetching Debian's llvm-toolchain-19 source (about 157 MiB, once) for LLVM libc's RPC client" >&2
  if ! apt-get "$@" update -qq >&2 ||
    ! (cd "$cache/src" && apt-get "$@" source --download-only llvm-toolchain-19=1:19.1.7-3~deb12u1 >&2); then
    echo "omprpc setup: could not fetch llvm-toolchain-19's source package from $archive; LLVM libc's client tests cannot run" >&2
    exit 1
  fi
fi
orig=$(ls "$cache"/src/llvm-toolchain-19_19.1.7.orig.tar.* | head -1)
rm -rf "$dest.tmp"
mkdir -p "$dest.tmp"
tar -xf "$orig" -C "$dest.tmp" --strip-components=1 --wildcards \
  '*/libc/src/__support/*' '*/libc/src/stdio/*' '*/libc/src/stdlib/*' '*/libc/src/gpu/*' \
  '*/libc/src/string/*' '*/libc/src/errno/*' '*/libc/include/*' '*/libc/hdr/*' \
  '*/offload/test/libc/*' >&2
if [ ! -f "$dest.tmp/libc/src/__support/RPC/rpc_client.h" ]; then
  echo "omprpc setup: $orig has no libc/src/__support/RPC/rpc_client.h" >&2
  exit 1
fi
rm -rf "$dest"
mv "$dest.tmp" "$dest"
echo "$dest"
