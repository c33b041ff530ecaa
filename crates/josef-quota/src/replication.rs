//! Replication quotas (KIP-73): the throttled replica lists of a topic and the leader / follower
//! byte rate (Kafka's `ReplicationQuotaManager`).

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::str::FromStr;

use crate::config::QuotaWindow;
use crate::error::ThrottledReplicasError;
use crate::rate::{RateKind, SampledRate};

/// Topic config `leader.replication.throttled.replicas`.
pub const LEADER_REPLICATION_THROTTLED_REPLICAS_CONFIG: &str =
    "leader.replication.throttled.replicas";
/// Topic config `follower.replication.throttled.replicas`.
pub const FOLLOWER_REPLICATION_THROTTLED_REPLICAS_CONFIG: &str =
    "follower.replication.throttled.replicas";
/// Broker config `leader.replication.throttled.rate` (bytes/s, default unlimited).
pub const LEADER_REPLICATION_THROTTLED_RATE_CONFIG: &str = "leader.replication.throttled.rate";
/// Broker config `follower.replication.throttled.rate` (bytes/s, default unlimited).
pub const FOLLOWER_REPLICATION_THROTTLED_RATE_CONFIG: &str = "follower.replication.throttled.rate";

/// A parsed `*.replication.throttled.replicas` value: `*`, or `partition:broker` pairs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ThrottledReplicas {
    /// No replica (the empty string).
    #[default]
    None,
    /// Every replica of the topic (`*`).
    All,
    /// The listed (partition, broker) replicas.
    Replicas(BTreeSet<(i32, i32)>),
}

impl ThrottledReplicas {
    /// Parses a config value as Kafka's `ThrottledReplicaListValidator` accepts it: entries
    /// separated by `,`, each trimmed and either empty or `digits:digits`; or the entries together
    /// spell `*`.
    pub fn parse(value: &str) -> Result<ThrottledReplicas, ThrottledReplicasError> {
        let entries: Vec<&str> = value.split(',').map(str::trim).collect();
        if entries.concat() == "*" {
            return Ok(ThrottledReplicas::All);
        }
        let mut replicas = BTreeSet::new();
        for (index, entry) in entries.iter().enumerate() {
            if entry.is_empty() {
                continue;
            }
            let bad = || ThrottledReplicasError::BadEntry {
                index,
                entry: truncate(entry),
            };
            let (p, b) = entry.split_once(':').ok_or_else(bad)?;
            let number = |s: &str| -> Result<i32, ThrottledReplicasError> {
                if s.is_empty() || !s.bytes().all(|c| c.is_ascii_digit()) {
                    return Err(bad());
                }
                s.parse::<i32>()
                    .map_err(|_| ThrottledReplicasError::OutOfRange { index })
            };
            replicas.insert((number(p)?, number(b)?));
        }
        if replicas.is_empty() {
            Ok(ThrottledReplicas::None)
        } else {
            Ok(ThrottledReplicas::Replicas(replicas))
        }
    }

    /// True when the replica of `partition` on `broker` is listed.
    pub fn contains(&self, partition: i32, broker: i32) -> bool {
        match self {
            ThrottledReplicas::None => false,
            ThrottledReplicas::All => true,
            ThrottledReplicas::Replicas(r) => r.contains(&(partition, broker)),
        }
    }
}

fn truncate(entry: &str) -> String {
    entry.chars().take(64).collect()
}

impl FromStr for ThrottledReplicas {
    type Err = ThrottledReplicasError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ThrottledReplicas::parse(s)
    }
}

impl fmt::Display for ThrottledReplicas {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ThrottledReplicas::None => Ok(()),
            ThrottledReplicas::All => f.write_str("*"),
            ThrottledReplicas::Replicas(r) => {
                for (i, (p, b)) in r.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{p}:{b}")?;
                }
                Ok(())
            }
        }
    }
}

/// One direction of replication throttling (leader or follower) on a broker: the throttled
/// replicas per topic and the byte rate of their traffic.
#[derive(Debug, Clone)]
pub struct ReplicationQuotaManager {
    window: QuotaWindow,
    quota: Option<f64>,
    throttled: HashMap<String, ThrottledReplicas>,
    rate: SampledRate,
}

impl ReplicationQuotaManager {
    /// Unlimited, no throttled topic, sampling over `window` (`replication.quota.window.num`,
    /// `replication.quota.window.size.seconds`).
    pub fn new(window: QuotaWindow) -> Self {
        ReplicationQuotaManager {
            window,
            quota: None,
            throttled: HashMap::new(),
            rate: SampledRate::new(window, RateKind::SimpleRate),
        }
    }

