//! The classic group APIs: wire messages (josef-protocol) to josef-group's version-independent
//! types and back. The mapping is mechanical; josef-group announces a `wire` module that will
//! replace it.

use josef_group::api::{self as g, GroupResponse, RequestContext};
use josef_group::Errors;
use josef_protocol::messages::*;
use josef_protocol::{ErrorCode, RequestHeader, StrBytes};

use crate::connection::ConnectionInfo;
use crate::groups::GroupService;
use crate::state::BrokerState;

fn s(x: &str) -> StrBytes {
    StrBytes::from(x)
}

fn opt(x: &Option<StrBytes>) -> Option<String> {
    x.as_ref().map(|v| v.to_string())
}

fn ctx(header: &RequestHeader, conn: &ConnectionInfo) -> RequestContext {
    RequestContext {
        client_id: header.client_id.as_deref().unwrap_or("").to_string(),
        client_host: format!("/{}", conn.peer.ip()),
        api_version: header.request_api_version,
    }
}

fn not_available() -> i16 {
    ErrorCode::CoordinatorNotAvailable.code()
}

fn service(state: &BrokerState) -> &GroupService {
    &state.groups
}

/// JoinGroup (11).
pub async fn join(
    state: &BrokerState,
    conn: &ConnectionInfo,
    header: &RequestHeader,
    r: JoinGroupRequest,
) -> JoinGroupResponse {
    let version = header.request_api_version;
    let error = |code: i16| JoinGroupResponse {
        error_code: code,
        generation_id: -1,
        member_id: r.member_id.clone(),
        ..Default::default()
    };
    let Ok(shard) = service(state).shard(&state.topics, &r.group_id) else {
        return error(not_available());
    };
    let req = g::JoinGroupRequest {
        group_id: r.group_id.to_string(),
        session_timeout_ms: r.session_timeout_ms,
        rebalance_timeout_ms: if version >= 1 {
            r.rebalance_timeout_ms
        } else {
            r.session_timeout_ms
        },
        member_id: r.member_id.to_string(),
        group_instance_id: opt(&r.group_instance_id),
        protocol_type: r.protocol_type.to_string(),
        protocols: r
            .protocols
            .iter()
            .map(|p| g::JoinProtocol {
                name: p.name.to_string(),
                metadata: p.metadata.clone(),
            })
            .collect(),
        reason: opt(&r.reason),
    };
    let ctx = ctx(header, conn);
    match service(state)
        .run_parked(&shard, |c, now, id| c.join_group(now, id, &ctx, req))
        .await
    {
        Some(GroupResponse::Join(j)) => JoinGroupResponse {
            error_code: j.error.code(),
            generation_id: j.generation_id,
            protocol_type: if version >= 7 {
                j.protocol_type.as_deref().map(s)
            } else {
                None
            },
            // Nullable only from v7.
            protocol_name: match j.protocol_name.as_deref() {
                Some(n) => Some(s(n)),
                None if version < 7 => Some(StrBytes::default()),
                None => None,
            },
            leader: s(&j.leader),
            skip_assignment: version >= 9 && j.skip_assignment,
            member_id: s(&j.member_id),
            members: j
                .members
                .iter()
                .map(|m| join_group_response::JoinGroupResponseMember {
                    member_id: s(&m.member_id),
                    group_instance_id: if version >= 5 {
                        m.group_instance_id.as_deref().map(s)
                    } else {
                        None
                    },
                    metadata: m.metadata.clone(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        },
        _ => error(ErrorCode::UnknownServerError.code()),
    }
}

/// SyncGroup (14).
pub async fn sync(
    state: &BrokerState,
    header: &RequestHeader,
    r: SyncGroupRequest,
) -> SyncGroupResponse {
    let version = header.request_api_version;
    let Ok(shard) = service(state).shard(&state.topics, &r.group_id) else {
        return SyncGroupResponse {
            error_code: not_available(),
            ..Default::default()
        };
    };
    let req = g::SyncGroupRequest {
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
    };
    match service(state)
        .run_parked(&shard, |c, now, id| c.sync_group(now, id, req))
        .await
    {
        Some(GroupResponse::Sync(x)) => SyncGroupResponse {
            error_code: x.error.code(),
            protocol_type: if version >= 5 {
                x.protocol_type.as_deref().map(s)
            } else {
                None
            },
            protocol_name: if version >= 5 {
                x.protocol_name.as_deref().map(s)
            } else {
                None
            },
            assignment: x.assignment,
            ..Default::default()
        },
        _ => SyncGroupResponse {
            error_code: ErrorCode::UnknownServerError.code(),
            ..Default::default()
        },
    }
}

/// Heartbeat (12).
pub fn heartbeat(state: &BrokerState, r: HeartbeatRequest) -> HeartbeatResponse {
    let Ok(shard) = service(state).shard(&state.topics, &r.group_id) else {
        return HeartbeatResponse {
            error_code: not_available(),
            ..Default::default()
        };
    };
    let req = g::HeartbeatRequest {
        group_id: r.group_id.to_string(),
        generation_id: r.generation_id,
        member_id: r.member_id.to_string(),
        group_instance_id: opt(&r.group_instance_id),
    };
    let resp = service(state).run(&shard, |c, now| c.heartbeat(now, req));
    HeartbeatResponse {
        error_code: resp.error.code(),
        ..Default::default()
    }
}

/// LeaveGroup (13).
pub fn leave(state: &BrokerState, version: i16, r: LeaveGroupRequest) -> LeaveGroupResponse {
    let Ok(shard) = service(state).shard(&state.topics, &r.group_id) else {
        return LeaveGroupResponse {
            error_code: not_available(),
            ..Default::default()
        };
    };
    let members = if version >= 3 {
        r.members
            .iter()
            .map(|m| g::LeavingMember {
                member_id: m.member_id.to_string(),
                group_instance_id: opt(&m.group_instance_id),
                reason: opt(&m.reason),
            })
            .collect()
    } else {
        vec![g::LeavingMember {
            member_id: r.member_id.to_string(),
            group_instance_id: None,
            reason: None,
        }]
    };
    let req = g::LeaveGroupRequest {
        group_id: r.group_id.to_string(),
        members,
    };
    let resp = service(state).run(&shard, |c, now| c.leave_group(now, req));
    let mut error = resp.error;
    if version < 3 {
        if let Some(m) = resp.members.first() {
            if error == Errors::None {
                error = m.error;
            }
        }
    }
    LeaveGroupResponse {
        error_code: error.code(),
        members: if version >= 3 {
            resp.members
                .iter()
                .map(|m| leave_group_response::MemberResponse {
                    member_id: s(&m.member_id),
                    group_instance_id: m.group_instance_id.as_deref().map(s),
                    error_code: m.error.code(),
                    ..Default::default()
                })
                .collect()
        } else {
            vec![]
        },
        ..Default::default()
    }
}

fn commit_topics(
    topics: &[offset_commit_request::OffsetCommitRequestTopic],
) -> Vec<g::OffsetCommitTopic> {
    topics
        .iter()
        .map(|t| g::OffsetCommitTopic {
            name: t.name.to_string(),
            partitions: t
                .partitions
                .iter()
                .map(|p| g::OffsetCommitPartition {
                    partition_index: p.partition_index,
                    committed_offset: p.committed_offset,
                    committed_leader_epoch: p.committed_leader_epoch,
                    commit_timestamp: p.commit_timestamp,
                    committed_metadata: opt(&p.committed_metadata),
                })
                .collect(),
        })
        .collect()
}

fn commit_response(
    topics: Vec<g::OffsetCommitTopicResponse>,
) -> Vec<offset_commit_response::OffsetCommitResponseTopic> {
    topics
        .into_iter()
        .map(|t| offset_commit_response::OffsetCommitResponseTopic {
            name: s(&t.name),
            partitions: t
                .partitions
                .into_iter()
                .map(|p| offset_commit_response::OffsetCommitResponsePartition {
                    partition_index: p.partition_index,
                    error_code: p.error.code(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        })
        .collect()
}

/// OffsetCommit (8).
pub fn offset_commit(
    state: &BrokerState,
    conn: &ConnectionInfo,
    header: &RequestHeader,
    r: OffsetCommitRequest,
) -> OffsetCommitResponse {
    let topics = commit_topics(&r.topics);
    let Ok(shard) = service(state).shard(&state.topics, &r.group_id) else {
        let all = g::OffsetCommitResponse::all(&topics, Errors::CoordinatorNotAvailable);
        return OffsetCommitResponse {
            topics: commit_response(all.topics),
            ..Default::default()
        };
    };
    let req = g::OffsetCommitRequest {
        group_id: r.group_id.to_string(),
        generation_id_or_member_epoch: r.generation_id_or_member_epoch,
        member_id: r.member_id.to_string(),
        group_instance_id: opt(&r.group_instance_id),
        retention_time_ms: r.retention_time_ms,
        topics,
    };
    let ctx = ctx(header, conn);
    let resp = service(state).run(&shard, |c, now| c.commit_offsets(now, &ctx, req));
    OffsetCommitResponse {
        topics: commit_response(resp.topics),
        ..Default::default()
    }
}

/// TxnOffsetCommit (28).
pub fn txn_offset_commit(
    state: &BrokerState,
    r: TxnOffsetCommitRequest,
) -> TxnOffsetCommitResponse {
    let topics: Vec<g::OffsetCommitTopic> = r
        .topics
        .iter()
        .map(|t| g::OffsetCommitTopic {
            name: t.name.to_string(),
            partitions: t
                .partitions
                .iter()
                .map(|p| g::OffsetCommitPartition {
                    partition_index: p.partition_index,
                    committed_offset: p.committed_offset,
                    committed_leader_epoch: p.committed_leader_epoch,
                    commit_timestamp: -1,
                    committed_metadata: opt(&p.committed_metadata),
                })
                .collect(),
        })
        .collect();
    let to_wire = |resp: g::OffsetCommitResponse| TxnOffsetCommitResponse {
        topics: resp
            .topics
            .into_iter()
            .map(
                |t| txn_offset_commit_response::TxnOffsetCommitResponseTopic {
                    name: s(&t.name),
                    partitions: t
                        .partitions
                        .into_iter()
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
    };
    let Ok(shard) = service(state).shard(&state.topics, &r.group_id) else {
        return to_wire(g::OffsetCommitResponse::all(
            &topics,
            Errors::CoordinatorNotAvailable,
        ));
    };
    let req = g::TxnOffsetCommitRequest {
        transactional_id: r.transactional_id.to_string(),
        group_id: r.group_id.to_string(),
        producer_id: r.producer_id,
        producer_epoch: r.producer_epoch,
        generation_id: r.generation_id,
        member_id: r.member_id.to_string(),
        group_instance_id: opt(&r.group_instance_id),
        topics,
    };
    to_wire(service(state).run(&shard, |c, now| c.commit_txn_offsets(now, req)))
}

/// OffsetFetch (9): v0–7 one group at the top level, v8+ several groups.
pub fn offset_fetch(
    state: &BrokerState,
    version: i16,
    r: OffsetFetchRequest,
) -> OffsetFetchResponse {
    let groups: Vec<g::OffsetFetchGroup> = if version >= 8 {
        r.groups
            .iter()
            .map(|gr| g::OffsetFetchGroup {
                group_id: gr.group_id.to_string(),
                topics: gr.topics.as_ref().map(|ts| {
                    ts.iter()
                        .map(|t| g::OffsetFetchTopic {
                            name: t.name.to_string(),
                            partition_indexes: t.partition_indexes.clone(),
                        })
                        .collect()
                }),
            })
            .collect()
    } else {
        vec![g::OffsetFetchGroup {
            group_id: r.group_id.to_string(),
            topics: r.topics.as_ref().map(|ts| {
                ts.iter()
                    .map(|t| g::OffsetFetchTopic {
                        name: t.name.to_string(),
                        partition_indexes: t.partition_indexes.clone(),
                    })
                    .collect()
            }),
        }]
    };
    let mut results = Vec::new();
    for group in groups {
        let res = match service(state).shard(&state.topics, &group.group_id) {
            Err(_) => g::OffsetFetchGroupResponse {
                group_id: group.group_id.clone(),
                topics: vec![],
                error: Errors::CoordinatorNotAvailable,
            },
            Ok(shard) => {
                let req = g::OffsetFetchRequest {
                    groups: vec![group.clone()],
                    require_stable: r.require_stable,
                };
                let mut resp = service(state).read(&shard, |c| c.fetch_offsets(&req));
                resp.groups.pop().unwrap_or(g::OffsetFetchGroupResponse {
                    group_id: group.group_id.clone(),
                    topics: vec![],
                    error: Errors::None,
                })
            }
        };
        results.push(res);
    }
    if version >= 8 {
        return OffsetFetchResponse {
            groups: results
                .into_iter()
                .map(|gr| offset_fetch_response::OffsetFetchResponseGroup {
                    group_id: s(&gr.group_id),
                    error_code: gr.error.code(),
                    topics: gr
                        .topics
                        .into_iter()
                        .map(|t| offset_fetch_response::OffsetFetchResponseTopics {
                            name: s(&t.name),
                            partitions: t
                                .partitions
                                .into_iter()
                                .map(|p| offset_fetch_response::OffsetFetchResponsePartitions {
                                    partition_index: p.partition_index,
                                    committed_offset: p.committed_offset,
                                    committed_leader_epoch: p.committed_leader_epoch,
                                    metadata: p.metadata.as_deref().map(s),
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
    let gr = results.pop().expect("one group");
    OffsetFetchResponse {
        error_code: if version >= 2 { gr.error.code() } else { 0 },
        topics: gr
            .topics
            .into_iter()
            .map(|t| offset_fetch_response::OffsetFetchResponseTopic {
                name: s(&t.name),
                partitions: t
                    .partitions
                    .into_iter()
                    .map(|p| offset_fetch_response::OffsetFetchResponsePartition {
                        partition_index: p.partition_index,
                        committed_offset: p.committed_offset,
                        committed_leader_epoch: if version >= 5 {
                            p.committed_leader_epoch
                        } else {
                            -1
                        },
                        metadata: p.metadata.as_deref().map(s),
                        error_code: if version < 2 && p.error == Errors::None {
                            gr.error.code()
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

/// ListGroups (16).
pub fn list(state: &BrokerState, version: i16, r: ListGroupsRequest) -> ListGroupsResponse {
    let req = g::ListGroupsRequest {
        states_filter: r.states_filter.iter().map(|x| x.to_string()).collect(),
        types_filter: r.types_filter.iter().map(|x| x.to_string()).collect(),
    };
    let mut groups = Vec::new();
    for shard in service(state).loaded_shards(&state.topics) {
        let resp = service(state).read(&shard, |c| c.list_groups(&req));
        for gr in resp.groups {
            groups.push(list_groups_response::ListedGroup {
                group_id: s(&gr.group_id),
                protocol_type: s(&gr.protocol_type),
                group_state: if version >= 4 {
                    s(&gr.group_state)
                } else {
                    StrBytes::default()
                },
                group_type: if version >= 5 {
                    s(&gr.group_type)
                } else {
                    StrBytes::default()
                },
                ..Default::default()
            });
        }
    }
    ListGroupsResponse {
        groups,
        ..Default::default()
    }
}

/// DescribeGroups (15).
pub fn describe(
    state: &BrokerState,
    version: i16,
    r: DescribeGroupsRequest,
) -> DescribeGroupsResponse {
    let mut groups = Vec::new();
    for id in &r.groups {
        let described = match service(state).shard(&state.topics, id) {
            Err(_) => vec![g::DescribedGroup {
                error: Errors::CoordinatorNotAvailable,
                group_id: id.to_string(),
                group_state: String::new(),
                protocol_type: String::new(),
                protocol_data: String::new(),
                members: vec![],
            }],
            Ok(shard) => {
                service(state).read(&shard, |c| c.describe_groups(version, &[id.to_string()]))
            }
        };
        for d in described {
            groups.push(describe_groups_response::DescribedGroup {
                error_code: d.error.code(),
                group_id: s(&d.group_id),
                group_state: s(&d.group_state),
                protocol_type: s(&d.protocol_type),
                protocol_data: s(&d.protocol_data),
                members: d
                    .members
                    .iter()
                    .map(|m| describe_groups_response::DescribedGroupMember {
                        member_id: s(&m.member_id),
                        group_instance_id: if version >= 4 {
                            m.group_instance_id.as_deref().map(s)
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
                authorized_operations: i32::MIN,
                ..Default::default()
            });
        }
    }
    DescribeGroupsResponse {
        groups,
        ..Default::default()
    }
}

/// DeleteGroups (42).
pub fn delete(state: &BrokerState, r: DeleteGroupsRequest) -> DeleteGroupsResponse {
    let mut results = Vec::new();
    for id in &r.groups_names {
        let res = match service(state).shard(&state.topics, id) {
            Err(_) => vec![g::DeletedGroup {
                group_id: id.to_string(),
                error: Errors::CoordinatorNotAvailable,
            }],
            Ok(shard) => {
                service(state).run(&shard, |c, now| c.delete_groups(now, &[id.to_string()]))
            }
        };
        for d in res {
            results.push(delete_groups_response::DeletableGroupResult {
                group_id: s(&d.group_id),
                error_code: d.error.code(),
                ..Default::default()
            });
        }
    }
    DeleteGroupsResponse {
        results,
        ..Default::default()
    }
}

/// OffsetDelete (47).
pub fn offset_delete(state: &BrokerState, r: OffsetDeleteRequest) -> OffsetDeleteResponse {
    let Ok(shard) = service(state).shard(&state.topics, &r.group_id) else {
        return OffsetDeleteResponse {
            error_code: not_available(),
            ..Default::default()
        };
    };
    let req = g::OffsetDeleteRequest {
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
    };
    let resp = service(state).run(&shard, |c, now| c.delete_offsets(now, req));
    OffsetDeleteResponse {
        error_code: resp.error.code(),
        topics: resp
            .topics
            .into_iter()
            .map(
                |(name, parts)| offset_delete_response::OffsetDeleteResponseTopic {
                    name: s(&name),
                    partitions: parts
                        .into_iter()
                        .map(
                            |(i, e)| offset_delete_response::OffsetDeleteResponsePartition {
                                partition_index: i,
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
