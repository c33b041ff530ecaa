//! The classic group APIs: josef-group's `wire` adapter maps the messages of every version to
//! its core types and back; this module only finds the shard and runs the call.
//!
//! A group whose `__consumer_offsets` partition this broker does not lead (or no longer leads in
//! the shard's epoch) is answered NOT_COORDINATOR (16) by every API, OffsetFetch included
//! (Kafka's `CoordinatorRuntime`); COORDINATOR_NOT_AVAILABLE (15) when the topic cannot be
//! created (one node) or a coordinator write failed while still leading.

use josef_group::api::{self as g, GroupResponse, RequestContext};
use josef_group::{wire, Errors};
use josef_protocol::messages::*;
use josef_protocol::RequestHeader;

use crate::connection::ConnectionInfo;
use crate::groups::{GroupService, Shard, ShardError};
use crate::state::BrokerState;
use parking_lot::Mutex;
use std::sync::Arc;

pub(super) fn ctx(header: &RequestHeader, conn: &ConnectionInfo) -> RequestContext {
    RequestContext {
        client_id: header.client_id.as_deref().unwrap_or("").to_string(),
        client_host: format!("/{}", conn.peer.ip()),
        api_version: header.request_api_version,
    }
}

fn service(state: &BrokerState) -> &GroupService {
    &state.groups
}

/// The group's error for a shard that cannot serve it.
fn shard_error(e: ShardError) -> Errors {
    match e {
        ShardError::NotAvailable => Errors::CoordinatorNotAvailable,
        ShardError::NotCoordinator => Errors::NotCoordinator,
        ShardError::ProducerFenced => Errors::InvalidProducerEpoch,
        ShardError::LoadInProgress => Errors::CoordinatorLoadInProgress,
    }
}

fn shard(state: &BrokerState, group_id: &str) -> Result<Arc<Mutex<Shard>>, Errors> {
    service(state)
        .shard(&state.topics, state.cluster.as_deref(), group_id)
        .map_err(shard_error)
}

