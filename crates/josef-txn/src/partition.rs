//! Placement of transactional ids (and consumer groups) on coordinator partitions.
//!
//! Kafka places a transactional id on `__transaction_state` partition
//! `Utils.abs(transactionalId.hashCode()) % transaction.state.log.num.partitions`, and a group on
//! `__consumer_offsets` the same way. The hash is Java's `String.hashCode` (over UTF-16 code
//! units), and `Utils.abs` maps `i32::MIN` to 0 instead of overflowing. Both must be bit-exact, or
//! clients asking FindCoordinator would be sent to the wrong partition after a migration.

pub use josef_coordinator::placement::{java_string_hash, kafka_abs};

/// Default `transaction.state.log.num.partitions`.
pub const DEFAULT_TRANSACTION_STATE_PARTITIONS: i32 = 50;
/// Default `offsets.topic.num.partitions`.
pub const DEFAULT_OFFSETS_TOPIC_PARTITIONS: i32 = 50;
/// Name of the transaction state topic.
pub const TRANSACTION_STATE_TOPIC: &str = "__transaction_state";
/// Name of the consumer offsets topic.
pub const CONSUMER_OFFSETS_TOPIC: &str = "__consumer_offsets";

/// The coordinator partition of `key` among `partitions` partitions (`partitions` must be > 0;
/// a non-positive count yields 0).
///
/// ```
/// use josef_txn::partition_for;
/// assert_eq!(partition_for("my-txn", 50), 45);
/// ```
pub fn partition_for(key: &str, partitions: i32) -> i32 {
    if partitions <= 0 {
        return 0;
    }
    kafka_abs(java_string_hash(key)) % partitions
}

/// The `__consumer_offsets` partition of `group_id` (same scheme as Kafka's
/// `GroupCoordinatorService.partitionFor`).
pub fn group_partition_for(group_id: &str, offsets_topic_partitions: i32) -> i32 {
    partition_for(group_id, offsets_topic_partitions)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values computed with Java's `String.hashCode`.
    #[test]
    fn java_hash_matches_known_java_values() {
        assert_eq!(java_string_hash("a"), 97);
        assert_eq!(java_string_hash("abc"), 96354);
        assert_eq!(java_string_hash("hello"), 99162322);
        assert_eq!(java_string_hash("Hello, World!"), 1498789909);
        // Overflowing hashes wrap like Java ints.
        assert_eq!(java_string_hash("polygenelubricants"), i32::MIN);
        assert_eq!(java_string_hash("GydZG_"), i32::MIN);
        // The textbook collision.
        assert_eq!(java_string_hash("Aa"), 2112);
        assert_eq!(java_string_hash("BB"), 2112);
        // Non-BMP characters hash as two UTF-16 surrogates, like Java.
        assert_eq!(java_string_hash("\u{1F600}"), 1772899);
        assert_eq!(java_string_hash("é"), 233);
    }

    #[test]
    fn kafka_abs_maps_min_to_zero() {
        assert_eq!(kafka_abs(i32::MIN), 0);
        assert_eq!(kafka_abs(-5), 5);
        assert_eq!(kafka_abs(7), 7);
    }

    #[test]
    fn partition_for_uses_abs_of_java_hash() {
        // "polygenelubricants" hashes to i32::MIN: Utils.abs gives 0, so partition 0.
        assert_eq!(partition_for("polygenelubricants", 50), 0);
        assert_eq!(partition_for("hello", 50), 99162322 % 50);
        // Negative hashes use the absolute value: "my-txn" hashes to -1061187895.
        assert_eq!(java_string_hash("my-txn"), -1061187895);
        assert_eq!(partition_for("my-txn", 50), 45);
        assert_eq!(group_partition_for("my-txn", 50), 45);
        assert_eq!(partition_for("x", 0), 0);
    }
}
