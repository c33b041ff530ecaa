//! Followers fetch through incremental fetch sessions (KIP-227, issue #22): once a follower's
//! first, full fetch has set up its session, its fetches of idle partitions list no partition at
//! all (before, every follower fetch listed every partition it follows, so each one cost
//! O(partitions) on both brokers). The leader must still treat those followers as fetching every
//! partition of their session: across many `replica.lag.time.max.ms` windows of idleness no
//! follower leaves the ISR, and the first acks=all produces afterwards are acknowledged with the
//! HW covering them.
//!
//! Counted on each node's `/metrics`: `josef_server_replica_fetch_requests_total` and
//! `josef_server_replica_fetch_partitions_total` by kind (full, incremental), and Kafka's
//! `kafka_server_replicamanager_isrshrinks_total`. Three combined nodes of the built binary
//! (josef-testbed), `replica.lag.time.max.ms` lowered to 1000 ms; every wait is on a condition,
//! bounded.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use josef_testbed::{client, free_ports, wait_for, wait_until, BrokerCommand, Cluster};

const SETTLE: Duration = Duration::from_secs(60);
const POLL: Duration = Duration::from_millis(100);
const PRODUCE_TIMEOUT: Duration = Duration::from_secs(10);
const LAG_MS: u64 = 1000;
/// One topic of one partition per (leader, follower order): every node leads two.
const TOPICS: usize = 6;
/// Idle follower fetches each node must send before the counts are read: with
/// `replica.fetch.wait.max.ms` 500 and two fetchers per node, about ten lag windows.
const IDLE_FETCHES: u64 = 40;

/// One node's `/metrics`, summed per series name and `kind` label.
fn scrape(port: u16) -> Option<BTreeMap<String, f64>> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    s.write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n")
        .ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let mut out = BTreeMap::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let Some((series, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let Ok(value) = value.parse::<f64>() else {
            continue;
        };
        let name = series.split('{').next().unwrap_or(series);
        let kind = series
            .split("kind=\"")
            .nth(1)
            .and_then(|r| r.split('"').next());
        let key = match kind {
            Some(k) => format!("{name}:{k}"),
            None => name.to_string(),
        };
        *out.entry(key).or_insert(0.0) += value;
    }
    Some(out)
}

fn get(m: &BTreeMap<String, f64>, key: &str) -> u64 {
    m.get(key).copied().unwrap_or(0.0) as u64
}

const REQ_FULL: &str = "josef_server_replica_fetch_requests_total:full";
const REQ_INCR: &str = "josef_server_replica_fetch_requests_total:incremental";
const PARTS_INCR: &str = "josef_server_replica_fetch_partitions_total:incremental";
const SHRINKS: &str = "kafka_server_replicamanager_isrshrinks_total";

fn topic(i: usize) -> String {
    format!("sessions-{i}")
}

