//! Replication throttles on the broker (KIP-73): josef-quota's [`ReplicationQuotaManager`]s for
//! the leader and the follower direction, kept in step with the metadata image (the rates from
//! this broker's dynamic configs, the throttled replicas from the topic configs), asked by the
//! Fetch handler for followers' fetches and by the replica fetchers for this broker's own.
//!
//! With nothing throttled (the default) every question is one atomic load.

use std::sync::atomic::{AtomicBool, Ordering};

use josef_metadata::{MetadataImage, TOPIC_RESOURCE};
use josef_quota::{QuotaWindow, ReplicationQuotaManager, ReplicationThrottles};
use parking_lot::Mutex;

use crate::dynamic_config::Layers;

/// `kafka.server:type=LeaderReplication,name=byte-rate`: throttled leader traffic, bytes/s.
pub const LEADER_BYTE_RATE: &str = "kafka_server_leaderreplication_byte_rate";
/// `kafka.server:type=FollowerReplication,name=byte-rate`: throttled follower traffic, bytes/s.
pub const FOLLOWER_BYTE_RATE: &str = "kafka_server_followerreplication_byte_rate";
/// Partition fetches held back by a replication throttle, by `direction` (`leader` /
/// `follower`). Kafka has no MBean for it: a Josef series, the nearest to a throttle time.
pub const HELD_BACK: &str = "josef_server_replication_throttled_total";

/// Leader or follower traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Bytes this broker sends to its followers (`leader.replication.throttled.*`).
    Leader,
    /// Bytes this broker fetches from its leaders (`follower.replication.throttled.*`).
    Follower,
}

impl Direction {
    fn label(self) -> &'static str {
        match self {
            Direction::Leader => "leader",
            Direction::Follower => "follower",
        }
    }
}

/// Counts one partition fetch held back in direction `d` ([`HELD_BACK`]).
pub fn count_held_back(d: Direction) {
    metrics::counter!(HELD_BACK, "direction" => d.label()).increment(1);
}

/// This broker's two replication quota managers.
pub struct ReplicationQuotas {
    node_id: i32,
    leader: Mutex<ReplicationQuotaManager>,
    follower: Mutex<ReplicationQuotaManager>,
    applied: Mutex<Option<ReplicationThrottles>>,
    /// False while neither direction throttles anything: the fetch paths skip the locks.
    active: AtomicBool,
}

impl ReplicationQuotas {
    /// Nothing throttled yet; samples of `window` (`replication.quota.window.*`).
    pub fn new(node_id: i32, window: QuotaWindow) -> Self {
        ReplicationQuotas {
            node_id,
            leader: Mutex::new(ReplicationQuotaManager::new(window)),
            follower: Mutex::new(ReplicationQuotaManager::new(window)),
            applied: Mutex::new(None),
            active: AtomicBool::new(false),
        }
    }

    /// Applies the throttles `image` sets for this broker (a no-op when they did not change).
    pub fn refresh(&self, image: &MetadataImage) {
        let layers = Layers::of(image, self.node_id);
        let topics = image
            .configs()
            .iter()
            .filter(|(r, _)| r.resource_type == TOPIC_RESOURCE)
            .map(|(r, c)| (r.name.as_str(), c));
        let (throttles, warnings) =
            ReplicationThrottles::read(&layers.per_broker, &layers.cluster_default, topics);
        self.apply(throttles, &warnings);
    }

    /// Applies `throttles` (a no-op when they are the ones applied).
    pub fn apply(&self, throttles: ReplicationThrottles, warnings: &[String]) {
        let mut applied = self.applied.lock();
        if applied.as_ref() == Some(&throttles) {
            return;
        }
        for w in warnings {
            tracing::warn!("replication throttle: {w}");
        }
        {
            let mut leader = self.leader.lock();
            leader.update_quota(throttles.leader_rate);
            leader.set_throttled(throttles.leader_replicas.clone());
        }
        {
            let mut follower = self.follower.lock();
            follower.update_quota(throttles.follower_rate);
            follower.set_throttled(throttles.follower_replicas.clone());
        }
        tracing::info!(
            leader_rate = ?throttles.leader_rate,
            follower_rate = ?throttles.follower_rate,
            leader_topics = throttles.leader_replicas.len(),
            follower_topics = throttles.follower_replicas.len(),
            "replication throttles applied"
        );
        self.active.store(!throttles.is_off(), Ordering::Release);
        *applied = Some(throttles);
    }

