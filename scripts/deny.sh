#!/bin/sh
# Checks every dependency with cargo deny (deny.toml): licences, banned crates, sources, and the
# RustSec security advisories. cargo deny fetches the advisory database from GitHub, which CI machines
# cannot reach, so a snapshot of it is committed (deny/advisory-db.tar.gz: rustsec/advisory-db at
# commit bf5c0d245a92 of 2026-08-21, CC0) and unpacked, as a git repository with that date, where
# cargo deny looks for its database; the check then runs offline. Where a database is already there
# (fetched by `cargo deny fetch`, newer), it is used instead. Refresh the snapshot with a checkout of
# rustsec/advisory-db: git archive --format=tar.gz HEAD > deny/advisory-db.tar.gz (and the commit and
# date below).
set -eu
cd "$(dirname "$0")/.."
CARGO_DENY_VERSION=0.20.2
SNAPSHOT_COMMIT=bf5c0d245a92671908518d7e765914d437954ed6
SNAPSHOT_DATE=2026-08-21T08:28:40+02:00
if ! cargo deny --version 2>/dev/null | grep -q " $CARGO_DENY_VERSION\$"; then
  cargo install --locked --quiet cargo-deny --version "$CARGO_DENY_VERSION"
fi
# Where cargo-deny 0.20 keeps the database of https://github.com/rustsec/advisory-db.
db="${CARGO_HOME:-$HOME/.cargo}/advisory-dbs/advisory-db-3157b0e258782691"
if [ ! -d "$db/.git" ]; then
  rm -rf "$db"
  mkdir -p "$db"
  tar -xzf deny/advisory-db.tar.gz -C "$db"
  (
    cd "$db"
    git init -q
    git add -A
    GIT_AUTHOR_DATE=$SNAPSHOT_DATE GIT_COMMITTER_DATE=$SNAPSHOT_DATE \
      git -c user.name=advisory-db-snapshot -c user.email=snapshot@localhost \
      commit -q -m "rustsec/advisory-db $SNAPSHOT_COMMIT"
  )
fi
# cargo deny reads the whole dependency graph, every platform's crates included.
cargo fetch --locked --quiet
cargo deny --offline check advisories licenses bans sources
