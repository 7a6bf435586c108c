#!/bin/sh
# Runs the unit tests of omprpc's pure-Rust parts under Miri, which reports undefined behaviour:
# out-of-bounds or misaligned access, use after free, data races, and breaches of Rust's aliasing
# rules (Stacked Borrows). Covered: the ABI layer's table building and guards (not
# util::foreign_memory, whose reads go through process_vm_readv, a system call Miri cannot run), the
# core over the fake backend (images, launches, queues, events, memory manager, pinned ranges, handle
# pools, teardown), the settings, messages, errors, ELF reader, address maps and fault injection, the
# mailbox (every field of every port written and read back through its typed view), and the CUDA and
# host image checks. Everything that calls C (dlopen, libc's RPC server, the CUDA driver) is left to
# the other tests and valgrind. Leaks are not reported: tests leak 'static pools on purpose.
#
# Needs a nightly toolchain with the miri component, which CI machines cannot fetch (they have one
# toolchain), so this is not part of scripts/test.sh:
#   rustup toolchain install nightly-2026-10-30 --component miri --profile minimal
# `sh scripts/miri.sh --check-filters`, run by the tests with the stable toolchain, only checks that
# every filter below still selects a test.
set -eu
cd "$(dirname "$0")/.."
# The tests Miri runs, as libtest filters. Built without host services: everything but the mailbox.
plain_filters="abi:: plugin:: util:: backend::cuda::cubin backend::host::elf_check backend::host::queue"
plain_skips="util::foreign_memory"
# The mailbox's own checks need the rpc feature's code, though they make no foreign call.
rpc_filters="rpc::protocol::mailbox::tests::every_field"

# Fails, naming it, when a filter matches no test of the library built with FEATURES (a renamed
# module would otherwise drop out of the run without a word). Uses the stable toolchain.
check_filters() { # FEATURES FILTER...
  features=$1
  shift
  # shellcheck disable=SC2086 # the features are words
  tests=$(cargo test -q --lib $features -- --list 2>/dev/null | sed -n 's/: test$//p')
  for filter in "$@"; do
    if ! printf '%s\n' "$tests" | grep -qF -- "$filter"; then
      echo "omprpc miri: the filter '$filter' matches no test of 'cargo test --lib $features'; fix scripts/miri.sh" >&2
      unmatched=1
    fi
  done
}
unmatched=0
# shellcheck disable=SC2086 # the filters are words
check_filters --no-default-features $plain_filters $plain_skips
# shellcheck disable=SC2086
check_filters "" $rpc_filters
[ "$unmatched" = 0 ] || exit 1
if [ "${1:-}" = "--check-filters" ]; then
  echo "omprpc miri: every filter matches a test"
  exit 0
fi

toolchain=${OMPRPC_MIRI_TOOLCHAIN:-nightly-2026-10-30}
if ! cargo "+$toolchain" miri --version >/dev/null 2>&1; then
  echo "no Miri in toolchain $toolchain; install it with:" >&2
  echo "  rustup toolchain install $toolchain --component miri --profile minimal" >&2
  exit 1
fi
cargo "+$toolchain" miri setup
skips=""
for skip in $plain_skips; do skips="$skips --skip $skip"; done
# shellcheck disable=SC2086
MIRIFLAGS="${MIRIFLAGS:--Zmiri-ignore-leaks}" cargo "+$toolchain" miri test --lib --no-default-features -- \
  $plain_filters $skips
# shellcheck disable=SC2086
MIRIFLAGS="${MIRIFLAGS:--Zmiri-ignore-leaks}" cargo "+$toolchain" miri test --lib -- $rpc_filters
