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
    c.nodes()
        .filter_map(|n| Some((n.id(), n.client_addr()?)))
        .collect()
}

/// Each acknowledged value and the offset it was acknowledged at.
#[derive(Default)]
struct Acked(Vec<(String, i64)>);

impl Acked {
    /// Produces `value` alone with acks=all at `addr`; recorded if acknowledged. The error code,
    /// or None when no answer came.
    fn produce(&mut self, addr: SocketAddr, value: &str) -> Option<i16> {
        let r = client::produce(addr, TOPIC, 0, -1, ACK_TIMEOUT, &[value.as_bytes()]).ok()?;
        if r.error_code == 0 {
            self.0.push((value.to_string(), r.base_offset));
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

    /// Every acknowledged value is in `records` at its offset.
    fn check(&self, records: &[client::Record]) {
        let by_offset: BTreeMap<i64, String> = records
            .iter()
            .map(|r| {
                let v = r.value.as_deref().unwrap_or_default();
                (r.offset, String::from_utf8_lossy(v).into_owned())
            })
            .collect();
        // Named by the part before the padding, the first few only.
        let lost: Vec<(&str, i64)> = self
            .0
            .iter()
            .filter(|(v, o)| by_offset.get(o) != Some(v))
            .map(|(v, o)| (v.split('|').next().unwrap_or(v), *o))
            .collect();
        assert!(
            lost.is_empty(),
            "{} of {} acked records not read back at their offsets, first (value, offset): {:?}",
            lost.len(),
            self.0.len(),
            &lost[..lost.len().min(10)]
        );
    }
}

/// The partition as each of `nodes` sees it, if they all agree and `ok` holds.
fn agreed(
    addrs: &BTreeMap<i32, SocketAddr>,
    nodes: &[i32],
    ok: impl Fn(&PartitionState) -> bool,
) -> Option<PartitionState> {
    let views: Vec<PartitionState> = nodes
        .iter()
        .map(|n| client::partition(addrs[n], TOPIC, 0).ok().flatten())
        .collect::<Option<_>>()?;
    let first = views.first()?.clone();
    (views
        .iter()
        .all(|v| v.leader == first.leader && v.isr.len() == first.isr.len())
        && ok(&first))
    .then_some(first)
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
    assert_eq!(
        client::create_topic(addrs[&1], TOPIC, 1, 3, &[("min.insync.replicas", "2")]).unwrap(),
        0
    );
    let before = wait_for(WAIT, EVERY, || {
        agreed(&addrs, &all, |p| p.leader >= 0 && p.isr.len() == 3)
    })
    .unwrap_or_else(|| panic!("no leader with a full ISR\n{}", c.logs(20)));
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
    acked.check(&records);
    assert_eq!(acked.0.len(), 50, "exactly the 50 retried writes acked");
    eprintln!(
        "{} acked, {} read back; leader after heal {}",
        acked.0.len(),
        records.len(),
        healed.leader
    );
    let exits = c.stop_all().unwrap();
    assert!(exits.values().all(|s| s.success()), "{exits:?}");
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
    acked.check(&records);
    eprintln!(
        "{kind:?}: {} acked, {} read back",
        acked.0.len(),
        records.len()
    );
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
