"""Clock independence (issue 18): nothing may depend on the nodes' wall clocks agreeing. Node 2 runs an
hour ahead and node 3 an hour behind (libfaketime, CLOCK_REALTIME only) while transactions, a
read_committed group, consume-transform-produce and an idempotent feed run through kill -9 of the
transaction and group coordinators, so each coordinator moves between clocks two hours apart. The
checker must find nothing, and the workloads must keep committing."""
import re
import time
from datetime import datetime, timezone

import pytest

from cluster import skewed_clock
from test_cluster_txn import PROPS, run_txn_groups_and_ctp_through_coordinator_kills

pytestmark = pytest.mark.cluster


def test_coordinators_and_producers_across_nodes_whose_clocks_are_two_hours_apart(cluster_factory):
    ahead, behind = skewed_clock("+1h"), skewed_clock("-1h")
    if ahead is None:
        pytest.skip("libfaketime is not installed (Debian package faketime)")
    c = cluster_factory(3, extra_props=PROPS, node_env={2: ahead, 3: behind})
    # The skew took: each node's log lines carry its own wall clock (tracing's RFC 3339 stamps).
    for i, want_h in ((1, 0), (2, 1), (3, -1)):
        stamps = re.findall(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)", c.node(i).current_log(), re.M)
        assert stamps, f"node {i} logged no timestamp"
        logged = datetime.strptime(stamps[-1], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc).timestamp()
        skew_h = (logged - time.time()) / 3600
        assert abs(skew_h - want_h) < 0.25, f"node {i}'s clock is {skew_h:+.2f} h off, not {want_h:+d} h"
    run_txn_groups_and_ctp_through_coordinator_kills(c, "clocks +1h / -1h on two nodes; kill -9 txn, then group coordinator")
