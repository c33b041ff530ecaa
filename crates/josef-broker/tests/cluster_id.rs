//! A node whose data dir names another cluster refuses to start, saying so (docs/cluster.md):
//! two one-node clusters are formed and stopped, one node's `meta.properties` is replaced by the
//! other cluster's, and that node, started again, exits non-zero within a bound with a message
//! naming both cluster ids. Processes of the built binary; stopped by PID.

mod common;

use std::path::Path;
use std::time::Duration;

use common::{combined, free_port, voters, Node, Nodes};

/// The `cluster.id` of the `meta.properties` in `dir`.
fn cluster_id(dir: &Path) -> String {
    let text = std::fs::read_to_string(dir.join("meta.properties")).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("cluster.id="))
        .unwrap_or_else(|| panic!("no cluster.id in {text}"))
        .trim()
        .to_string()
}

/// A one-node cluster (node.id 1) under `root`, started and answering.
fn one_node_cluster(root: &Path) -> Nodes {
    let (bport, cport) = (free_port(), free_port());
    let nodes = Nodes(vec![Node::spawn(
        root,
        1,
        &combined(&voters(&[cport]), bport, cport),
    )]);
    nodes.listening();
    nodes
}

#[test]
fn a_data_dir_of_another_cluster_refuses_to_start() {
    let (root_a, root_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut a = one_node_cluster(root_a.path());
    let mut b = one_node_cluster(root_b.path());
    for n in [&mut a.0[0], &mut b.0[0]] {
        let status = n.stop(Duration::from_secs(30));
        assert!(status.is_some(), "node stops on SIGTERM\n{}", n.log_tail());
    }
    let (dir_a, dir_b) = (a.0[0].data_dir(), b.0[0].data_dir());
    let (id_a, id_b) = (cluster_id(&dir_a), cluster_id(&dir_b));
    assert_ne!(id_a, id_b, "two clusters formed with their own ids");

    // Node 1 of cluster A, its metadata log intact, now holds cluster B's meta.properties.
    std::fs::copy(dir_b.join("meta.properties"), dir_a.join("meta.properties")).unwrap();
    let node = &mut a.0[0];
    node.restart();
    let status = node.wait_exit(Duration::from_secs(60));
    let log = node.stderr();
    let status = status.unwrap_or_else(|| panic!("the node did not exit within 60 s\n{log}"));
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
    assert_eq!(cluster_id(&dir_a), id_b);
    assert!(node.listening().is_none(), "it never served clients");
}
