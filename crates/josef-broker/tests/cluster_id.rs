//! A node whose data dir names another cluster refuses to start, saying so (docs/cluster.md):
//! two one-node clusters are formed and stopped, one node's `meta.properties` is replaced by the
//! other cluster's, and that node, started again, exits non-zero within a bound with a message
//! naming both cluster ids. Processes of the built binary started by the test bed
//! (`josef-testbed`); stopped by PID.

use std::time::Duration;

use josef_testbed::{BrokerCommand, Cluster};

/// A one-node cluster (a combined node, node.id 1) of this package's binary, started and
/// answering, with the session timeout this check was written for.
fn one_node_cluster() -> Cluster {
    Cluster::builder()
        .command(BrokerCommand::new(env!("CARGO_BIN_EXE_josef-broker")))
        .timeouts([
            ("broker.session.timeout.ms", "3000"),
            ("broker.heartbeat.interval.ms", "500"),
        ])
        .combined(1)
        .start()
        .unwrap()
}

#[test]
fn a_data_dir_of_another_cluster_refuses_to_start() {
    let mut a = one_node_cluster();
    let mut b = one_node_cluster();
    for c in [&mut a, &mut b] {
        let status = c.node_mut(1).unwrap().stop_within(Duration::from_secs(30));
        assert!(
            status.is_ok(),
            "node stops on SIGTERM: {status:?}\n{}",
            c.logs(25)
        );
    }
    let (id_a, id_b) = (
        a.node(1).unwrap().cluster_id().expect("cluster A's id"),
        b.node(1).unwrap().cluster_id().expect("cluster B's id"),
    );
    assert_ne!(id_a, id_b, "two clusters formed with their own ids");

    // Node 1 of cluster A, its metadata log intact, now holds cluster B's meta.properties.
    let (dir_a, dir_b) = (a.node(1).unwrap().data_dir(), b.node(1).unwrap().data_dir());
    std::fs::copy(dir_b.join("meta.properties"), dir_a.join("meta.properties")).unwrap();
    let node = a.node_mut(1).unwrap();
    node.launch().unwrap();
    let status = node.wait_exit(Duration::from_secs(60));
    let log = node.current_log();
    let status = status.unwrap_or_else(|e| panic!("the node did not exit by itself: {e}\n{log}"));
    assert!(!status.success(), "exit status {status}\n{log}");
    let last = log
        .lines()
        .rfind(|l| l.contains("cannot start"))
        .unwrap_or_else(|| panic!("no `cannot start` line\n{log}"));
    eprintln!("refusal: {last}");
    assert!(
        last.contains(&id_a) && last.contains(&id_b) && last.contains("cluster"),
        "the refusal names both clusters: {last}"
    );
    // Refused without rewriting the dir's identity.
    assert_eq!(node.cluster_id(), Some(id_b));
    assert!(
        !log.contains("listening on"),
        "it never served clients\n{log}"
    );
}
