//! Issue #18, bug 4 of docs/reliability.md: a partition leader killed (-9) whose disk lost the
//! partition's data it had not written back (what an aborted ext4 journal leaves: the segment's
//! bytes gone, the checkpoints there), restarted *within its old broker session*, before the
//! controller fenced it. Its metadata image still names it leader with the full ISR; the
//! followers, which had every acknowledged record, must not adopt its empty log.
//!
//! Kafka's rules that keep them: a broker re-registering with a new incarnation is taken out of
//! every ISR (and loses the leaderships it held) before its registration (its
//! `ClusterControlManager.registerBroker` / `ReplicationControlManager.handleBrokerUncleanShutdown`),
//! and a restarted broker serves requests only once its metadata caught up past that
//! registration (`BrokerServer` waits for `initialCatchUpFuture`). With either missing, the
//! restarted node answers its followers' fetches as the leader of the old epoch with a log of
//! length 0: OFFSET_OUT_OF_RANGE, they ask its log end (0) and truncate to it, and every
//! acknowledged record of the partition is gone from every replica.
//!
//! Started by the test bed; every wait is on a condition, bounded; dropping the cluster kills
//! its processes by PID.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use josef_testbed::client::{self, PartitionState};
use josef_testbed::history::{self, Anomaly, History, Isolation};
use josef_testbed::{wait_for, BrokerCommand, Cluster};

const WAIT: Duration = Duration::from_secs(60);
const EVERY: Duration = Duration::from_millis(100);
const ACK_TIMEOUT: Duration = Duration::from_secs(3);
const TOPIC: &str = "lost";
/// Long enough that the killed leader is back well before the controller would fence it.
const SESSION_MS: u64 = 8000;

fn broker() -> BrokerCommand {
    BrokerCommand::new(env!("CARGO_BIN_EXE_josef-broker"))
}

fn addrs(c: &Cluster) -> BTreeMap<i32, SocketAddr> {
    c.client_addrs()
}

/// The partition as every node in `nodes` sees it, when they agree and `ok` holds.
fn agreed(
    addrs: &BTreeMap<i32, SocketAddr>,
    nodes: &[i32],
    ok: impl Fn(&PartitionState) -> bool,
) -> Option<PartitionState> {
    client::agreed_partition(addrs, nodes, TOPIC, 0, ok)
}

/// Produces `value` with acks=all at whatever `leader` names until acknowledged; its offset.
fn produce_acked(value: &str, leader: impl Fn() -> Option<SocketAddr>) -> i64 {
    wait_for(WAIT, EVERY, || {
        let r = client::produce(leader()?, TOPIC, 0, -1, ACK_TIMEOUT, &[value.as_bytes()]).ok()?;
        (r.error_code == 0).then_some(r.base_offset)
    })
    .unwrap_or_else(|| panic!("{value} not acknowledged within {WAIT:?}"))
}

/// The partition's directory under a node's data dir.
fn partition_dir(data: &Path) -> PathBuf {
    let name = format!("{TOPIC}-0");
    let direct = data.join(&name);
    if direct.is_dir() {
        return direct;
    }
    std::fs::read_dir(data)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path().join(&name))
        .find(|p| p.is_dir())
        .unwrap_or_else(|| panic!("no {name} under {}", data.display()))
}

/// Empties every segment file of `dir`: the bytes an aborted journal never wrote back.
fn lose_segment_data(dir: &Path) -> u64 {
    let mut lost = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "log") {
            let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
            lost += f.metadata().unwrap().len();
            f.set_len(0).unwrap();
            f.sync_all().unwrap();
        }
    }
    lost
}

#[test]
fn a_leader_restarted_within_its_session_with_its_data_lost_loses_no_acked_record() {
    let mut c = Cluster::builder()
        .command(broker())
        .combined(3)
        .property("broker.session.timeout.ms", SESSION_MS)
        // A controlled shutdown attempt waits up to a session: one, so the nodes stopping
        // together at the end exit within the test bed's bound.
        .property("controlled.shutdown.max.retries", 1)
        .property("min.insync.replicas", 2)
        .start()
        .unwrap();
    let addrs = addrs(&c);
    let all: Vec<i32> = addrs.keys().copied().collect();
    let before = client::create_in_sync_topic(&addrs, TOPIC, 2, WAIT)
        .unwrap_or_else(|e| panic!("{e}\n{}", c.logs(20)));
    let old = before.leader;
    let mut h = History::new();
    for i in 0..30 {
        let v = format!("before-{i}");
        h.send(TOPIC, v.as_bytes(), "p", None).unwrap();
        let o = produce_acked(&v, || Some(addrs[&old]));
        h.ack(v.as_bytes(), 0, Some(o)).unwrap();
    }
    // Every follower has them: the ack waited for the full ISR's fetches past them.
    let dir = partition_dir(&c.node(old).unwrap().data_dir());
    c.node_mut(old).unwrap().kill9().unwrap();
    let lost = lose_segment_data(&dir);
    assert!(lost > 0, "no segment data in {}", dir.display());
    // Back at once: its old session (SESSION_MS) has not expired, nothing was re-elected.
    let node = c.node_mut(old).unwrap();
    node.launch().unwrap();
    node.wait_ready(WAIT)
        .unwrap_or_else(|e| panic!("node {old} not ready after restart: {e}"));

    let healed = wait_for(WAIT, EVERY, || {
        agreed(&addrs, &all, |p| p.leader >= 0 && p.isr.len() == 3)
    })
    .unwrap_or_else(|| panic!("no full ISR after node {old}'s restart\n{}", c.logs(30)));
    eprintln!(
        "leader {old} at epoch {} restarted with {lost} bytes of its log lost; now leader {} at epoch {}",
        before.leader_epoch, healed.leader, healed.leader_epoch
    );
    let leader = || {
        let p = client::partition(addrs[&old], TOPIC, 0).ok()??;
        addrs.get(&p.leader).copied()
    };
    for i in 0..10 {
        let v = format!("after-{i}");
        h.send(TOPIC, v.as_bytes(), "p", None).unwrap();
        let o = produce_acked(&v, leader);
        h.ack(v.as_bytes(), 0, Some(o)).unwrap();
    }
    let records = wait_for(WAIT, EVERY, || {
        client::read_all(leader()?, TOPIC, 0, 100).ok()
    })
    .expect("the partition read back");
    h.read_records(Isolation::ReadUncommitted, TOPIC, 0, &records);
    let report = history::check(&h);
    // A duplicate is only reported: these produces carry no producer id, so a retry of a write
    // whose answer was lost may store it twice, as with Kafka.
    let broker_anomalies = report
        .anomalies
        .iter()
        .filter(|(k, v)| **k != Anomaly::Duplicate && !v.is_empty())
        .count();
    assert_eq!(broker_anomalies, 0, "{report}\n{}", c.logs(40));
    eprintln!("{report}");
    let exits = c.stop_all().unwrap();
    assert!(exits.values().all(|s| s.success()), "{exits:?}");
}