    /// Sets the throttled rate in bytes/s (`None`, or `i64::MAX` as Kafka's default, for none).
    pub fn update_quota(&mut self, bytes_per_second: Option<f64>) {
        self.quota = bytes_per_second.filter(|q| *q < i64::MAX as f64);
    }

    /// The throttled rate in bytes/s (`i64::MAX` when unlimited, as Kafka's `upperBound`).
    pub fn upper_bound(&self) -> i64 {
        self.quota.map_or(i64::MAX, |q| q as i64)
    }

    /// Replaces the throttled replicas of `topic`; [`ThrottledReplicas::None`] removes them.
    pub fn mark_throttled(&mut self, topic: &str, replicas: ThrottledReplicas) {
        if replicas == ThrottledReplicas::None {
            self.throttled.remove(topic);
        } else {
            self.throttled.insert(topic.to_owned(), replicas);
        }
    }

    /// Replaces the throttled replicas of every topic with `throttled` (Kafka applies each
    /// topic's config as it changes; a broker following a metadata image applies them all).
    pub fn set_throttled(
        &mut self,
        throttled: impl IntoIterator<Item = (String, ThrottledReplicas)>,
    ) {
        self.throttled = throttled
            .into_iter()
            .filter(|(_, r)| *r != ThrottledReplicas::None)
            .collect();
    }

    /// Forgets the throttled replicas of `topic` (its config was removed or the topic deleted).
    pub fn remove_throttle(&mut self, topic: &str) {
        self.throttled.remove(topic);
    }

    /// True when the replica of `topic`-`partition` on broker `replica` is throttled. Kafka keeps
    /// only the entries of its own broker, so a broker asks with its own id.
    pub fn is_throttled(&self, topic: &str, partition: i32, replica: i32) -> bool {
        self.throttled
            .get(topic)
            .is_some_and(|r| r.contains(partition, replica))
    }

    /// Adds `bytes` of throttled traffic at `now_ms` (never throttles by itself).
    pub fn record(&mut self, bytes: u64, now_ms: u64) {
        self.rate.record(bytes as f64, now_ms);
    }

    /// The throttled traffic's rate in bytes/s at `now_ms` (Kafka's `byte-rate` metric of
    /// `LeaderReplication` / `FollowerReplication`).
    pub fn byte_rate(&mut self, now_ms: u64) -> f64 {
        self.rate.measure(now_ms)
    }

    /// How long from `now_ms` until the rate is back within the quota if nothing more is
    /// recorded: Kafka's throttle-time formula ([`crate::throttle::throttle_time_ms`]) over the
    /// rate's window. 0 when within the quota or without one. A leader holding a fetch back waits
    /// this long, not the fetch's whole `max_wait_ms`, before it reads again: waiting longer
    /// leaves the quota unused (64 KiB per 500 ms wait is 128 KB/s, whatever the quota).
    pub fn throttle_time_ms(&mut self, now_ms: u64) -> u64 {
        let Some(bound) = self.quota else {
            return 0;
        };
        let observed = self.rate.measure(now_ms);
        if observed <= bound {
            return 0;
        }
        let window_ms = self.rate.window_size_ms(now_ms);
        crate::throttle::throttle_time_ms(observed, bound, window_ms)
    }

    /// True when the throttled traffic's rate is above the quota at `now_ms`.
    pub fn is_quota_exceeded(&mut self, now_ms: u64) -> bool {
        match self.quota {
            Some(bound) => self.rate.measure(now_ms) > bound,
            None => false,
        }
    }

    /// The leader's rule for a follower fetch: hold back a throttled replica that is out of sync
    /// while the quota is exceeded (Kafka's `shouldLeaderThrottle`; the follower applies the same
    /// rule to its own fetches).
    pub fn should_throttle(
        &mut self,
        topic: &str,
        partition: i32,
        replica: i32,
        replica_in_sync: bool,
        now_ms: u64,
    ) -> bool {
        !replica_in_sync
            && self.is_throttled(topic, partition, replica)
            && self.is_quota_exceeded(now_ms)
    }

