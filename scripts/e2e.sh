#!/usr/bin/env bash
# End-to-end tests: real Kafka clients against the built josef-broker. Installs what they need.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

echo "== end-to-end setup"
SUDO=""
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1; then SUDO=sudo; fi
# Debian packages: kcat, and prometheus (a real server scrapes the broker in test_metrics.py; without
# apt-get that test skips, saying why).
APT_NEED=()
command -v kcat >/dev/null 2>&1 || APT_NEED+=(kcat)
command -v prometheus >/dev/null 2>&1 || APT_NEED+=(prometheus)
[ -e /usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1 ] || APT_NEED+=(faketime)
if [ ${#APT_NEED[@]} -gt 0 ]; then
  if command -v apt-get >/dev/null 2>&1; then
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${APT_NEED[@]}" >/dev/null
  else
    echo "apt-get is not available: ${APT_NEED[*]} not installed"
  fi
fi
if [ ! -x .venv/bin/python ]; then python3 -m venv .venv; fi
.venv/bin/pip install -q --disable-pip-version-check -r tests/e2e/requirements.txt
(cd tests/e2e/node && npm ci --no-audit --no-fund --silent)

echo "== end-to-end tests (real clients against josef-broker)"
cargo build -p josef-broker
cargo build -p josef --example logging_proxy
export JOSEF_BROKER_BIN="$ROOT/target/debug/josef-broker"
export JOSEF_PROXY_BIN="$ROOT/target/debug/examples/logging_proxy"
.venv/bin/python -m pytest tests/e2e -v --timeout 600 -p no:cacheprovider -m "not cluster"

echo "== cluster tests (3 nodes per test: control plane, replication, crashes, pauses, partitions)"
# The deterministic CI selection of the cluster suite; the rest of it (disk faults, the soak) is run by hand, see docs/reliability.md.
.venv/bin/python -m pytest tests/e2e/test_cluster_basic.py tests/e2e/test_cluster_faults.py tests/e2e/test_cluster_min_isr.py \
  tests/e2e/test_cluster_rebalance.py tests/e2e/test_cluster_configs.py tests/e2e/test_cluster_admin.py tests/e2e/test_metrics.py tests/e2e/test_cluster_coordinators.py \
  tests/e2e/test_cluster_clock.py tests/e2e/test_cluster_delete_records.py tests/e2e/test_cluster_interbroker_security.py \
  tests/e2e/test_cluster_consumer_racks.py \
  "tests/e2e/test_cluster_txn.py::test_a_transaction_across_leaders_commits_aborts_and_survives_kill9_of_its_coordinator" \
  "tests/e2e/test_cluster_txn.py::test_transactions_groups_and_ctp_survive_kill9_of_their_coordinators" \
  "tests/e2e/test_acls.py::test_an_acl_created_through_one_broker_applies_on_every_broker" \
  "tests/e2e/test_quotas.py::test_a_quota_set_through_one_node_is_enforced_by_the_leader_on_another" \
  -v --timeout 600 -p no:cacheprovider -m cluster
