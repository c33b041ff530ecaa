//! A member of a consumer group (`ConsumerGroupMember`).

use super::types::{Assignment, MemberState};
use crate::record::{ClassicMemberMetadata, ConsumerMemberMetadata, CurrentMemberAssignment};

/// Member epoch sent by a member leaving the group.
pub const LEAVE_GROUP_MEMBER_EPOCH: i32 = -1;
/// Member epoch sent by a static member leaving temporarily (its partitions wait for it).
pub const LEAVE_GROUP_STATIC_MEMBER_EPOCH: i32 = -2;

/// A consumer group member: its subscription (record 5) and its current assignment (record 8).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerMember {
    /// The member id.
    pub member_id: String,
    /// The static instance id.
    pub instance_id: Option<String>,
    /// The rack the member runs in.
    pub rack_id: Option<String>,
    /// The client id.
    pub client_id: String,
    /// The client host.
    pub client_host: String,
    /// Subscribed topic names.
    pub subscribed_topic_names: Vec<String>,
    /// Subscribed regular expression (RE2 syntax, matched against whole names).
    pub subscribed_topic_regex: Option<String>,
    /// The time the member has to revoke partitions (`max.poll.interval.ms`).
    pub rebalance_timeout_ms: i32,
    /// The server assignor the member asks for.
    pub server_assignor: Option<String>,
    /// The member epoch.
    pub member_epoch: i32,
    /// The epoch before the last bump (to accept a retry whose response was lost).
    pub previous_member_epoch: i32,
    /// The reconciliation state.
    pub state: MemberState,
    /// Partitions the member owns at its epoch.
    pub assigned: Assignment,
    /// Partitions the member must give up before moving on.
    pub pending_revocation: Assignment,
    /// Set when the member speaks the classic protocol (it joined with JoinGroup).
    pub classic: Option<ClassicMemberMetadata>,
}

impl ConsumerMember {
    /// A member that has just joined: epoch 0, nothing owned.
    pub fn new(member_id: &str) -> ConsumerMember {
        ConsumerMember {
            member_id: member_id.to_string(),
            instance_id: None,
            rack_id: None,
            client_id: String::new(),
            client_host: String::new(),
            subscribed_topic_names: Vec::new(),
            subscribed_topic_regex: None,
            rebalance_timeout_ms: -1,
            server_assignor: None,
            member_epoch: 0,
            previous_member_epoch: 0,
            state: MemberState::Stable,
            assigned: Assignment::new(),
            pending_revocation: Assignment::new(),
            classic: None,
        }
    }

    /// The member's session timeout: its classic one, else the group's (`consumer_default`).
    pub fn session_timeout_ms(&self, consumer_default: i32) -> i32 {
        self.classic
            .as_ref()
            .map_or(consumer_default, |c| c.session_timeout_ms)
    }

    /// True if the member speaks the classic protocol.
    pub fn uses_classic_protocol(&self) -> bool {
        self.classic.is_some()
    }

    /// True if the member owns exactly its target at `target_epoch`.
    pub fn is_reconciled_to(&self, target_epoch: i32) -> bool {
        self.state == MemberState::Stable && self.member_epoch == target_epoch
    }

    /// The subscription part (what record 5 holds).
    pub fn metadata(&self) -> ConsumerMemberMetadata {
        ConsumerMemberMetadata {
            instance_id: self.instance_id.clone(),
            rack_id: self.rack_id.clone(),
            client_id: self.client_id.clone(),
            client_host: self.client_host.clone(),
            subscribed_topic_names: self.subscribed_topic_names.clone(),
            subscribed_topic_regex: self.subscribed_topic_regex.clone(),
            rebalance_timeout_ms: self.rebalance_timeout_ms,
            server_assignor: self.server_assignor.clone(),
            classic: self.classic.clone(),
        }
    }

    /// Takes the subscription part from record 5.
    pub fn set_metadata(&mut self, v: &ConsumerMemberMetadata) {
        let ConsumerMemberMetadata {
            instance_id,
            rack_id,
            client_id,
            client_host,
            subscribed_topic_names,
            subscribed_topic_regex,
            rebalance_timeout_ms,
            server_assignor,
            classic,
        } = v.clone();
        self.instance_id = instance_id;
        self.rack_id = rack_id;
        self.client_id = client_id;
        self.client_host = client_host;
        self.subscribed_topic_names = subscribed_topic_names;
        self.subscribed_topic_regex = subscribed_topic_regex;
        self.rebalance_timeout_ms = rebalance_timeout_ms;
        self.server_assignor = server_assignor;
        self.classic = classic;
    }

    /// The assignment part (what record 8 holds).
    pub fn assignment(&self) -> CurrentMemberAssignment {
        CurrentMemberAssignment {
            member_epoch: self.member_epoch,
            previous_member_epoch: self.previous_member_epoch,
            state: self.state,
            assigned: self.assigned.clone(),
            pending_revocation: self.pending_revocation.clone(),
        }
    }

    /// Takes the assignment part from record 8.
    pub fn set_assignment(&mut self, v: &CurrentMemberAssignment) {
        self.member_epoch = v.member_epoch;
        self.previous_member_epoch = v.previous_member_epoch;
        self.state = v.state;
        self.assigned = v.assigned.clone();
        self.pending_revocation = v.pending_revocation.clone();
    }

    /// The subscription part equals `other`'s (what record 5 holds).
    pub fn same_metadata(&self, other: &ConsumerMember) -> bool {
        self.metadata() == other.metadata()
    }

    /// The assignment part equals `other`'s (what record 8 holds).
    pub fn same_assignment(&self, other: &ConsumerMember) -> bool {
        self.assignment() == other.assignment()
    }
}
