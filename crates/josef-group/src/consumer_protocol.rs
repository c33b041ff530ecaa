//! The embedded "consumer" protocol: what Java/librdkafka consumers put in JoinGroup metadata
//! (`ConsumerProtocolSubscription`) and SyncGroup assignments (`ConsumerProtocolAssignment`).
//!
//! Both are a big-endian `int16` version followed by a non-flexible struct (int16-length strings,
//! int32-length arrays and bytes, `-1` for null). Versions above the highest known one are read
//! as the highest known one, as Kafka's `ConsumerProtocol` does: newer versions only append fields.
//! Lengths are checked against the remaining bytes before anything is allocated.

use bytes::{BufMut, Bytes, BytesMut};

use crate::error::GroupError;

/// `ProtocolType` of consumer groups.
pub const CONSUMER_PROTOCOL_TYPE: &str = "consumer";
/// Highest `ConsumerProtocolSubscription` version this crate writes and fully reads.
pub const SUBSCRIPTION_HIGHEST_VERSION: i16 = 3;
/// Highest `ConsumerProtocolAssignment` version this crate writes and fully reads.
pub const ASSIGNMENT_HIGHEST_VERSION: i16 = 3;

/// A topic and some of its partitions.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TopicPartitions {
    /// The topic name.
    pub topic: String,
    /// Partition indexes.
    pub partitions: Vec<i32>,
}

/// `ConsumerProtocolSubscription` (v0–v3): a member's topics and, from v1, what it owns.
///
/// ```
/// use josef_group::consumer_protocol::Subscription;
/// let sub = Subscription { topics: vec!["orders".into()], generation_id: 4, ..Subscription::default() };
/// let bytes = sub.encode(3);
/// let back = Subscription::decode(&bytes).unwrap();
/// assert_eq!(back.0, 3);
/// assert_eq!(back.1, sub);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subscription {
    /// Subscribed topics.
    pub topics: Vec<String>,
    /// Opaque assignor data (`null` → `None`).
    pub user_data: Option<Bytes>,
    /// Partitions the member owns (v1+), used by the sticky assignors.
    pub owned_partitions: Vec<TopicPartitions>,
    /// Generation the owned partitions belong to (v2+; `-1` if unknown).
    pub generation_id: i32,
    /// The member's rack (v3+).
    pub rack_id: Option<String>,
}

impl Default for Subscription {
    fn default() -> Self {
        Subscription {
            topics: Vec::new(),
            user_data: None,
            owned_partitions: Vec::new(),
            generation_id: -1,
            rack_id: None,
        }
    }
}

/// `ConsumerProtocolAssignment` (v0–v3): the partitions the leader gives one member.
///
/// ```
/// use josef_group::consumer_protocol::{Assignment, TopicPartitions};
/// let a = Assignment { partitions: vec![TopicPartitions { topic: "t".into(), partitions: vec![0, 2] }], user_data: None };
/// assert_eq!(Assignment::decode(&a.encode(0)).unwrap().1, a);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Assignment {
    /// Assigned partitions by topic.
    pub partitions: Vec<TopicPartitions>,
    /// Opaque assignor data.
    pub user_data: Option<Bytes>,
}

struct Reader<'a> {
    buf: &'a [u8],
    what: &'static str,
}

