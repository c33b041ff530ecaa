//! Version-independent request and response types of the group APIs.
//!
//! They carry the union of the fields of all versions; [`crate::wire`] maps the generated wire
//! messages of each version onto them. Strings are `String`, opaque metadata is `Bytes`.

use bytes::Bytes;

use crate::error::Errors;

/// The broker's handle of a request whose response may be completed later (JoinGroup and
/// SyncGroup park until the other members arrive). The broker picks it (e.g. connection id and
/// correlation id packed together) and matches [`Completion`]s back to open requests.
pub type RequestId = u64;

/// Who sent the request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RequestContext {
    /// The request header's client id.
    pub client_id: String,
    /// The client's address as text (stored as the member's client host).
    pub client_host: String,
    /// The request's API version (some rules depend on it).
    pub api_version: i16,
}

/// One protocol a member supports, with its metadata (e.g. a ConsumerProtocolSubscription).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinProtocol {
    /// The protocol name (for consumers, the assignor name).
    pub name: String,
    /// The protocol metadata.
    pub metadata: Bytes,
}

/// JoinGroup (api 11).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinGroupRequest {
    /// The group id.
    pub group_id: String,
    /// The session timeout.
    pub session_timeout_ms: i32,
    /// The rebalance timeout (v0: the session timeout).
    pub rebalance_timeout_ms: i32,
    /// The member id, `""` on the first join.
    pub member_id: String,
    /// The static instance id (v5+).
    pub group_instance_id: Option<String>,
    /// The protocol type, e.g. `consumer`.
    pub protocol_type: String,
    /// Supported protocols in preference order.
    pub protocols: Vec<JoinProtocol>,
    /// Why the member (re)joins (v8+).
    pub reason: Option<String>,
}

/// A member in the leader's JoinGroup response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinGroupResponseMember {
    /// The member id.
    pub member_id: String,
    /// The static instance id.
    pub group_instance_id: Option<String>,
    /// The member's metadata for the selected protocol.
    pub metadata: Bytes,
}

/// JoinGroup response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinGroupResponse {
    /// The error.
    pub error: Errors,
    /// The generation, `-1` on errors.
    pub generation_id: i32,
    /// The protocol type (v7+).
    pub protocol_type: Option<String>,
    /// The selected protocol.
    pub protocol_name: Option<String>,
    /// The leader's member id.
    pub leader: String,
    /// True if the leader must not run the assignment (v9+, static leader rejoining).
    pub skip_assignment: bool,
    /// The member id (the generated one on MEMBER_ID_REQUIRED).
    pub member_id: String,
    /// The members, for the leader only.
    pub members: Vec<JoinGroupResponseMember>,
}

impl JoinGroupResponse {
    /// An error response.
    pub fn error(error: Errors, member_id: &str) -> Self {
        JoinGroupResponse {
            error,
            generation_id: -1,
            protocol_type: None,
            protocol_name: None,
            leader: String::new(),
            skip_assignment: false,
            member_id: member_id.to_string(),
            members: Vec::new(),
        }
    }
}

/// SyncGroup (api 14).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncGroupRequest {
    /// The group id.
    pub group_id: String,
    /// The generation.
    pub generation_id: i32,
    /// The member id.
    pub member_id: String,
    /// The static instance id (v3+).
    pub group_instance_id: Option<String>,
    /// The protocol type (v5+).
    pub protocol_type: Option<String>,
    /// The protocol name (v5+).
    pub protocol_name: Option<String>,
    /// The leader's assignments: `(member_id, assignment)`.
    pub assignments: Vec<(String, Bytes)>,
}

/// SyncGroup response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncGroupResponse {
    /// The error.
    pub error: Errors,
    /// The protocol type (v5+).
    pub protocol_type: Option<String>,
    /// The protocol name (v5+).
    pub protocol_name: Option<String>,
    /// The member's assignment.
    pub assignment: Bytes,
}

impl SyncGroupResponse {
    /// An error response.
    pub fn error(error: Errors) -> Self {
        SyncGroupResponse {
            error,
            protocol_type: None,
            protocol_name: None,
            assignment: Bytes::new(),
        }
    }
}

/// Heartbeat (api 12).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeartbeatRequest {
    /// The group id.
    pub group_id: String,
    /// The generation.
    pub generation_id: i32,
    /// The member id.
    pub member_id: String,
    /// The static instance id (v3+).
    pub group_instance_id: Option<String>,
}

