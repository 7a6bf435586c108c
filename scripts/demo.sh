#!/bin/sh
# omprpc's main job: installs the prerequisites, builds the plugin, installs it under the stock host
# plugin's name in a private directory, builds an ordinary OpenMP program with clang-16, and runs it
# through libomptarget 16 with omprpc (LIBOMPTARGET_INFO=16 shows the plugin at work).
set -eu
cd "$(dirname "$0")/.."
sh scripts/setup-debian.sh
cargo build --release

dir=target/demo
mkdir -p "$dir/plugin"
cp target/release/libomprpc.so "$dir/plugin/libomptarget.rtl.x86_64.nextgen.so"
clang-16 -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu -O2 -Wall -I include examples/hello_offload.c -o "$dir/hello_offload"

echo "== running $dir/hello_offload through omprpc"
LD_LIBRARY_PATH="$PWD/$dir/plugin" LIBOMPTARGET_INFO=16 "$dir/hello_offload"