    /// The sampling window.
    pub fn window(&self) -> QuotaWindow {
        self.window
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: u64 = 1_700_000_000_000;

    #[test]
    fn a_burst_over_the_quota_is_paid_back_over_the_windows_then_forgotten() {
        // 100 B/s; SimpleRate divides by the time since the oldest kept sample (at least 1 s).
        let mut q = ReplicationQuotaManager::new(QuotaWindow::default());
        q.update_quota(Some(100.0));
        q.record(1_000, T0);
        assert_eq!(q.byte_rate(T0 + 500), 1_000.0);
        assert!(q.is_quota_exceeded(T0 + 500));
        // 1 000 bytes over 9.999 s is just over 100 B/s; over 10 s it is the quota itself, which
        // Kafka's bound allows.
        assert!(q.is_quota_exceeded(T0 + 9_999));
        assert!(!q.is_quota_exceeded(T0 + 10_000));
        // After num × size (11 s) the sample is gone: a new burst starts from nothing.
        assert_eq!(q.byte_rate(T0 + 11_000), 0.0);
    }

    #[test]
    fn the_throttle_time_is_when_the_rate_is_back_within_the_quota() {
        let mut q = ReplicationQuotaManager::new(QuotaWindow::default());
        assert_eq!(q.throttle_time_ms(T0), 0);
        q.update_quota(Some(100.0));
        q.record(1_000, T0);
        // 1 000 B over 5 s is 200 B/s: another 5 s brings it to 100 B/s.
        assert_eq!(q.throttle_time_ms(T0 + 5_000), 5_000);
        assert!(q.is_quota_exceeded(T0 + 9_999));
        assert!(!q.is_quota_exceeded(T0 + 5_000 + 5_000));
        assert_eq!(q.throttle_time_ms(T0 + 10_000), 0);
    }

    /// A leader that holds a catching-up replica back until [`ReplicationQuotaManager::throttle_time_ms`]
    /// and then sends one fetch's bytes sends at the quota: counted per one-second window on a
    /// fake clock, no window after the first gets more than the quota plus one fetch, and the
    /// 30 s total is within one fetch plus the first window's allowance of 30 × the quota.
    #[test]
    fn held_back_until_the_throttle_time_the_replica_gets_the_quota() {
        const RATE: u64 = 200 * 1024;
        const FETCH: u64 = 131_221; // one batch of 8 × 16 KiB records, as a fetch returns it
        const SECONDS: u64 = 30;
        let mut q = ReplicationQuotaManager::new(QuotaWindow::default());
        q.update_quota(Some(RATE as f64));
        q.mark_throttled("t", ThrottledReplicas::All);
        let mut per_second = vec![0u64; SECONDS as usize];
        let mut now = T0;
        while now < T0 + SECONDS * 1_000 {
            if q.should_throttle("t", 0, 1, false, now) {
                // The wait never rounds to 0, as the broker's (at least 1 ms).
                now += q.throttle_time_ms(now).max(1);
                continue;
            }
            q.record(FETCH, now);
            per_second[((now - T0) / 1_000) as usize] += FETCH;
            // The follower's next fetch, 2 ms later.
            now += 2;
        }
        let total: u64 = per_second.iter().sum();
        assert!(
            (SECONDS * RATE - FETCH..=SECONDS * RATE + RATE + FETCH).contains(&total),
            "{total} bytes in {SECONDS} s at {RATE} B/s: {per_second:?}"
        );
        // The sample windows let a second catch up on a slower one, but never by much.
        assert!(
            per_second[1..].iter().all(|&b| b <= 2 * RATE + FETCH),
            "{per_second:?}"
        );
    }

    /// Kafka counts every follower's bytes of a throttled partition against the leader rate, the
    /// in-sync replicas' too (they are only never held back): after 2 MiB went to an in-sync
    /// replica, a catching-up one waits until they are paid off.
    #[test]
    fn in_sync_traffic_counts_and_holds_back_a_catching_up_replica() {
        const RATE: f64 = 200.0 * 1024.0;
        let mut q = ReplicationQuotaManager::new(QuotaWindow::default());
        q.update_quota(Some(RATE));
        q.mark_throttled("t", ThrottledReplicas::All);
        q.record(2 * 1024 * 1024, T0);
        assert!(!q.should_throttle("t", 0, 1, true, T0 + 1));
        assert!(q.should_throttle("t", 0, 1, false, T0 + 1_000));
        // 2 MiB over 1 s against 200 KiB/s: another 9.24 s.
        assert_eq!(q.throttle_time_ms(T0 + 1_000), 9_240);
        assert!(q.should_throttle("t", 0, 1, false, T0 + 10_239));
        assert!(!q.should_throttle("t", 0, 1, false, T0 + 10_240));
    }

    #[test]
    fn set_throttled_replaces_every_topic() {
        let mut q = ReplicationQuotaManager::new(QuotaWindow::default());
        q.mark_throttled("old", ThrottledReplicas::All);
        q.set_throttled([
            ("a".to_string(), ThrottledReplicas::parse("3:1").unwrap()),
            ("b".to_string(), ThrottledReplicas::None),
        ]);
        assert!(!q.is_throttled("old", 0, 1));
        assert!(q.is_throttled("a", 3, 1));
        assert!(!q.is_throttled("a", 3, 2));
        assert!(!q.is_throttled("b", 0, 1));
    }
}