    fn manager(&self, d: Direction) -> &Mutex<ReplicationQuotaManager> {
        match d {
            Direction::Leader => &self.leader,
            Direction::Follower => &self.follower,
        }
    }

    /// True when this broker's replica of `topic`-`partition` is listed for `d` (its bytes count
    /// against `d`'s rate, whether or not they are held back).
    pub fn is_throttled(&self, d: Direction, topic: &str, partition: i32) -> bool {
        self.active.load(Ordering::Acquire)
            && self
                .manager(d)
                .lock()
                .is_throttled(topic, partition, self.node_id)
    }

    /// Kafka's `shouldLeaderThrottle` / `shouldFollowerThrottle`: a throttled replica that is
    /// not in sync gets (or asks for) no bytes while `d`'s rate is over its quota at `now_ms`.
    /// `in_sync`: on the leader, the follower is in the ISR; on the follower, it has no lag
    /// behind the leader's high watermark.
    pub fn should_throttle(
        &self,
        d: Direction,
        topic: &str,
        partition: i32,
        in_sync: bool,
        now_ms: u64,
    ) -> bool {
        self.active.load(Ordering::Acquire)
            && self.manager(d).lock().should_throttle(
                topic,
                partition,
                self.node_id,
                in_sync,
                now_ms,
            )
    }

    /// The leader's rule for `replica`'s fetch of `partition` (`topic`-`index`): true when its bytes
    /// are held back (listed for the leader direction, `replica` out of the ISR, the leader
    /// rate over its quota).
    pub fn leader_holds_back(
        &self,
        topic: &str,
        index: i32,
        partition: &crate::partition::Partition,
        replica: i32,
        now_ms: u64,
    ) -> bool {
        if !self.active.load(Ordering::Acquire) {
            return false;
        }
        let in_sync = partition.isr().contains(&replica);
        self.should_throttle(Direction::Leader, topic, index, in_sync, now_ms)
    }

    /// Counts `bytes` of throttled replicas' traffic in direction `d` at `now_ms`.
    pub fn record(&self, d: Direction, bytes: u64, now_ms: u64) {
        if bytes > 0 && self.active.load(Ordering::Acquire) {
            self.manager(d).lock().record(bytes, now_ms);
        }
    }

    /// How long until `d`'s rate is back within its quota at `now_ms`
    /// ([`ReplicationQuotaManager::throttle_time_ms`]); 0 when nothing is throttled.
    pub fn throttle_time_ms(&self, d: Direction, now_ms: u64) -> u64 {
        if !self.active.load(Ordering::Acquire) {
            return 0;
        }
        self.manager(d).lock().throttle_time_ms(now_ms)
    }

    /// The throttled traffic's rate in direction `d` at `now_ms`, bytes/s.
    pub fn byte_rate(&self, d: Direction, now_ms: u64) -> f64 {
        self.manager(d).lock().byte_rate(now_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use josef_quota::ThrottledReplicas;

    fn throttles(follower: &str) -> ReplicationThrottles {
        ReplicationThrottles {
            leader_rate: Some(100.0),
            follower_rate: Some(100.0),
            leader_replicas: [("t".to_string(), ThrottledReplicas::parse("0:1").unwrap())].into(),
            follower_replicas: [("t".to_string(), ThrottledReplicas::parse(follower).unwrap())]
                .into(),
        }
    }

    #[test]
    fn each_direction_asks_with_this_broker_id() {
        let q = ReplicationQuotas::new(1, QuotaWindow::default());
        q.apply(throttles("0:2"), &[]);
        assert!(q.is_throttled(Direction::Leader, "t", 0));
        assert!(!q.is_throttled(Direction::Follower, "t", 0));
        q.record(Direction::Leader, 1_000, 0);
        assert!(q.should_throttle(Direction::Leader, "t", 0, false, 10));
        assert!(!q.should_throttle(Direction::Leader, "t", 0, true, 10));
        // The follower direction has its own rate: nothing recorded there.
        q.apply(throttles("0:1"), &[]);
        assert!(!q.should_throttle(Direction::Follower, "t", 0, false, 10));
        q.record(Direction::Follower, 1_000, 0);
        assert!(q.should_throttle(Direction::Follower, "t", 0, false, 10));
    }

    #[test]
    fn nothing_is_recorded_or_throttled_when_off() {
        let q = ReplicationQuotas::new(1, QuotaWindow::default());
        q.record(Direction::Leader, 1_000, 0);
        assert_eq!(q.byte_rate(Direction::Leader, 10), 0.0);
        assert!(!q.should_throttle(Direction::Leader, "t", 0, false, 10));
    }
}
