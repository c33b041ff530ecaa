#!/usr/bin/env bash
# The conformance kit: Josef's end-to-end client suite (tests/e2e: real Kafka clients — librdkafka,
# kafka-python, kafkajs, kcat — asserting Kafka's behaviour) run against any broker command, with a
# table of what passes.
#
#   scripts/conformance.sh --broker-cmd 'CMD' [--no-durability] [--python PY] [PYTEST ARGS...]
#
# CMD starts one broker; `{port}`, `{data_dir}` and `{config}` in it are replaced per test by the port
# to listen on (127.0.0.1), a fresh data dir, and a Kafka server.properties written for the test
# (listeners, log.dirs and the test's own settings). The broker must stop cleanly on SIGTERM.
#   --no-durability   deselect the tests that restart the broker and expect its data back
#                     (pytest marker `durability`), for brokers that keep data in memory.
#   PYTEST ARGS       test files or options (default: every single-node test in tests/e2e).
# Examples:
#   scripts/conformance.sh --broker-cmd 'target/debug/josef-broker --config {config}'
#   scripts/conformance.sh --no-durability \
#     --broker-cmd 'target/debug/examples/memory_broker --config {config}' tests/e2e/test_groups.py
# Needs the Python clients (scripts/e2e.sh installs them into .venv) and kcat.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CMD=""
MARK="not cluster"
REASON=""
PY="$ROOT/.venv/bin/python"
ARGS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --broker-cmd) CMD="$2"; shift 2 ;;
    --no-durability) MARK="not cluster and not durability"; REASON="need durability: the broker keeps no data across restarts"; shift ;;
    --python) PY="$2"; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) ARGS+=("$1"); shift ;;
  esac
done
if [ -z "$CMD" ]; then
  echo "usage: $0 --broker-cmd 'CMD with {port}, {data_dir} or {config}' [--no-durability] [PYTEST ARGS...]" >&2
  exit 2
fi
[ ${#ARGS[@]} -gt 0 ] || ARGS=("$ROOT/tests/e2e")
OUT=$(mktemp -d "${TMPDIR:-/tmp}/josef-conformance-XXXXXX")
trap 'rm -rf "$OUT"' EXIT

echo "== conformance: $CMD"
if [ -n "$REASON" ]; then
  # Listed for the table; the run below leaves them out.
  (cd "$ROOT" && "$PY" -m pytest --collect-only -q -p no:cacheprovider -m "durability and not cluster" "${ARGS[@]}" \
    > "$OUT/deselected.txt" 2>/dev/null) || true
fi
set +e
(cd "$ROOT" && JOSEF_BROKER_CMD="$CMD" "$PY" -m pytest "${ARGS[@]}" -m "$MARK" -q --timeout 600 \
  -p no:cacheprovider -W ignore::DeprecationWarning --junitxml="$OUT/junit.xml" -o junit_family=xunit1)
set -e
echo
echo "== conformance table ($CMD)"
"$PY" "$ROOT/tests/e2e/conformance_table.py" "$OUT/junit.xml" "$OUT/deselected.txt" "$REASON"
