#!/usr/bin/env bash
# The one test command (README, .ci/run): unit, property, golden and end-to-end tests of the workspace.
# It installs what the end-to-end tests need itself, so it works on a fresh machine.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo test (workspace)"
cargo test --workspace --all-targets --locked
cargo test --workspace --doc --locked
