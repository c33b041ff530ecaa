//! Network and disk faults through josef-testbed's fault network and disk mounts, against the
//! built broker:
//! - a partition leader cut off from the other two nodes, both ways or only what it sends (its
//!   inter-broker and controller links dropped through the proxies), acks no acks=all write and
//!   loses its leadership to a leader the controller elects among the others, and every write
//!   acked with acks=all (before, during, after) is read back at its offset once the links heal;
//! - a single node whose log dir fills up (a small tmpfs) or turns read-only under it (an ext4
//!   image with an error raised) answers KAFKA_STORAGE_ERROR to a produce, stays up, and after
//!   kill -9, the disk back and a restart serves every record it acknowledged
//!   (tests/e2e/test_cluster_disk.py asks the same through librdkafka). Mounting needs root:
//!   without it the test says SKIPPED and why (JOSEF_TESTBED_REQUIRE_MOUNT=1 makes that a
//!   failure).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use josef_protocol::ErrorCode;
use josef_testbed::client::{self, PartitionState};
use josef_testbed::disk::{DiskKind, DiskMount};
use josef_testbed::faultnet::Way;
use josef_testbed::history::{self, Anomaly, History, Isolation, Report};
use josef_testbed::{wait_for, BrokerCommand, Cluster};

const WAIT: Duration = Duration::from_secs(60);
const EVERY: Duration = Duration::from_millis(100);
/// The broker's own bound on an acks=all produce.
const ACK_TIMEOUT: Duration = Duration::from_secs(3);
const TOPIC: &str = "t";

fn broker() -> BrokerCommand {
    BrokerCommand::new(env!("CARGO_BIN_EXE_josef-broker"))
}

fn addrs(c: &Cluster) -> BTreeMap<i32, SocketAddr> {
    c.client_addrs()
}

/// Every value sent to one partition and what became of it, in a [`History`] the test bed's
/// checker reads.
#[derive(Default)]
struct Acked(History, i32);

impl Acked {
    /// Produces `value` alone with acks=all at `addr`; recorded as sent, and as acknowledged at
    /// its offset if it was. The error code, or None when no answer came.
    fn produce(&mut self, addr: SocketAddr, value: &str) -> Option<i16> {
        if !self.0.sends().iter().any(|s| s.value == value.as_bytes()) {
            self.0.send(TOPIC, value.as_bytes(), "p", None).unwrap();
        }
        let p = self.1;
        let r = client::produce(addr, TOPIC, p, -1, ACK_TIMEOUT, &[value.as_bytes()]).ok()?;
        if r.error_code == 0 {
            self.0
                .ack(value.as_bytes(), p, Some(r.base_offset))
                .unwrap();
        }
        Some(r.error_code)
    }

    /// Produces `value` until acknowledged at the leader `leader` names, within [`WAIT`].
    fn produce_acked(&mut self, value: &str, leader: impl Fn() -> Option<SocketAddr>) {
        let ok = wait_for(WAIT, EVERY, || {
            (self.produce(leader()?, value) == Some(0)).then_some(())
        });
        assert!(ok.is_some(), "{value} not acknowledged within {WAIT:?}");
    }

    /// How many values were acknowledged.
    fn len(&self) -> usize {
        self.0.acked()
    }

    /// The checker on `records` (the partition read back): nothing acknowledged lost or moved,
    /// nothing out of order. A value read twice is only reported: these plain produces carry
    /// no producer id, so a retry of a write whose answer was lost may store it again, as
    /// with Kafka.
    fn check(&mut self, records: &[client::Record]) -> Report {
        self.0
            .read_records(Isolation::ReadUncommitted, TOPIC, self.1, records);
        let r = history::check(&self.0);
        let broker_anomalies = r
            .anomalies
            .iter()
            .filter(|(k, v)| **k != Anomaly::Duplicate && !v.is_empty())
            .count();
        assert_eq!(broker_anomalies, 0, "{r}");
        r
    }
}

/// Compares the replicas of `TOPIC`-`partition` in the nodes' data dirs (the cluster stopped):
/// no two differ in a batch both have.
fn replicas_agree(c: &Cluster, partition: i32) {
    let name = format!("{TOPIC}-{partition}");
    let logs: BTreeMap<i32, Vec<history::ReplicaBatch>> = c
        .nodes()
        .filter_map(|n| {
            let dir = find_dir(&n.data_dir(), &name)?;
            Some((n.id(), history::read_replica(&dir).unwrap()))
        })
        .collect();
    assert!(
        logs.len() >= 2,
        "replicas of {name} found: {:?}",
        logs.keys()
    );
    let mut r = Report::default();
    history::compare_replicas(&name, &logs, false, &mut r);
    assert!(r.ok(), "{r}");
}

