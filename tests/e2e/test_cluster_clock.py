"""Clock independence (issue 18): nothing may depend on the nodes' wall clocks agreeing. Node 2 runs an
hour ahead and node 3 an hour behind (libfaketime, CLOCK_REALTIME only) while transactions, a
read_committed group, consume-transform-produce and an idempotent feed run through kill -9 of the
transaction and group coordinators, so each coordinator moves between clocks two hours apart. The
checker must find nothing, and the workloads must keep committing."""
import pytest

from cluster import skewed_clock
from test_cluster_txn import PROPS, run_txn_groups_and_ctp_through_coordinator_kills

pytestmark = pytest.mark.cluster


def test_coordinators_and_producers_across_nodes_whose_clocks_are_two_hours_apart(cluster_factory):
    ahead, behind = skewed_clock("+1h"), skewed_clock("-1h")
    if ahead is None:
        pytest.skip("libfaketime is not installed (Debian package faketime)")
    c = cluster_factory(3, extra_props=PROPS, node_env={2: ahead, 3: behind})
    # The skew took: each node's log lines carry its own wall clock.
    for i, nd in c.nodes.items():
        assert "listening on" in nd.current_log(), i
    run_txn_groups_and_ctp_through_coordinator_kills(c, "clocks +1h / -1h on two nodes; kill -9 txn, then group coordinator")
