//! An acks=all produce after the only follower of a partition stopped: once the ISR has shrunk
//! to the leader alone (min.insync.replicas 1) the leader must acknowledge it, and its high
//! watermark must cover the batch. A stopped follower that still counted as caught up in the
//! leader's high-watermark computation would hold every acks=all produce until it timed out
//! (REQUEST_TIMED_OUT), although Metadata already showed the follower out of the ISR: so it did
//! before the broker told its leader partitions which replicas are fenced or shutting down
//! (measured at 4a677ed: the produce answered REQUEST_TIMED_OUT after 10.0 s in both cases).
//! With that fix reverted, SIGTERM at RF 2 fails every time; kill -9 at RF 2 only when the
//! session timeout fences the follower before its lag expires (one of two runs: ISR [1] at
//! 1.8 s failed, at 6.3 s passed); RF 3 passes either way (the third replica's fetches
//! recompute the HW once the lag expires: acked after 3.0 s without the fix, 1.5 ms with it;
//! times are printed, not asserted).
//! - SIGTERM: a controlled shutdown takes the follower out of the ISR at once.
//! - kill -9: the follower is out after `replica.lag.time.max.ms` or when its broker session
//!   times out (the test bed lowers them to 3000 and 2000 ms).
//!
//! Three combined nodes of the built binary (josef-testbed); every wait is on a condition,
//! bounded. The times printed are for the record, not asserted.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use josef_testbed::{client, wait_for, wait_until, BrokerCommand, Cluster};

const SETTLE: Duration = Duration::from_secs(60);
const POLL: Duration = Duration::from_millis(50);
/// The broker's wait for the ISR on one acks=all produce: what the report's produce used.
const PRODUCE_TIMEOUT: Duration = Duration::from_secs(10);
const TOPIC: &str = "acks-all";

/// How the follower stops.
#[derive(Clone, Copy, Debug)]
enum Stop {
    Sigterm,
    Kill9,
}

fn isr(addr: SocketAddr) -> Option<client::PartitionState> {
    client::partition(addr, TOPIC, 0)
        .ok()
        .flatten()
        .filter(|p| p.leader >= 0)
}

/// The leader's high watermark, as a consumer's Fetch from 0 answers it.
fn high_watermark(addr: SocketAddr) -> Option<i64> {
    client::fetch(addr, TOPIC, 0, 0, 1024)
        .ok()
        .filter(|f| f.error_code == 0)
        .map(|f| f.high_watermark)
}

/// `replication_factor` 2 (leader and the stopped follower) or 3 (and an in-sync third replica,
/// whose fetches recompute the HW: there the stopped follower held it until its lag expired).
fn run(stop: Stop, replication_factor: usize) {
    let mut cluster = Cluster::builder()
        .command(BrokerCommand::new(env!("CARGO_BIN_EXE_josef-broker")))
        .combined(3)
        .start()
        .unwrap();
    let ids: Vec<i32> = cluster.nodes().map(|n| n.id()).collect();
    let (leader, follower) = (ids[0], ids[1]);
    let replicas = &ids[..replication_factor];
    let shrunk_isr: Vec<i32> = replicas
        .iter()
        .copied()
        .filter(|&r| r != follower)
        .collect();
    let addr = |c: &Cluster, id: i32| c.node(id).unwrap().client_addr().unwrap();
    let l = addr(&cluster, leader);
    assert!(
        wait_until(SETTLE, POLL, || client::create_topic_assigned(
            l, TOPIC, replicas
        )
        .is_ok_and(|c| c == 0 || c == 36)),
        "create\n{}",
        cluster.logs(40)
    );
    wait_for(SETTLE, POLL, || {
        isr(l).filter(|p| p.leader == leader && p.isr.len() == replication_factor)
    })
    .unwrap_or_else(|| panic!("topic not fully replicated\n{}", cluster.logs(40)));
    let values: [&[u8]; 1] = [b"before"];
    let first = client::produce(l, TOPIC, 0, -1, PRODUCE_TIMEOUT, &values).unwrap();
    assert_eq!(first.error_code, 0, "acks=all with both in sync: {first:?}");

    let stopped = Instant::now();
    match stop {
        Stop::Sigterm => {
            cluster.node_mut(follower).unwrap().stop().unwrap();
        }
        Stop::Kill9 => {
            cluster.node_mut(follower).unwrap().kill9().unwrap();
        }
    }
    // The produce the report sent: once Metadata shows the follower out of the ISR.
    let shrunk = wait_for(SETTLE, POLL, || {
        isr(l).filter(|p| p.leader == leader && p.isr == shrunk_isr)
    });
    let shrunk_at = stopped.elapsed();
    assert!(
        shrunk.is_some(),
        "{stop:?}: {follower} never left the ISR\n{}",
        cluster.logs(60)
    );
    // One produce, not retried: a retry appends again, and that append recomputes the HW once
    // the stopped follower's lag has expired, which hid the bug (the first produce timed out
    // after 10 s with REQUEST_TIMED_OUT, the retry was acknowledged at once).
    let values: [&[u8]; 1] = [b"after"];
    let sent = Instant::now();
    let p = client::produce(l, TOPIC, 0, -1, PRODUCE_TIMEOUT, &values);
    let took = sent.elapsed();
    eprintln!(
        "{stop:?} RF {replication_factor}: ISR {shrunk_isr:?} in Metadata {shrunk_at:?} after the stop; acks=all answered \
         in {took:?}: {p:?}"
    );
    let acked = match p {
        Ok(p) if p.error_code == 0 => p,
        other => panic!(
            "{stop:?} RF {replication_factor}: acks=all produce with the ISR {shrunk_isr:?} not acknowledged: {other:?} \
             after {took:?}\n{}",
            cluster.logs(60)
        ),
    };
    // The high watermark covers the acknowledged batch.
    let hw = wait_for(SETTLE, POLL, || high_watermark(l));
    assert_eq!(
        hw,
        Some(acked.base_offset + 1),
        "{stop:?}: high watermark after the ack at {}",
        acked.base_offset
    );
    cluster.stop_all().unwrap();
}

#[test]
fn acks_all_is_acknowledged_after_a_sigterm_follower_leaves_the_isr() {
    run(Stop::Sigterm, 2);
}

#[test]
fn acks_all_is_acknowledged_after_a_killed_follower_leaves_the_isr() {
    run(Stop::Kill9, 2);
}

#[test]
fn acks_all_is_acknowledged_after_a_sigterm_follower_leaves_a_three_replica_isr() {
    run(Stop::Sigterm, 3);
}
