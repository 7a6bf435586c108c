#!/bin/sh
# Runs the unit tests of omprpc's pure-Rust parts under Miri, which reports undefined behaviour:
# out-of-bounds or misaligned access, use after free, data races, and breaches of Rust's aliasing
# rules (Stacked Borrows). Covered: the ABI layer's table building and guards (not
# util::foreign_memory, whose reads go through process_vm_readv, a system call Miri cannot run), the core over the fake backend
# (images, launches, queues, events, memory manager, pinned ranges, handle pools, teardown), the
# settings, messages, errors, ELF reader, address maps and fault injection, the mailbox layout, and
# the CUDA and host image checks. Everything that calls C (dlopen, libc's RPC server, the CUDA
# driver) is left to the other tests and valgrind. Leaks are not reported: tests leak 'static pools
# on purpose.
#
# Needs a nightly toolchain with the miri component, which CI machines cannot fetch (they have one
# toolchain), so this is not part of scripts/test.sh:
#   rustup toolchain install nightly-2026-10-30 --component miri --profile minimal
set -eu
cd "$(dirname "$0")/.."
toolchain=${OMPRPC_MIRI_TOOLCHAIN:-nightly-2026-10-30}
if ! cargo "+$toolchain" miri --version >/dev/null 2>&1; then
  echo "no Miri in toolchain $toolchain; install it with:" >&2
  echo "  rustup toolchain install $toolchain --component miri --profile minimal" >&2
  exit 1
fi
cargo "+$toolchain" miri setup
MIRIFLAGS="${MIRIFLAGS:--Zmiri-ignore-leaks}" cargo "+$toolchain" miri test --lib --no-default-features -- \
  abi:: plugin:: util:: rpc::mailbox backend::cuda::cubin backend::host::elf_check backend::host::queue \
  --skip util::foreign_memory
