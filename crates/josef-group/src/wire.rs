//! The thin adapter between `josef-protocol`'s generated messages (any version) and this crate's
//! version-independent [`crate::api`] types: `request + version → core`, `core + version →
//! response`. Version rules that only concern the wire live here:
//! - JoinGroup v0 has no rebalance timeout: the session timeout is used (as Kafka does);
//! - JoinGroup v0–6 cannot carry a null protocol name: errors send `""`;
//! - LeaveGroup v0–2 carry one member and report its error at the top level;
//! - OffsetFetch v0–7 carry one group (top-level error from v2), v8+ a batch;
//! - fields a version lacks are left at their defaults so every response encodes.

use josef_protocol::messages::{
    delete_groups_response, describe_groups_response, join_group_response, leave_group_response,
    list_groups_response, offset_commit_response, offset_delete_response, offset_fetch_request,
    offset_fetch_response, txn_offset_commit_response, DeleteGroupsResponse,
    DescribeGroupsResponse, HeartbeatRequest as WHeartbeatRequest,
    HeartbeatResponse as WHeartbeatResponse, JoinGroupRequest as WJoinGroupRequest,
    JoinGroupResponse as WJoinGroupResponse, LeaveGroupRequest as WLeaveGroupRequest,
    LeaveGroupResponse as WLeaveGroupResponse, ListGroupsRequest as WListGroupsRequest,
    ListGroupsResponse as WListGroupsResponse, OffsetCommitRequest as WOffsetCommitRequest,
    OffsetCommitResponse as WOffsetCommitResponse, OffsetDeleteRequest as WOffsetDeleteRequest,
    OffsetDeleteResponse as WOffsetDeleteResponse, OffsetFetchRequest as WOffsetFetchRequest,
    OffsetFetchResponse as WOffsetFetchResponse, SyncGroupRequest as WSyncGroupRequest,
    SyncGroupResponse as WSyncGroupResponse, TxnOffsetCommitRequest as WTxnOffsetCommitRequest,
    TxnOffsetCommitResponse as WTxnOffsetCommitResponse,
};
use josef_protocol::StrBytes;

use crate::api::*;
use crate::error::Errors;

fn s(v: &str) -> StrBytes {
    StrBytes::from(v)
}

fn opt(v: &Option<StrBytes>) -> Option<String> {
    v.as_ref().map(|x| x.to_string())
}

fn opt_s(v: &Option<String>) -> Option<StrBytes> {
    v.as_deref().map(s)
}

/// `authorized_operations` of a group when every operation is allowed (READ, DELETE, DESCRIBE).
pub const ALL_GROUP_OPERATIONS: i32 = (1 << 3) | (1 << 6) | (1 << 8);

// ------------------------------------------------------------------ JoinGroup

/// JoinGroup request → core.
pub fn join_group_request(r: &WJoinGroupRequest, version: i16) -> JoinGroupRequest {
    JoinGroupRequest {
        group_id: r.group_id.to_string(),
        session_timeout_ms: r.session_timeout_ms,
        rebalance_timeout_ms: if version == 0 {
            r.session_timeout_ms
        } else {
            r.rebalance_timeout_ms
        },
        member_id: r.member_id.to_string(),
        group_instance_id: opt(&r.group_instance_id),
        protocol_type: r.protocol_type.to_string(),
        protocols: r
            .protocols
            .iter()
            .map(|p| JoinProtocol {
                name: p.name.to_string(),
                metadata: p.metadata.clone(),
            })
            .collect(),
        reason: opt(&r.reason),
    }
}