#[test]
fn idle_followers_list_no_partitions_and_stay_in_the_isr() {
    let ports = free_ports(3).unwrap();
    let mut builder = Cluster::builder()
        .command(BrokerCommand::new(env!("CARGO_BIN_EXE_josef-broker")))
        .combined(3)
        .timeouts([
            ("broker.session.timeout.ms", "2000".to_string()),
            ("broker.heartbeat.interval.ms", "500".to_string()),
            ("replica.lag.time.max.ms", LAG_MS.to_string()),
            ("controller.quorum.election.timeout.ms", "1000".to_string()),
            ("leader.imbalance.check.interval.seconds", "5".to_string()),
            ("controlled.shutdown.retry.backoff.ms", "500".to_string()),
        ]);
    for (i, port) in ports.iter().enumerate() {
        builder = builder.node_property(
            i as i32 + 1,
            "prometheus.listener",
            format!("127.0.0.1:{port}"),
        );
    }
    let mut cluster = builder.start().unwrap();
    let ids: Vec<i32> = cluster.nodes().map(|n| n.id()).collect();
    assert_eq!(ids, [1, 2, 3]);
    let addr = |id: i32| -> SocketAddr { cluster.node(id).unwrap().client_addr().unwrap() };
    let port = |id: i32| ports[(id - 1) as usize];
    let orders: [[i32; 3]; 6] = [
        [1, 2, 3],
        [1, 3, 2],
        [2, 3, 1],
        [2, 1, 3],
        [3, 1, 2],
        [3, 2, 1],
    ];
    for (i, replicas) in orders.iter().enumerate().take(TOPICS) {
        assert!(
            wait_until(SETTLE, POLL, || client::create_topic_assigned(
                addr(1),
                &topic(i),
                replicas
            )
            .is_ok_and(|c| c == 0 || c == 36)),
            "create {}\n{}",
            topic(i),
            cluster.logs(40)
        );
    }
    let in_sync = |i: usize| {
        client::partition(addr(1), &topic(i), 0)
            .ok()
            .flatten()
            .filter(|p| p.leader == orders[i][0] && p.isr.len() == 3)
    };
    for i in 0..TOPICS {
        wait_for(SETTLE, POLL, || in_sync(i))
            .unwrap_or_else(|| panic!("{} not in sync\n{}", topic(i), cluster.logs(40)));
    }
    // Data everywhere, acknowledged by the whole ISR.
    for (i, replicas) in orders.iter().enumerate().take(TOPICS) {
        let values: [&[u8]; 1] = [b"before"];
        let p = client::produce(
            addr(replicas[0]),
            &topic(i),
            0,
            -1,
            PRODUCE_TIMEOUT,
            &values,
        )
        .unwrap();
        assert_eq!(p.error_code, 0, "{}: {p:?}", topic(i));
    }

    // Quiet: the followers have fetched the data and their fetches list nothing any more (two
    // idle fetches per node in a row).
    let quiet = |id: i32| {
        let mut last: Option<(u64, u64)> = None;
        let mut idle = 0;
        wait_until(SETTLE, POLL, || {
            let Some(m) = scrape(port(id)) else {
                return false;
            };
            let now = (get(&m, REQ_INCR), get(&m, PARTS_INCR));
            if let Some((req, parts)) = last {
                if now.0 > req && now.1 == parts {
                    idle += 1;
                } else if now.1 != parts {
                    idle = 0;
                }
            }
            last = Some(now);
            idle >= 2
        })
    };
    for id in [1, 2, 3] {
        assert!(
            quiet(id),
            "node {id} never went quiet\n{}",
            cluster.logs(40)
        );
    }
    let scrape_all = || -> BTreeMap<i32, BTreeMap<String, f64>> {
        [1, 2, 3]
            .into_iter()
            .map(|id| (id, scrape(port(id)).expect("metrics")))
            .collect()
    };
    let before = scrape_all();
    for id in [1, 2, 3] {
        // Sessions are in use: one full fetch per fetcher at the start, incremental ones since.
        assert!(
            get(&before[&id], REQ_FULL) >= 2,
            "node {id}: {:?}",
            before[&id]
        );
        assert!(
            get(&before[&id], REQ_INCR) > 0,
            "node {id}: {:?}",
            before[&id]
        );
    }

    // Idle for many lag windows: count fetches, not time.
    let mut min_isr = 3;
    for id in [1, 2, 3] {
        let target = get(&before[&id], REQ_INCR) + IDLE_FETCHES;
        let done = wait_until(Duration::from_secs(120), POLL, || {
            for i in 0..TOPICS {
                if let Some(p) = client::partition(addr(1), &topic(i), 0).ok().flatten() {
                    min_isr = min_isr.min(p.isr.len());
                }
            }
            scrape(port(id)).is_some_and(|m| get(&m, REQ_INCR) >= target)
        });
        assert!(
            done,
            "node {id}: too few idle fetches\n{}",
            cluster.logs(40)
        );
    }
    let after = scrape_all();
    for id in [1, 2, 3] {
        let (b, a) = (&before[&id], &after[&id]);
        let fetches = get(a, REQ_INCR) - get(b, REQ_INCR);
        eprintln!(
            "node {id}: {fetches} idle incremental fetches, {} partitions listed, {} full fetches, \
             {} ISR shrinks",
            get(a, PARTS_INCR) - get(b, PARTS_INCR),
            get(a, REQ_FULL) - get(b, REQ_FULL),
            get(a, SHRINKS) - get(b, SHRINKS)
        );
        assert!(fetches >= IDLE_FETCHES);
        assert_eq!(
            get(a, PARTS_INCR),
            get(b, PARTS_INCR),
            "node {id}: idle follower fetches listed partitions"
        );
        assert_eq!(
            get(a, REQ_FULL),
            get(b, REQ_FULL),
            "node {id}: a session was reset"
        );
        assert_eq!(
            get(a, SHRINKS),
            get(b, SHRINKS),
            "node {id}: the ISR shrank while idle"
        );
    }
    assert_eq!(min_isr, 3, "an idle, caught-up follower left the ISR");

    // The first produces after the idle period: acknowledged by the full ISR, HW past them.
    for (i, replicas) in orders.iter().enumerate().take(TOPICS) {
        let values: [&[u8]; 1] = [b"after"];
        let leader = addr(replicas[0]);
        let p = client::produce(leader, &topic(i), 0, -1, PRODUCE_TIMEOUT, &values).unwrap();
        assert_eq!(p.error_code, 0, "{}: {p:?}", topic(i));
        let hw = client::fetch(leader, &topic(i), 0, 0, 1024)
            .ok()
            .map(|f| f.high_watermark);
        assert_eq!(hw, Some(p.base_offset + 1), "{}", topic(i));
    }
    for i in 0..TOPICS {
        let p = in_sync(i);
        assert!(p.is_some(), "{} left the ISR after the produce", topic(i));
    }
    let end = scrape_all();
    for id in [1, 2, 3] {
        assert_eq!(
            get(&end[&id], SHRINKS),
            get(&before[&id], SHRINKS),
            "node {id}: the ISR shrank at the first produce after the idle period"
        );
        // The new data reached the followers through incremental fetches.
        assert!(get(&end[&id], PARTS_INCR) > get(&after[&id], PARTS_INCR));
    }
    cluster.stop_all().unwrap();
}
