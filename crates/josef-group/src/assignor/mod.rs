//! Client-side partition assignors of the classic protocol, as a library: `range`,
//! `roundrobin`, `sticky` and `cooperative-sticky` (the protocol names Java and librdkafka
//! consumers put in JoinGroup).
//!
//! In the classic protocol the group *leader* (a client) runs the assignor; the coordinator only
//! relays bytes. Josef uses these for tests and simulations (a simulated leader), for tools, and
//! as a base for server-side assignment later.
//!
//! ```
//! use std::collections::BTreeMap;
//! use josef_group::assignor::{AssignorMember, PartitionAssignor, RangeAssignor};
//! use josef_group::consumer_protocol::Subscription;
//!
//! let topics = BTreeMap::from([("t".to_string(), 3)]);
//! let sub = Subscription { topics: vec!["t".into()], ..Subscription::default() };
//! let members = vec![AssignorMember::new("a", None, sub.clone()), AssignorMember::new("b", None, sub)];
//! let out = RangeAssignor.assign(&topics, &members).unwrap();
//! assert_eq!(out["a"].topic_partitions().count(), 2);
//! assert_eq!(out["b"].topic_partitions().count(), 1);
//! ```

mod range;
mod round_robin;
pub mod server;
mod sticky;

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;

use crate::consumer_protocol::{Assignment, Subscription, TopicPartitions};
use crate::error::GroupError;

pub use range::RangeAssignor;
pub use round_robin::RoundRobinAssignor;
pub use sticky::{
    decode_sticky_user_data, encode_sticky_user_data, CooperativeStickyAssignor, StickyAssignor,
};

/// A topic partition.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TopicPartition {
    /// The topic name.
    pub topic: String,
    /// The partition index.
    pub partition: i32,
}

impl TopicPartition {
    /// A topic partition.
    pub fn new(topic: impl Into<String>, partition: i32) -> Self {
        TopicPartition {
            topic: topic.into(),
            partition,
        }
    }
}

/// One group member as the assignor sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssignorMember {
    /// The member id.
    pub member_id: String,
    /// The static instance id, if any (orders members like Kafka's `MemberInfo`).
    pub group_instance_id: Option<String>,
    /// The decoded subscription.
    pub subscription: Subscription,
}

impl AssignorMember {
    /// A member.
    pub fn new(
        member_id: &str,
        group_instance_id: Option<&str>,
        subscription: Subscription,
    ) -> Self {
        AssignorMember {
            member_id: member_id.to_string(),
            group_instance_id: group_instance_id.map(str::to_string),
            subscription,
        }
    }
}

/// Java `String.compareTo` (UTF-16 code unit order), which differs from Rust's UTF-8 order
/// only for characters above U+FFFF against U+E000..U+FFFF.
pub(crate) fn java_cmp(a: &str, b: &str) -> Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

/// Kafka's `MemberInfo` order: static members first by instance id, then dynamic by member id.
pub(crate) fn member_order(a: &AssignorMember, b: &AssignorMember) -> Ordering {
    match (&a.group_instance_id, &b.group_instance_id) {
        (Some(x), Some(y)) => java_cmp(x, y),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => java_cmp(&a.member_id, &b.member_id),
    }
}

/// A partition assignor: given the partition count of every topic and the members'
/// subscriptions, it gives each member its partitions.
pub trait PartitionAssignor {
    /// The protocol name (`range`, `roundrobin`, `sticky`, `cooperative-sticky`).
    fn name(&self) -> &'static str;

    /// Computes the assignment. Topics missing from `partitions_per_topic` are ignored, as
    /// Kafka's assignors do for topics without metadata. Every member gets an entry.
    fn assign(
        &self,
        partitions_per_topic: &BTreeMap<String, i32>,
        members: &[AssignorMember],
    ) -> Result<BTreeMap<String, Assignment>, GroupError>;
}

/// Groups a member's partitions by topic, sorted, into a ConsumerProtocol assignment.
pub fn to_assignment(partitions: impl IntoIterator<Item = TopicPartition>) -> Assignment {
    let mut by_topic: BTreeMap<String, BTreeSet<i32>> = BTreeMap::new();
    for tp in partitions {
        by_topic.entry(tp.topic).or_default().insert(tp.partition);
    }
    Assignment {
        partitions: by_topic
            .into_iter()
            .map(|(topic, ps)| TopicPartitions {
                topic,
                partitions: ps.into_iter().collect(),
            })
            .collect(),
        user_data: None,
    }
}

/// The assignor for a protocol name, if this crate has it.
pub fn assignor_for(name: &str) -> Option<Box<dyn PartitionAssignor>> {
    match name {
        "range" => Some(Box::new(RangeAssignor)),
        "roundrobin" => Some(Box::new(RoundRobinAssignor)),
        "sticky" => Some(Box::new(StickyAssignor)),
        "cooperative-sticky" => Some(Box::new(CooperativeStickyAssignor)),
        _ => None,
    }
}

/// What a group leader does with the JoinGroup member list: decodes each member's
/// subscription, runs the assignor named by the selected protocol and encodes one assignment per
/// member (ConsumerProtocolAssignment, `assignment_version`), ready for SyncGroup.
///
/// `members` is `(member_id, group_instance_id, metadata)` as in the JoinGroup response.
pub fn leader_assign(
    protocol_name: &str,
    partitions_per_topic: &BTreeMap<String, i32>,
    members: &[(String, Option<String>, Bytes)],
    assignment_version: i16,
) -> Result<Vec<(String, Bytes)>, GroupError> {
    let assignor = assignor_for(protocol_name).ok_or_else(|| GroupError::Assignor {
        assignor: "unknown",
        reason: format!("no assignor named {protocol_name:?}"),
    })?;
    let mut decoded = Vec::with_capacity(members.len());
    for (member_id, instance_id, metadata) in members {
        let (_, subscription) = Subscription::decode(metadata)?;
        decoded.push(AssignorMember {
            member_id: member_id.clone(),
            group_instance_id: instance_id.clone(),
            subscription,
        });
    }
    let assignment = assignor.assign(partitions_per_topic, &decoded)?;
    Ok(assignment
        .into_iter()
        .map(|(m, a)| (m, a.encode(assignment_version)))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_order_puts_static_members_first() {
        let s = Subscription::default();
        let a = AssignorMember::new("a", None, s.clone());
        let z = AssignorMember::new("z", Some("i2"), s.clone());
        let y = AssignorMember::new("y", Some("i1"), s);
        let mut v = [a.clone(), z.clone(), y.clone()];
        v.sort_by(member_order);
        assert_eq!(v, [y, z, a]);
    }

    #[test]
    fn java_cmp_orders_by_utf16_units() {
        // U+FFFD (one unit 0xFFFD) sorts after U+1F600 (0xD83D ...) in Java, before it in UTF-8.
        assert_eq!(java_cmp("\u{FFFD}", "\u{1F600}"), Ordering::Greater);
        assert_eq!("\u{FFFD}".cmp("\u{1F600}"), Ordering::Less);
    }

    #[test]
    fn assignor_for_knows_the_four_names() {
        for n in ["range", "roundrobin", "sticky", "cooperative-sticky"] {
            assert_eq!(assignor_for(n).unwrap().name(), n);
        }
        assert!(assignor_for("uniform").is_none());
    }
}
