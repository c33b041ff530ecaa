//! The vocabulary of the consumer group protocol: assignments by topic id, member and group
//! states, and the topic image the coordinator resolves subscriptions against.

use std::collections::{BTreeMap, BTreeSet};

use josef_protocol::Uuid;

/// Partitions by topic id. Topics without partitions are never stored (so two equal
/// assignments compare equal).
pub type Assignment = BTreeMap<Uuid, BTreeSet<i32>>;

/// Number of partitions in an assignment.
pub fn assignment_len(a: &Assignment) -> usize {
    a.values().map(|p| p.len()).sum()
}

/// Drops topics left without partitions.
pub fn normalize(mut a: Assignment) -> Assignment {
    a.retain(|_, p| !p.is_empty());
    a
}

/// True if `a` holds `(topic, partition)`.
pub fn contains(a: &Assignment, topic: &Uuid, partition: i32) -> bool {
    a.get(topic).is_some_and(|p| p.contains(&partition))
}

/// True if every partition of `sub` is in `sup`.
pub fn is_subset(sub: &Assignment, sup: &Assignment) -> bool {
    sub.iter()
        .all(|(t, ps)| ps.iter().all(|p| contains(sup, t, *p)))
}

/// A member's reconciliation state (`MemberState`, stored as an int8 in record 8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemberState {
    /// Owns exactly its assignment at its epoch.
    Stable,
    /// Must revoke partitions before moving to the next epoch.
    UnrevokedPartitions,
    /// At the target epoch, waiting for partitions other members still hold.
    UnreleasedPartitions,
    /// A state this coordinator does not know (read from a newer record).
    Unknown,
}

impl MemberState {
    /// The record's int8.
    pub fn value(self) -> i8 {
        match self {
            MemberState::Stable => 0,
            MemberState::UnrevokedPartitions => 1,
            MemberState::UnreleasedPartitions => 2,
            MemberState::Unknown => 127,
        }
    }

    /// The state of a record's int8.
    pub fn from_value(v: i8) -> MemberState {
        match v {
            0 => MemberState::Stable,
            1 => MemberState::UnrevokedPartitions,
            2 => MemberState::UnreleasedPartitions,
            _ => MemberState::Unknown,
        }
    }

    /// Kafka's name of the state.
    pub fn name(self) -> &'static str {
        match self {
            MemberState::Stable => "STABLE",
            MemberState::UnrevokedPartitions => "UNREVOKED_PARTITIONS",
            MemberState::UnreleasedPartitions => "UNRELEASED_PARTITIONS",
            MemberState::Unknown => "UNKNOWN",
        }
    }
}

/// A consumer group's state (`ConsumerGroup.ConsumerGroupState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConsumerGroupState {
    /// No members.
    Empty,
    /// The group epoch is ahead of the target assignment epoch.
    Assigning,
    /// Some member has not reached the target assignment.
    Reconciling,
    /// Every member owns its target assignment.
    Stable,
    /// Being removed.
    Dead,
}

impl ConsumerGroupState {
    /// Kafka's name of the state (what ListGroups and ConsumerGroupDescribe return).
    pub fn name(self) -> &'static str {
        match self {
            ConsumerGroupState::Empty => "Empty",
            ConsumerGroupState::Assigning => "Assigning",
            ConsumerGroupState::Reconciling => "Reconciling",
            ConsumerGroupState::Stable => "Stable",
            ConsumerGroupState::Dead => "Dead",
        }
    }
}

/// One topic as the coordinator knows it from the cluster's metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicInfo {
    /// The topic id.
    pub id: Uuid,
    /// The partition count.
    pub partitions: i32,
    /// Racks of each partition's replicas (empty when unknown); index = partition.
    pub racks: Vec<Vec<String>>,
}

impl TopicInfo {
    /// A topic without rack information.
    pub fn new(id: Uuid, partitions: i32) -> TopicInfo {
        TopicInfo {
            id,
            partitions,
            racks: Vec::new(),
        }
    }

    /// The racks of a partition's replicas.
    pub fn partition_racks(&self, partition: i32) -> &[String] {
        usize::try_from(partition)
            .ok()
            .and_then(|p| self.racks.get(p))
            .map(|r| r.as_slice())
            .unwrap_or(&[])
    }
}

/// The topics of the cluster by name: what subscriptions (names and regular expressions) are
/// resolved against. The broker hands a new image to
/// [`crate::GroupCoordinator::on_topics_changed`] when topics are created, deleted or grow.
pub type TopicImage = BTreeMap<String, TopicInfo>;

/// A subscribed topic as recorded in the group's subscription metadata (record 4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubscribedTopic {
    /// The topic id.
    pub id: Uuid,
    /// The topic name.
    pub name: String,
    /// The partition count.
    pub partitions: i32,
    /// Racks per partition: `(partition, racks)` for partitions with rack information.
    pub racks: BTreeMap<i32, BTreeSet<String>>,
}

impl SubscribedTopic {
    /// The entry of `name` in the image.
    pub fn from_image(name: &str, t: &TopicInfo) -> SubscribedTopic {
        let racks = (0..t.partitions)
            .filter_map(|p| {
                let r = t.partition_racks(p);
                (!r.is_empty()).then(|| (p, r.iter().cloned().collect()))
            })
            .collect();
        SubscribedTopic {
            id: t.id,
            name: name.to_string(),
            partitions: t.partitions,
            racks,
        }
    }
}