/// Heartbeat response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeartbeatResponse {
    /// The error.
    pub error: Errors,
}

/// One member leaving (LeaveGroup v3+ batches; v0–2 carry one member id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeavingMember {
    /// The member id (`""` to remove a static member by instance id).
    pub member_id: String,
    /// The static instance id.
    pub group_instance_id: Option<String>,
    /// Why it leaves (v5+).
    pub reason: Option<String>,
}

/// LeaveGroup (api 13).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaveGroupRequest {
    /// The group id.
    pub group_id: String,
    /// The leaving members.
    pub members: Vec<LeavingMember>,
}

/// Per-member LeaveGroup result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaveGroupMemberResponse {
    /// The member id.
    pub member_id: String,
    /// The static instance id.
    pub group_instance_id: Option<String>,
    /// The error for this member.
    pub error: Errors,
}

/// LeaveGroup response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaveGroupResponse {
    /// The top-level error.
    pub error: Errors,
    /// Per-member results.
    pub members: Vec<LeaveGroupMemberResponse>,
}

/// One partition of an offset commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetCommitPartition {
    /// The partition index.
    pub partition_index: i32,
    /// The committed offset.
    pub committed_offset: i64,
    /// The leader epoch (v6+), `-1` if unknown.
    pub committed_leader_epoch: i32,
    /// The client-supplied commit timestamp (v1 only), `-1` if none.
    pub commit_timestamp: i64,
    /// The metadata.
    pub committed_metadata: Option<String>,
}

/// One topic of an offset commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetCommitTopic {
    /// The topic name.
    pub name: String,
    /// Its partitions.
    pub partitions: Vec<OffsetCommitPartition>,
}

/// OffsetCommit (api 8).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetCommitRequest {
    /// The group id.
    pub group_id: String,
    /// The generation (`-1` for simple / admin commits).
    pub generation_id_or_member_epoch: i32,
    /// The member id (`""` if none).
    pub member_id: String,
    /// The static instance id (v7+).
    pub group_instance_id: Option<String>,
    /// The retention time (v2–v4), `-1` for the broker default.
    pub retention_time_ms: i64,
    /// The offsets.
    pub topics: Vec<OffsetCommitTopic>,
}

/// Per-partition commit result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetCommitPartitionResponse {
    /// The partition index.
    pub partition_index: i32,
    /// The error.
    pub error: Errors,
}

/// Per-topic commit results.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetCommitTopicResponse {
    /// The topic name.
    pub name: String,
    /// Per-partition results.
    pub partitions: Vec<OffsetCommitPartitionResponse>,
}

/// OffsetCommit and TxnOffsetCommit response.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OffsetCommitResponse {
    /// Per-topic results.
    pub topics: Vec<OffsetCommitTopicResponse>,
}

impl OffsetCommitResponse {
    /// The same error for every partition of `topics`.
    pub fn all(topics: &[OffsetCommitTopic], error: Errors) -> Self {
        OffsetCommitResponse {
            topics: topics
                .iter()
                .map(|t| OffsetCommitTopicResponse {
                    name: t.name.clone(),
                    partitions: t
                        .partitions
                        .iter()
                        .map(|p| OffsetCommitPartitionResponse {
                            partition_index: p.partition_index,
                            error,
                        })
                        .collect(),
                })
                .collect(),
        }
    }
}

/// TxnOffsetCommit (api 28).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnOffsetCommitRequest {
    /// The transactional id.
    pub transactional_id: String,
    /// The group id.
    pub group_id: String,
    /// The producer id.
    pub producer_id: i64,
    /// The producer epoch.
    pub producer_epoch: i16,
    /// The generation (v3+, `-1` if none).
    pub generation_id: i32,
    /// The member id (v3+, `""` if none).
    pub member_id: String,
    /// The static instance id (v3+).
    pub group_instance_id: Option<String>,
    /// The offsets (`commit_timestamp` is ignored).
    pub topics: Vec<OffsetCommitTopic>,
}

/// One topic of an OffsetFetch group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetFetchTopic {
    /// The topic name.
    pub name: String,
    /// The partitions.
    pub partition_indexes: Vec<i32>,
}

