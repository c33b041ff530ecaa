//! A node whose metadata log fails a write halts, as Kafka's broker does on a fault of the
//! metadata log: one that kept running with its quorum stopped stayed the active controller in
//! its own eyes, its peers waited seconds before electing another, and meanwhile no ISR could
//! shrink, so acks=all produces to healthy leaders stalled (docs/reliability.md, disk faults).
//! The fault here: the metadata log's directory is removed under a running one-node cluster,
//! so the quorum's next file replacement fails. Processes of the built binary, by the test bed.

use std::time::Duration;

use josef_protocol::messages::create_topics_request::CreatableTopic;
use josef_protocol::messages::CreateTopicsRequest;
use josef_testbed::{BrokerCommand, Cluster};

#[test]
fn a_node_whose_metadata_log_fails_a_write_halts() {
    let mut cluster = Cluster::builder()
        .command(BrokerCommand::new(env!("CARGO_BIN_EXE_josef-broker")))
        .combined(1)
        .start()
        .unwrap();
    let node = cluster.node_mut(1).unwrap();
    let metadata_log = node.data_dir().join("__cluster_metadata-0");
    assert!(metadata_log.is_dir(), "{}", metadata_log.display());
    std::fs::remove_dir_all(&metadata_log).unwrap();

    // A metadata write (the topic's records), retried until the node is gone: its answer, if
    // any, does not matter.
    let addr = node.client_addr().unwrap();
    let create = CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: "after-the-fault".into(),
            num_partitions: 1,
            replication_factor: 1,
            ..Default::default()
        }],
        timeout_ms: 2_000,
        ..Default::default()
    };
    let exited =
        josef_testbed::wait_until(Duration::from_secs(30), Duration::from_millis(100), || {
            if !node.is_running() {
                return true;
            }
            let _ = josef_testbed::client::call(addr, 7, create.clone().into());
            false
        });
    let log = node.current_log();
    assert!(
        exited,
        "the node still runs with its metadata log gone\n{log}"
    );
    let status = *node.exits().last().unwrap();
    assert_eq!(status.code(), Some(1), "{status}\n{log}");
    assert!(
        log.contains("the metadata quorum stopped; halting"),
        "{log}"
    );
}
