#!/usr/bin/env bash
# Runs every cargo-fuzz target in fuzz/ briefly (FUZZ_SECONDS each, default 10) on its committed corpus,
# so CI notices a decoder that crashes on known inputs or on a few seconds of new ones. Long runs are
# done by hand: cargo fuzz run TARGET -- -max_total_time=600
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
SECONDS_EACH=${FUZZ_SECONDS:-10}
if ! command -v cargo-fuzz >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked
fi
# cargo-fuzz passes nightly-only flags (-Zsanitizer); this stable toolchain accepts them with RUSTC_BOOTSTRAP.
export RUSTC_BOOTSTRAP=1
for target in $(cargo fuzz list); do
  echo "== fuzz $target for ${SECONDS_EACH}s"
  mkdir -p "corpus/$target"
  cargo fuzz run "$target" "corpus/$target" -- -max_total_time="$SECONDS_EACH" -rss_limit_mb=2048 2>&1 | tail -n 3
done