/// Core → JoinGroup response at `version`.
pub fn join_group_response(r: &JoinGroupResponse, version: i16) -> WJoinGroupResponse {
    let protocol_name = match (&r.protocol_name, version >= 7) {
        (Some(p), _) => Some(s(p)),
        (None, true) => None,
        (None, false) => Some(StrBytes::new()),
    };
    WJoinGroupResponse {
        error_code: r.error.code(),
        generation_id: r.generation_id,
        protocol_type: if version >= 7 {
            opt_s(&r.protocol_type)
        } else {
            None
        },
        protocol_name,
        leader: s(&r.leader),
        skip_assignment: version >= 9 && r.skip_assignment,
        member_id: s(&r.member_id),
        members: r
            .members
            .iter()
            .map(|m| join_group_response::JoinGroupResponseMember {
                member_id: s(&m.member_id),
                group_instance_id: if version >= 5 {
                    opt_s(&m.group_instance_id)
                } else {
                    None
                },
                metadata: m.metadata.clone(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

// ------------------------------------------------------------------ SyncGroup

/// SyncGroup request → core.
pub fn sync_group_request(r: &WSyncGroupRequest) -> SyncGroupRequest {
    SyncGroupRequest {
        group_id: r.group_id.to_string(),
        generation_id: r.generation_id,
        member_id: r.member_id.to_string(),
        group_instance_id: opt(&r.group_instance_id),
        protocol_type: opt(&r.protocol_type),
        protocol_name: opt(&r.protocol_name),
        assignments: r
            .assignments
            .iter()
            .map(|a| (a.member_id.to_string(), a.assignment.clone()))
            .collect(),
    }
}

/// Core → SyncGroup response at `version`.
pub fn sync_group_response(r: &SyncGroupResponse, version: i16) -> WSyncGroupResponse {
    WSyncGroupResponse {
        error_code: r.error.code(),
        protocol_type: if version >= 5 {
            opt_s(&r.protocol_type)
        } else {
            None
        },
        protocol_name: if version >= 5 {
            opt_s(&r.protocol_name)
        } else {
            None
        },
        assignment: r.assignment.clone(),
        ..Default::default()
    }
}

/// The wire response of a completion, at the version its request had.
pub enum WireGroupResponse {
    /// A JoinGroup response.
    Join(WJoinGroupResponse),
    /// A SyncGroup response.
    Sync(WSyncGroupResponse),
}

/// Core completion → wire response at `version` (the parked request's version).
pub fn completion_response(c: &Completion, version: i16) -> WireGroupResponse {
    match &c.response {
        GroupResponse::Join(j) => WireGroupResponse::Join(join_group_response(j, version)),
        GroupResponse::Sync(sy) => WireGroupResponse::Sync(sync_group_response(sy, version)),
    }
}

// ------------------------------------------------------------------ Heartbeat, LeaveGroup

/// Heartbeat request → core.
pub fn heartbeat_request(r: &WHeartbeatRequest) -> HeartbeatRequest {
    HeartbeatRequest {
        group_id: r.group_id.to_string(),
        generation_id: r.generation_id,
        member_id: r.member_id.to_string(),
        group_instance_id: opt(&r.group_instance_id),
    }
}

/// Core → Heartbeat response.
pub fn heartbeat_response(r: &HeartbeatResponse) -> WHeartbeatResponse {
    WHeartbeatResponse {
        error_code: r.error.code(),
        ..Default::default()
    }
}

/// LeaveGroup request → core (v0–2: the single `member_id`; v3+: the batch).
pub fn leave_group_request(r: &WLeaveGroupRequest, version: i16) -> LeaveGroupRequest {
    let members = if version <= 2 {
        vec![LeavingMember {
            member_id: r.member_id.to_string(),
            group_instance_id: None,
            reason: None,
        }]
    } else {
        r.members
            .iter()
            .map(|m| LeavingMember {
                member_id: m.member_id.to_string(),
                group_instance_id: opt(&m.group_instance_id),
                reason: opt(&m.reason),
            })
            .collect()
    };
    LeaveGroupRequest {
        group_id: r.group_id.to_string(),
        members,
    }
}

/// Core → LeaveGroup response at `version`.
pub fn leave_group_response(r: &LeaveGroupResponse, version: i16) -> WLeaveGroupResponse {
    if version <= 2 {
        // One member: its error is the answer.
        let error = if r.error.is_none() {
            r.members.first().map(|m| m.error).unwrap_or(Errors::None)
        } else {
            r.error
        };
        return WLeaveGroupResponse {
            error_code: error.code(),
            ..Default::default()
        };
    }
    WLeaveGroupResponse {
        error_code: r.error.code(),
        members: r
            .members
            .iter()
            .map(|m| leave_group_response::MemberResponse {
                member_id: s(&m.member_id),
                group_instance_id: opt_s(&m.group_instance_id),
                error_code: m.error.code(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

// ------------------------------------------------------------------ OffsetCommit, TxnOffsetCommit

/// OffsetCommit request → core (fields a version lacks arrive at their defaults).
pub fn offset_commit_request(r: &WOffsetCommitRequest) -> OffsetCommitRequest {
    OffsetCommitRequest {
        group_id: r.group_id.to_string(),
        generation_id_or_member_epoch: r.generation_id_or_member_epoch,
        member_id: r.member_id.to_string(),
        group_instance_id: opt(&r.group_instance_id),
        retention_time_ms: r.retention_time_ms,
        topics: r
            .topics
            .iter()
            .map(|t| OffsetCommitTopic {
                name: t.name.to_string(),
                partitions: t
                    .partitions
                    .iter()
                    .map(|p| OffsetCommitPartition {
                        partition_index: p.partition_index,
                        committed_offset: p.committed_offset,
                        committed_leader_epoch: p.committed_leader_epoch,
                        commit_timestamp: p.commit_timestamp,
                        committed_metadata: opt(&p.committed_metadata),
                    })
                    .collect(),
            })
            .collect(),
    }
}

/// Core → OffsetCommit response.
pub fn offset_commit_response(r: &OffsetCommitResponse) -> WOffsetCommitResponse {
    WOffsetCommitResponse {
        topics: r
            .topics
            .iter()
            .map(|t| offset_commit_response::OffsetCommitResponseTopic {
                name: s(&t.name),
                partitions: t
                    .partitions
                    .iter()
                    .map(|p| offset_commit_response::OffsetCommitResponsePartition {
                        partition_index: p.partition_index,
                        error_code: p.error.code(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// TxnOffsetCommit request → core.
pub fn txn_offset_commit_request(r: &WTxnOffsetCommitRequest) -> TxnOffsetCommitRequest {
    TxnOffsetCommitRequest {
        transactional_id: r.transactional_id.to_string(),
        group_id: r.group_id.to_string(),
        producer_id: r.producer_id,
        producer_epoch: r.producer_epoch,
        generation_id: r.generation_id,
        member_id: r.member_id.to_string(),
        group_instance_id: opt(&r.group_instance_id),
        topics: r
            .topics
            .iter()
            .map(|t| OffsetCommitTopic {
                name: t.name.to_string(),
                partitions: t
                    .partitions
                    .iter()
                    .map(|p| OffsetCommitPartition {
                        partition_index: p.partition_index,
                        committed_offset: p.committed_offset,
                        committed_leader_epoch: p.committed_leader_epoch,
                        commit_timestamp: -1,
                        committed_metadata: opt(&p.committed_metadata),
                    })
                    .collect(),
            })
            .collect(),
    }
}

/// Core → TxnOffsetCommit response.
pub fn txn_offset_commit_response(r: &OffsetCommitResponse) -> WTxnOffsetCommitResponse {
    WTxnOffsetCommitResponse {
        topics: r
            .topics
            .iter()
            .map(
                |t| txn_offset_commit_response::TxnOffsetCommitResponseTopic {
                    name: s(&t.name),
                    partitions: t
                        .partitions
                        .iter()
                        .map(
                            |p| txn_offset_commit_response::TxnOffsetCommitResponsePartition {
                                partition_index: p.partition_index,
                                error_code: p.error.code(),
                                ..Default::default()
                            },
                        )
                        .collect(),
                    ..Default::default()
                },
            )
            .collect(),
        ..Default::default()
    }
}

// ------------------------------------------------------------------ OffsetFetch

/// OffsetFetch request → core (v0–7: one group; v8+: a batch).
pub fn offset_fetch_request(r: &WOffsetFetchRequest, version: i16) -> OffsetFetchRequest {
    let groups = if version <= 7 {
        vec![OffsetFetchGroup {
            group_id: r.group_id.to_string(),
            topics: r.topics.as_ref().map(|ts| {
                ts.iter()
                    .map(
                        |t: &offset_fetch_request::OffsetFetchRequestTopic| OffsetFetchTopic {
                            name: t.name.to_string(),
                            partition_indexes: t.partition_indexes.to_vec(),
                        },
                    )
                    .collect()
            }),
            ..Default::default()
        }]
    } else {
        r.groups
            .iter()
            .map(|g| OffsetFetchGroup {
                group_id: g.group_id.to_string(),
                topics: g.topics.as_ref().map(|ts| {
                    ts.iter()
                        .map(|t| OffsetFetchTopic {
                            name: t.name.to_string(),
                            partition_indexes: t.partition_indexes.to_vec(),
                        })
                        .collect()
                }),
                member_id: g.member_id.as_ref().map(|m| m.to_string()),
                member_epoch: g.member_epoch,
            })
            .collect()
    };
    OffsetFetchRequest {
        groups,
        require_stable: version >= 7 && r.require_stable,
    }
}

/// Core → OffsetFetch response at `version`.
pub fn offset_fetch_response(r: &OffsetFetchResponse, version: i16) -> WOffsetFetchResponse {
    if version >= 8 {
        return WOffsetFetchResponse {
            groups: r
                .groups
                .iter()
                .map(|g| offset_fetch_response::OffsetFetchResponseGroup {
                    group_id: s(&g.group_id),
                    error_code: g.error.code(),
                    topics: g
                        .topics
                        .iter()
                        .map(|t| offset_fetch_response::OffsetFetchResponseTopics {
                            name: s(&t.name),
                            partitions: t
                                .partitions
                                .iter()
                                .map(|p| offset_fetch_response::OffsetFetchResponsePartitions {
                                    partition_index: p.partition_index,
                                    committed_offset: p.committed_offset,
                                    committed_leader_epoch: p.committed_leader_epoch,
                                    metadata: opt_s(&p.metadata),
                                    error_code: p.error.code(),
                                    ..Default::default()
                                })
                                .collect(),
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
    }
    let Some(g) = r.groups.first() else {
        return WOffsetFetchResponse::default();
    };
    // v0–1 have no top-level error: a group error goes on every partition instead.
    let group_error_on_partitions = version < 2 && !g.error.is_none();
    WOffsetFetchResponse {
        error_code: if version >= 2 { g.error.code() } else { 0 },
        topics: g
            .topics
            .iter()
            .map(|t| offset_fetch_response::OffsetFetchResponseTopic {
                name: s(&t.name),
                partitions: t
                    .partitions
                    .iter()
                    .map(|p| offset_fetch_response::OffsetFetchResponsePartition {
                        partition_index: p.partition_index,
                        committed_offset: p.committed_offset,
                        committed_leader_epoch: if version >= 5 {
                            p.committed_leader_epoch
                        } else {
                            -1
                        },
                        metadata: opt_s(&p.metadata),
                        error_code: if group_error_on_partitions {
                            g.error.code()
                        } else {
                            p.error.code()
                        },
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

// ------------------------------------------------------------------ OffsetDelete

/// OffsetDelete request → core.
pub fn offset_delete_request(r: &WOffsetDeleteRequest) -> OffsetDeleteRequest {
    OffsetDeleteRequest {
        group_id: r.group_id.to_string(),
        topics: r
            .topics
            .iter()
            .map(|t| {
                (
                    t.name.to_string(),
                    t.partitions.iter().map(|p| p.partition_index).collect(),
                )
            })
            .collect(),
    }
}

/// Core → OffsetDelete response.
pub fn offset_delete_response(r: &OffsetDeleteResponse) -> WOffsetDeleteResponse {
    WOffsetDeleteResponse {
        error_code: r.error.code(),
        topics: r
            .topics
            .iter()
            .map(
                |(name, parts)| offset_delete_response::OffsetDeleteResponseTopic {
                    name: s(name),
                    partitions: parts
                        .iter()
                        .map(
                            |(p, e)| offset_delete_response::OffsetDeleteResponsePartition {
                                partition_index: *p,
                                error_code: e.code(),
                            },
                        )
                        .collect(),
                },
            )
            .collect(),
        ..Default::default()
    }
}

// ------------------------------------------------------------------ ListGroups, DescribeGroups, DeleteGroups

/// ListGroups request → core (filters exist from v4 and v5).
pub fn list_groups_request(r: &WListGroupsRequest, version: i16) -> ListGroupsRequest {
    ListGroupsRequest {
        states_filter: if version >= 4 {
            r.states_filter.iter().map(|x| x.to_string()).collect()
        } else {
            Vec::new()
        },
        types_filter: if version >= 5 {
            r.types_filter.iter().map(|x| x.to_string()).collect()
        } else {
            Vec::new()
        },
    }
}

/// Core → ListGroups response at `version`.
pub fn list_groups_response(r: &ListGroupsResponse, version: i16) -> WListGroupsResponse {
    WListGroupsResponse {
        error_code: r.error.code(),
        groups: r
            .groups
            .iter()
            .map(|g| list_groups_response::ListedGroup {
                group_id: s(&g.group_id),
                protocol_type: s(&g.protocol_type),
                group_state: if version >= 4 {
                    s(&g.group_state)
                } else {
                    StrBytes::new()
                },
                group_type: if version >= 5 {
                    s(&g.group_type)
                } else {
                    StrBytes::new()
                },
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// Core → DescribeGroups response at `version`. With `include_authorized_operations` (v3+) the
/// groups report every group operation as allowed (Josef has no ACLs).
pub fn describe_groups_response(
    groups: &[DescribedGroup],
    version: i16,
    include_authorized_operations: bool,
) -> DescribeGroupsResponse {
    DescribeGroupsResponse {
        groups: groups
            .iter()
            .map(|g| describe_groups_response::DescribedGroup {
                error_code: g.error.code(),
                group_id: s(&g.group_id),
                group_state: s(&g.group_state),
                protocol_type: s(&g.protocol_type),
                protocol_data: s(&g.protocol_data),
                members: g
                    .members
                    .iter()
                    .map(|m| describe_groups_response::DescribedGroupMember {
                        member_id: s(&m.member_id),
                        group_instance_id: if version >= 4 {
                            opt_s(&m.group_instance_id)
                        } else {
                            None
                        },
                        client_id: s(&m.client_id),
                        client_host: s(&m.client_host),
                        member_metadata: m.member_metadata.clone(),
                        member_assignment: m.member_assignment.clone(),
                        ..Default::default()
                    })
                    .collect(),
                authorized_operations: if version >= 3 && include_authorized_operations {
                    ALL_GROUP_OPERATIONS
                } else {
                    i32::MIN
                },
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// Core → DeleteGroups response.
pub fn delete_groups_response(results: &[DeletedGroup]) -> DeleteGroupsResponse {
    DeleteGroupsResponse {
        results: results
            .iter()
            .map(|d| delete_groups_response::DeletableGroupResult {
                group_id: s(&d.group_id),
                error_code: d.error.code(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}
