//! One module per API (or family of APIs). Each handler takes the decoded request and returns
//! the response body; the routing lives here.

use josef_protocol::{ApiKey, RequestBody, RequestHeader};

use crate::connection::ConnectionInfo;
use crate::dispatch::{reply, Reply};
use crate::state::BrokerState;

mod admin;
mod broker_configs;
mod client_quotas;
pub mod cluster;
mod configs;
pub mod consumer_group;
mod fetch;
mod find_coordinator;
pub(crate) mod groups;
mod leader_hints;
mod list_offsets;
mod metadata;
mod offset_for_leader_epoch;
mod produce;
pub(crate) mod producer_ids;
mod sasl;
pub mod scram_credentials;
pub(crate) mod txn;
pub mod write_txn_markers;

/// Versions of APIs served by handlers outside the core set (groups, transactions) — none until
/// those land.
pub fn extra_served_versions(key: ApiKey) -> Option<(i16, i16)> {
    match key {
        ApiKey::JoinGroup
        | ApiKey::SyncGroup
        | ApiKey::Heartbeat
        | ApiKey::LeaveGroup
        | ApiKey::OffsetCommit
        | ApiKey::OffsetFetch
        | ApiKey::ListGroups
        | ApiKey::DescribeGroups
        | ApiKey::DeleteGroups
        | ApiKey::OffsetDelete
        | ApiKey::TxnOffsetCommit
        | ApiKey::AddPartitionsToTxn
        | ApiKey::AddOffsetsToTxn
        | ApiKey::DescribeTransactions
        | ApiKey::ListTransactions
        | ApiKey::ConsumerGroupHeartbeat
        | ApiKey::ConsumerGroupDescribe
        | ApiKey::SaslHandshake
        | ApiKey::SaslAuthenticate
        | ApiKey::DescribeUserScramCredentials
        | ApiKey::AlterUserScramCredentials
        | ApiKey::WriteTxnMarkers
        | ApiKey::AlterClientQuotas
        | ApiKey::DescribeClientQuotas
        | ApiKey::CreateAcls
        | ApiKey::DescribeAcls
        | ApiKey::DeleteAcls
        // v5 is transactions v2: advertised only at transaction.version 2 (crate::features).
        | ApiKey::EndTxn => Some(key.valid_versions()),
        _ => None,
    }
}

/// APIs served only by a cluster node (forwarded to the controller).
pub fn cluster_served_versions(key: ApiKey) -> Option<(i16, i16)> {
    match key {
        ApiKey::ElectLeaders
        | ApiKey::AlterPartitionReassignments
        | ApiKey::ListPartitionReassignments
        | ApiKey::DescribeQuorum
        | ApiKey::UpdateFeatures
        // For older tools that send it to the broker Metadata names as controller (Kafka's
        // ZooKeeper-era path); the active controller answers it (`ControlledShutdown` there).
        | ApiKey::ControlledShutdown => Some(key.valid_versions()),
        _ => None,
    }
}

/// Handles one decoded request: the ACL APIs, or the ACL checks around the API's handler.
pub async fn handle(
    state: &BrokerState,
    conn: &ConnectionInfo,
    header: &RequestHeader,
    body: RequestBody,
) -> Reply {
    use crate::authorization::{acls, after, before, request_auth, Checked};
    let auth = request_auth(state, conn);
    let v = header.request_api_version;
    let body = match body {
        RequestBody::CreateAcls(r) => return Reply::Body(acls::create(state, &auth, r, v).await),
        RequestBody::DescribeAcls(r) => return reply(acls::describe(&auth, r)),
        RequestBody::DeleteAcls(r) => return Reply::Body(acls::delete(state, &auth, r, v).await),
        other => other,
    };
    match before(state, &auth, header, body) {
        Checked::Reply(r) => r,
        Checked::Run(body, then) => {
            let r = route(state, conn, header, body).await;
            after(state, &auth, then, r)
        }
    }
}

/// Routes one decoded request to its handler.
async fn route(
    state: &BrokerState,
    conn: &ConnectionInfo,
    header: &RequestHeader,
    body: RequestBody,
) -> Reply {
    let v = header.request_api_version;
    if let Some(node) = state.cluster.clone() {
        match body {
            RequestBody::ApiVersions(_) => {
                let level = crate::features::transaction_version_level(&state.config, Some(&node));
                let mut r = crate::dispatch::api_versions_body(true, level);
                cluster::add_features(&node, &mut r);
                return reply(r);
            }
            b @ (RequestBody::CreateTopics(_)
            | RequestBody::DeleteTopics(_)
            | RequestBody::CreatePartitions(_)
            | RequestBody::ElectLeaders(_)
            | RequestBody::AlterPartitionReassignments(_)
            | RequestBody::ListPartitionReassignments(_)
            | RequestBody::DescribeQuorum(_)
            | RequestBody::UpdateFeatures(_)
            | RequestBody::AlterUserScramCredentials(_)
            | RequestBody::AlterClientQuotas(_)
            | RequestBody::ControlledShutdown(_)) => {
                return Reply::Body(cluster::forward(&node, b, v).await)
            }
            RequestBody::IncrementalAlterConfigs(r) => {
                return reply(configs::incremental_alter_cluster(state, &node, r, v).await)
            }
            RequestBody::AlterConfigs(r) => {
                return reply(configs::alter_cluster(state, &node, r, v).await)
            }
            other => return handle_local(state, conn, header, other).await,
        }
    }
    handle_local(state, conn, header, body).await
}

