#!/bin/sh
# The GPU check: omprpc as libomptarget 16's CUDA plugin on a machine with an NVIDIA GPU, or as its
# AMDGPU plugin on a machine with an AMD GPU and ROCm, beside the stock plugin.
#
#   sh scripts/gpu-check.sh bundle   (here, on Debian 12 with the set-up done) builds the plugin and the
#                                    test programs for sm_80 and sm_90 (both images in each program) and
#                                    packs them, with Debian's libomptarget 16, libomp, the stock CUDA
#                                    plugin, and the dynamic loader and every system library they need
#                                    (glibc included), into target/gpu-check/omprpc-gpu-check.tar.xz
#                                    (checked to be under 64 MiB); the runner starts every program
#                                    through that loader, so the bundle runs on an older glibc;
#   sh scripts/gpu-check.sh amd-bundle  the same for AMD GPUs: the programs built for gfx90a (MI200) and
#                                    gfx940 (MI300), ours as the AMDGPU plugin beside the stock one, into
#                                    target/gpu-check/omprpc-gpu-check-amd.tar.xz; the HSA runtime is the
#                                    machine's own (ROCm);
#   sh run.sh                        (on the GPU machine, inside the unpacked bundle; no compiler, no
#                                    network) runs every test with omprpc, then with the stock plugin, and
#                                    prints a PASS/FAIL line per test and the launch latency and RPC round
#                                    trip of both; on a machine without a GPU it says that it found none;
#   sh scripts/gpu-check.sh [amd]    builds the NVIDIA [AMD] bundle and runs it here.
set -eu

