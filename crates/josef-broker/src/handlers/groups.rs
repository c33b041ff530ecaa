//! The classic group APIs: josef-group's `wire` adapter maps the messages of every version to
//! its core types and back; this module only finds the shard and runs the call.

use josef_group::api::{self as g, GroupResponse, RequestContext};
use josef_group::{wire, Errors};
use josef_protocol::messages::*;
use josef_protocol::{ErrorCode, RequestHeader};

use crate::connection::ConnectionInfo;
use crate::groups::GroupService;
use crate::state::BrokerState;

fn ctx(header: &RequestHeader, conn: &ConnectionInfo) -> RequestContext {
    RequestContext {
        client_id: header.client_id.as_deref().unwrap_or("").to_string(),
        client_host: format!("/{}", conn.peer.ip()),
        api_version: header.request_api_version,
    }
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
    let req = wire::join_group_request(&r, version);
    let member_id = req.member_id.clone();
    let error =
        |e: Errors| wire::join_group_response(&g::JoinGroupResponse::error(e, &member_id), version);
    let Ok(shard) = service(state).shard(&state.topics, &req.group_id) else {
        return error(Errors::CoordinatorNotAvailable);
    };
    let ctx = ctx(header, conn);
    match service(state)
        .run_parked(&shard, |c, now, id| c.join_group(now, id, &ctx, req))
        .await
    {
        Some(GroupResponse::Join(j)) => wire::join_group_response(&j, version),
        _ => error(Errors::UnknownServerError),
    }
}

/// SyncGroup (14).
pub async fn sync(
    state: &BrokerState,
    header: &RequestHeader,
    r: SyncGroupRequest,
) -> SyncGroupResponse {
    let version = header.request_api_version;
    let req = wire::sync_group_request(&r);
    let Ok(shard) = service(state).shard(&state.topics, &req.group_id) else {
        return wire::sync_group_response(
            &g::SyncGroupResponse::error(Errors::CoordinatorNotAvailable),
            version,
        );
    };
    match service(state)
        .run_parked(&shard, |c, now, id| c.sync_group(now, id, req))
        .await
    {
        Some(GroupResponse::Sync(x)) => wire::sync_group_response(&x, version),
        _ => wire::sync_group_response(
            &g::SyncGroupResponse::error(Errors::UnknownServerError),
            version,
        ),
    }
}

/// Heartbeat (12).
pub fn heartbeat(state: &BrokerState, r: HeartbeatRequest) -> HeartbeatResponse {
    let req = wire::heartbeat_request(&r);
    let Ok(shard) = service(state).shard(&state.topics, &req.group_id) else {
        return wire::heartbeat_response(&g::HeartbeatResponse {
            error: Errors::CoordinatorNotAvailable,
        });
    };
    wire::heartbeat_response(&service(state).run(&shard, |c, now| c.heartbeat(now, req)))
}

/// LeaveGroup (13).
pub fn leave(state: &BrokerState, version: i16, r: LeaveGroupRequest) -> LeaveGroupResponse {
    let req = wire::leave_group_request(&r, version);
    let Ok(shard) = service(state).shard(&state.topics, &req.group_id) else {
        return LeaveGroupResponse {
            error_code: ErrorCode::CoordinatorNotAvailable.code(),
            ..Default::default()
        };
    };
    wire::leave_group_response(
        &service(state).run(&shard, |c, now| c.leave_group(now, req)),
        version,
    )
}

/// OffsetCommit (8).
pub fn offset_commit(
    state: &BrokerState,
    conn: &ConnectionInfo,
    header: &RequestHeader,
    r: OffsetCommitRequest,
) -> OffsetCommitResponse {
    let req = wire::offset_commit_request(&r);
    let Ok(shard) = service(state).shard(&state.topics, &req.group_id) else {
        return wire::offset_commit_response(&g::OffsetCommitResponse::all(
            &req.topics,
            Errors::CoordinatorNotAvailable,
        ));
    };
    let ctx = ctx(header, conn);
    wire::offset_commit_response(
        &service(state).run(&shard, |c, now| c.commit_offsets(now, &ctx, req)),
    )
}

