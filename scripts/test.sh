#!/bin/sh
# Runs every omprpc test: installs the prerequisites, then `cargo test` (unit tests, the c_tests
# programs through libomptarget 16 against the stock plugin, the direct-ABI bad-input harness, a million
# launches, and the plugin's behaviour).
set -eu
cd "$(dirname "$0")/.."
sh scripts/setup-debian.sh
cargo test "$@"
