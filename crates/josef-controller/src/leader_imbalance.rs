//! The per-broker threshold of the preferred-leader rebalance, `leader.imbalance.per.broker.percentage`
//! (Kafka's ZooKeeper-era `KafkaController.checkAndTriggerAutoLeaderRebalance`; KRaft's
//! `maybeBalancePartitionLeaders` has no threshold and ignores the setting).
//!
//! A broker's imbalance ratio is the share of the partitions whose preferred replica (the first
//! assigned one) it is that are led by another broker or by none. The rebalance elects preferred
//! leaders only for the partitions of brokers whose ratio is above `percentage / 100`, so a
//! broker missing one leadership in a hundred is left alone.

use std::collections::{BTreeMap, BTreeSet};

/// One broker's preferred leaderships and how many of them it does not hold.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct BrokerImbalance {
    /// Partitions whose preferred replica is the broker.
    pub(crate) preferred: usize,
    /// Of those, the partitions led by another broker or leaderless.
    pub(crate) not_led: usize,
}

impl BrokerImbalance {
    /// Whether `not_led / preferred > percentage / 100`, Kafka's comparison, done in integers
    /// so a ratio exactly at the threshold never rounds above it. A negative percentage is 0.
    pub(crate) fn exceeds(&self, percentage: i32) -> bool {
        let percentage = u128::from(percentage.max(0).unsigned_abs());
        self.preferred > 0 && self.not_led as u128 * 100 > percentage * self.preferred as u128
    }
}

/// Each broker's imbalance: `preferred` counts the partitions by preferred replica,
/// `not_led` yields the preferred replica of each partition whose leader is not that replica.
pub(crate) fn broker_imbalances(
    preferred: &BTreeMap<i32, usize>,
    not_led: impl IntoIterator<Item = i32>,
) -> BTreeMap<i32, BrokerImbalance> {
    let mut out: BTreeMap<i32, BrokerImbalance> = preferred
        .iter()
        .map(|(&b, &n)| {
            let imbalance = BrokerImbalance {
                preferred: n,
                not_led: 0,
            };
            (b, imbalance)
        })
        .collect();
    for b in not_led {
        out.entry(b).or_default().not_led += 1;
    }
    out
}

/// The brokers whose imbalance ratio is above `percentage / 100`.
pub(crate) fn brokers_over_threshold(
    preferred: &BTreeMap<i32, usize>,
    not_led: impl IntoIterator<Item = i32>,
    percentage: i32,
) -> BTreeSet<i32> {
    broker_imbalances(preferred, not_led)
        .into_iter()
        .filter(|(_, i)| i.exceeds(percentage))
        .map(|(b, _)| b)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn imbalance(preferred: usize, not_led: usize) -> BrokerImbalance {
        BrokerImbalance { preferred, not_led }
    }

    #[test]
    fn the_ratio_must_be_above_the_percentage() {
        assert!(!imbalance(10, 1).exceeds(10), "10 % is not above 10 %");
        assert!(imbalance(10, 2).exceeds(10));
        assert!(!imbalance(100, 10).exceeds(10));
        assert!(imbalance(100, 11).exceeds(10));
        assert!(imbalance(3, 1).exceeds(33), "1/3 is above 33 %");
        assert!(!imbalance(3, 1).exceeds(34));
    }

    #[test]
    fn zero_percent_acts_on_any_imbalance_and_100_on_none() {
        assert!(imbalance(1000, 1).exceeds(0));
        assert!(!imbalance(1000, 0).exceeds(0));
        assert!(!imbalance(4, 4).exceeds(100), "a ratio is at most 1");
        assert!(
            imbalance(4, 1).exceeds(-5),
            "a negative percentage counts as 0"
        );
    }

    #[test]
    fn a_broker_preferred_nowhere_is_never_imbalanced() {
        assert!(!imbalance(0, 0).exceeds(0));
    }

    #[test]
    fn the_ratio_is_computed_per_broker() {
        // Broker 1 prefers 10 partitions and misses 1 of them (10 %), broker 2 prefers 4 and
        // misses 1 (25 %), broker 3 prefers 2 and misses none. Over all brokers 2/16 = 12.5 %
        // would be above 10 %, but only broker 2 is.
        let preferred = BTreeMap::from([(1, 10), (2, 4), (3, 2)]);
        let not_led = [1, 2];
        let per_broker = broker_imbalances(&preferred, not_led);
        assert_eq!(per_broker[&1], imbalance(10, 1));
        assert_eq!(per_broker[&2], imbalance(4, 1));
        assert_eq!(per_broker[&3], imbalance(2, 0));
        assert_eq!(
            brokers_over_threshold(&preferred, not_led, 10),
            BTreeSet::from([2])
        );
        assert_eq!(
            brokers_over_threshold(&preferred, not_led, 9),
            BTreeSet::from([1, 2])
        );
        assert_eq!(
            brokers_over_threshold(&preferred, not_led, 25),
            BTreeSet::new()
        );
    }
}
