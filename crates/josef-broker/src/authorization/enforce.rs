//! The ACLs each API needs, applied around its handler (after Kafka's `KafkaApis`; the table is
//! `josef_authorizer::api_acls`).
//!
//! [`before`] looks at a request: a request refused as a whole is answered at once; topics,
//! partitions, groups or config resources the principal may not touch are taken out of it, their
//! error entries kept in an [`After`]. The handler then runs on what is left, and [`after`] adds
//! the kept entries to its response and applies what only the response shows (topics hidden from
//! Metadata, groups listed, KIP-430 authorized operations).

use josef_authorizer::{AclOperation as Op, ResourceType};
use josef_protocol::messages::*;
use josef_protocol::{ErrorCode, RequestBody, RequestHeader, ResponseBody, StrBytes, Uuid};

use super::RequestAuth;
use crate::dispatch::Reply;
use crate::state::BrokerState;

/// What [`after`] must add to, or filter out of, the handler's response.
#[derive(Default)]
pub(crate) enum After {
    /// Nothing: the response is the handler's.
    #[default]
    Nothing,
    /// Produce: partitions refused; with acks=0 a refusal closes the connection.
    Produce(Vec<produce_response::TopicProduceResponse>, bool),
    /// Fetch: partitions refused.
    Fetch(Vec<fetch_response::FetchableTopicResponse>),
    /// ListOffsets: topics refused.
    ListOffsets(Vec<list_offsets_response::ListOffsetsTopicResponse>),
    /// OffsetForLeaderEpoch: topics refused.
    OffsetForLeaderEpoch(Vec<offset_for_leader_epoch_response::OffsetForLeaderTopicResult>),
    /// Metadata: topics refused, and what the response must show.
    Metadata(MetadataAfter),
    /// OffsetCommit: topics refused.
    OffsetCommit(Vec<offset_commit_response::OffsetCommitResponseTopic>),
    /// TxnOffsetCommit: topics refused.
    TxnOffsetCommit(Vec<txn_offset_commit_response::TxnOffsetCommitResponseTopic>),
    /// OffsetFetch: mark undescribable topics, or leave them out of a fetch of every offset.
    OffsetFetch(OffsetFetchAfter),
    /// DescribeGroups: groups refused, authorized operations when asked.
    DescribeGroups(bool),
    /// ConsumerGroupDescribe: groups refused, authorized operations when asked.
    ConsumerGroupDescribe(bool),
    /// ListGroups: only the groups the principal may describe.
    ListGroups,
    /// DeleteGroups: groups refused.
    DeleteGroups(Vec<delete_groups_response::DeletableGroupResult>),
    /// CreateTopics: topics refused.
    CreateTopics(Vec<create_topics_response::CreatableTopicResult>),
    /// DeleteTopics: topics refused.
    DeleteTopics(Vec<delete_topics_response::DeletableTopicResult>),
    /// CreatePartitions: topics refused.
    CreatePartitions(Vec<create_partitions_response::CreatePartitionsTopicResult>),
    /// DeleteRecords: topics refused.
    DeleteRecords(Vec<delete_records_response::DeleteRecordsTopicResult>),
    /// DescribeConfigs: resources refused.
    DescribeConfigs(Vec<describe_configs_response::DescribeConfigsResult>),
    /// AlterConfigs: resources refused.
    AlterConfigs(Vec<alter_configs_response::AlterConfigsResourceResponse>),
    /// IncrementalAlterConfigs: resources refused.
    IncrementalAlterConfigs(Vec<incremental_alter_configs_response::AlterConfigsResourceResponse>),
    /// FindCoordinator v4+: keys refused.
    FindCoordinator(Vec<find_coordinator_response::Coordinator>),
    /// DescribeCluster: the cluster's authorized operations, when asked.
    DescribeCluster(bool),
    /// OffsetDelete: topics refused.
    OffsetDelete(Vec<offset_delete_response::OffsetDeleteResponseTopic>),
    /// DescribeProducers: topics without READ are refused.
    DescribeProducers,
    /// DescribeTransactions: transactional ids without DESCRIBE are refused.
    DescribeTransactions,
    /// ListTransactions: only the transactional ids the principal may describe.
    ListTransactions,
}

/// OffsetFetch's part of [`After`].
pub(crate) struct OffsetFetchAfter {
    version: i16,
    /// v0–7: the request asked for every topic.
    all_topics: bool,
    /// v8+: the groups whose every topic was asked for.
    all_topics_of: Vec<StrBytes>,
}

/// Metadata's part of [`After`].
pub(crate) struct MetadataAfter {
    refused: Vec<metadata_response::MetadataResponseTopic>,
    /// The request asked for every topic.
    all: bool,
    /// v0 names whose refusal left an empty list, which v0 reads as "every topic": only these
    /// may be answered.
    only: Option<Vec<StrBytes>>,
    topic_ops: bool,
    cluster_ops: bool,
}

/// The outcome of [`before`].
pub(crate) enum Before {
    /// Run the handler on this request, then [`after`].
    Run(RequestBody, After),
    /// Answer this, without running the handler.
    Answer(Reply),
}

fn code(e: ErrorCode) -> i16 {
    e.code()
}

const TOPIC_DENIED: ErrorCode = ErrorCode::TopicAuthorizationFailed;
const GROUP_DENIED: ErrorCode = ErrorCode::GroupAuthorizationFailed;
const CLUSTER_DENIED: ErrorCode = ErrorCode::ClusterAuthorizationFailed;
const TXN_DENIED: ErrorCode = ErrorCode::TransactionalIdAuthorizationFailed;