/// `name` directly under `data` or one level below (a log dir inside the data dir).
fn find_dir(data: &std::path::Path, name: &str) -> Option<std::path::PathBuf> {
    let direct = data.join(name);
    if direct.is_dir() {
        return Some(direct);
    }
    std::fs::read_dir(data)
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.path().join(name))
        .find(|p| p.is_dir())
}

/// The partition as each of `nodes` sees it, if they all agree and `ok` holds.
fn agreed(
    addrs: &BTreeMap<i32, SocketAddr>,
    nodes: &[i32],
    ok: impl Fn(&PartitionState) -> bool,
) -> Option<PartitionState> {
    agreed_on(addrs, nodes, 0, ok)
}

/// [`agreed`] for `partition`.
fn agreed_on(
    addrs: &BTreeMap<i32, SocketAddr>,
    nodes: &[i32],
    partition: i32,
    ok: impl Fn(&PartitionState) -> bool,
) -> Option<PartitionState> {
    client::agreed_partition(addrs, nodes, TOPIC, partition, ok)
}

#[test]
fn a_leader_cut_off_both_ways_is_replaced_and_no_acked_write_is_lost() {
    leader_cut_off(Way::TwoWay);
}

/// One way: what the leader sends the others is dropped; it still hears them (their fetches
/// arrive, but no data goes back, so none of them gets past what it had: nothing to ack).
#[test]
fn a_leader_whose_bytes_to_the_others_are_dropped_is_replaced_and_no_acked_write_is_lost() {
    leader_cut_off(Way::OneWay);
}

/// Three nodes, min.insync.replicas=2, one partition: 20 acked writes, the leader cut off from
/// the other two (`way`), no acks=all write acked by it, a new leader of a higher epoch on the
/// other two, 20 acked writes there, heal, the old leader back in the ISR, 10 more; every acked
/// write read back at its offset.
fn leader_cut_off(way: Way) {
    let mut c = Cluster::builder()
        .command(broker())
        .combined(3)
        .faults(true)
        .property("min.insync.replicas", 2)
        .start()
        .unwrap();
    let addrs = addrs(&c);
    let all: Vec<i32> = addrs.keys().copied().collect();
    let before = client::create_in_sync_topic(&addrs, TOPIC, 2, WAIT)
        .unwrap_or_else(|e| panic!("{e}\n{}", c.logs(20)));
    let old = before.leader;
    let others: Vec<i32> = all.iter().copied().filter(|n| *n != old).collect();
    let mut acked = Acked::default();
    for i in 0..20 {
        acked.produce_acked(&format!("before-{i}"), || Some(addrs[&old]));
    }
    // The followers' fetches went through the leader's proxy, named by the node holding the
    // socket: the links the rules below act on are the ones replication uses.
    let net = c.net().unwrap().clone();
    let proxy = c.advertised_proxy(old).unwrap();
    for f in &others {
        assert!(
            proxy.stats(*f, old).delivered > 0,
            "no bytes from node {f} through leader {old}'s advertised proxy: {:?}",
            net.all_stats()
        );
    }

    net.isolate(old, others.iter().copied(), way);
    // Whatever the cut-off leader answers is recorded: were it to ack, the check would find it.
    for i in 0..3 {
        let code = acked.produce(addrs[&old], &format!("cut-off-{i}"));
        assert_ne!(code, Some(0), "the cut-off leader acked an acks=all write");
    }
    let after = wait_for(WAIT, EVERY, || {
        agreed(&addrs, &others, |p| {
            p.leader >= 0 && p.leader != old && p.leader_epoch > before.leader_epoch
        })
    })
    .unwrap_or_else(|| panic!("no new leader among {others:?}\n{}", c.logs(30)));
    eprintln!(
        "{way:?}: leader {old} (epoch {}) cut off; {} elected (epoch {}), isr {:?}",
        before.leader_epoch, after.leader, after.leader_epoch, after.isr
    );
    for i in 0..20 {
        acked.produce_acked(&format!("during-{i}"), || Some(addrs[&after.leader]));
    }

    net.heal();
    let healed = wait_for(WAIT, EVERY, || {
        agreed(&addrs, &all, |p| p.leader >= 0 && p.isr.len() == 3)
    })
    .unwrap_or_else(|| panic!("node {old} not back in the ISR after heal\n{}", c.logs(30)));
    let leader = || {
        let p = client::partition(addrs[&others[0]], TOPIC, 0).ok()??;
        addrs.get(&p.leader).copied()
    };
    for i in 0..10 {
        acked.produce_acked(&format!("after-{i}"), leader);
    }
    let records = wait_for(WAIT, EVERY, || {
        client::read_all(leader()?, TOPIC, 0, 100).ok()
    })
    .expect("the partition read back");
    let report = acked.check(&records);
    assert_eq!(acked.len(), 50, "exactly the 50 retried writes acked");
    eprintln!("{report}\nleader after heal {}", healed.leader);
    let exits = c.stop_all().unwrap();
    assert!(exits.values().all(|s| s.success()), "{exits:?}");
    replicas_agree(&c, 0);
}

