//! A classic group member (`ClassicGroupMember`).

use bytes::Bytes;

use crate::api::{JoinProtocol, RequestId};

/// A member of a classic group, with its parked JoinGroup / SyncGroup requests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassicMember {
    /// The member id.
    pub member_id: String,
    /// The static instance id.
    pub group_instance_id: Option<String>,
    /// The client id.
    pub client_id: String,
    /// The client host.
    pub client_host: String,
    /// The rebalance timeout.
    pub rebalance_timeout_ms: i32,
    /// The session timeout.
    pub session_timeout_ms: i32,
    /// The protocol type.
    pub protocol_type: String,
    /// Supported protocols in preference order.
    pub protocols: Vec<JoinProtocol>,
    /// The current assignment (empty until the leader's SyncGroup).
    pub assignment: Bytes,
    /// The parked JoinGroup, if the member is waiting for the join phase to end.
    pub awaiting_join: Option<RequestId>,
    /// The API version of the parked JoinGroup (some response fields depend on it).
    pub awaiting_join_version: i16,
    /// The parked SyncGroup, if the member is waiting for the leader's assignment.
    pub awaiting_sync: Option<RequestId>,
    /// Set while a new member's first JoinGroup is parked: such members may expire even then.
    pub is_new: bool,
}

impl ClassicMember {
    /// True if the member has a parked JoinGroup.
    pub fn is_awaiting_join(&self) -> bool {
        self.awaiting_join.is_some()
    }

    /// True if the member has a parked SyncGroup.
    pub fn is_awaiting_sync(&self) -> bool {
        self.awaiting_sync.is_some()
    }

    /// True for static members.
    pub fn is_static(&self) -> bool {
        self.group_instance_id.is_some()
    }

    /// Metadata for `protocol`, empty if the member does not support it.
    pub fn metadata(&self, protocol: &str) -> Bytes {
        self.protocols
            .iter()
            .find(|p| p.name == protocol)
            .map(|p| p.metadata.clone())
            .unwrap_or_default()
    }

    /// True if the member's protocols (names and metadata, in order) equal `protocols`.
    pub fn matches(&self, protocols: &[JoinProtocol]) -> bool {
        self.protocols == protocols
    }

    /// The member's vote: its most preferred protocol among `candidates`.
    pub fn vote<'a>(&'a self, candidates: &[&str]) -> Option<&'a str> {
        self.protocols
            .iter()
            .map(|p| p.name.as_str())
            .find(|n| candidates.contains(n))
    }

    /// Whether an expiring session timer should spare the member: members parked in a
    /// rebalance satisfy heartbeats automatically, except new members (`hasSatisfiedHeartbeat`).
    pub fn has_satisfied_heartbeat(&self) -> bool {
        if self.is_new {
            false
        } else {
            self.is_awaiting_join() || self.is_awaiting_sync()
        }
    }
}
