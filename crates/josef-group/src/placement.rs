//! Which `__consumer_offsets` partition owns a group.
//!
//! Kafka places a group with `Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions`.
//! `String.hashCode` runs over UTF-16 code units with wrapping 32-bit arithmetic, and
//! `Utils.abs(Integer.MIN_VALUE)` is `0` (not the overflowing `Math.abs`), so both are
//! reproduced bit-exactly here: clients compute nothing, but a broker that disagrees with
//! Kafka would move groups between partitions after a migration.

pub use josef_coordinator::placement::{java_string_hash, kafka_abs};

/// Default `offsets.topic.num.partitions`.
pub const DEFAULT_OFFSETS_TOPIC_PARTITIONS: i32 = 50;

/// The `__consumer_offsets` partition that coordinates `group_id`.
///
/// Returns `None` if `num_partitions` is not positive.
///
/// ```
/// use josef_group::placement::partition_for;
/// // In Java, "my-group".hashCode() == -1906497762 and Utils.abs(..) % 50 == 12.
/// assert_eq!(partition_for("my-group", 50), Some(12));
/// ```
pub fn partition_for(group_id: &str, num_partitions: i32) -> Option<i32> {
    if num_partitions <= 0 {
        return None;
    }
    Some(kafka_abs(java_string_hash(group_id)) % num_partitions)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_hash_matches_known_java_values() {
        // Values printed by OpenJDK 17's String.hashCode on this machine.
        assert_eq!(java_string_hash("hello"), 99_162_322);
        assert_eq!(java_string_hash("my-group"), -1_906_497_762);
        assert_eq!(java_string_hash("test-group"), 627_841_412);
        assert_eq!(java_string_hash("console-consumer-12345"), 158_455_506);
        assert_eq!(partition_for("console-consumer-12345", 50), Some(6));
    }

    #[test]
    fn java_hash_uses_utf16_code_units() {
        // U+1F600 is the surrogate pair D83D DE00 in UTF-16.
        assert_eq!(java_string_hash("\u{1F600}"), 1_772_899);
        assert_eq!(partition_for("\u{1F600}", 50), Some(49));
        // "é" is one code unit (0xE9), not its two UTF-8 bytes.
        assert_eq!(java_string_hash("é"), 233);
    }

    #[test]
    fn kafka_abs_of_min_is_zero() {
        assert_eq!(kafka_abs(i32::MIN), 0);
        assert_eq!(kafka_abs(-5), 5);
        assert_eq!(kafka_abs(7), 7);
    }

    #[test]
    fn placement_is_abs_hash_mod_partitions() {
        for g in ["a", "group-1", "test-group", "zz"] {
            let h = java_string_hash(g);
            assert_eq!(partition_for(g, 50), Some(kafka_abs(h) % 50));
        }
        assert_eq!(partition_for("x", 0), None);
    }

    #[test]
    fn placement_of_hash_min_value_is_partition_zero() {
        // "polygenelubricants".hashCode() == Integer.MIN_VALUE (a well-known Java curiosity).
        assert_eq!(java_string_hash("polygenelubricants"), i32::MIN);
        assert_eq!(partition_for("polygenelubricants", 50), Some(0));
    }
}