/// Why disk faults cannot run here, or `None`; a reason is a failure when
/// `JOSEF_TESTBED_REQUIRE_MOUNT` is set (a CI that must run them).
fn skip_reason(kind: DiskKind) -> Option<String> {
    let why = DiskMount::unavailable(kind)?;
    assert!(
        std::env::var_os("JOSEF_TESTBED_REQUIRE_MOUNT").is_none(),
        "JOSEF_TESTBED_REQUIRE_MOUNT is set but a {kind:?} cannot be mounted: {why}"
    );
    Some(why)
}

/// A single node on a `kind` disk of `size_mb` MiB: 100 acked records, then `fault` on its disk
/// while it runs; a produce must then be refused KAFKA_STORAGE_ERROR (the records written
/// before the refusal may be acked) with the node still up. Then kill -9, `recover` the disk,
/// start again: it takes writes and every acked record is read back at its offset.
fn single_node_disk_fault(
    kind: DiskKind,
    size_mb: u64,
    fault: impl FnOnce(&DiskMount),
    recover: impl FnOnce(&DiskMount),
) {
    if let Some(why) = skip_reason(kind) {
        eprintln!("SKIPPED: cannot mount a {kind:?}: {why}");
        return;
    }
    let mut c = Cluster::builder()
        .command(broker())
        .single()
        .build()
        .unwrap();
    c.node_mut(1).unwrap().mount_disk(kind, size_mb).unwrap();
    c.start().unwrap();
    let addr = c.node(1).unwrap().client_addr().unwrap();
    assert_eq!(client::create_topic(addr, TOPIC, 1, 1, &[]).unwrap(), 0);
    let mut acked = Acked::default();
    let pad = "x".repeat(1000);
    for i in 0..100 {
        acked.produce_acked(&format!("before-{i}|{pad}"), || Some(addr));
    }

    fault(c.node(1).unwrap().disk().unwrap());
    let mut refused = None;
    for i in 0..2000 {
        let code = acked.produce(addr, &format!("faulty-{i}|{pad}"));
        if code != Some(0) {
            refused = code;
            break;
        }
    }
    assert_eq!(
        refused,
        Some(ErrorCode::KafkaStorageError.code()),
        "a produce to a {kind:?} disk with a fault\n{}",
        c.logs(20)
    );
    let node = c.node_mut(1).unwrap();
    assert!(
        node.is_running(),
        "the broker died of the disk fault\n{}",
        node.log_tail(30)
    );

    node.kill9().unwrap();
    recover(node.disk().unwrap());
    node.start().unwrap();
    for i in 0..20 {
        acked.produce_acked(&format!("after-{i}|{pad}"), || Some(addr));
    }
    let records = client::read_all(addr, TOPIC, 0, 100).unwrap();
    let report = acked.check(&records);
    eprintln!("{kind:?}: {report}");
    let exits = c.stop_all().unwrap();
    assert!(exits.values().all(|s| s.success()), "{exits:?}");
}

#[test]
fn a_full_disk_answers_kafka_storage_error_and_loses_no_acked_record() {
    single_node_disk_fault(
        DiskKind::Tmpfs,
        24,
        |d| {
            d.fill(0).unwrap();
        },
        |d| d.unfill().unwrap(),
    );
}

#[test]
fn a_disk_gone_read_only_answers_kafka_storage_error_and_loses_no_acked_record() {
    single_node_disk_fault(
        DiskKind::Ext4,
        24,
        |d| {
            // What the broker acked but the kernel had not written back is lost with the disk,
            // as on a power cut (acks=all promises replication, not fsync): sync first, so the
            // check is the broker's.
            let synced = std::process::Command::new("sync").status();
            assert!(synced.is_ok_and(|s| s.success()), "sync(1)");
            d.make_read_only().unwrap();
        },
        |d| d.restore().unwrap(),
    );
}