/// Routes a request this node answers itself.
async fn handle_local(
    state: &BrokerState,
    conn: &ConnectionInfo,
    header: &RequestHeader,
    body: RequestBody,
) -> Reply {
    let v = header.request_api_version;
    // The group and transaction APIs go to the coordinators through the kit's seam.
    let (groups, txns) = (
        state.group_coordinator.as_ref(),
        state.txn_coordinator.as_ref(),
    );
    let rq = crate::kit::coordinators::CoordinatorRequest {
        state,
        conn,
        header,
    };
    match body {
        RequestBody::ApiVersions(_) => {
            let level =
                crate::features::transaction_version_level(&state.config, state.cluster.as_deref());
            reply(crate::dispatch::api_versions_body(
                state.cluster.is_some(),
                level,
            ))
        }
        RequestBody::Metadata(r) => reply(metadata::handle(state, conn, r, v).await),
        RequestBody::Produce(r) => produce::handle(state, conn, header, r, v).await,
        RequestBody::Fetch(r) => {
            let mut resp = fetch::handle(state, r, v).await;
            leader_hints::fetch(state, &conn.listener, v, &mut resp);
            reply(resp)
        }
        RequestBody::ListOffsets(r) => reply(list_offsets::handle(state, r, v)),
        RequestBody::CreateTopics(r) => reply(admin::create_topics(state, r, v)),
        RequestBody::DeleteTopics(r) => reply(admin::delete_topics(state, r, v)),
        RequestBody::CreatePartitions(r) => reply(admin::create_partitions(state, r)),
        RequestBody::DeleteRecords(r) => reply(admin::delete_records(state, r).await),
        RequestBody::DescribeCluster(r) => reply(admin::describe_cluster(state, conn, r)),
        RequestBody::DescribeLogDirs(r) => reply(admin::describe_log_dirs(state, r)),
        RequestBody::DescribeConfigs(r) => reply(configs::describe(state, r, v)),
        RequestBody::IncrementalAlterConfigs(r) => reply(configs::incremental_alter(state, r)),
        RequestBody::AlterConfigs(r) => reply(configs::alter(state, r)),
        RequestBody::FindCoordinator(r) => reply(find_coordinator::handle(state, conn, r, v).await),
        RequestBody::InitProducerId(r) => reply(txns.init_producer_id(rq, r).await),
        RequestBody::AddPartitionsToTxn(r) => reply(txns.add_partitions_to_txn(rq, r).await),
        RequestBody::AddOffsetsToTxn(r) => reply(txns.add_offsets_to_txn(rq, r).await),
        RequestBody::EndTxn(r) => reply(txns.end_txn(rq, r).await),
        RequestBody::WriteTxnMarkers(r) => reply(write_txn_markers::handle(state, r).await),
        RequestBody::DescribeTransactions(r) => reply(txns.describe_transactions(rq, r).await),
        RequestBody::ListTransactions(r) => reply(txns.list_transactions(rq, r).await),
        RequestBody::DescribeProducers(r) => reply(producer_ids::describe_producers(state, r)),
        RequestBody::OffsetForLeaderEpoch(r) => reply(offset_for_leader_epoch::handle(state, r)),
        RequestBody::JoinGroup(r) => reply(groups.join_group(rq, r).await),
        RequestBody::SyncGroup(r) => reply(groups.sync_group(rq, r).await),
        RequestBody::Heartbeat(r) => reply(groups.heartbeat(rq, r).await),
        RequestBody::LeaveGroup(r) => reply(groups.leave_group(rq, r).await),
        RequestBody::OffsetCommit(r) => reply(groups.offset_commit(rq, r).await),
        RequestBody::TxnOffsetCommit(r) => reply(groups.txn_offset_commit(rq, r).await),
        RequestBody::OffsetFetch(r) => reply(groups.offset_fetch(rq, r).await),
        RequestBody::ListGroups(r) => reply(groups.list_groups(rq, r).await),
        RequestBody::DescribeGroups(r) => reply(groups.describe_groups(rq, r).await),
        RequestBody::DeleteGroups(r) => reply(groups.delete_groups(rq, r).await),
        RequestBody::OffsetDelete(r) => reply(groups.offset_delete(rq, r).await),
        RequestBody::ConsumerGroupHeartbeat(r) => {
            reply(groups.consumer_group_heartbeat(rq, r).await)
        }
        RequestBody::ConsumerGroupDescribe(r) => reply(groups.consumer_group_describe(rq, r).await),
        RequestBody::SaslHandshake(r) => reply(sasl::handshake(r)),
        RequestBody::SaslAuthenticate(r) => reply(sasl::authenticate(r)),
        RequestBody::DescribeUserScramCredentials(r) => {
            reply(scram_credentials::describe(state, &r))
        }
        RequestBody::AlterUserScramCredentials(r) => {
            Reply::Body(scram_credentials::alter_local(state, &r))
        }
        RequestBody::AlterClientQuotas(r) => reply(client_quotas::alter(state, r)),
        RequestBody::DescribeClientQuotas(r) => reply(client_quotas::describe(state, r)),
        other => Reply::Close(format!("{:?} is not served", other.api_key())),
    }
}