if [ "${1:-}" = "run" ] || [ "$(basename "$0")" = "run.sh" ]; then
  # ---------------------------------------------------------------- the runner, inside the bundle
  B=$(cd "$(dirname "$0")" && pwd)
  [ "$(basename "$0")" = "run.sh" ] || B=${2:?usage: gpu-check.sh run BUNDLE_DIR}
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  # Every program starts through the dynamic loader and C library the bundle was built with (sys/),
  # never the system's, so that the bundle runs where the system's glibc is older than Debian 12's
  # (Ubuntu 22.04, RHEL 8); the machine's own GPU driver library is still the one loaded.
  loader="$B/sys/ld-linux-x86-64.so.2"
  libs="$B/lib:$B/sys"
  vendor=$(cat "$B/vendor" 2>/dev/null || echo nvidia)
  # The stock plugins open the unversioned "libcuda.so" / "libhsa-runtime64.so", which a driver-only
  # system may lack: point them at the soname.
  mkdir -p "$tmp/driver"
  if [ "$vendor" = amd ]; then
    soname=libhsa-runtime64.so.1
    plugin=AMDGPU
    plugin_file=libomptarget.rtl.amdgpu.nextgen.so
    driver=$(ldconfig -p 2>/dev/null | awk '/libhsa-runtime64\.so\.1 .*x86-64/ {print $NF; exit}')
    [ -n "$driver" ] || [ ! -e /opt/rocm/lib/$soname ] || driver=/opt/rocm/lib/$soname
  else
    soname=libcuda.so.1
    plugin=CUDA
    plugin_file=libomptarget.rtl.cuda.nextgen.so
    driver=$(ldconfig -p 2>/dev/null | awk '/libcuda\.so\.1 .*x86-64/ {print $NF; exit}')
  fi
  [ -n "$driver" ] && ln -sf "$driver" "$tmp/driver/${soname%.1}" && ln -sf "$driver" "$tmp/driver/$soname"
  # Appended to, never replaced: a driver found only through LD_LIBRARY_PATH (containers, HPC modules)
  # must still be found.
  ours="$B/ours:$libs:$tmp/driver${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  stock="$libs:$tmp/driver${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

  echo "omprpc GPU check: $(uname -srm); driver library: ${driver:-none}"
  # Where the bundle itself cannot start, say so, with the loader's words: not "0 devices".
  cannot_run() {
    echo "this bundle cannot run here: $1"
    echo "summary: 0 passed, 1 failed"
    exit 2
  }
  for lib in "$B/lib/libomptarget.so.16" "$B/ours/$plugin_file" "$B/lib/$plugin_file"; do
    if ! listed=$("$loader" --library-path "$ours" --list "$lib" 2>&1) || echo "$listed" | grep -q -e 'not found' -e 'error'; then
      cannot_run "$(basename "$lib") does not load with the bundle's own loader and C library: $(echo "$listed" | grep -m1 -e 'not found' -e 'error' || echo "$listed" | head -1)"
    fi
  done
  probe_status=0
  probe=$(LIBOMPTARGET_INFO=16 timeout 60 "$loader" --library-path "$ours" "$B/bin/gpu_probe" 2>"$tmp/probe.err") || probe_status=$?
  if [ "$probe_status" = 126 ] || [ "$probe_status" = 127 ] || grep -q 'error while loading shared libraries' "$tmp/probe.err"; then
    cannot_run "its programs do not start (exit $probe_status): $(head -1 "$tmp/probe.err")"
  fi
  devices=$(echo "$probe" | sed -n 's/^devices: //p')
  if [ "${devices:-0}" = 0 ]; then
    shown=""
    if [ "$vendor" = amd ]; then
      # The amdgpu kernel driver's compute interface, and a GPU node in its topology.
      gpus=$(grep -l 'gfx_target_version [1-9]' /sys/class/kfd/kfd/topology/nodes/*/properties 2>/dev/null | wc -l)
      [ -e /dev/kfd ] && [ "$gpus" -gt 0 ] && shown="/dev/kfd exists and the amdgpu driver shows $gpus GPU node(s)"
      listed=$(rocminfo 2>/dev/null | grep -m1 -o 'gfx[0-9a-f]*' || true)
      [ -n "$listed" ] && shown="${shown:+$shown; }rocminfo lists: $listed"
      kind="an AMD GPU"
    else
      # /dev/nvidiactl alone is no sign: libcuda run as root creates it (mknod) even where no NVIDIA
      # kernel driver is loaded; with the driver loaded, /proc/driver/nvidia exists too.
      [ -e /dev/nvidiactl ] && [ -d /proc/driver/nvidia ] && shown="/dev/nvidiactl exists and the NVIDIA kernel driver is loaded"
      listed=$(nvidia-smi -L 2>/dev/null | grep '^GPU ' || true)
      [ -n "$listed" ] && shown="${shown:+$shown; }nvidia-smi lists: $(echo "$listed" | head -1)"
      kind="an NVIDIA GPU"
    fi
    if [ -n "$shown" ]; then
      # The machine shows a GPU: finding none is a failure, not a skip.
      echo "FAIL omprpc-devices          the machine shows $kind ($shown) but omprpc, as the $plugin plugin, reports 0 devices:"
      grep "omprpc" "$tmp/probe.err" | grep -v "omprpc-test" | sed 's/^/  /' || true
      echo "summary: 0 passed, 1 failed"
      exit 1
    fi
    if [ "$vendor" = amd ]; then echo "no AMD GPU found: omprpc, as the AMDGPU plugin, reports 0 devices:"; else echo "no NVIDIA GPU found: omprpc, as the CUDA plugin, reports 0 devices:"; fi
    grep "omprpc" "$tmp/probe.err" | grep -v "omprpc-test" | sed 's/^/  /' || true
    echo "nothing to check; skipped: no GPU"
    exit 0
  fi
  echo "omprpc reports $devices $plugin device(s):"
  grep "omprpc info" "$tmp/probe.err" | sed 's/^/  /' || true

  pass=0
  fail=0
  # Each case gets at most 30 s, and the whole check at most 8 minutes (7.5 for the cases), so that it
  # fits a short GPU slot even if every host-calling case hangs; the cases that use device malloc,
  # the riskiest on a new GPU, run last.
  started=$(date +%s)
  budget=${OMPRPC_GPU_CHECK_SECONDS:-450}
  # run_case PLUGIN_PATH NAME ARGS... -> stdout in $tmp/out, stderr in $tmp/err, status in $status
  # (124: timed out or out of time; its last output lines are printed)
  run_case() {
    path=$1
    name=$2
    shift 2
    status=0
    left=$((budget - ($(date +%s) - started)))
    if [ "$left" -le 0 ]; then
      : >"$tmp/out"
      echo "not run: the check's time ran out" >"$tmp/err"
      status=124
      return
    fi
    [ "$left" -lt 30 ] || left=30
    timeout "$left" "$loader" --library-path "$path" "$B/bin/$name" "$@" >"$tmp/out" 2>"$tmp/err" || status=$?
    if [ "$status" = 124 ]; then
      echo "  $name $*: timed out after $left s; its last output:"
      tail -n 4 "$tmp/out" "$tmp/err" 2>/dev/null | sed 's/^/    /'
    fi
  }
  # The output without lines that count host devices or name the mapped plugins.
  filtered() { grep -v -e '^devices: ' -e '^omprpc-test: ' "$1" || true; }
  report() { # RESULT NAME DETAIL
    if [ "$1" = PASS ]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
    printf '%-4s %-22s %s\n' "$1" "$2" "$3"
  }
  # llvm-omp-device-info lists every device, with the stock plugin's lines.
  run_case "$stock" llvm-omp-device-info
  stock_devices=$(grep -c '^Device (' "$tmp/out" || true)
  run_case "$ours" llvm-omp-device-info
  listed="$(grep -c '^Device (' "$tmp/out" || true) $(grep -c 'Device Name:' "$tmp/out" || true)"
  if [ "$status" = 0 ] && [ "$listed" = "$devices $devices" ]; then
    report PASS llvm-omp-device-info "$devices device(s), each named | stock plugin: $stock_devices device(s)"
  else
    report FAIL llvm-omp-device-info "(exit $status) devices, named: $listed; want $devices"
  fi
  sed -n '/^Device (0)/,/^$/p' "$tmp/out" | head -8 | sed 's/^/  /'
  # Programs with an expected output: with omprpc, that output (host services included); with the
  # stock plugin, the same where the program does not need host services.
  # Programs without device malloc first.
  for expected in $(for e in "$B"/expected/*.expected; do
    if grep -qx "$(basename "$e" .expected)" "$B/malloc_cases"; then echo "1 $e"; else echo "0 $e"; fi
  done | sort | cut -d' ' -f2); do
    name=$(basename "$expected" .expected)
    run_case "$ours" "$name"
    filtered "$expected" >"$tmp/want"
    filtered "$tmp/out" >"$tmp/got"
    if [ "$status" = 0 ] && cmp -s "$tmp/want" "$tmp/got"; then
      result=PASS
      detail="as expected"
    else
      result=FAIL
      detail="exit $status; $(diff "$tmp/want" "$tmp/got" | head -5 | tr '\n' ' ' | cut -c1-160) $(grep -m1 'omprpc error' "$tmp/err" || true)"
    fi
    run_case "$stock" "$name"
    filtered "$tmp/out" >"$tmp/stock"
    if [ "$status" = 0 ] && cmp -s "$tmp/want" "$tmp/stock"; then stock_result="as expected"; else stock_result="differs (exit $status)"; fi
    report "$result" "$name" "omprpc: $detail | stock plugin: $stock_result"
  done
  # Thousands of concurrent calls, each line exactly once.
  run_case "$ours" rpc_concurrent 4000
  lines=$(grep -c '^call ' "$tmp/out" || true)
  unique=$(grep '^call ' "$tmp/out" | awk '{print $2}' | sort -u | wc -l)
  if [ "$status" = 0 ] && [ "$lines" = 4000 ] && [ "$unique" = 4000 ] && grep -q "^checksum: 7998000$" "$tmp/out"; then
    report PASS rpc_concurrent "4000 calls, each once"
  else
    report FAIL rpc_concurrent "(exit $status) $lines lines, $unique distinct"
  fi
  # Every data path (omp_target_memcpy from 1 byte to 8 MiB, staged and pinned; enter/exit data;
  # nowait with depend), checked byte for byte by the program itself, with both plugins; and the
  # kernels both launch, with the same teams and threads.
  launches() { sed -n 's/.*info: Launching kernel \(.*\)/\1/p' "$1" | sed 's/ (nowait)$//' | sort; }
  export LIBOMPTARGET_INFO=16
  run_case "$ours" data_paths
  ours_status=$status
  cp "$tmp/out" "$tmp/data_paths.ours"
  cp "$tmp/err" "$tmp/data_paths.ours.err"
  launches "$tmp/err" >"$tmp/launches.ours"
  run_case "$stock" data_paths
  unset LIBOMPTARGET_INFO
  launches "$tmp/err" >"$tmp/launches.stock"
  if cmp -s "$tmp/out" "$tmp/data_paths.ours"; then stock_detail="the same output"; else stock_detail="other output"; fi
  if cmp -s "$tmp/launches.stock" "$tmp/launches.ours"; then stock_detail="$stock_detail, the same launches"; else stock_detail="$stock_detail, other launches"; fi
  if [ "$ours_status" = 0 ] && [ -s "$tmp/data_paths.ours" ] && ! grep -q FAILED "$tmp/data_paths.ours"; then
    report PASS data_paths "every copy and mapping checked | stock plugin: $stock_detail (exit $status)"
  else
    report FAIL data_paths "(exit $ours_status) $(grep -m2 FAILED "$tmp/data_paths.ours" | tr '\n' ' ') $(grep -m1 'omprpc error' "$tmp/data_paths.ours.err" || true)"
  fi
  # A device exit ends the process with its status, output flushed.
  run_case "$ours" rpc_exit "$tmp/exit.txt" sync
  if [ "$status" = 3 ] && [ "$(cat "$tmp/out")" = "$(printf 'host: before the target region\ndevice: line 1\ndevice: line 2')" ]; then
    report PASS rpc_exit "exit status 3, output flushed"
  else
    report FAIL rpc_exit "(exit $status) $(head -3 "$tmp/out" | tr '\n' '|')"
  fi

  # Unchanged programs (nothing from omprpc in their source), built with omprpc's device library and
  # run through omprpc; their expected output is the host's C library's for the same calls. printf
  # from 128 GPU threads is also built without the library and run through the stock plugin (CUDA's
  # own printf on NVIDIA; nothing on AMD with LLVM 16), for comparison.
  run_case "$ours" unchanged_printf
  ours_status=$status
  filtered "$tmp/out" | sort >"$tmp/got"
  run_case "$stock" unchanged_printf_stock
  stock_status=$status
  filtered "$tmp/out" | sort >"$tmp/stock"
  sort "$B/unchanged/unchanged_printf.lines" >"$tmp/want"
  stock_lines=$(grep -c '^ *[0-9]*: ' "$tmp/stock" || true)
  if cmp -s "$tmp/want" "$tmp/stock"; then stock_detail="the same lines"; else stock_detail="$stock_lines of the 128 lines, or other text (exit $stock_status)"; fi
  if [ "$ours_status" = 0 ] && cmp -s "$tmp/want" "$tmp/got"; then
    report PASS unchanged_printf "omprpc with -lomprpc-device: 128 threads' lines as the host's printf prints them | stock plugin without it: $stock_detail"
  else
    report FAIL unchanged_printf "(exit $ours_status) $(diff "$tmp/want" "$tmp/got" | head -4 | tr '\n' ' ' | cut -c1-160) | stock: $stock_detail"
  fi
  run_case "$ours" unchanged
  if [ "$status" = 0 ] && cmp -s "$B/unchanged/unchanged.stdout" "$tmp/out"; then
    report PASS unchanged "printf, puts, fputs, fprintf, a file, the malloc family, assert: as on the host"
  else
    report FAIL unchanged "(exit $status) $(diff "$B/unchanged/unchanged.stdout" "$tmp/out" | head -4 | tr '\n' ' ' | cut -c1-160) $(grep -m1 'omprpc error' "$tmp/err" || true)"
  fi

  # The device client from a warp's 32 lanes (a wavefront's 64 on AMD) at once: every host service
  # (device malloc too), checked by the program itself.
  run_case "$ours" device_client
  if [ "$status" = 0 ] && grep -q "^failures 0 checksum [1-9]" "$tmp/out"; then report PASS device_client "$(grep '^failures' "$tmp/out")"; else report FAIL device_client "(exit $status) $(grep '^failures' "$tmp/out" || tail -1 "$tmp/err")"; fi
  echo "figures (median of 3 runs):"
  median() { sort -n | sed -n 2p; }
  for kind in empty scalar; do
    for plugin in ours stock; do
      path=$ours
      [ "$plugin" = stock ] && path=$stock
      for i in 1 2 3; do
        run_case "$path" bench_launch "$kind" 20000
        sed -n 's/^ns per launch: //p' "$tmp/out"
      done | median >"$tmp/$plugin"
    done
    echo "  launch latency, $kind region: omprpc $(cat "$tmp/ours") ns, stock $(cat "$tmp/stock") ns"
  done
  for i in 1 2 3; do
    run_case "$ours" bench_rpc latency 20000
    sed -n 's/^ns per round trip: //p' "$tmp/out"
  done | median >"$tmp/rpc"
  echo "  RPC round trip (one device thread, echo opcode): omprpc $(cat "$tmp/rpc") ns; stock: none (no host services)"
  echo "summary: $pass passed, $fail failed"
  [ "$fail" = 0 ]
  exit $?
fi

# -------------------------------------------------------------------- building the bundle, here
cd "$(dirname "$0")/.."
case "${1:-}" in amd | amd-bundle) vendor=amd ;; *) vendor=nvidia ;; esac
out=target/gpu-check
if [ "$vendor" = amd ]; then
  libs=/usr/lib/x86_64-linux-gnu/amdgcn/bitcode
  [ -d "$libs" ] || { echo "no AMDGPU device libraries in $libs; run: sudo sh scripts/setup-debian.sh" >&2; exit 1; }
  bundle=$out/omprpc-gpu-check-amd
  plugin_file=libomptarget.rtl.amdgpu.nextgen.so
  # MI200 and MI300 (gfx940 is the generation clang 16 knows; gfx942 came later).
  targets="gfx90a gfx940"
  offload() { # the clang flags for one program holding every target's image
    for t in $targets; do printf -- '--offload-arch=%s ' "$t"; done
    printf -- '--rocm-device-lib-path=%s' "$libs"
  }
else
  cuda="${OMPRPC_TOOLCHAINS:-$PWD/target/toolchains}/cuda"
  [ -x "$cuda/bin/ptxas" ] || { echo "no ptxas in $cuda; run: sudo sh scripts/setup-debian.sh" >&2; exit 1; }
  bundle=$out/omprpc-gpu-check
  plugin_file=libomptarget.rtl.cuda.nextgen.so
  # A100 (sm_80) and H100/H200 (sm_90): each program holds both images, and the plugin takes the
  # one the machine's GPUs run.
  targets="sm_80 sm_90"
  offload() {
    for t in $targets; do printf -- '--offload-arch=%s ' "$t"; done
    printf -- '--cuda-path=%s -Wno-unknown-cuda-version' "$cuda"
  }
fi
rm -rf "$bundle"
mkdir -p "$bundle/bin" "$bundle/lib" "$bundle/sys" "$bundle/ours" "$bundle/expected"
echo "$vendor" >"$bundle/vendor"
cargo build --release --quiet
objcopy --strip-debug target/release/libomprpc.so "$bundle/ours/$plugin_file"

build() { # SOURCE NAME [FLAGS after the source: libraries]
  case "$1" in *.cpp) cc="clang++-16 -std=c++17" ;; *) cc=clang-16 ;; esac
  src=$1
  name=$2
  shift 2
  # shellcheck disable=SC2046 # the offload flags are words
  PATH="${cuda:-/nonexistent}/bin:$PATH" $cc -O2 -Wall -Werror -fopenmp $(offload) \
    -Ic_tests -Iinclude -Wl,-rpath,'$ORIGIN/../lib' "$src" "$@" -o "$bundle/bin/$name" 2>"$bundle.build.err" ||
    { cat "$bundle.build.err" >&2; exit 1; }
}
mkdir -p "$out"
cat >"$bundle.probe.c" <<'PROBE'
#include <omp.h>
#include <stdio.h>
int main(void) {
  printf("devices: %d\n", omp_get_num_devices());
  return 0;
}
PROBE
build "$bundle.probe.c" gpu_probe
# Every program with an expected output, but two that clang-16 cannot compile for GPUs
# (globals_and_ctors.cpp: a function-local static needs an acquire atomic load on NVPTX and
# __cxa_guard_acquire on AMDGPU; nowait_big_stack.c: clang-16 crashes on it for NVPTX and needs more
# than a work-group's 64 KiB of local memory on AMDGPU, and it tests the host backend's thread stacks
# anyway), two whose expected output counts four devices (multi_device, rpc_multi_device; a GPU machine
# may have one), and the unified-shared-memory programs (usm_*), which need a GPU with pageable memory
# access (HMM).
for expected in c_tests/*.expected; do
  name=$(basename "$expected" .expected)
  case "$name" in globals_and_ctors | nowait_big_stack | multi_device | rpc_multi_device | usm_*) continue ;; esac
  src=c_tests/$name.c
  [ -f "$src" ] || src=c_tests/$name.cpp
  build "$src" "$name"
  cp "$expected" "$bundle/expected/"
done
for name in rpc_concurrent rpc_exit bench_launch bench_rpc; do build "c_tests/$name.c" "$name"; done
# The programs whose device code calls malloc through host services, which the runner runs last.
grep -l 'omprpc_malloc' c_tests/*.c c_tests/*.cpp 2>/dev/null | xargs -n1 basename | sed 's/\.[^.]*$//' >"$bundle/malloc_cases"
build c_tests/gpu/device_client.c device_client
build c_tests/gpu/data_paths.c data_paths
# Unchanged programs with omprpc's device library and its opt-in header (which fprintf needs on both
# vendors, and printf on NVIDIA), one without them for the stock plugin, and what the host's C library
# prints for each.
sh scripts/build-device-lib.sh "$out/device-library" >/dev/null
library="-L$out/device-library -lomprpc-device -include $out/device-library/omprpc_libc.h"
mkdir -p "$bundle/unchanged"
for name in unchanged unchanged_printf; do
  # shellcheck disable=SC2086 # the library flags are words
  build "c_tests/gpu/$name.c" "$name" $library
  clang-16 -O2 -fopenmp "c_tests/gpu/$name.c" -o "$out/$name.host"
  (cd "$out" && OMP_THREAD_LIMIT=1 "./$name.host" 2>/dev/null) >"$out/$name.host.out"
done
build c_tests/gpu/unchanged_printf.c unchanged_printf_stock
cp "$out/unchanged.host.out" "$bundle/unchanged/unchanged.stdout"
cp "$out/unchanged_printf.host.out" "$bundle/unchanged/unchanged_printf.lines"

llvm=/usr/lib/llvm-16/lib
cp -L "$llvm/../bin/llvm-omp-device-info" "$bundle/bin/" # its run path is $ORIGIN/../lib, as ours
for f in libomp.so.5 libomptarget.so.16 "$plugin_file"; do cp -L "$llvm/$f" "$bundle/lib/"; done
cp -L "$llvm/libLLVM-16.so.1" "$bundle/lib/"
# The dynamic loader and every library of this system that the bundle's programs and libraries load
# (glibc, libstdc++, libLLVM's own dependencies), and the ones a GPU driver library loads by name,
# which the runner starts every program with.
cp -L /lib64/ld-linux-x86-64.so.2 "$bundle/sys/"
for f in "$bundle"/bin/* "$bundle"/lib/*.so* "$bundle"/ours/*.so; do
  LD_LIBRARY_PATH="$bundle/lib" ldd "$f" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3}'
done | sort -u | while read -r lib; do
  case "$lib" in */"$bundle"/*) continue ;; esac
  cp -L "$lib" "$bundle/sys/"
done
for f in libc.so.6 libm.so.6 libdl.so.2 libpthread.so.0 librt.so.1 libgcc_s.so.1; do
  cp -L "/lib/x86_64-linux-gnu/$f" "$bundle/sys/"
done
strip --strip-unneeded "$bundle"/lib/*.so* "$bundle"/bin/* 2>/dev/null || true
# The NVIDIA programs hold an image for each target.
if [ "$vendor" = nvidia ]; then
  for t in $targets; do
    llvm-objdump-16 --offloading "$bundle/bin/device_client" | grep -q "arch *$t\$" ||
      { echo "bin/device_client has no $t image" >&2; exit 1; }
  done
fi
cp "$0" "$bundle/run.sh"
# OMPRPC_BUNDLE_XZ: the xz level; the tests use a fast one, and then the 64 MiB check is skipped.
level=${OMPRPC_BUNDLE_XZ:--9e}
name=$(basename "$bundle")
tar -C "$out" -cf - "$name" | xz "$level" -T0 >"$out/$name.tar.xz"
size=$(wc -c <"$out/$name.tar.xz")
echo "bundle: $out/$name.tar.xz, $((size / 1048576)) MiB ($size bytes)"
[ "$level" != -9e ] || [ "$size" -lt $((64 * 1048576)) ] || { echo "the bundle is over 64 MiB" >&2; exit 1; }

case "${1:-}" in bundle | amd-bundle) ;; *) sh "$bundle/run.sh" ;; esac