impl<'a> Reader<'a> {
    fn err(&self, reason: &str) -> GroupError {
        GroupError::Malformed {
            what: self.what,
            reason: reason.to_string(),
        }
    }
    fn take(&mut self, n: usize) -> Result<&'a [u8], GroupError> {
        if self.buf.len() < n {
            return Err(self.err("truncated"));
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }
    fn i16(&mut self) -> Result<i16, GroupError> {
        let b = self.take(2)?;
        Ok(i16::from_be_bytes([b[0], b[1]]))
    }
    fn i32(&mut self) -> Result<i32, GroupError> {
        let b = self.take(4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn nullable_string(&mut self) -> Result<Option<String>, GroupError> {
        let len = self.i16()?;
        if len < 0 {
            return Ok(None);
        }
        let raw = self.take(len as usize)?;
        String::from_utf8(raw.to_vec())
            .map(Some)
            .map_err(|_| self.err("string is not UTF-8"))
    }
    fn string(&mut self) -> Result<String, GroupError> {
        self.nullable_string()?
            .ok_or_else(|| self.err("null string where one is required"))
    }
    fn nullable_bytes(&mut self) -> Result<Option<Bytes>, GroupError> {
        let len = self.i32()?;
        if len < 0 {
            return Ok(None);
        }
        Ok(Some(Bytes::copy_from_slice(self.take(len as usize)?)))
    }
    /// Array length, checked against the remaining bytes (each element takes at least `min` bytes).
    fn array_len(&mut self, min_elem: usize) -> Result<usize, GroupError> {
        let len = self.i32()?;
        if len < 0 {
            return Ok(0);
        }
        let len = len as usize;
        if len.saturating_mul(min_elem) > self.buf.len() {
            return Err(self.err("array longer than the remaining bytes"));
        }
        Ok(len)
    }
    fn topic_partitions(&mut self) -> Result<Vec<TopicPartitions>, GroupError> {
        let n = self.array_len(6)?;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let topic = self.string()?;
            let m = self.array_len(4)?;
            let mut partitions = Vec::with_capacity(m);
            for _ in 0..m {
                partitions.push(self.i32()?);
            }
            out.push(TopicPartitions { topic, partitions });
        }
        Ok(out)
    }
}

fn put_string(buf: &mut BytesMut, s: &str) {
    let b = s.as_bytes();
    buf.put_i16(b.len().min(i16::MAX as usize) as i16);
    buf.put_slice(&b[..b.len().min(i16::MAX as usize)]);
}

fn put_nullable_string(buf: &mut BytesMut, s: Option<&str>) {
    match s {
        Some(s) => put_string(buf, s),
        None => buf.put_i16(-1),
    }
}

fn put_nullable_bytes(buf: &mut BytesMut, b: Option<&Bytes>) {
    match b {
        Some(b) => {
            buf.put_i32(b.len() as i32);
            buf.put_slice(b);
        }
        None => buf.put_i32(-1),
    }
}

fn put_topic_partitions(buf: &mut BytesMut, tps: &[TopicPartitions]) {
    buf.put_i32(tps.len() as i32);
    for tp in tps {
        put_string(buf, &tp.topic);
        buf.put_i32(tp.partitions.len() as i32);
        for p in &tp.partitions {
            buf.put_i32(*p);
        }
    }
}

fn read_version(r: &mut Reader<'_>) -> Result<i16, GroupError> {
    let version = r.i16()?;
    if version < 0 {
        return Err(GroupError::UnsupportedVersion {
            what: r.what,
            version,
        });
    }
    Ok(version)
}

impl Subscription {
    /// Encodes with the version header. Versions above 3 are written as 3.
    pub fn encode(&self, version: i16) -> Bytes {
        let version = version.clamp(0, SUBSCRIPTION_HIGHEST_VERSION);
        let mut buf = BytesMut::new();
        buf.put_i16(version);
        buf.put_i32(self.topics.len() as i32);
        for t in &self.topics {
            put_string(&mut buf, t);
        }
        put_nullable_bytes(&mut buf, self.user_data.as_ref());
        if version >= 1 {
            put_topic_partitions(&mut buf, &self.owned_partitions);
        }
        if version >= 2 {
            buf.put_i32(self.generation_id);
        }
        if version >= 3 {
            put_nullable_string(&mut buf, self.rack_id.as_deref());
        }
        buf.freeze()
    }

    /// Decodes bytes that start with the version header; returns `(version, subscription)`.
    pub fn decode(bytes: &[u8]) -> Result<(i16, Subscription), GroupError> {
        let mut r = Reader {
            buf: bytes,
            what: "ConsumerProtocolSubscription",
        };
        let version = read_version(&mut r)?;
        let effective = version.min(SUBSCRIPTION_HIGHEST_VERSION);
        let n = r.array_len(2)?;
        let mut topics = Vec::with_capacity(n);
        for _ in 0..n {
            topics.push(r.string()?);
        }
        let user_data = r.nullable_bytes()?;
        let mut sub = Subscription {
            topics,
            user_data,
            ..Subscription::default()
        };
        if effective >= 1 {
            sub.owned_partitions = r.topic_partitions()?;
        }
        if effective >= 2 {
            sub.generation_id = r.i32()?;
        }
        if effective >= 3 {
            sub.rack_id = r.nullable_string()?;
        }
        Ok((version, sub))
    }
}

impl Assignment {
    /// Encodes with the version header. All versions share one layout.
    pub fn encode(&self, version: i16) -> Bytes {
        let version = version.clamp(0, ASSIGNMENT_HIGHEST_VERSION);
        let mut buf = BytesMut::new();
        buf.put_i16(version);
        put_topic_partitions(&mut buf, &self.partitions);
        put_nullable_bytes(&mut buf, self.user_data.as_ref());
        buf.freeze()
    }

    /// Decodes bytes that start with the version header; returns `(version, assignment)`.
    pub fn decode(bytes: &[u8]) -> Result<(i16, Assignment), GroupError> {
        let mut r = Reader {
            buf: bytes,
            what: "ConsumerProtocolAssignment",
        };
        let version = read_version(&mut r)?;
        let partitions = r.topic_partitions()?;
        let user_data = r.nullable_bytes()?;
        Ok((
            version,
            Assignment {
                partitions,
                user_data,
            },
        ))
    }

