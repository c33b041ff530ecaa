//! Which fetcher serves a followed partition (Kafka's `AbstractFetcherManager.getFetcherId`):
//! `num.replica.fetchers` fetchers per source broker, a partition going to fetcher
//! `abs(31 * hash(topic) + partition) % num.replica.fetchers`, `hash` being Java's
//! `String.hashCode` so a partition lands on the same fetcher id as on a Kafka broker.

use std::collections::BTreeMap;

use josef_coordinator::placement::{java_string_hash, kafka_abs};

/// One fetcher: a source broker (the leader) and a fetcher id below `num.replica.fetchers`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FetcherKey {
    /// The broker fetched from.
    pub leader: i32,
    /// The fetcher id, `0..num.replica.fetchers`.
    pub fetcher_id: i32,
}

/// The fetcher id of `topic`-`partition` with `num_fetchers` fetchers per broker (a value below
/// 1 counts as 1), with Java's int arithmetic (wrapping) and Kafka's `Utils.abs`.
pub fn fetcher_id(topic: &str, partition: i32, num_fetchers: i32) -> i32 {
    let n = java_string_hash(topic)
        .wrapping_mul(31)
        .wrapping_add(partition);
    kafka_abs(n) % num_fetchers.max(1)
}

/// Splits `wanted` (partition key → (leader, value), `topic` naming each value's topic) into one
/// set per fetcher.
pub fn group_by_fetcher<K: Ord, V>(
    wanted: BTreeMap<K, (i32, V)>,
    num_fetchers: i32,
    topic: impl Fn(&V) -> &str,
    partition: impl Fn(&K) -> i32,
) -> BTreeMap<FetcherKey, BTreeMap<K, V>> {
    let mut out: BTreeMap<FetcherKey, BTreeMap<K, V>> = BTreeMap::new();
    for (k, (leader, v)) in wanted {
        let key = FetcherKey {
            leader,
            fetcher_id: fetcher_id(topic(&v), partition(&k), num_fetchers),
        };
        out.entry(key).or_default().insert(k, v);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fetcher_id_follows_kafkas_rule() {
        // abs(31 * "test".hashCode() + p) % n, "test".hashCode() = 3556498 on a JVM.
        assert_eq!(fetcher_id("test", 0, 1), 0);
        assert_eq!(fetcher_id("test", 0, 2), 0);
        assert_eq!(fetcher_id("test", 1, 2), 1);
        assert_eq!(fetcher_id("test", 3, 5), (110_251_438 + 3) % 5);
        // 31 * -970371369 wraps (as Java's int arithmetic does) to -16741367; + 7, absolute.
        assert_eq!((-970_371_369i32).wrapping_mul(31), -16_741_367);
        assert_eq!(fetcher_id("__consumer_offsets", 7, 3), 16_741_360 % 3);
        // 31 * 110546223 wraps to -868034383: the absolute value counts.
        assert_eq!(110_546_223i32.wrapping_mul(31), -868_034_383);
        assert_eq!(fetcher_id("topic", 0, 4), 868_034_383 % 4);
        assert_eq!(fetcher_id("topic", 0, 4), 3);
        // Below 1 fetcher counts as one; ids stay in range for any input.
        assert_eq!(fetcher_id("test", 1, 0), 0);
        for p in [0, 1, 17, i32::MAX] {
            assert!((0..3).contains(&fetcher_id("x", p, 3)));
        }
    }

    #[test]
    fn one_fetcher_per_source_broker_and_fetcher_id() {
        let wanted: BTreeMap<(u8, i32), (i32, &str)> = [
            ((0, 0), (1, "test")),
            ((0, 1), (1, "test")),
            ((0, 2), (1, "test")),
            ((0, 3), (2, "test")),
        ]
        .into_iter()
        .collect();
        let one = group_by_fetcher(wanted.clone(), 1, |t| t, |k| k.1);
        let keys: Vec<_> = one.keys().map(|k| (k.leader, k.fetcher_id)).collect();
        assert_eq!(keys, [(1, 0), (2, 0)]);
        assert_eq!(
            one[&FetcherKey {
                leader: 1,
                fetcher_id: 0
            }]
                .len(),
            3
        );
        let two = group_by_fetcher(wanted, 2, |t| t, |k| k.1);
        let got: Vec<_> = two
            .iter()
            .map(|(k, ps)| {
                (
                    (k.leader, k.fetcher_id),
                    ps.keys().map(|p| p.1).collect::<Vec<_>>(),
                )
            })
            .collect();
        // "test" partitions 0 and 2 go to fetcher 0, partition 1 to fetcher 1 (of leader 1);
        // partition 3 (odd) to fetcher 1 of leader 2.
        assert_eq!(
            got,
            [((1, 0), vec![0, 2]), ((1, 1), vec![1]), ((2, 1), vec![3])]
        );
    }
}