/// Two nodes' disks fail one after the other under one partition: node 2 (a tmpfs) fills up
/// while it follows, then node 3 (an ext4 image), the leader, turns read-only; both killed, their
/// disks back (space freed; fsck), restarted. Node 3's disk loses what the kernel had not written
/// back (no sync), so the records acked while node 2 was full may live on node 1 alone, which must
/// lead and bring the others back. Every acked record is read back at its offset, and the three
/// replicas agree batch for batch.
#[test]
fn a_full_follower_then_a_read_only_leader_lose_no_acked_record() {
    for kind in [DiskKind::Tmpfs, DiskKind::Ext4] {
        if let Some(why) = skip_reason(kind) {
            eprintln!("SKIPPED: cannot mount a {kind:?}: {why}");
            return;
        }
    }
    let mut c = Cluster::builder()
        .command(broker())
        .combined(3)
        .property("min.insync.replicas", 2)
        .build()
        .unwrap();
    c.node_mut(2)
        .unwrap()
        .mount_disk(DiskKind::Tmpfs, 64)
        .unwrap();
    c.node_mut(3)
        .unwrap()
        .mount_disk(DiskKind::Ext4, 64)
        .unwrap();
    c.start().unwrap();
    let addrs = addrs(&c);
    let all: Vec<i32> = addrs.keys().copied().collect();
    assert_eq!(
        client::create_topic(addrs[&1], TOPIC, 3, 3, &[("min.insync.replicas", "2")]).unwrap(),
        0
    );
    // Three partitions, each led first by another node: the one node 3 leads.
    let partition = wait_for(WAIT, EVERY, || {
        (0..3)
            .find(|&p| agreed_on(&addrs, &all, p, |s| s.leader == 3 && s.isr.len() == 3).is_some())
    })
    .unwrap_or_else(|| panic!("no partition led by node 3 with a full ISR\n{}", c.logs(20)));
    let mut acked = Acked(History::new(), partition);
    let pad = "x".repeat(1000);
    // The partition's leader as the first node that names one sees it.
    let leader = || {
        let s = (1..=3).find_map(|n| {
            client::partition(addrs[&n], TOPIC, partition)
                .ok()
                .flatten()
                .filter(|s| s.leader >= 0)
        })?;
        addrs.get(&s.leader).copied()
    };
    for i in 0..50 {
        acked.produce_acked(&format!("before-{i}|{pad}"), || Some(addrs[&3]));
    }

    // ENOSPC on follower 2: it stops appending, leaves the ISR by lag; the others go on.
    c.node(2).unwrap().disk().unwrap().fill(0).unwrap();
    for i in 0..50 {
        acked.produce_acked(&format!("follower-full-{i}|{pad}"), || Some(addrs[&3]));
    }
    // Then the leader's disk turns read-only: it refuses the next writes with
    // KAFKA_STORAGE_ERROR, or halts when its metadata log (same disk) fails a write first.
    c.node(3).unwrap().disk().unwrap().make_read_only().unwrap();
    let mut i = 0;
    let refused = wait_for(WAIT, EVERY, || {
        i += 1;
        match acked.produce(addrs[&3], &format!("leader-ro-{i}|{pad}")) {
            Some(0) => None,
            Some(code) => Some(Some(code)),
            None => (!c.node_mut(3).unwrap().is_running()).then_some(None),
        }
    });
    assert!(
        refused == Some(None) || refused == Some(Some(ErrorCode::KafkaStorageError.code())),
        "a produce to the leader on a read-only disk: {refused:?}\n{}",
        c.logs(20)
    );

    // Both stopped (kill -9 if the fault left them running); space back on node 2, fsck on
    // node 3; both restarted.
    for n in [3, 2] {
        let node = c.node_mut(n).unwrap();
        if node.is_running() {
            node.kill9().unwrap();
        }
    }
    c.node(2).unwrap().disk().unwrap().unfill().unwrap();
    c.node(3).unwrap().disk().unwrap().restore().unwrap();
    for n in [2, 3] {
        c.node_mut(n).unwrap().launch().unwrap();
    }
    for n in [2, 3] {
        c.node_mut(n).unwrap().wait_ready(WAIT).unwrap();
    }
    let healed = wait_for(WAIT, EVERY, || {
        agreed_on(&addrs, &all, partition, |s| {
            s.leader >= 0 && s.isr.len() == 3
        })
    })
    .unwrap_or_else(|| panic!("no full ISR after the restarts\n{}", c.logs(30)));
    for i in 0..20 {
        acked.produce_acked(&format!("after-{i}|{pad}"), leader);
    }
    let records = wait_for(WAIT, EVERY, || {
        client::read_all(leader()?, TOPIC, partition, 100).ok()
    })
    .expect("the partition read back");
    let report = acked.check(&records);
    eprintln!("{report}\nleader after the restarts {}", healed.leader);
    assert!(acked.len() >= 120, "{report}");
    let exits = c.stop_all().unwrap();
    assert!(exits.values().all(|s| s.success()), "{exits:?}");
    replicas_agree(&c, partition);
}