/// One group of an OffsetFetch (v8+ batch; older versions have exactly one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetFetchGroup {
    /// The group id.
    pub group_id: String,
    /// The topics, `None` for all committed offsets of the group.
    pub topics: Option<Vec<OffsetFetchTopic>>,
    /// The fetching member of a consumer group (v9+); `None` for the admin client and clients
    /// outside group management.
    pub member_id: Option<String>,
    /// The fetching member's epoch (v9+), `-1` when not given.
    pub member_epoch: i32,
}

impl Default for OffsetFetchGroup {
    fn default() -> Self {
        OffsetFetchGroup {
            group_id: String::new(),
            topics: None,
            member_id: None,
            member_epoch: -1,
        }
    }
}

/// OffsetFetch (api 9).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetFetchRequest {
    /// The groups.
    pub groups: Vec<OffsetFetchGroup>,
    /// Return UNSTABLE_OFFSET_COMMIT for partitions with pending transactional commits (v7+).
    pub require_stable: bool,
}

/// One fetched partition offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetFetchPartitionResponse {
    /// The partition index.
    pub partition_index: i32,
    /// The committed offset, `-1` if none.
    pub committed_offset: i64,
    /// The leader epoch, `-1` if unknown.
    pub committed_leader_epoch: i32,
    /// The metadata.
    pub metadata: Option<String>,
    /// The error.
    pub error: Errors,
}

/// Fetched offsets of one topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetFetchTopicResponse {
    /// The topic name.
    pub name: String,
    /// The partitions.
    pub partitions: Vec<OffsetFetchPartitionResponse>,
}

/// Fetched offsets of one group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetFetchGroupResponse {
    /// The group id.
    pub group_id: String,
    /// The topics.
    pub topics: Vec<OffsetFetchTopicResponse>,
    /// The group-level error.
    pub error: Errors,
}

/// OffsetFetch response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetFetchResponse {
    /// One entry per requested group, in request order.
    pub groups: Vec<OffsetFetchGroupResponse>,
}

/// OffsetDelete (api 47).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetDeleteRequest {
    /// The group id.
    pub group_id: String,
    /// `(topic, partitions)`.
    pub topics: Vec<(String, Vec<i32>)>,
}

/// OffsetDelete response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetDeleteResponse {
    /// The top-level error.
    pub error: Errors,
    /// `(topic, [(partition, error)])`.
    pub topics: Vec<(String, Vec<(i32, Errors)>)>,
}

/// ListGroups (api 16).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ListGroupsRequest {
    /// States to keep (v4+, case-insensitive); empty keeps all.
    pub states_filter: Vec<String>,
    /// Group types to keep (v5+, case-insensitive); empty keeps all.
    pub types_filter: Vec<String>,
}

/// One listed group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedGroup {
    /// The group id.
    pub group_id: String,
    /// The protocol type (`""` for simple groups).
    pub protocol_type: String,
    /// The state name (v4+).
    pub group_state: String,
    /// The group type, `classic` (v5+).
    pub group_type: String,
}

/// ListGroups response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListGroupsResponse {
    /// The error.
    pub error: Errors,
    /// The groups.
    pub groups: Vec<ListedGroup>,
}

/// A member in DescribeGroups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribedMember {
    /// The member id.
    pub member_id: String,
    /// The static instance id (v4+).
    pub group_instance_id: Option<String>,
    /// The client id.
    pub client_id: String,
    /// The client host.
    pub client_host: String,
    /// The member's metadata (Stable groups only, else empty).
    pub member_metadata: Bytes,
    /// The member's assignment (Stable groups only, else empty).
    pub member_assignment: Bytes,
}

/// One described group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribedGroup {
    /// The error.
    pub error: Errors,
    /// The group id.
    pub group_id: String,
    /// The state name.
    pub group_state: String,
    /// The protocol type.
    pub protocol_type: String,
    /// The selected protocol (Stable groups only, else `""`).
    pub protocol_data: String,
    /// The members.
    pub members: Vec<DescribedMember>,
}

/// DeleteGroups result of one group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeletedGroup {
    /// The group id.
    pub group_id: String,
    /// The error.
    pub error: Errors,
}

/// A response that completes a parked JoinGroup or SyncGroup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupResponse {
    /// A JoinGroup response.
    Join(JoinGroupResponse),
    /// A SyncGroup response.
    Sync(SyncGroupResponse),
}

/// The answer to a parked request, to be sent once the result's records are durable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    /// The request it answers.
    pub request: RequestId,
    /// The response.
    pub response: GroupResponse,
}