/// TxnOffsetCommit (28).
pub fn txn_offset_commit(
    state: &BrokerState,
    r: TxnOffsetCommitRequest,
) -> TxnOffsetCommitResponse {
    let req = wire::txn_offset_commit_request(&r);
    let Ok(shard) = service(state).shard(&state.topics, &req.group_id) else {
        return wire::txn_offset_commit_response(&g::OffsetCommitResponse::all(
            &req.topics,
            Errors::CoordinatorNotAvailable,
        ));
    };
    wire::txn_offset_commit_response(
        &service(state).run(&shard, |c, now| c.commit_txn_offsets(now, req)),
    )
}

/// OffsetFetch (9): each group is read from its own shard.
pub fn offset_fetch(
    state: &BrokerState,
    version: i16,
    r: OffsetFetchRequest,
) -> OffsetFetchResponse {
    let req = wire::offset_fetch_request(&r, version);
    let mut groups = Vec::with_capacity(req.groups.len());
    for group in &req.groups {
        let one = g::OffsetFetchRequest {
            groups: vec![group.clone()],
            require_stable: req.require_stable,
        };
        let answer = match service(state).shard(&state.topics, &group.group_id) {
            Ok(shard) => service(state)
                .read(&shard, |c| c.fetch_offsets(&one))
                .groups
                .pop(),
            Err(_) => None,
        };
        groups.push(answer.unwrap_or(g::OffsetFetchGroupResponse {
            group_id: group.group_id.clone(),
            topics: vec![],
            error: Errors::CoordinatorNotAvailable,
        }));
    }
    wire::offset_fetch_response(&g::OffsetFetchResponse { groups }, version)
}

/// ListGroups (16): every shard of the node.
pub fn list(state: &BrokerState, version: i16, r: ListGroupsRequest) -> ListGroupsResponse {
    let req = wire::list_groups_request(&r, version);
    let mut all = g::ListGroupsResponse {
        error: Errors::None,
        groups: Vec::new(),
    };
    for shard in service(state).loaded_shards(&state.topics) {
        all.groups
            .extend(service(state).read(&shard, |c| c.list_groups(&req)).groups);
    }
    wire::list_groups_response(&all, version)
}

/// DescribeGroups (15).
pub fn describe(
    state: &BrokerState,
    version: i16,
    r: DescribeGroupsRequest,
) -> DescribeGroupsResponse {
    let mut described = Vec::new();
    for id in &r.groups {
        let id = id.to_string();
        match service(state).shard(&state.topics, &id) {
            Ok(shard) => {
                described.extend(service(state).read(&shard, |c| c.describe_groups(version, &[id])))
            }
            Err(_) => described.push(g::DescribedGroup {
                error: Errors::CoordinatorNotAvailable,
                group_id: id,
                group_state: String::new(),
                protocol_type: String::new(),
                protocol_data: String::new(),
                members: vec![],
            }),
        }
    }
    wire::describe_groups_response(&described, version, r.include_authorized_operations)
}

/// DeleteGroups (42).
pub fn delete(state: &BrokerState, r: DeleteGroupsRequest) -> DeleteGroupsResponse {
    let mut results = Vec::new();
    for id in &r.groups_names {
        let id = id.to_string();
        match service(state).shard(&state.topics, &id) {
            Ok(shard) => {
                results.extend(service(state).run(&shard, |c, now| c.delete_groups(now, &[id])))
            }
            Err(_) => results.push(g::DeletedGroup {
                group_id: id,
                error: Errors::CoordinatorNotAvailable,
            }),
        }
    }
    wire::delete_groups_response(&results)
}

/// OffsetDelete (47).
pub fn offset_delete(state: &BrokerState, r: OffsetDeleteRequest) -> OffsetDeleteResponse {
    let req = wire::offset_delete_request(&r);
    let Ok(shard) = service(state).shard(&state.topics, &req.group_id) else {
        return OffsetDeleteResponse {
            error_code: ErrorCode::CoordinatorNotAvailable.code(),
            ..Default::default()
        };
    };
    wire::offset_delete_response(&service(state).run(&shard, |c, now| c.delete_offsets(now, req)))
}
