//! Which replication throttles a broker applies, read from its configs as Kafka's
//! `BrokerConfigHandler` (the rates) and `TopicConfigHandler` (the throttled replicas) read them.

use std::collections::BTreeMap;

use crate::replication::{
    ThrottledReplicas, FOLLOWER_REPLICATION_THROTTLED_RATE_CONFIG,
    FOLLOWER_REPLICATION_THROTTLED_REPLICAS_CONFIG, LEADER_REPLICATION_THROTTLED_RATE_CONFIG,
    LEADER_REPLICATION_THROTTLED_REPLICAS_CONFIG,
};

/// The replication throttles of one broker: the two rates and each topic's throttled replicas.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ReplicationThrottles {
    /// `leader.replication.throttled.rate` in bytes/s; `None`: unlimited.
    pub leader_rate: Option<f64>,
    /// `follower.replication.throttled.rate` in bytes/s; `None`: unlimited.
    pub follower_rate: Option<f64>,
    /// `leader.replication.throttled.replicas` of each topic that sets a non-empty one.
    pub leader_replicas: BTreeMap<String, ThrottledReplicas>,
    /// `follower.replication.throttled.replicas` of each topic that sets a non-empty one.
    pub follower_replicas: BTreeMap<String, ThrottledReplicas>,
}

impl ReplicationThrottles {
    /// The throttles set by this broker's dynamic configs (`per_broker`, resource `<id>`, winning
    /// over `cluster_default`, resource `""`; Kafka reads neither rate from `server.properties`)
    /// and by the topic configs `topics` (name, configs). A value that does not parse is left out
    /// and described in the returned warnings: it cannot have passed the config validation, so
    /// it was written by something else, and throttling on a guess would slow replication.
    pub fn read<'a>(
        per_broker: &BTreeMap<String, String>,
        cluster_default: &BTreeMap<String, String>,
        topics: impl IntoIterator<Item = (&'a str, &'a BTreeMap<String, String>)>,
    ) -> (ReplicationThrottles, Vec<String>) {
        let mut warnings = Vec::new();
        let mut rate = |name: &str| {
            let value = per_broker.get(name).or_else(|| cluster_default.get(name))?;
            match value.trim().parse::<i64>() {
                // Kafka's `Quota.upperBound(Long.MaxValue)` is its "no throttle".
                Ok(v) if (0..i64::MAX).contains(&v) => Some(v as f64),
                Ok(v) if v == i64::MAX => None,
                _ => {
                    warnings.push(format!("{name}={value} ignored: not a rate in bytes/s"));
                    None
                }
            }
        };
        let leader_rate = rate(LEADER_REPLICATION_THROTTLED_RATE_CONFIG);
        let follower_rate = rate(FOLLOWER_REPLICATION_THROTTLED_RATE_CONFIG);
        let mut out = ReplicationThrottles {
            leader_rate,
            follower_rate,
            ..Default::default()
        };
        for (topic, configs) in topics {
            for (name, into) in [
                (
                    LEADER_REPLICATION_THROTTLED_REPLICAS_CONFIG,
                    &mut out.leader_replicas,
                ),
                (
                    FOLLOWER_REPLICATION_THROTTLED_REPLICAS_CONFIG,
                    &mut out.follower_replicas,
                ),
            ] {
                let Some(value) = configs.get(name) else {
                    continue;
                };
                match ThrottledReplicas::parse(value) {
                    Ok(ThrottledReplicas::None) => {}
                    Ok(r) => {
                        into.insert(topic.to_owned(), r);
                    }
                    Err(e) => warnings.push(format!("{name} of topic {topic} ignored: {e}")),
                }
            }
        }
        (out, warnings)
    }

    /// True when neither direction throttles anything (no rate, or no throttled replica).
    pub fn is_off(&self) -> bool {
        (self.leader_rate.is_none() || self.leader_replicas.is_empty())
            && (self.follower_rate.is_none() || self.follower_replicas.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_broker_own_rate_wins_over_the_cluster_default() {
        let own = map(&[("leader.replication.throttled.rate", "100")]);
        let all = map(&[
            ("leader.replication.throttled.rate", "7"),
            ("follower.replication.throttled.rate", "200"),
        ]);
        let (t, w) = ReplicationThrottles::read(&own, &all, []);
        assert!(w.is_empty());
        assert_eq!(t.leader_rate, Some(100.0));
        assert_eq!(t.follower_rate, Some(200.0));
        let (t, _) = ReplicationThrottles::read(&map(&[]), &map(&[]), []);
        assert_eq!((t.leader_rate, t.follower_rate), (None, None));
        // Kafka's default (Long.MaxValue) is unlimited.
        let max = map(&[("leader.replication.throttled.rate", &i64::MAX.to_string())]);
        assert_eq!(
            ReplicationThrottles::read(&max, &all, []).0.leader_rate,
            None
        );
    }

    #[test]
    fn bad_values_are_left_out_with_a_warning() {
        let own = map(&[("follower.replication.throttled.rate", "-1")]);
        let topic = map(&[("leader.replication.throttled.replicas", "0")]);
        let (t, w) = ReplicationThrottles::read(&own, &map(&[]), [("t", &topic)]);
        assert_eq!(t, ReplicationThrottles::default());
        assert_eq!(w.len(), 2, "{w:?}");
    }

    #[test]
    fn topic_lists_are_read_per_direction_and_empty_ones_dropped() {
        let a = map(&[
            ("leader.replication.throttled.replicas", "0:1,1:2"),
            ("follower.replication.throttled.replicas", "*"),
        ]);
        let b = map(&[("leader.replication.throttled.replicas", "")]);
        let rate = map(&[("leader.replication.throttled.rate", "1")]);
        let (t, w) = ReplicationThrottles::read(&rate, &map(&[]), [("a", &a), ("b", &b)]);
        assert!(w.is_empty());
        assert_eq!(t.leader_replicas.len(), 1);
        assert!(t.leader_replicas["a"].contains(1, 2));
        assert!(!t.leader_replicas["a"].contains(1, 1));
        assert_eq!(t.follower_replicas["a"], ThrottledReplicas::All);
        assert!(!t.is_off());
        // A follower list without a follower rate throttles nothing, nor a rate without lists.
        let (t, _) = ReplicationThrottles::read(&map(&[]), &map(&[]), [("a", &a)]);
        assert!(t.is_off());
        let (t, _) = ReplicationThrottles::read(&rate, &map(&[]), [("b", &b)]);
        assert!(t.is_off());
    }
}