/// Splits `items` into those `keep` accepts and the others.
fn split<T>(items: Vec<T>, keep: impl Fn(&T) -> bool) -> (Vec<T>, Vec<T>) {
    items.into_iter().partition(|t| keep(t))
}

/// A topic's name from its id, on this node's view of the cluster.
pub(crate) fn topic_name(state: &BrokerState, id: Uuid) -> Option<String> {
    match &state.cluster {
        Some(node) => node.log.image().topic_by_id(id).map(|t| t.name.clone()),
        None => state.topics.get_by_id(&id).map(|t| t.name.clone()),
    }
}

fn topic_exists(state: &BrokerState, name: &str) -> bool {
    match &state.cluster {
        Some(node) => node.log.image().topic_by_name(name).is_some(),
        None => state.topics.get(name).is_some(),
    }
}

fn answer(body: impl Into<ResponseBody>) -> Before {
    Before::Answer(Reply::Body(body.into()))
}

/// Takes the config resources `op` is refused on out of `$r.resources` and answers each with a
/// `$result` carrying the refusal (the three config APIs share request and response shapes).
macro_rules! refuse_configs {
    ($auth:expr, $r:expr, $op:expr, $result:path) => {{
        let (keep, refused) = split(std::mem::take(&mut $r.resources), |x| {
            config_refusal($auth, x.resource_type, &x.resource_name, $op).is_none()
        });
        $r.resources = keep;
        type Result = $result;
        refused
            .into_iter()
            .map(|x| Result {
                error_code: config_refusal($auth, x.resource_type, &x.resource_name, $op)
                    .map_or(0, code),
                resource_type: x.resource_type,
                resource_name: x.resource_name,
                ..Default::default()
            })
            .collect::<Vec<_>>()
    }};
}

