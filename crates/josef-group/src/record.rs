//! The `__consumer_offsets` records this coordinator writes and replays, as domain types.
//!
//! [`crate::serde::GroupRecordSerde`] turns them into Kafka's key/value bytes
//! (`OffsetCommitKey/Value`, `GroupMetadataKey/Value`).

use bytes::Bytes;

/// Key of an offset commit: group, topic and partition.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OffsetKey {
    /// The group id.
    pub group: String,
    /// The topic name.
    pub topic: String,
    /// The partition index.
    pub partition: i32,
}

/// A committed offset (`OffsetCommitValue`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetValue {
    /// The committed offset.
    pub offset: i64,
    /// The leader epoch of the last consumed record, or `-1`.
    pub leader_epoch: i32,
    /// Client metadata (never null in the record: null is stored as `""`).
    pub metadata: String,
    /// When the commit was made.
    pub commit_timestamp: i64,
    /// Explicit expiry (OffsetCommit v2–v4 retention time; record value version 1), if any.
    pub expire_timestamp: Option<i64>,
}

/// One member in a `GroupMetadataValue`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberMetadata {
    /// The member id.
    pub member_id: String,
    /// The static instance id.
    pub group_instance_id: Option<String>,
    /// The client id.
    pub client_id: String,
    /// The client host.
    pub client_host: String,
    /// The rebalance timeout (`-1` in records older than v1).
    pub rebalance_timeout_ms: i32,
    /// The session timeout.
    pub session_timeout_ms: i32,
    /// The member's metadata for the group's selected protocol.
    pub subscription: Bytes,
    /// The member's assignment.
    pub assignment: Bytes,
}

/// A classic group's persisted state (`GroupMetadataValue`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupMetadata {
    /// The protocol type (`""` for a group that has none yet).
    pub protocol_type: String,
    /// The generation.
    pub generation: i32,
    /// The selected protocol.
    pub protocol: Option<String>,
    /// The leader's member id.
    pub leader: Option<String>,
    /// When the group entered its current state (`-1` if unknown).
    pub current_state_timestamp: i64,
    /// The members with their assignments.
    pub members: Vec<MemberMetadata>,
}

/// A record of a `__consumer_offsets` partition. `None` values are tombstones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupRecord {
    /// An offset commit or its tombstone.
    OffsetCommit {
        /// The key.
        key: OffsetKey,
        /// The value, `None` to delete.
        value: Option<OffsetValue>,
    },
    /// A classic group's metadata or its tombstone.
    GroupMetadata {
        /// The group id.
        group: String,
        /// The value, `None` to delete the group.
        value: Option<GroupMetadata>,
    },
    /// A consumer group (KIP-848) record.
    Consumer {
        /// The group id.
        group: String,
        /// The record.
        record: ConsumerRecord,
    },
}

impl GroupRecord {
    /// The group this record belongs to.
    pub fn group_id(&self) -> &str {
        match self {
            GroupRecord::OffsetCommit { key, .. } => &key.group,
            GroupRecord::GroupMetadata { group, .. } => group,
            GroupRecord::Consumer { group, .. } => group,
        }
    }

    /// True for tombstones.
    pub fn is_tombstone(&self) -> bool {
        match self {
            GroupRecord::OffsetCommit { value, .. } => value.is_none(),
            GroupRecord::GroupMetadata { value, .. } => value.is_none(),
            GroupRecord::Consumer { record, .. } => record.is_tombstone(),
        }
    }
}

/// A consumer group member's subscription (`ConsumerGroupMemberMetadataValue`, record 5).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConsumerMemberMetadata {
    /// The static instance id.
    pub instance_id: Option<String>,
    /// The rack id.
    pub rack_id: Option<String>,
    /// The client id.
    pub client_id: String,
    /// The client host.
    pub client_host: String,
    /// Subscribed topic names.
    pub subscribed_topic_names: Vec<String>,
    /// Subscribed regular expression.
    pub subscribed_topic_regex: Option<String>,
    /// The rebalance timeout.
    pub rebalance_timeout_ms: i32,
    /// The server assignor asked for.
    pub server_assignor: Option<String>,
    /// Set for a member that speaks the classic protocol (JoinGroup/SyncGroup/Heartbeat) inside
    /// a consumer group; `None` for consumer-protocol members.
    pub classic: Option<ClassicMemberMetadata>,
}

/// What a classic-protocol member of a consumer group joined with (record 5's tagged
/// `ClassicMemberMetadata`): needed to answer its JoinGroup/SyncGroup and to turn the group back
/// into a classic group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassicMemberMetadata {
    /// The member's classic session timeout.
    pub session_timeout_ms: i32,
    /// The protocols (assignor name and embedded subscription) the member supports.
    pub supported_protocols: Vec<crate::api::JoinProtocol>,
}

/// A consumer group member's current assignment (`ConsumerGroupCurrentMemberAssignmentValue`,
/// record 8).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CurrentMemberAssignment {
    /// The member epoch.
    pub member_epoch: i32,
    /// The previous member epoch.
    pub previous_member_epoch: i32,
    /// The member state.
    pub state: crate::consumer::MemberState,
    /// Owned partitions.
    pub assigned: crate::consumer::Assignment,
    /// Partitions pending revocation.
    pub pending_revocation: crate::consumer::Assignment,
}

/// The records of consumer groups (KIP-848). `None` values are tombstones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConsumerRecord {
    /// Record 3: the group epoch (a tombstone deletes the group).
    GroupMetadata {
        /// The group epoch.
        epoch: Option<i32>,
    },
    /// Record 4: the subscribed topics' metadata.
    PartitionMetadata {
        /// The topics.
        topics: Option<Vec<crate::consumer::SubscribedTopic>>,
    },
    /// Record 5: a member's subscription.
    MemberMetadata {
        /// The member id.
        member_id: String,
        /// The value.
        value: Option<ConsumerMemberMetadata>,
    },
    /// Record 6: the target assignment epoch.
    TargetAssignmentMetadata {
        /// The assignment epoch.
        epoch: Option<i32>,
    },
    /// Record 7: a member's target assignment.
    TargetAssignmentMember {
        /// The member id.
        member_id: String,
        /// The target.
        value: Option<crate::consumer::Assignment>,
    },
    /// Record 8: a member's current assignment.
    CurrentMemberAssignment {
        /// The member id.
        member_id: String,
        /// The value.
        value: Option<CurrentMemberAssignment>,
    },
}

impl ConsumerRecord {
    /// True for tombstones.
    pub fn is_tombstone(&self) -> bool {
        match self {
            ConsumerRecord::GroupMetadata { epoch } => epoch.is_none(),
            ConsumerRecord::PartitionMetadata { topics } => topics.is_none(),
            ConsumerRecord::MemberMetadata { value, .. } => value.is_none(),
            ConsumerRecord::TargetAssignmentMetadata { epoch } => epoch.is_none(),
            ConsumerRecord::TargetAssignmentMember { value, .. } => value.is_none(),
            ConsumerRecord::CurrentMemberAssignment { value, .. } => value.is_none(),
        }
    }
}