    /// All `(topic, partition)` pairs of the assignment.
    pub fn topic_partitions(&self) -> impl Iterator<Item = (&str, i32)> + '_ {
        self.partitions
            .iter()
            .flat_map(|tp| tp.partitions.iter().map(move |p| (tp.topic.as_str(), *p)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subscription_v0_layout_is_kafkas() {
        let sub = Subscription {
            topics: vec!["ab".into()],
            ..Subscription::default()
        };
        let b = sub.encode(0);
        assert_eq!(
            &b[..],
            &[0, 0, 0, 0, 0, 1, 0, 2, b'a', b'b', 0xff, 0xff, 0xff, 0xff]
        );
    }

    #[test]
    fn subscription_round_trips_every_version() {
        let sub = Subscription {
            topics: vec!["a".into(), "b".into()],
            user_data: Some(Bytes::from_static(b"ud")),
            owned_partitions: vec![TopicPartitions {
                topic: "a".into(),
                partitions: vec![1, 3],
            }],
            generation_id: 7,
            rack_id: Some("r1".into()),
        };
        for v in 0..=3i16 {
            let (ver, back) = Subscription::decode(&sub.encode(v)).unwrap();
            assert_eq!(ver, v);
            assert_eq!(back.topics, sub.topics);
            assert_eq!(back.user_data, sub.user_data);
            if v >= 1 {
                assert_eq!(back.owned_partitions, sub.owned_partitions);
            } else {
                assert!(back.owned_partitions.is_empty());
            }
            assert_eq!(back.generation_id, if v >= 2 { 7 } else { -1 });
            assert_eq!(back.rack_id.is_some(), v >= 3);
        }
    }

    #[test]
    fn subscription_newer_version_is_read_as_highest_known() {
        let mut bytes = BytesMut::from(&Subscription::default().encode(3)[..]);
        bytes[1] = 9; // version 9 with trailing future fields
        bytes.put_slice(&[1, 2, 3]);
        let (v, sub) = Subscription::decode(&bytes).unwrap();
        assert_eq!(v, 9);
        assert_eq!(sub, Subscription::default());
    }

    #[test]
    fn negative_version_is_rejected() {
        assert!(matches!(
            Subscription::decode(&[0xff, 0xff]),
            Err(GroupError::UnsupportedVersion { .. })
        ));
    }

    #[test]
    fn huge_array_length_is_rejected_before_allocating() {
        // version 0, topic count i32::MAX, nothing else
        let bytes = [0, 0, 0x7f, 0xff, 0xff, 0xff];
        assert!(Subscription::decode(&bytes).is_err());
        let bytes = [0, 0, 0x7f, 0xff, 0xff, 0xff];
        assert!(Assignment::decode(&bytes).is_err());
    }

    #[test]
    fn truncated_input_is_an_error() {
        let b = Subscription {
            topics: vec!["topic".into()],
            ..Subscription::default()
        }
        .encode(1);
        for cut in 0..b.len() {
            assert!(Subscription::decode(&b[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn assignment_round_trip() {
        let a = Assignment {
            partitions: vec![
                TopicPartitions {
                    topic: "x".into(),
                    partitions: vec![0],
                },
                TopicPartitions {
                    topic: "y".into(),
                    partitions: vec![],
                },
            ],
            user_data: Some(Bytes::new()),
        };
        for v in 0..=3 {
            assert_eq!(Assignment::decode(&a.encode(v)).unwrap(), (v, a.clone()));
        }
    }
}

#[cfg(test)]
mod proptests {
    use super::*;
    use proptest::prelude::*;

    fn subscription() -> impl Strategy<Value = Subscription> {
        (
            prop::collection::vec("[a-z.-]{0,12}", 0..4),
            prop::option::of(prop::collection::vec(any::<u8>(), 0..16)),
            prop::collection::vec(
                ("[a-z]{1,8}", prop::collection::vec(any::<i32>(), 0..4)),
                0..3,
            ),
            any::<i32>(),
            prop::option::of("[a-z0-9]{0,6}"),
        )
            .prop_map(|(topics, ud, owned, generation_id, rack_id)| Subscription {
                topics,
                user_data: ud.map(Bytes::from),
                owned_partitions: owned
                    .into_iter()
                    .map(|(topic, partitions)| TopicPartitions { topic, partitions })
                    .collect(),
                generation_id,
                rack_id,
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn subscription_v3_round_trips(sub in subscription()) {
            let (v, back) = Subscription::decode(&sub.encode(3)).unwrap();
            prop_assert_eq!(v, 3);
            prop_assert_eq!(back, sub);
        }

        #[test]
        fn decoders_never_panic_on_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
            let _ = Subscription::decode(&bytes);
            let _ = Assignment::decode(&bytes);
            let _ = crate::assignor::decode_sticky_user_data(&bytes);
        }
    }
}
