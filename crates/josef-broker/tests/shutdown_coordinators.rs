//! SIGTERM of a broker whose coordinators have loaded their partitions: a loaded group shard or
//! transaction coordinator partition holds its `__consumer_offsets` / `__transaction_state`
//! partition, and a log still held at shutdown is only flushed, which leaves its whole log dir
//! unmarked. The broker must unload its coordinators before it closes the logs (Kafka's
//! shutdown order), exit 0 and leave `.kafka_cleanshutdown` in its log dir.
//!
//! One node of the built binary on a free port with its own data dir (josef-testbed); every
//! wait is on a condition, bounded.

use std::time::Duration;

use josef_protocol::messages::FindCoordinatorRequest;
use josef_protocol::ResponseBody;
use josef_testbed::{client, wait_until, BrokerCommand, Cluster};

const SETTLE: Duration = Duration::from_secs(30);
const POLL: Duration = Duration::from_millis(50);

#[test]
fn a_broker_with_loaded_coordinators_closes_its_logs_clean_on_sigterm() {
    let mut cluster = Cluster::builder()
        .command(BrokerCommand::new(env!("CARGO_BIN_EXE_josef-broker")))
        .single()
        .build()
        .unwrap();
    cluster.start().unwrap();
    let node = cluster.node(1).unwrap();
    let addr = node.client_addr().unwrap();
    let log_path = node.log_path();
    let marker = node.data_dir().join(".kafka_cleanshutdown");

    // FindCoordinator creates `__consumer_offsets`; the ticker then loads its shards.
    let find = FindCoordinatorRequest {
        key: "g".into(),
        key_type: 0,
        ..Default::default()
    };
    assert!(
        wait_until(SETTLE, POLL, || matches!(
            client::call(addr, 3, find.clone().into()),
            Ok(ResponseBody::FindCoordinator(r)) if r.error_code == 0
        )),
        "no group coordinator\n{}",
        cluster.logs(40)
    );
    // InitProducerId loads the transactional id's `__transaction_state` partition.
    assert!(
        wait_until(SETTLE, POLL, || client::init_producer_id(addr, "t", 60_000)
            .is_some_and(|(e, _, _)| e == 0)),
        "no producer id\n{}",
        cluster.logs(40)
    );
    let loaded = |what: &str| std::fs::read_to_string(&log_path).is_ok_and(|l| l.contains(what));
    assert!(
        wait_until(SETTLE, POLL, || loaded("loaded group coordinator shard")
            && loaded("loaded transaction coordinator partition")),
        "the coordinators never loaded\n{}",
        cluster.logs(40)
    );
    assert!(!marker.exists());

    let status = cluster
        .node_mut(1)
        .unwrap()
        .stop_within(Duration::from_secs(60))
        .expect("the broker exits on SIGTERM");
    let log = cluster.logs(60);
    assert!(status.success(), "exited {status}\n{log}");
    assert!(
        marker.exists(),
        "the log dir was closed without its clean-shutdown marker\n{log}"
    );
}
