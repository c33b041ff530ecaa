//! Kafka's placement hash for coordinator keys (group ids, transactional ids).
//!
//! Kafka places a key on partition `Utils.abs(key.hashCode()) % partitions` of `__consumer_offsets` or
//! `__transaction_state`. `String.hashCode` runs over UTF-16 code units with wrapping 32-bit arithmetic,
//! and `Utils.abs(Integer.MIN_VALUE)` is 0. Both coordinators share this one copy so they can never
//! disagree with each other or with Kafka.

/// Java's `String.hashCode`: `h = 31 * h + c` over the UTF-16 code units, wrapping.
///
/// ```
/// use josef_coordinator::placement::java_string_hash;
/// assert_eq!(java_string_hash(""), 0);
/// assert_eq!(java_string_hash("hello"), 99162322);
/// ```
pub fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, unit| h.wrapping_mul(31).wrapping_add(unit as i32))
}

/// Kafka's `Utils.abs`: absolute value, with `i32::MIN` mapped to 0.
///
/// ```
/// use josef_coordinator::placement::kafka_abs;
/// assert_eq!(kafka_abs(i32::MIN), 0);
/// assert_eq!(kafka_abs(-7), 7);
/// ```
pub fn kafka_abs(n: i32) -> i32 {
    if n == i32::MIN {
        0
    } else {
        n.abs()
    }
}