/// Runs `f` on the shard of `group_id` and answers once its records are committed.
async fn run_on<T>(
    state: &BrokerState,
    group_id: &str,
    f: impl FnOnce(&mut crate::groups::Coordinator, i64) -> josef_group::GroupResult<T>,
) -> Result<T, Errors> {
    let shard = shard(state, group_id)?;
    service(state).run(&shard, f).await.map_err(shard_error)
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
    let shard = match shard(state, &req.group_id) {
        Ok(s) => s,
        Err(e) => return error(e),
    };
    let ctx = ctx(header, conn);
    // A classic member of a consumer group is reconciled against the topics it owns and
    // subscribes to: the coordinator needs the current topics.
    let image = super::consumer_group::topic_image(state);
    match service(state)
        .run_parked(&shard, |c, now, id| {
            super::consumer_group::with_image(c, now, image, |c, now| {
                c.join_group(now, id, &ctx, req)
            })
        })
        .await
    {
        Ok(GroupResponse::Join(j)) => wire::join_group_response(&j, version),
        Ok(_) => error(Errors::UnknownServerError),
        Err(e) => error(shard_error(e)),
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
    let error = |e: Errors| wire::sync_group_response(&g::SyncGroupResponse::error(e), version);
    let shard = match shard(state, &req.group_id) {
        Ok(s) => s,
        Err(e) => return error(e),
    };
    match service(state)
        .run_parked(&shard, |c, now, id| c.sync_group(now, id, req))
        .await
    {
        Ok(GroupResponse::Sync(x)) => wire::sync_group_response(&x, version),
        Ok(_) => error(Errors::UnknownServerError),
        Err(e) => error(shard_error(e)),
    }
}

/// Heartbeat (12).
pub async fn heartbeat(state: &BrokerState, r: HeartbeatRequest) -> HeartbeatResponse {
    let req = wire::heartbeat_request(&r);
    let group_id = req.group_id.clone();
    let answer = run_on(state, &group_id, |c, now| c.heartbeat(now, req)).await;
    wire::heartbeat_response(&answer.unwrap_or_else(|error| g::HeartbeatResponse { error }))
}

/// LeaveGroup (13).
pub async fn leave(state: &BrokerState, version: i16, r: LeaveGroupRequest) -> LeaveGroupResponse {
    let req = wire::leave_group_request(&r, version);
    let group_id = req.group_id.clone();
    let answer = run_on(state, &group_id, |c, now| c.leave_group(now, req)).await;
    match answer {
        Ok(a) => wire::leave_group_response(&a, version),
        Err(e) => LeaveGroupResponse {
            error_code: e.code(),
            ..Default::default()
        },
    }
}

/// OffsetCommit (8).
pub async fn offset_commit(
    state: &BrokerState,
    conn: &ConnectionInfo,
    header: &RequestHeader,
    r: OffsetCommitRequest,
) -> OffsetCommitResponse {
    let req = wire::offset_commit_request(&r);
    let topics = req.topics.clone();
    let ctx = ctx(header, conn);
    let image = super::consumer_group::topic_image(state);
    let group_id = req.group_id.clone();
    let answer = run_on(state, &group_id, |c, now| {
        super::consumer_group::with_image(c, now, image, |c, now| c.commit_offsets(now, &ctx, req))
    })
    .await;
    wire::offset_commit_response(
        &answer.unwrap_or_else(|e| g::OffsetCommitResponse::all(&topics, e)),
    )
}

/// TxnOffsetCommit (28). From v5 (transactions v2) the producer sent no AddOffsetsToTxn: the
/// group's `__consumer_offsets` partition is added to its transaction first, here where the
/// group is coordinated; below v5 it is verified to be in the transaction (KIP-890 part 1). A
/// failed add or verification fails every partition of the request and writes nothing.
pub async fn txn_offset_commit(
    state: &BrokerState,
    version: i16,
    r: TxnOffsetCommitRequest,
) -> TxnOffsetCommitResponse {
    if shard(state, &r.group_id).is_ok() {
        let refused = if version >= josef_txn::FIRST_TRANSACTIONS_V2_TXN_OFFSET_COMMIT_VERSION {
            crate::txn_verification::add_offsets_partition(
                state,
                &r.transactional_id,
                r.producer_id,
                r.producer_epoch,
                &r.group_id,
            )
            .await
        } else {
            crate::txn_verification::verify_offsets_partition(
                state,
                version,
                &r.transactional_id,
                r.producer_id,
                r.producer_epoch,
                &r.group_id,
            )
            .await
        };
        if let Some(code) = refused {
            return txn_offset_commit_failed(&r, code.code());
        }
    }
    let req = wire::txn_offset_commit_request(&r);
    let topics = req.topics.clone();
    let image = super::consumer_group::topic_image(state);
    let group_id = req.group_id.clone();
    let (producer_id, producer_epoch) = (req.producer_id, req.producer_epoch);
    let answer = match shard(state, &group_id) {
        Ok(shard) => service(state)
            .run_transactional(&shard, producer_id, producer_epoch, |c, now| {
                super::consumer_group::with_image(c, now, image, |c, now| {
                    c.commit_txn_offsets(now, req)
                })
            })
            .await
            .map_err(shard_error),
        Err(e) => Err(e),
    };
    wire::txn_offset_commit_response(
        &answer.unwrap_or_else(|e| g::OffsetCommitResponse::all(&topics, e)),
    )
}

/// Every partition of `r` answered `error_code`.
fn txn_offset_commit_failed(
    r: &TxnOffsetCommitRequest,
    error_code: i16,
) -> TxnOffsetCommitResponse {
    use josef_protocol::messages::txn_offset_commit_response as resp;
    TxnOffsetCommitResponse {
        topics: r
            .topics
            .iter()
            .map(|t| resp::TxnOffsetCommitResponseTopic {
                name: t.name.clone(),
                partitions: t
                    .partitions
                    .iter()
                    .map(|p| resp::TxnOffsetCommitResponsePartition {
                        partition_index: p.partition_index,
                        error_code,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// OffsetFetch (9): each group is read from its own shard, once its writes are committed.
pub async fn offset_fetch(
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
        let answer = match shard(state, &group.group_id) {
            Ok(shard) => service(state)
                .read_committed(&shard, |c| c.fetch_offsets(&one))
                .await
                .map_err(shard_error),
            Err(e) => Err(e),
        };
        let failed = |error| g::OffsetFetchGroupResponse {
            group_id: group.group_id.clone(),
            topics: vec![],
            error,
        };
        groups.push(match answer {
            Ok(mut a) => a
                .groups
                .pop()
                .unwrap_or_else(|| failed(Errors::CoordinatorNotAvailable)),
            Err(e) => failed(e),
        });
    }
    wire::offset_fetch_response(&g::OffsetFetchResponse { groups }, version)
}

/// ListGroups (16): every shard of the node, each once its writes are committed.
pub async fn list(state: &BrokerState, version: i16, r: ListGroupsRequest) -> ListGroupsResponse {
    let req = wire::list_groups_request(&r, version);
    let mut all = g::ListGroupsResponse {
        error: Errors::None,
        groups: Vec::new(),
    };
    for shard in service(state).loaded_shards(&state.topics, state.cluster.as_deref()) {
        // A shard unloaded meanwhile is another broker's to list.
        if let Ok(listed) = service(state)
            .read_committed(&shard, |c| c.list_groups(&req))
            .await
        {
            all.groups.extend(listed.groups);
        }
    }
    wire::list_groups_response(&all, version)
}

/// DescribeGroups (15), once the group's writes are committed.
pub async fn describe(
    state: &BrokerState,
    version: i16,
    r: DescribeGroupsRequest,
) -> DescribeGroupsResponse {
    let mut described = Vec::new();
    for id in &r.groups {
        let id = id.to_string();
        let answer = match shard(state, &id) {
            Ok(shard) => service(state)
                .read_committed(&shard, |c| {
                    c.describe_groups(version, std::slice::from_ref(&id))
                })
                .await
                .map_err(shard_error),
            Err(e) => Err(e),
        };
        match answer {
            Ok(d) => described.extend(d),
            Err(error) => described.push(g::DescribedGroup {
                error,
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
pub async fn delete(state: &BrokerState, r: DeleteGroupsRequest) -> DeleteGroupsResponse {
    let mut results = Vec::new();
    for id in &r.groups_names {
        let id = id.to_string();
        let answer = run_on(state, &id, |c, now| {
            c.delete_groups(now, std::slice::from_ref(&id))
        })
        .await;
        match answer {
            Ok(d) => results.extend(d),
            Err(error) => results.push(g::DeletedGroup {
                group_id: id,
                error,
            }),
        }
    }
    wire::delete_groups_response(&results)
}

/// OffsetDelete (47).
pub async fn offset_delete(state: &BrokerState, r: OffsetDeleteRequest) -> OffsetDeleteResponse {
    let req = wire::offset_delete_request(&r);
    let group_id = req.group_id.clone();
    let answer = run_on(state, &group_id, |c, now| c.delete_offsets(now, req)).await;
    match answer {
        Ok(a) => wire::offset_delete_response(&a),
        Err(e) => OffsetDeleteResponse {
            error_code: e.code(),
            ..Default::default()
        },
    }
}
