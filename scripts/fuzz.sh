#!/bin/sh
# Coverage-guided fuzzing of every parser of untrusted bytes in omprpc, and of the device library's C
# code against glibc (libc_device_code) (fuzz/fuzz_targets/), on the
# stable toolchain: cargo-fuzz with `--sanitizer none` and libFuzzer (libfuzzer-sys).
#
#   sh scripts/fuzz.sh ci [SECONDS]        build, then run every target from its seeds for SECONDS
#                                          (default 30) each; about 3 minutes in all once built
#   sh scripts/fuzz.sh runs N [TARGET...]  build, then run each target (default: all) for N executions
#   sh scripts/fuzz.sh build               build the targets only
#   sh scripts/fuzz.sh seeds               rebuild fuzz/seeds/ from images made with clang-16
#
# The committed seeds (fuzz/seeds/<target>/) are read, never written: new inputs go to the scratch
# corpus fuzz/corpus/<target>/ (ignored by git). A crash, panic, timeout (-timeout=10) or running out of
# memory (-rss_limit_mb=2048) fails the run; the input is saved under fuzz/artifacts/<target>/ and
# `sh scripts/fuzz.sh repro TARGET FILE` replays it. Each target's line reports libFuzzer's final stats:
# executions (stat::number_of_executed_units), executions per second, coverage (cov) at start and end,
# and peak RSS. Without a sanitizer libFuzzer finds no leaks, so each target counts the bytes live in
# Rust's heap and fails on an input that leaves more behind when it is run again
# (fuzz/fuzz_targets/leak_check.rs).
set -eu
cd "$(dirname "$0")/.."

TARGETS="elf host_image nvidia_image amdgpu_code_object exec_mode abi_args libc_device_code"
CARGO_FUZZ_VERSION=0.13.2
# --sanitizer none: sanitizers need nightly. --debug-assertions: also overflow checks, as in tests.
FUZZ_FLAGS="--sanitizer none --debug-assertions"

ensure_cargo_fuzz() {
  if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked --version "$CARGO_FUZZ_VERSION"
  fi
}

build() {
  ensure_cargo_fuzz
  # shellcheck disable=SC2086
  cargo fuzz build $FUZZ_FLAGS
}

# Options per target: abi_args reads at most 16 KiB of its input (see its header comment).
target_options() {
  case "$1" in
    abi_args) echo "-max_len=16384" ;;
    *) echo "" ;;
  esac
}

failed=""

# run_target TARGET LIBFUZZER-OPTION...: runs one target, prints its line, records a failure.
run_target() {
  t=$1
  shift
  mkdir -p "fuzz/corpus/$t" "fuzz/artifacts/$t" fuzz/target
  log="fuzz/target/fuzz-$t.log"
  status=ok
  # shellcheck disable=SC2046,SC2086
  cargo fuzz run $FUZZ_FLAGS "$t" "fuzz/corpus/$t" "fuzz/seeds/$t" -- \
    -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 $(target_options "$t") "$@" >"$log" 2>&1 || status=FAILED
  runs=$(sed -n 's/^stat::number_of_executed_\(units\|runs\): *//p' "$log" | tail -n 1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
  cov_start=$(sed -n 's/^#[0-9]*[[:space:]]*INITED.* cov: \([0-9]*\).*/\1/p' "$log" | tail -n 1)
  cov_end=$(sed -n 's/^#[0-9]* *.* cov: \([0-9]*\).*/\1/p' "$log" | tail -n 1)
  rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -n 1)
  printf '%-13s %-6s %12s executions %8s exec/s  cov %s -> %s  peak RSS %s MiB\n' "$t" "$status" "${runs:-?}" \
    "${rate:-?}" "${cov_start:-?}" "${cov_end:-?}" "${rss:-?}"
  if [ "$status" != ok ]; then
    failed="$failed $t"
    grep -E "panicked at|^leak:|^thread|assertion|ERROR: libFuzzer|SUMMARY|Test unit written|artifact_prefix|Failing input" "$log" | head -n 20 >&2 || true
    echo "  full log: $log" >&2
  fi
}

finish() {
  if [ -n "$failed" ]; then
    echo "fuzzing FAILED:$failed (inputs under fuzz/artifacts/)" >&2
    exit 1
  fi
  echo "fuzzing ok"
}

make_seeds() {
  work=fuzz/target/seed-images
  rm -rf "$work"
  mkdir -p "$work"
  src=fuzz/tools/seed_kernel.c
  # Host (x86-64) device image: the linked shared object the offload packager carries in the program.
  clang-16 -O1 -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu "$src" -o "$work/host_prog"
  clang-offload-packager-16 "$work/host_prog" --image=file="$work/host.so",triple=x86_64-pc-linux-gnu
  # AMDGPU code object (needs rocm-device-libs for the device runtime's ocml/ockl).
  if clang-16 -O1 -fopenmp --offload-arch=gfx90a \
    --rocm-device-lib-path=/usr/lib/x86_64-linux-gnu/amdgcn/bitcode "$src" -o "$work/amd_prog"; then
    clang-offload-packager-16 "$work/amd_prog" \
      --image=file="$work/gfx90a.hsaco",triple=amdgcn-amd-amdhsa,arch=gfx90a
  else
    echo "no AMDGPU image (install rocm-device-libs); its seeds are left out" >&2
  fi
  # PTX text (no ptxas needed).
  clang-16 -O1 -fopenmp --offload-arch=sm_80 -nogpulib --offload-device-only -S "$src" -o "$work/sm_80.ptx"
  # Cubins: the committed test images (scripts/make-nvptx-test-images.sh).
  for arch in sm_70 sm_80 sm_90; do
    cp "tests/data/nvptx/cuda_module-$arch.cubin" "$work/$arch.cubin"
  done
  rustc --edition 2021 -O fuzz/tools/make_seeds.rs -o "$work/make_seeds"
  "$work/make_seeds" "$work" fuzz/seeds
  du -sh fuzz/seeds
}

mode=${1:-ci}
[ $# -gt 0 ] && shift
case "$mode" in
  build)
    build
    ;;
  ci)
    seconds=${1:-30}
    build
    for t in $TARGETS; do
      run_target "$t" -max_total_time="$seconds"
    done
    finish
    ;;
  runs)
    n=${1:?usage: sh scripts/fuzz.sh runs N [TARGET...]}
    shift
    build
    for t in ${*:-$TARGETS}; do
      run_target "$t" -runs="$n"
    done
    finish
    ;;
  repro)
    t=${1:?usage: sh scripts/fuzz.sh repro TARGET FILE}
    build
    # shellcheck disable=SC2086
    cargo fuzz run $FUZZ_FLAGS "$t" "${2:?usage: sh scripts/fuzz.sh repro TARGET FILE}"
    ;;
  seeds)
    make_seeds
    ;;
  *)
    echo "usage: sh scripts/fuzz.sh ci [SECONDS] | runs N [TARGET...] | build | repro TARGET FILE | seeds" >&2
    exit 2
    ;;
esac
