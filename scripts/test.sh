#!/bin/sh
# Runs every omprpc test: installs the prerequisites, then `cargo test` (unit tests, the c_tests
# programs through libomptarget 16 against the stock plugin, the direct-ABI bad-input harness, a million
# launches, and the plugin's behaviour); then, unless cargo test was given arguments, every fuzz target
# from its committed seeds for OMPRPC_FUZZ_SECONDS (default 30) seconds each.
set -eu
cd "$(dirname "$0")/.."
sh scripts/setup-debian.sh
cargo test "$@"
if [ $# -eq 0 ]; then
  sh scripts/fuzz.sh ci "${OMPRPC_FUZZ_SECONDS:-30}"
fi