/// The checks of `body` before its handler runs.
pub(crate) fn before(
    state: &BrokerState,
    auth: &RequestAuth,
    header: &RequestHeader,
    body: RequestBody,
) -> Before {
    if auth.authorizer.is_none() {
        // Without an authorizer only the KIP-430 fields need filling in.
        let after = match &body {
            RequestBody::Metadata(r) => After::Metadata(MetadataAfter {
                refused: Vec::new(),
                all: false,
                only: None,
                topic_ops: r.include_topic_authorized_operations,
                cluster_ops: r.include_cluster_authorized_operations,
            }),
            RequestBody::DescribeGroups(r) => {
                After::DescribeGroups(r.include_authorized_operations)
            }
            RequestBody::ConsumerGroupDescribe(r) => {
                After::ConsumerGroupDescribe(r.include_authorized_operations)
            }
            RequestBody::DescribeCluster(r) => {
                After::DescribeCluster(r.include_cluster_authorized_operations)
            }
            _ => After::Nothing,
        };
        return Before::Run(body, after);
    }
    let v = header.request_api_version;
    match body {
        RequestBody::Produce(r) => produce(auth, r),
        RequestBody::Fetch(r) => fetch(state, auth, r),
        RequestBody::ListOffsets(mut r) => {
            let (keep, refused) = split(r.topics, |t| auth.topic(Op::Describe, &t.name));
            r.topics = keep;
            let refused = refused
                .into_iter()
                .map(|t| list_offsets_response::ListOffsetsTopicResponse {
                    name: t.name,
                    partitions: t
                        .partitions
                        .iter()
                        .map(|p| list_offsets_response::ListOffsetsPartitionResponse {
                            partition_index: p.partition_index,
                            error_code: code(TOPIC_DENIED),
                            timestamp: -1,
                            offset: -1,
                            leader_epoch: -1,
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                })
                .collect();
            Before::Run(RequestBody::ListOffsets(r), After::ListOffsets(refused))
        }
        RequestBody::OffsetForLeaderEpoch(mut r) => {
            let cluster = auth.cluster(Op::ClusterAction);
            let (keep, refused) =
                split(r.topics, |t| cluster || auth.topic(Op::Describe, &t.topic));
            r.topics = keep;
            let refused = refused
                .into_iter()
                .map(
                    |t| offset_for_leader_epoch_response::OffsetForLeaderTopicResult {
                        topic: t.topic,
                        partitions: t
                            .partitions
                            .iter()
                            .map(|p| offset_for_leader_epoch_response::EpochEndOffset {
                                error_code: code(TOPIC_DENIED),
                                partition: p.partition,
                                leader_epoch: -1,
                                end_offset: -1,
                                ..Default::default()
                            })
                            .collect(),
                        ..Default::default()
                    },
                )
                .collect();
            Before::Run(
                RequestBody::OffsetForLeaderEpoch(r),
                After::OffsetForLeaderEpoch(refused),
            )
        }
        RequestBody::Metadata(r) => metadata(state, auth, r, v),
        RequestBody::JoinGroup(r) if !auth.group(Op::Read, &r.group_id) => {
            answer(JoinGroupResponse {
                error_code: code(GROUP_DENIED),
                generation_id: -1,
                protocol_name: (v < 7).then(|| StrBytes::from("")),
                ..Default::default()
            })
        }
        RequestBody::SyncGroup(r) if !auth.group(Op::Read, &r.group_id) => {
            answer(SyncGroupResponse {
                error_code: code(GROUP_DENIED),
                ..Default::default()
            })
        }
        RequestBody::Heartbeat(r) if !auth.group(Op::Read, &r.group_id) => {
            answer(HeartbeatResponse {
                error_code: code(GROUP_DENIED),
                ..Default::default()
            })
        }
        RequestBody::LeaveGroup(r) if !auth.group(Op::Read, &r.group_id) => {
            answer(LeaveGroupResponse {
                error_code: code(GROUP_DENIED),
                ..Default::default()
            })
        }
        RequestBody::OffsetCommit(r) => offset_commit(auth, r),
        RequestBody::TxnOffsetCommit(r) => txn_offset_commit(auth, r),
        RequestBody::OffsetFetch(r) => offset_fetch(auth, r, v),
        RequestBody::DescribeGroups(r) => {
            let ops = r.include_authorized_operations;
            Before::Run(RequestBody::DescribeGroups(r), After::DescribeGroups(ops))
        }
        RequestBody::ConsumerGroupDescribe(r) => {
            let ops = r.include_authorized_operations;
            Before::Run(
                RequestBody::ConsumerGroupDescribe(r),
                After::ConsumerGroupDescribe(ops),
            )
        }
        RequestBody::ListGroups(r) => {
            let after = if auth.cluster(Op::Describe) {
                After::Nothing
            } else {
                After::ListGroups
            };
            Before::Run(RequestBody::ListGroups(r), after)
        }
        RequestBody::DeleteGroups(mut r) => {
            let (keep, refused) = split(r.groups_names, |g| auth.group(Op::Delete, g));
            r.groups_names = keep;
            let refused = refused
                .into_iter()
                .map(|g| delete_groups_response::DeletableGroupResult {
                    group_id: g,
                    error_code: code(GROUP_DENIED),
                    ..Default::default()
                })
                .collect();
            Before::Run(RequestBody::DeleteGroups(r), After::DeleteGroups(refused))
        }
        RequestBody::ConsumerGroupHeartbeat(r) => {
            let refused = if !auth.group(Op::Read, &r.group_id) {
                Some(GROUP_DENIED)
            } else if r
                .subscribed_topic_names
                .iter()
                .flatten()
                .any(|t| !auth.topic(Op::Describe, t))
            {
                Some(TOPIC_DENIED)
            } else {
                None
            };
            match refused {
                Some(e) => answer(ConsumerGroupHeartbeatResponse {
                    error_code: code(e),
                    ..Default::default()
                }),
                None => Before::Run(RequestBody::ConsumerGroupHeartbeat(r), After::Nothing),
            }
        }
        RequestBody::FindCoordinator(r) => find_coordinator(auth, r, v),
        RequestBody::InitProducerId(r) => {
            let refused = match r.transactional_id.as_deref().filter(|t| !t.is_empty()) {
                Some(id) => (!auth.transactional_id(Op::Write, id)).then_some(TXN_DENIED),
                None => (!auth.cluster(Op::IdempotentWrite)
                    && !auth.any_of_type(Op::Write, ResourceType::Topic))
                .then_some(CLUSTER_DENIED),
            };
            match refused {
                Some(e) => answer(InitProducerIdResponse {
                    error_code: code(e),
                    producer_id: -1,
                    producer_epoch: -1,
                    ..Default::default()
                }),
                None => Before::Run(RequestBody::InitProducerId(r), After::Nothing),
            }
        }
        RequestBody::AddPartitionsToTxn(r) => add_partitions_to_txn(auth, r, v),
        RequestBody::AddOffsetsToTxn(r) => {
            let refused = if !auth.transactional_id(Op::Write, &r.transactional_id) {
                Some(TXN_DENIED)
            } else if !auth.group(Op::Read, &r.group_id) {
                Some(GROUP_DENIED)
            } else {
                None
            };
            match refused {
                Some(e) => answer(AddOffsetsToTxnResponse {
                    error_code: code(e),
                    ..Default::default()
                }),
                None => Before::Run(RequestBody::AddOffsetsToTxn(r), After::Nothing),
            }
        }
        RequestBody::EndTxn(r) if !auth.transactional_id(Op::Write, &r.transactional_id) => {
            answer(EndTxnResponse {
                error_code: code(TXN_DENIED),
                producer_id: -1,
                producer_epoch: -1,
                ..Default::default()
            })
        }
        RequestBody::CreateTopics(mut r) => {
            let cluster = auth.cluster(Op::Create);
            let (keep, refused) = split(r.topics, |t| cluster || auth.topic(Op::Create, &t.name));
            r.topics = keep;
            let refused = refused
                .into_iter()
                .map(|t| create_topics_response::CreatableTopicResult {
                    name: t.name,
                    error_code: code(TOPIC_DENIED),
                    topic_config_error_code: code(TOPIC_DENIED),
                    num_partitions: -1,
                    replication_factor: -1,
                    ..Default::default()
                })
                .collect();
            Before::Run(RequestBody::CreateTopics(r), After::CreateTopics(refused))
        }
        RequestBody::DeleteTopics(r) => delete_topics(state, auth, r),
        RequestBody::CreatePartitions(mut r) => {
            let (keep, refused) = split(r.topics, |t| auth.topic(Op::Alter, &t.name));
            r.topics = keep;
            let refused = refused
                .into_iter()
                .map(
                    |t| create_partitions_response::CreatePartitionsTopicResult {
                        name: t.name,
                        error_code: code(TOPIC_DENIED),
                        ..Default::default()
                    },
                )
                .collect();
            Before::Run(
                RequestBody::CreatePartitions(r),
                After::CreatePartitions(refused),
            )
        }
        RequestBody::DeleteRecords(mut r) => {
            let (keep, refused) = split(r.topics, |t| auth.topic(Op::Delete, &t.name));
            r.topics = keep;
            let refused = refused
                .into_iter()
                .map(|t| delete_records_response::DeleteRecordsTopicResult {
                    name: t.name,
                    partitions: t
                        .partitions
                        .iter()
                        .map(|p| delete_records_response::DeleteRecordsPartitionResult {
                            partition_index: p.partition_index,
                            low_watermark: -1,
                            error_code: code(TOPIC_DENIED),
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                })
                .collect();
            Before::Run(RequestBody::DeleteRecords(r), After::DeleteRecords(refused))
        }
        RequestBody::DescribeConfigs(mut r) => {
            let refused = refuse_configs!(
                auth,
                r,
                Op::DescribeConfigs,
                describe_configs_response::DescribeConfigsResult
            );
            Before::Run(
                RequestBody::DescribeConfigs(r),
                After::DescribeConfigs(refused),
            )
        }
        RequestBody::AlterConfigs(mut r) => {
            let refused = refuse_configs!(
                auth,
                r,
                Op::AlterConfigs,
                alter_configs_response::AlterConfigsResourceResponse
            );
            Before::Run(RequestBody::AlterConfigs(r), After::AlterConfigs(refused))
        }
        RequestBody::IncrementalAlterConfigs(mut r) => {
            let refused = refuse_configs!(
                auth,
                r,
                Op::AlterConfigs,
                incremental_alter_configs_response::AlterConfigsResourceResponse
            );
            Before::Run(
                RequestBody::IncrementalAlterConfigs(r),
                After::IncrementalAlterConfigs(refused),
            )
        }
        RequestBody::DescribeCluster(r) => {
            let ops = r.include_cluster_authorized_operations;
            Before::Run(RequestBody::DescribeCluster(r), After::DescribeCluster(ops))
        }
        b @ (RequestBody::ElectLeaders(_)
        | RequestBody::AlterPartitionReassignments(_)
        | RequestBody::UpdateFeatures(_))
            if !auth.cluster(Op::Alter) =>
        {
            answer(crate::cluster::responses::error_response(
                &b,
                CLUSTER_DENIED,
            ))
        }
        b @ (RequestBody::ListPartitionReassignments(_) | RequestBody::DescribeQuorum(_))
            if !auth.cluster(Op::Describe) =>
        {
            answer(crate::cluster::responses::error_response(
                &b,
                CLUSTER_DENIED,
            ))
        }
        RequestBody::OffsetDelete(r) => offset_delete(auth, r),
        b @ RequestBody::DescribeProducers(_) => Before::Run(b, After::DescribeProducers),
        b @ RequestBody::DescribeTransactions(_) => Before::Run(b, After::DescribeTransactions),
        b @ RequestBody::ListTransactions(_) => Before::Run(b, After::ListTransactions),
        // Client quotas and SCRAM credentials are cluster resources (Kafka's AuthHelper):
        // altering needs ALTER_CONFIGS / ALTER, describing DESCRIBE_CONFIGS / DESCRIBE.
        b @ RequestBody::AlterClientQuotas(_) if !auth.cluster(Op::AlterConfigs) => answer(
            crate::cluster::responses::error_response(&b, CLUSTER_DENIED),
        ),
        b @ RequestBody::AlterUserScramCredentials(_) if !auth.cluster(Op::Alter) => answer(
            crate::cluster::responses::error_response(&b, CLUSTER_DENIED),
        ),
        RequestBody::DescribeClientQuotas(_) if !auth.cluster(Op::DescribeConfigs) => {
            answer(DescribeClientQuotasResponse {
                error_code: code(CLUSTER_DENIED),
                ..Default::default()
            })
        }
        RequestBody::DescribeUserScramCredentials(_) if !auth.cluster(Op::Describe) => {
            answer(DescribeUserScramCredentialsResponse {
                error_code: code(CLUSTER_DENIED),
                ..Default::default()
            })
        }
        RequestBody::DescribeLogDirs(_) if !auth.cluster(Op::Describe) => {
            answer(DescribeLogDirsResponse {
                error_code: code(CLUSTER_DENIED),
                ..Default::default()
            })
        }
        other => Before::Run(other, After::Nothing),
    }
}

/// The refusal of a config resource (Kafka's `ConfigResource.Type` codes), if refused.
fn config_refusal(
    auth: &RequestAuth,
    resource_type: i8,
    name: &str,
    op: josef_authorizer::AclOperation,
) -> Option<ErrorCode> {
    match resource_type {
        2 => (!auth.topic(op, name)).then_some(TOPIC_DENIED),
        32 => (!auth.group(op, name)).then_some(GROUP_DENIED),
        4 | 8 | 16 => (!auth.cluster(op)).then_some(CLUSTER_DENIED),
        _ => None,
    }
}

fn produce(auth: &RequestAuth, mut r: ProduceRequest) -> Before {
    let acks_zero = r.acks == 0;
    let txn = r.transactional_id.as_deref().filter(|t| !t.is_empty());
    let txn_refused = txn.is_some_and(|t| !auth.transactional_id(Op::Write, t));
    let (keep, refused) = split(std::mem::take(&mut r.topic_data), |t| {
        !txn_refused && auth.topic(Op::Write, &t.name)
    });
    r.topic_data = keep;
    let error = if txn_refused {
        TXN_DENIED
    } else {
        TOPIC_DENIED
    };
    let refused: Vec<_> = refused
        .into_iter()
        .map(|t| produce_response::TopicProduceResponse {
            name: t.name,
            partition_responses: t
                .partition_data
                .iter()
                .map(|p| produce_response::PartitionProduceResponse {
                    index: p.index,
                    error_code: code(error),
                    base_offset: -1,
                    log_append_time_ms: -1,
                    log_start_offset: -1,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        })
        .collect();
    if r.topic_data.is_empty() && !refused.is_empty() {
        if acks_zero {
            return Before::Answer(Reply::Close(
                "acks=0 produce refused by the authorizer".into(),
            ));
        }
        return answer(ProduceResponse {
            responses: refused,
            ..Default::default()
        });
    }
    Before::Run(RequestBody::Produce(r), After::Produce(refused, acks_zero))
}

fn fetch_partition_error(partition: i32, error: ErrorCode) -> fetch_response::PartitionData {
    fetch_response::PartitionData {
        partition_index: partition,
        error_code: code(error),
        high_watermark: -1,
        last_stable_offset: -1,
        log_start_offset: -1,
        preferred_read_replica: -1,
        // Empty, not null: clients read a null record set as a parse failure.
        records: Some(bytes::Bytes::new()),
        ..Default::default()
    }
}

fn fetch(state: &BrokerState, auth: &RequestAuth, mut r: FetchRequest) -> Before {
    let follower = r.replica_id >= 0 || r.replica_state.replica_id >= 0;
    let allowed_all = follower && auth.cluster(Op::ClusterAction);
    let (keep, refused) = split(std::mem::take(&mut r.topics), |t| {
        if allowed_all {
            return true;
        }
        if follower {
            return false;
        }
        let name = if t.topic.is_empty() {
            match topic_name(state, t.topic_id) {
                Some(n) => n,
                // An unknown id is the handler's UNKNOWN_TOPIC_ID.
                None => return true,
            }
        } else {
            t.topic.to_string()
        };
        auth.topic(Op::Read, &name)
    });
    let had_topics = !keep.is_empty() || !refused.is_empty();
    r.topics = keep;
    if r.topics.is_empty() && had_topics {
        // Nothing left to wait for: Kafka answers at once.
        r.max_wait_ms = 0;
    }
    let refused = refused
        .into_iter()
        .map(|t| fetch_response::FetchableTopicResponse {
            topic: t.topic,
            topic_id: t.topic_id,
            partitions: t
                .partitions
                .iter()
                .map(|p| fetch_partition_error(p.partition, TOPIC_DENIED))
                .collect(),
            ..Default::default()
        })
        .collect();
    Before::Run(RequestBody::Fetch(r), After::Fetch(refused))
}

fn metadata_refused(name: Option<StrBytes>, id: Uuid) -> metadata_response::MetadataResponseTopic {
    metadata_response::MetadataResponseTopic {
        error_code: code(TOPIC_DENIED),
        name,
        topic_id: id,
        partitions: Vec::new(),
        topic_authorized_operations: josef_authorizer::AUTHORIZED_OPERATIONS_OMITTED,
        ..Default::default()
    }
}

fn metadata(state: &BrokerState, auth: &RequestAuth, mut r: MetadataRequest, v: i16) -> Before {
    let all = match &r.topics {
        None => true,
        Some(t) => t.is_empty() && v == 0,
    };
    let mut refused = Vec::new();
    let mut only = None;
    if !all {
        let auto_create =
            state.config.auto_create_topics_enable && (v < 4 || r.allow_auto_topic_creation);
        let cluster_create = auto_create && auth.cluster(Op::Create);
        let requested = r.topics.take().unwrap_or_default();
        let names: Vec<StrBytes> = requested.iter().filter_map(|t| t.name.clone()).collect();
        let mut keep = Vec::with_capacity(requested.len());
        for t in requested {
            let Some(name) = t.name.as_ref().filter(|n| !n.is_empty()) else {
                keep.push(t);
                continue;
            };
            let denied = !auth.topic(Op::Describe, name)
                || (auto_create
                    && !cluster_create
                    && !topic_exists(state, name)
                    && !auth.topic(Op::Create, name));
            if denied {
                refused.push(metadata_refused(t.name.clone(), Uuid::ZERO));
            } else {
                keep.push(t);
            }
        }
        if v == 0 && keep.is_empty() {
            only = Some(names);
        }
        r.topics = Some(keep);
    }
    let after = MetadataAfter {
        refused,
        all,
        only,
        topic_ops: r.include_topic_authorized_operations,
        cluster_ops: r.include_cluster_authorized_operations,
    };
    Before::Run(RequestBody::Metadata(r), After::Metadata(after))
}

fn offset_commit(auth: &RequestAuth, mut r: OffsetCommitRequest) -> Before {
    let group_ok = auth.group(Op::Read, &r.group_id);
    let (keep, refused) = split(std::mem::take(&mut r.topics), |t| {
        group_ok && auth.topic(Op::Read, &t.name)
    });
    let error = if group_ok { TOPIC_DENIED } else { GROUP_DENIED };
    let refused: Vec<_> = refused
        .into_iter()
        .map(|t| offset_commit_response::OffsetCommitResponseTopic {
            name: t.name,
            partitions: t
                .partitions
                .iter()
                .map(|p| offset_commit_response::OffsetCommitResponsePartition {
                    partition_index: p.partition_index,
                    error_code: code(error),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        })
        .collect();
    if !group_ok {
        return answer(OffsetCommitResponse {
            topics: refused,
            ..Default::default()
        });
    }
    r.topics = keep;
    Before::Run(RequestBody::OffsetCommit(r), After::OffsetCommit(refused))
}

fn offset_delete(auth: &RequestAuth, mut r: OffsetDeleteRequest) -> Before {
    if !auth.group(Op::Delete, &r.group_id) {
        return answer(OffsetDeleteResponse {
            error_code: code(GROUP_DENIED),
            ..Default::default()
        });
    }
    let (keep, refused) = split(std::mem::take(&mut r.topics), |t| {
        auth.topic(Op::Read, &t.name)
    });
    r.topics = keep;
    let refused = refused
        .into_iter()
        .map(|t| offset_delete_response::OffsetDeleteResponseTopic {
            name: t.name,
            partitions: t
                .partitions
                .iter()
                .map(|p| offset_delete_response::OffsetDeleteResponsePartition {
                    partition_index: p.partition_index,
                    error_code: code(TOPIC_DENIED),
                })
                .collect(),
        })
        .collect();
    Before::Run(RequestBody::OffsetDelete(r), After::OffsetDelete(refused))
}

fn txn_offset_commit(auth: &RequestAuth, mut r: TxnOffsetCommitRequest) -> Before {
    let whole = if !auth.transactional_id(Op::Write, &r.transactional_id) {
        Some(TXN_DENIED)
    } else if !auth.group(Op::Read, &r.group_id) {
        Some(GROUP_DENIED)
    } else {
        None
    };
    let (keep, refused) = split(std::mem::take(&mut r.topics), |t| {
        whole.is_none() && auth.topic(Op::Read, &t.name)
    });
    let error = whole.unwrap_or(TOPIC_DENIED);
    let refused: Vec<_> = refused
        .into_iter()
        .map(
            |t| txn_offset_commit_response::TxnOffsetCommitResponseTopic {
                name: t.name,
                partitions: t
                    .partitions
                    .iter()
                    .map(
                        |p| txn_offset_commit_response::TxnOffsetCommitResponsePartition {
                            partition_index: p.partition_index,
                            error_code: code(error),
                            ..Default::default()
                        },
                    )
                    .collect(),
                ..Default::default()
            },
        )
        .collect();
    if whole.is_some() {
        return answer(TxnOffsetCommitResponse {
            topics: refused,
            ..Default::default()
        });
    }
    r.topics = keep;
    Before::Run(
        RequestBody::TxnOffsetCommit(r),
        After::TxnOffsetCommit(refused),
    )
}

fn offset_fetch(auth: &RequestAuth, r: OffsetFetchRequest, v: i16) -> Before {
    if v < 8 && !auth.group(Op::Describe, &r.group_id) {
        let partitions_error = |t: &offset_fetch_request::OffsetFetchRequestTopic| {
            offset_fetch_response::OffsetFetchResponseTopic {
                name: t.name.clone(),
                partitions: t
                    .partition_indexes
                    .iter()
                    .map(|p| offset_fetch_response::OffsetFetchResponsePartition {
                        partition_index: *p,
                        committed_offset: -1,
                        committed_leader_epoch: -1,
                        error_code: code(GROUP_DENIED),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }
        };
        return answer(OffsetFetchResponse {
            error_code: code(GROUP_DENIED),
            topics: r.topics.iter().flatten().map(partitions_error).collect(),
            ..Default::default()
        });
    }
    let after = OffsetFetchAfter {
        version: v,
        all_topics: r.topics.is_none(),
        all_topics_of: r
            .groups
            .iter()
            .filter(|g| g.topics.is_none())
            .map(|g| g.group_id.clone())
            .collect(),
    };
    Before::Run(RequestBody::OffsetFetch(r), After::OffsetFetch(after))
}

fn find_coordinator(auth: &RequestAuth, mut r: FindCoordinatorRequest, v: i16) -> Before {
    let (op_type, error) = match r.key_type {
        1 => (ResourceType::TransactionalId, TXN_DENIED),
        _ => (ResourceType::Group, GROUP_DENIED),
    };
    let allowed = |key: &str| auth.allowed(Op::Describe, op_type, key);
    if v < 4 {
        if allowed(&r.key) {
            return Before::Run(RequestBody::FindCoordinator(r), After::Nothing);
        }
        return answer(FindCoordinatorResponse {
            error_code: code(error),
            node_id: -1,
            host: StrBytes::from(""),
            port: -1,
            ..Default::default()
        });
    }
    let (keep, refused) = split(std::mem::take(&mut r.coordinator_keys), |k| allowed(k));
    r.coordinator_keys = keep;
    let refused: Vec<_> = refused
        .into_iter()
        .map(|key| find_coordinator_response::Coordinator {
            key,
            node_id: -1,
            host: StrBytes::from(""),
            port: -1,
            error_code: code(error),
            ..Default::default()
        })
        .collect();
    if r.coordinator_keys.is_empty() {
        return answer(FindCoordinatorResponse {
            coordinators: refused,
            ..Default::default()
        });
    }
    Before::Run(
        RequestBody::FindCoordinator(r),
        After::FindCoordinator(refused),
    )
}

fn add_partitions_to_txn(auth: &RequestAuth, r: AddPartitionsToTxnRequest, v: i16) -> Before {
    use add_partitions_to_txn_response::{
        AddPartitionsToTxnPartitionResult, AddPartitionsToTxnTopicResult,
    };
    if v >= 4 {
        if auth.cluster(Op::ClusterAction) {
            return Before::Run(RequestBody::AddPartitionsToTxn(r), After::Nothing);
        }
        return answer(AddPartitionsToTxnResponse {
            error_code: code(CLUSTER_DENIED),
            ..Default::default()
        });
    }
    let txn_ok = auth.transactional_id(Op::Write, &r.v3_and_below_transactional_id);
    let topic_ok = |name: &str| auth.topic(Op::Write, name);
    if txn_ok && r.v3_and_below_topics.iter().all(|t| topic_ok(&t.name)) {
        return Before::Run(RequestBody::AddPartitionsToTxn(r), After::Nothing);
    }
    // Nothing is added: the refused partitions say why, the others OPERATION_NOT_ATTEMPTED.
    let results = r
        .v3_and_below_topics
        .iter()
        .map(|t| {
            let error = match (txn_ok, topic_ok(&t.name)) {
                (false, _) => TXN_DENIED,
                (true, false) => TOPIC_DENIED,
                (true, true) => ErrorCode::OperationNotAttempted,
            };
            AddPartitionsToTxnTopicResult {
                name: t.name.clone(),
                results_by_partition: t
                    .partitions
                    .iter()
                    .map(|p| AddPartitionsToTxnPartitionResult {
                        partition_index: *p,
                        partition_error_code: code(error),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }
        })
        .collect();
    answer(AddPartitionsToTxnResponse {
        results_by_topic_v3_and_below: results,
        ..Default::default()
    })
}

fn delete_topics(state: &BrokerState, auth: &RequestAuth, mut r: DeleteTopicsRequest) -> Before {
    let denied = |name: &str| !auth.topic(Op::Delete, name);
    let mut refused = Vec::new();
    let (keep, names_refused) = split(std::mem::take(&mut r.topic_names), |n| !denied(n));
    r.topic_names = keep;
    refused.extend(names_refused.into_iter().map(|n| {
        delete_topics_response::DeletableTopicResult {
            name: Some(n),
            error_code: code(TOPIC_DENIED),
            ..Default::default()
        }
    }));
    let (keep, states_refused) = split(std::mem::take(&mut r.topics), |t| {
        let name = match t.name.as_ref().filter(|n| !n.is_empty()) {
            Some(n) => n.to_string(),
            None => match topic_name(state, t.topic_id) {
                Some(n) => n,
                None => return true,
            },
        };
        !denied(&name)
    });
    r.topics = keep;
    refused.extend(states_refused.into_iter().map(|t| {
        delete_topics_response::DeletableTopicResult {
            name: t.name,
            topic_id: t.topic_id,
            error_code: code(TOPIC_DENIED),
            ..Default::default()
        }
    }));
    Before::Run(RequestBody::DeleteTopics(r), After::DeleteTopics(refused))
}

/// In a DescribeGroups or ConsumerGroupDescribe answer: the groups the principal may not describe
/// become GROUP_AUTHORIZATION_FAILED entries; the others get their authorized operations if asked.
macro_rules! described_groups {
    ($auth:expr, $r:expr, $ops:expr, $group:path) => {{
        type Group = $group;
        for g in &mut $r.groups {
            if !$auth.group(Op::Describe, &g.group_id) {
                *g = Group {
                    error_code: code(GROUP_DENIED),
                    group_id: std::mem::take(&mut g.group_id),
                    authorized_operations: josef_authorizer::AUTHORIZED_OPERATIONS_OMITTED,
                    ..Default::default()
                };
            } else if $ops {
                g.authorized_operations = $auth.operations(ResourceType::Group, &g.group_id);
            }
        }
    }};
}

/// Applies `after` to the handler's reply.
pub(crate) fn after(state: &BrokerState, auth: &RequestAuth, after: After, reply: Reply) -> Reply {
    match (after, reply) {
        (After::Produce(refused, true), Reply::None) if !refused.is_empty() => {
            // Kafka closes an acks=0 connection whose produce had an error.
            Reply::Close("acks=0 produce partly refused by the authorizer".into())
        }
        (after, Reply::Body(body)) => Reply::Body(after_body(state, auth, after, body)),
        (_, reply) => reply,
    }
}

fn after_body(
    state: &BrokerState,
    auth: &RequestAuth,
    after: After,
    body: ResponseBody,
) -> ResponseBody {
    match (after, body) {
        (After::Produce(refused, _), ResponseBody::Produce(mut r)) => {
            r.responses.extend(refused);
            r.into()
        }
        (After::Fetch(refused), ResponseBody::Fetch(mut r)) => {
            // Partitions of a fetch session that lost their READ since they joined it.
            for t in &mut r.responses {
                let name = if t.topic.is_empty() {
                    topic_name(state, t.topic_id)
                } else {
                    Some(t.topic.to_string())
                };
                if name.is_some_and(|n| !auth.topic(Op::Read, &n)) {
                    for p in &mut t.partitions {
                        *p = fetch_partition_error(p.partition_index, TOPIC_DENIED);
                    }
                }
            }
            r.responses.extend(refused);
            r.into()
        }
        (After::ListOffsets(refused), ResponseBody::ListOffsets(mut r)) => {
            r.topics.extend(refused);
            r.into()
        }
        (After::OffsetForLeaderEpoch(refused), ResponseBody::OffsetForLeaderEpoch(mut r)) => {
            r.topics.extend(refused);
            r.into()
        }
        (After::Metadata(m), ResponseBody::Metadata(r)) => metadata_after(auth, m, r).into(),
        (After::OffsetCommit(refused), ResponseBody::OffsetCommit(mut r)) => {
            r.topics.extend(refused);
            r.into()
        }
        (After::TxnOffsetCommit(refused), ResponseBody::TxnOffsetCommit(mut r)) => {
            r.topics.extend(refused);
            r.into()
        }
        (After::OffsetFetch(a), ResponseBody::OffsetFetch(r)) => {
            offset_fetch_after(auth, a, r).into()
        }
        (After::DescribeGroups(ops), ResponseBody::DescribeGroups(mut r)) => {
            described_groups!(auth, r, ops, describe_groups_response::DescribedGroup);
            r.into()
        }
        (After::ConsumerGroupDescribe(ops), ResponseBody::ConsumerGroupDescribe(mut r)) => {
            described_groups!(
                auth,
                r,
                ops,
                consumer_group_describe_response::DescribedGroup
            );
            r.into()
        }
        (After::ListGroups, ResponseBody::ListGroups(mut r)) => {
            r.groups.retain(|g| auth.group(Op::Describe, &g.group_id));
            r.into()
        }
        (After::DeleteGroups(refused), ResponseBody::DeleteGroups(mut r)) => {
            r.results.extend(refused);
            r.into()
        }
        (After::CreateTopics(refused), ResponseBody::CreateTopics(mut r)) => {
            r.topics.extend(refused);
            r.into()
        }
        (After::DeleteTopics(refused), ResponseBody::DeleteTopics(mut r)) => {
            r.responses.extend(refused);
            r.into()
        }
        (After::CreatePartitions(refused), ResponseBody::CreatePartitions(mut r)) => {
            r.results.extend(refused);
            r.into()
        }
        (After::DeleteRecords(refused), ResponseBody::DeleteRecords(mut r)) => {
            r.topics.extend(refused);
            r.into()
        }
        (After::DescribeConfigs(refused), ResponseBody::DescribeConfigs(mut r)) => {
            r.results.extend(refused);
            r.into()
        }
        (After::AlterConfigs(refused), ResponseBody::AlterConfigs(mut r)) => {
            r.responses.extend(refused);
            r.into()
        }
        (After::IncrementalAlterConfigs(refused), ResponseBody::IncrementalAlterConfigs(mut r)) => {
            r.responses.extend(refused);
            r.into()
        }
        (After::FindCoordinator(refused), ResponseBody::FindCoordinator(mut r)) => {
            r.coordinators.extend(refused);
            r.into()
        }
        (After::DescribeCluster(ops), ResponseBody::DescribeCluster(mut r)) => {
            r.cluster_authorized_operations = if !ops {
                josef_authorizer::AUTHORIZED_OPERATIONS_OMITTED
            } else if auth.cluster(Op::Describe) {
                auth.operations(ResourceType::Cluster, josef_authorizer::CLUSTER_NAME)
            } else {
                0
            };
            r.into()
        }
        (After::OffsetDelete(refused), ResponseBody::OffsetDelete(mut r)) => {
            r.topics.extend(refused);
            r.into()
        }
        (After::DescribeProducers, ResponseBody::DescribeProducers(mut r)) => {
            for t in r
                .topics
                .iter_mut()
                .filter(|t| !auth.topic(Op::Read, &t.name))
            {
                for p in &mut t.partitions {
                    p.error_code = code(TOPIC_DENIED);
                    p.error_message = None;
                    p.active_producers.clear();
                }
            }
            r.into()
        }
        (After::DescribeTransactions, ResponseBody::DescribeTransactions(mut r)) => {
            for t in &mut r.transaction_states {
                if !auth.transactional_id(Op::Describe, &t.transactional_id) {
                    *t = describe_transactions_response::TransactionState {
                        error_code: code(TXN_DENIED),
                        transactional_id: std::mem::take(&mut t.transactional_id),
                        ..Default::default()
                    };
                }
            }
            r.into()
        }
        (After::ListTransactions, ResponseBody::ListTransactions(mut r)) => {
            r.transaction_states
                .retain(|t| auth.transactional_id(Op::Describe, &t.transactional_id));
            r.into()
        }
        (_, body) => body,
    }
}

fn metadata_after(
    auth: &RequestAuth,
    m: MetadataAfter,
    mut r: MetadataResponse,
) -> MetadataResponse {
    if let Some(only) = &m.only {
        r.topics
            .retain(|t| t.name.as_ref().is_some_and(|n| only.contains(n)));
    }
    let mut topics = Vec::with_capacity(r.topics.len() + m.refused.len());
    for mut t in std::mem::take(&mut r.topics) {
        let Some(name) = t.name.clone() else {
            topics.push(t);
            continue;
        };
        if !auth.topic(Op::Describe, &name) {
            if !m.all {
                // Asked for by id: refused, and the name stays hidden.
                topics.push(metadata_refused(None, t.topic_id));
            }
            continue;
        }
        if m.topic_ops && t.error_code == 0 {
            t.topic_authorized_operations = auth.operations(ResourceType::Topic, &name);
        }
        topics.push(t);
    }
    topics.extend(m.refused);
    r.topics = topics;
    if m.cluster_ops {
        r.cluster_authorized_operations =
            auth.operations(ResourceType::Cluster, josef_authorizer::CLUSTER_NAME);
    }
    r
}

fn offset_fetch_after(
    auth: &RequestAuth,
    a: OffsetFetchAfter,
    mut r: OffsetFetchResponse,
) -> OffsetFetchResponse {
    let describable = |name: &str| auth.topic(Op::Describe, name);
    if a.version < 8 {
        if a.all_topics {
            r.topics.retain(|t| describable(&t.name));
        }
        for t in r.topics.iter_mut().filter(|t| !describable(&t.name)) {
            for p in &mut t.partitions {
                p.committed_offset = -1;
                p.committed_leader_epoch = -1;
                p.metadata = None;
                p.error_code = code(TOPIC_DENIED);
            }
        }
        return r;
    }
    for g in &mut r.groups {
        if !auth.group(Op::Describe, &g.group_id) {
            g.topics.clear();
            g.error_code = code(GROUP_DENIED);
            continue;
        }
        if a.all_topics_of.contains(&g.group_id) {
            g.topics.retain(|t| describable(&t.name));
        }
        for t in g.topics.iter_mut().filter(|t| !describable(&t.name)) {
            for p in &mut t.partitions {
                p.committed_offset = -1;
                p.committed_leader_epoch = -1;
                p.metadata = None;
                p.error_code = code(TOPIC_DENIED);
            }
        }
    }
    r
}
