//! Per API, the checks before the handler runs: the request refused as a whole, or the entries
//! refused taken out of it and answered.

use josef_protocol::error_response::error_response;
use josef_protocol::messages::*;
use josef_protocol::{ErrorCode, RequestBody, ResponseBody, StrBytes, Uuid};

use super::responses::{Check, MetadataCheck, OffsetFetchCheck};
use super::{
    code, empty, After, Before, BrokerView, RequestAuth, CLUSTER_DENIED, GROUP_DENIED,
    TOPIC_DENIED, TXN_DENIED,
};
use crate::api_acls::{authorization_error, config_resource_acl_type};
use crate::{AclOperation as Op, ResourceType, AUTHORIZED_OPERATIONS_OMITTED, CLUSTER_NAME};

/// Takes the items `keep` refuses out of `items`, each answered with `refuse`.
fn take_refused<T, R>(
    items: &mut Vec<T>,
    keep: impl Fn(&T) -> bool,
    refuse: impl FnMut(T) -> R,
) -> Vec<R> {
    let (kept, refused): (Vec<T>, Vec<T>) = std::mem::take(items).into_iter().partition(keep);
    *items = kept;
    refused.into_iter().map(refuse).collect()
}

/// `items` mapped to their answers.
fn each<T, R>(items: &[T], answer: impl FnMut(&T) -> R) -> Vec<R> {
    items.iter().map(answer).collect()
}

fn answer(body: impl Into<ResponseBody>) -> Before {
    Before::Answer(body.into())
}

/// `body` refused as a whole with `error` (its API's error response).
fn refuse_whole(body: RequestBody, error: ErrorCode) -> Before {
    match error_response(&body, error) {
        Some(r) => Before::Answer(r),
        // Every API refused this way has an error response; never let it through without one.
        None => Before::Close("no error response for a refused request"),
    }
}

fn run(body: RequestBody, check: Check) -> Before {
    Before::Run(body, After::check(check))
}

/// Adds `$refused` to the `$field` of a `ResponseBody::$api` response.
macro_rules! reinsert {
    ($api:ident, $refused:expr, $field:ident) => {{
        let refused = $refused;
        let reinsert: super::Reinsert = Box::new(move |body: &mut ResponseBody| {
            if let ResponseBody::$api(resp) = body {
                resp.$field.extend(refused);
            }
        });
        Some(reinsert)
    }};
}

/// Runs `RequestBody::$api($r)`; the refused entries are added to the response's `$field`.
macro_rules! run_then_reinsert {
    ($api:ident, $r:expr, $refused:expr, $field:ident) => {
        run_then_reinsert!($api, $r, $refused, $field, Check::Nothing)
    };
    ($api:ident, $r:expr, $refused:expr, $field:ident, $check:expr) => {
        Before::Run(
            RequestBody::$api($r),
            After {
                check: $check,
                reinsert: reinsert!($api, $refused, $field),
                close_if_unanswered: None,
            },
        )
    };
}

/// Takes the config resources `op` is refused on out of `$r.resources`, runs `RequestBody::$api`
/// on the rest and adds a `$result` carrying each refusal to the response's `$field` (the three
/// config APIs share request and response shapes).
macro_rules! run_configs {
    ($api:ident, $auth:expr, $r:expr, $op:expr, $result:path, $field:ident) => {{
        type Result = $result;
        let refused = take_refused(
            &mut $r.resources,
            |x| config_refusal($auth, x.resource_type, &x.resource_name, $op).is_none(),
            |x| Result {
                error_code: config_refusal($auth, x.resource_type, &x.resource_name, $op)
                    .map_or(0, code),
                resource_type: x.resource_type,
                resource_name: x.resource_name,
                ..Default::default()
            },
        );
        run_then_reinsert!($api, $r, refused, $field)
    }};
}

/// The checks of `body` (of version `v`) before its handler runs.
pub(super) fn before(
    broker: &dyn BrokerView,
    auth: &RequestAuth,
    v: i16,
    body: RequestBody,
) -> Before {
    if auth.authorizer.is_none() {
        // Without an authorizer only the KIP-430 fields need filling in.
        let check = match &body {
            RequestBody::Metadata(r) => Check::Metadata(MetadataCheck {
                all: false,
                only: None,
                topic_ops: r.include_topic_authorized_operations,
                cluster_ops: r.include_cluster_authorized_operations,
            }),
            RequestBody::DescribeGroups(r) => {
                Check::DescribeGroups(r.include_authorized_operations)
            }
            RequestBody::ConsumerGroupDescribe(r) => {
                Check::ConsumerGroupDescribe(r.include_authorized_operations)
            }
            RequestBody::DescribeCluster(r) => {
                Check::DescribeCluster(r.include_cluster_authorized_operations)
            }
            _ => Check::Nothing,
        };
        return run(body, check);
    }
    match body {
        RequestBody::Produce(r) => produce(auth, r),
        RequestBody::Fetch(r) => fetch(broker, auth, r),
        RequestBody::ListOffsets(mut r) => {
            let refused = take_refused(
                &mut r.topics,
                |t| auth.topic(Op::Describe, &t.name),
                |t| list_offsets_response::ListOffsetsTopicResponse {
                    partitions: each(&t.partitions, |p| {
                        list_offsets_response::ListOffsetsPartitionResponse {
                            partition_index: p.partition_index,
                            error_code: code(TOPIC_DENIED),
                            timestamp: -1,
                            offset: -1,
                            leader_epoch: -1,
                            ..Default::default()
                        }
                    }),
                    name: t.name,
                    ..Default::default()
                },
            );
            run_then_reinsert!(ListOffsets, r, refused, topics)
        }
        RequestBody::OffsetForLeaderEpoch(mut r) => {
            let cluster = auth.cluster(Op::ClusterAction);
            let refused = take_refused(
                &mut r.topics,
                |t| cluster || auth.topic(Op::Describe, &t.topic),
                |t| offset_for_leader_epoch_response::OffsetForLeaderTopicResult {
                    partitions: each(&t.partitions, |p| {
                        offset_for_leader_epoch_response::EpochEndOffset {
                            error_code: code(TOPIC_DENIED),
                            partition: p.partition,
                            leader_epoch: -1,
                            end_offset: -1,
                            ..Default::default()
                        }
                    }),
                    topic: t.topic,
                    ..Default::default()
                },
            );
            run_then_reinsert!(OffsetForLeaderEpoch, r, refused, topics)
        }
        RequestBody::Metadata(r) => metadata(broker, auth, r, v),
        RequestBody::JoinGroup(r) if !auth.group(Op::Read, &r.group_id) => {
            answer(JoinGroupResponse {
                error_code: code(GROUP_DENIED),
                generation_id: -1,
                protocol_name: (v < 7).then(empty),
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
            run(RequestBody::DescribeGroups(r), Check::DescribeGroups(ops))
        }
        RequestBody::ConsumerGroupDescribe(r) => {
            let ops = r.include_authorized_operations;
            run(
                RequestBody::ConsumerGroupDescribe(r),
                Check::ConsumerGroupDescribe(ops),
            )
        }
        RequestBody::ListGroups(r) => {
            let check = if auth.cluster(Op::Describe) {
                Check::Nothing
            } else {
                Check::ListGroups
            };
            run(RequestBody::ListGroups(r), check)
        }
        RequestBody::DeleteGroups(mut r) => {
            let refused = take_refused(
                &mut r.groups_names,
                |g| auth.group(Op::Delete, g),
                |g| delete_groups_response::DeletableGroupResult {
                    group_id: g,
                    error_code: code(GROUP_DENIED),
                    ..Default::default()
                },
            );
            run_then_reinsert!(DeleteGroups, r, refused, results)
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
                None => run(RequestBody::ConsumerGroupHeartbeat(r), Check::Nothing),
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
                None => run(RequestBody::InitProducerId(r), Check::Nothing),
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
                None => run(RequestBody::AddOffsetsToTxn(r), Check::Nothing),
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
            let refused = take_refused(
                &mut r.topics,
                |t| cluster || auth.topic(Op::Create, &t.name),
                |t| create_topics_response::CreatableTopicResult {
                    name: t.name,
                    error_code: code(TOPIC_DENIED),
                    topic_config_error_code: code(TOPIC_DENIED),
                    num_partitions: -1,
                    replication_factor: -1,
                    ..Default::default()
                },
            );
            run_then_reinsert!(CreateTopics, r, refused, topics)
        }
        RequestBody::DeleteTopics(r) => delete_topics(broker, auth, r),
        RequestBody::CreatePartitions(mut r) => {
            let refused = take_refused(
                &mut r.topics,
                |t| auth.topic(Op::Alter, &t.name),
                |t| create_partitions_response::CreatePartitionsTopicResult {
                    name: t.name,
                    error_code: code(TOPIC_DENIED),
                    ..Default::default()
                },
            );
            run_then_reinsert!(CreatePartitions, r, refused, results)
        }
        RequestBody::DeleteRecords(mut r) => {
            let refused = take_refused(
                &mut r.topics,
                |t| auth.topic(Op::Delete, &t.name),
                |t| delete_records_response::DeleteRecordsTopicResult {
                    partitions: each(&t.partitions, |p| {
                        delete_records_response::DeleteRecordsPartitionResult {
                            partition_index: p.partition_index,
                            low_watermark: -1,
                            error_code: code(TOPIC_DENIED),
                            ..Default::default()
                        }
                    }),
                    name: t.name,
                    ..Default::default()
                },
            );
            run_then_reinsert!(DeleteRecords, r, refused, topics)
        }
        RequestBody::DescribeConfigs(mut r) => {
            run_configs!(
                DescribeConfigs,
                auth,
                r,
                Op::DescribeConfigs,
                describe_configs_response::DescribeConfigsResult,
                results
            )
        }
        RequestBody::AlterConfigs(mut r) => {
            run_configs!(
                AlterConfigs,
                auth,
                r,
                Op::AlterConfigs,
                alter_configs_response::AlterConfigsResourceResponse,
                responses
            )
        }
        RequestBody::IncrementalAlterConfigs(mut r) => {
            run_configs!(
                IncrementalAlterConfigs,
                auth,
                r,
                Op::AlterConfigs,
                incremental_alter_configs_response::AlterConfigsResourceResponse,
                responses
            )
        }
        RequestBody::DescribeCluster(r) => {
            let ops = r.include_cluster_authorized_operations;
            run(RequestBody::DescribeCluster(r), Check::DescribeCluster(ops))
        }
        b @ (RequestBody::ElectLeaders(_)
        | RequestBody::AlterPartitionReassignments(_)
        | RequestBody::UpdateFeatures(_))
            if !auth.cluster(Op::Alter) =>
        {
            refuse_whole(b, CLUSTER_DENIED)
        }
        b @ (RequestBody::ListPartitionReassignments(_) | RequestBody::DescribeQuorum(_))
            if !auth.cluster(Op::Describe) =>
        {
            refuse_whole(b, CLUSTER_DENIED)
        }
        // Kafka's `handleControlledShutdownRequest`: an inter-broker API, CLUSTER_ACTION.
        b @ RequestBody::ControlledShutdown(_) if !auth.cluster(Op::ClusterAction) => {
            refuse_whole(b, CLUSTER_DENIED)
        }
        RequestBody::OffsetDelete(r) => offset_delete(auth, r),
        b @ RequestBody::DescribeProducers(_) => run(b, Check::DescribeProducers),
        b @ RequestBody::DescribeTransactions(_) => run(b, Check::DescribeTransactions),
        b @ RequestBody::ListTransactions(_) => run(b, Check::ListTransactions),
        // Client quotas and SCRAM credentials are cluster resources (Kafka's AuthHelper):
        // altering needs ALTER_CONFIGS / ALTER, describing DESCRIBE_CONFIGS / DESCRIBE.
        b @ RequestBody::AlterClientQuotas(_) if !auth.cluster(Op::AlterConfigs) => {
            refuse_whole(b, CLUSTER_DENIED)
        }
        b @ RequestBody::AlterUserScramCredentials(_) if !auth.cluster(Op::Alter) => {
            refuse_whole(b, CLUSTER_DENIED)
        }
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
        other => run(other, Check::Nothing),
    }
}

/// The refusal of a config resource (Kafka's `ConfigResource.Type` codes), if refused.
fn config_refusal(
    auth: &RequestAuth,
    resource_type: i8,
    name: &str,
    op: crate::AclOperation,
) -> Option<ErrorCode> {
    let acl_type = config_resource_acl_type(resource_type)?;
    let name = if acl_type == ResourceType::Cluster {
        CLUSTER_NAME
    } else {
        name
    };
    (!auth.allowed(op, acl_type, name)).then_some(authorization_error(acl_type))
}

fn produce(auth: &RequestAuth, mut r: ProduceRequest) -> Before {
    let acks_zero = r.acks == 0;
    let txn = r.transactional_id.as_deref().filter(|t| !t.is_empty());
    let txn_refused = txn.is_some_and(|t| !auth.transactional_id(Op::Write, t));
    let error = if txn_refused {
        TXN_DENIED
    } else {
        TOPIC_DENIED
    };
    let refused = take_refused(
        &mut r.topic_data,
        |t| !txn_refused && auth.topic(Op::Write, &t.name),
        |t| produce_response::TopicProduceResponse {
            partition_responses: each(&t.partition_data, |p| {
                produce_response::PartitionProduceResponse {
                    index: p.index,
                    error_code: code(error),
                    base_offset: -1,
                    log_append_time_ms: -1,
                    log_start_offset: -1,
                    ..Default::default()
                }
            }),
            name: t.name,
            ..Default::default()
        },
    );
    if r.topic_data.is_empty() && !refused.is_empty() {
        if acks_zero {
            return Before::Close("acks=0 produce refused by the authorizer");
        }
        return answer(ProduceResponse {
            responses: refused,
            ..Default::default()
        });
    }
    // Kafka closes an acks=0 connection whose produce had an error.
    let close = (acks_zero && !refused.is_empty())
        .then_some("acks=0 produce partly refused by the authorizer");
    Before::Run(
        RequestBody::Produce(r),
        After {
            check: Check::Nothing,
            reinsert: reinsert!(Produce, refused, responses),
            close_if_unanswered: close,
        },
    )
}

/// A fetched partition refused with TOPIC_AUTHORIZATION_FAILED.
pub(super) fn fetch_partition_error(partition: i32) -> fetch_response::PartitionData {
    fetch_response::PartitionData {
        partition_index: partition,
        error_code: code(TOPIC_DENIED),
        high_watermark: -1,
        last_stable_offset: -1,
        log_start_offset: -1,
        preferred_read_replica: -1,
        // Empty, not null: clients read a null record set as a parse failure.
        records: Some(bytes::Bytes::new()),
        ..Default::default()
    }
}

fn fetch(broker: &dyn BrokerView, auth: &RequestAuth, mut r: FetchRequest) -> Before {
    let follower = r.replica_id >= 0 || r.replica_state.replica_id >= 0;
    let allowed_all = follower && auth.cluster(Op::ClusterAction);
    let had_topics = !r.topics.is_empty();
    let refused = take_refused(
        &mut r.topics,
        |t| {
            if allowed_all {
                return true;
            }
            if follower {
                return false;
            }
            let name = if t.topic.is_empty() {
                match broker.topic_name(t.topic_id) {
                    Some(n) => n,
                    // An unknown id is the handler's UNKNOWN_TOPIC_ID.
                    None => return true,
                }
            } else {
                t.topic.to_string()
            };
            auth.topic(Op::Read, &name)
        },
        |t| fetch_response::FetchableTopicResponse {
            partitions: each(&t.partitions, |p| fetch_partition_error(p.partition)),
            topic: t.topic,
            topic_id: t.topic_id,
            ..Default::default()
        },
    );
    if r.topics.is_empty() && had_topics {
        // Nothing left to wait for: Kafka answers at once.
        r.max_wait_ms = 0;
    }
    // Partitions of a fetch session that lost their READ since they joined it are refused in
    // the response.
    run_then_reinsert!(Fetch, r, refused, responses, Check::Fetch)
}

/// A Metadata topic refused with TOPIC_AUTHORIZATION_FAILED.
pub(super) fn metadata_refused(
    name: Option<StrBytes>,
    id: Uuid,
) -> metadata_response::MetadataResponseTopic {
    metadata_response::MetadataResponseTopic {
        error_code: code(TOPIC_DENIED),
        name,
        topic_id: id,
        partitions: Vec::new(),
        topic_authorized_operations: AUTHORIZED_OPERATIONS_OMITTED,
        ..Default::default()
    }
}

fn metadata(broker: &dyn BrokerView, auth: &RequestAuth, mut r: MetadataRequest, v: i16) -> Before {
    let all = match &r.topics {
        None => true,
        Some(t) => t.is_empty() && v == 0,
    };
    let mut refused = Vec::new();
    let mut only = None;
    if !all {
        let auto_create =
            broker.auto_create_topics_enable() && (v < 4 || r.allow_auto_topic_creation);
        let cluster_create = auto_create && auth.cluster(Op::Create);
        let mut topics = r.topics.take().unwrap_or_default();
        let names: Vec<StrBytes> = topics.iter().filter_map(|t| t.name.clone()).collect();
        refused = take_refused(
            &mut topics,
            |t| {
                let Some(name) = t.name.as_ref().filter(|n| !n.is_empty()) else {
                    return true;
                };
                let denied = !auth.topic(Op::Describe, name)
                    || (auto_create
                        && !cluster_create
                        && !broker.topic_exists(name)
                        && !auth.topic(Op::Create, name));
                !denied
            },
            |t| metadata_refused(t.name, Uuid::ZERO),
        );
        if v == 0 && topics.is_empty() {
            only = Some(names);
        }
        r.topics = Some(topics);
    }
    let check = Check::Metadata(MetadataCheck {
        all,
        only,
        topic_ops: r.include_topic_authorized_operations,
        cluster_ops: r.include_cluster_authorized_operations,
    });
    run_then_reinsert!(Metadata, r, refused, topics, check)
}

fn offset_commit(auth: &RequestAuth, mut r: OffsetCommitRequest) -> Before {
    let group_ok = auth.group(Op::Read, &r.group_id);
    let error = if group_ok { TOPIC_DENIED } else { GROUP_DENIED };
    let refused = take_refused(
        &mut r.topics,
        |t| group_ok && auth.topic(Op::Read, &t.name),
        |t| offset_commit_response::OffsetCommitResponseTopic {
            partitions: each(&t.partitions, |p| {
                offset_commit_response::OffsetCommitResponsePartition {
                    partition_index: p.partition_index,
                    error_code: code(error),
                    ..Default::default()
                }
            }),
            name: t.name,
            ..Default::default()
        },
    );
    if !group_ok {
        return answer(OffsetCommitResponse {
            topics: refused,
            ..Default::default()
        });
    }
    run_then_reinsert!(OffsetCommit, r, refused, topics)
}

fn offset_delete(auth: &RequestAuth, mut r: OffsetDeleteRequest) -> Before {
    if !auth.group(Op::Delete, &r.group_id) {
        return answer(OffsetDeleteResponse {
            error_code: code(GROUP_DENIED),
            ..Default::default()
        });
    }
    let refused = take_refused(
        &mut r.topics,
        |t| auth.topic(Op::Read, &t.name),
        |t| offset_delete_response::OffsetDeleteResponseTopic {
            partitions: each(&t.partitions, |p| {
                offset_delete_response::OffsetDeleteResponsePartition {
                    partition_index: p.partition_index,
                    error_code: code(TOPIC_DENIED),
                }
            }),
            name: t.name,
        },
    );
    run_then_reinsert!(OffsetDelete, r, refused, topics)
}

fn txn_offset_commit(auth: &RequestAuth, mut r: TxnOffsetCommitRequest) -> Before {
    let whole = if !auth.transactional_id(Op::Write, &r.transactional_id) {
        Some(TXN_DENIED)
    } else if !auth.group(Op::Read, &r.group_id) {
        Some(GROUP_DENIED)
    } else {
        None
    };
    let error = whole.unwrap_or(TOPIC_DENIED);
    let refused = take_refused(
        &mut r.topics,
        |t| whole.is_none() && auth.topic(Op::Read, &t.name),
        |t| txn_offset_commit_response::TxnOffsetCommitResponseTopic {
            partitions: each(&t.partitions, |p| {
                txn_offset_commit_response::TxnOffsetCommitResponsePartition {
                    partition_index: p.partition_index,
                    error_code: code(error),
                    ..Default::default()
                }
            }),
            name: t.name,
            ..Default::default()
        },
    );
    if whole.is_some() {
        return answer(TxnOffsetCommitResponse {
            topics: refused,
            ..Default::default()
        });
    }
    run_then_reinsert!(TxnOffsetCommit, r, refused, topics)
}

fn offset_fetch(auth: &RequestAuth, r: OffsetFetchRequest, v: i16) -> Before {
    if v < 8 && !auth.group(Op::Describe, &r.group_id) {
        let partitions_error = |t: &offset_fetch_request::OffsetFetchRequestTopic| {
            offset_fetch_response::OffsetFetchResponseTopic {
                name: t.name.clone(),
                partitions: each(&t.partition_indexes, |p| {
                    offset_fetch_response::OffsetFetchResponsePartition {
                        partition_index: *p,
                        committed_offset: -1,
                        committed_leader_epoch: -1,
                        error_code: code(GROUP_DENIED),
                        ..Default::default()
                    }
                }),
                ..Default::default()
            }
        };
        return answer(OffsetFetchResponse {
            error_code: code(GROUP_DENIED),
            topics: r.topics.iter().flatten().map(partitions_error).collect(),
            ..Default::default()
        });
    }
    let check = OffsetFetchCheck {
        version: v,
        all_topics: r.topics.is_none(),
        all_topics_of: r
            .groups
            .iter()
            .filter(|g| g.topics.is_none())
            .map(|g| g.group_id.clone())
            .collect(),
    };
    run(RequestBody::OffsetFetch(r), Check::OffsetFetch(check))
}

fn find_coordinator(auth: &RequestAuth, mut r: FindCoordinatorRequest, v: i16) -> Before {
    let (op_type, error) = match r.key_type {
        1 => (ResourceType::TransactionalId, TXN_DENIED),
        _ => (ResourceType::Group, GROUP_DENIED),
    };
    let allowed = |key: &str| auth.allowed(Op::Describe, op_type, key);
    if v < 4 {
        if allowed(&r.key) {
            return run(RequestBody::FindCoordinator(r), Check::Nothing);
        }
        return answer(FindCoordinatorResponse {
            error_code: code(error),
            node_id: -1,
            host: empty(),
            port: -1,
            ..Default::default()
        });
    }
    let refused = take_refused(
        &mut r.coordinator_keys,
        |k| allowed(k),
        |key| find_coordinator_response::Coordinator {
            key,
            node_id: -1,
            host: empty(),
            port: -1,
            error_code: code(error),
            ..Default::default()
        },
    );
    if r.coordinator_keys.is_empty() {
        return answer(FindCoordinatorResponse {
            coordinators: refused,
            ..Default::default()
        });
    }
    run_then_reinsert!(FindCoordinator, r, refused, coordinators)
}

fn add_partitions_to_txn(auth: &RequestAuth, r: AddPartitionsToTxnRequest, v: i16) -> Before {
    use add_partitions_to_txn_response::{
        AddPartitionsToTxnPartitionResult, AddPartitionsToTxnTopicResult,
    };
    if v >= 4 {
        if auth.cluster(Op::ClusterAction) {
            return run(RequestBody::AddPartitionsToTxn(r), Check::Nothing);
        }
        return answer(AddPartitionsToTxnResponse {
            error_code: code(CLUSTER_DENIED),
            ..Default::default()
        });
    }
    let txn_ok = auth.transactional_id(Op::Write, &r.v3_and_below_transactional_id);
    let topic_ok = |name: &str| auth.topic(Op::Write, name);
    if txn_ok && r.v3_and_below_topics.iter().all(|t| topic_ok(&t.name)) {
        return run(RequestBody::AddPartitionsToTxn(r), Check::Nothing);
    }
    // Nothing is added: the refused partitions say why, the others OPERATION_NOT_ATTEMPTED.
    let results = each(&r.v3_and_below_topics, |t| {
        let error = match (txn_ok, topic_ok(&t.name)) {
            (false, _) => TXN_DENIED,
            (true, false) => TOPIC_DENIED,
            (true, true) => ErrorCode::OperationNotAttempted,
        };
        AddPartitionsToTxnTopicResult {
            name: t.name.clone(),
            results_by_partition: each(&t.partitions, |p| AddPartitionsToTxnPartitionResult {
                partition_index: *p,
                partition_error_code: code(error),
                ..Default::default()
            }),
            ..Default::default()
        }
    });
    answer(AddPartitionsToTxnResponse {
        results_by_topic_v3_and_below: results,
        ..Default::default()
    })
}

fn delete_topics(
    broker: &dyn BrokerView,
    auth: &RequestAuth,
    mut r: DeleteTopicsRequest,
) -> Before {
    let allowed = |name: &str| auth.topic(Op::Delete, name);
    let mut refused = take_refused(
        &mut r.topic_names,
        |n| allowed(n),
        |n| delete_topics_response::DeletableTopicResult {
            name: Some(n),
            error_code: code(TOPIC_DENIED),
            ..Default::default()
        },
    );
    refused.extend(take_refused(
        &mut r.topics,
        |t| {
            let name = match t.name.as_ref().filter(|n| !n.is_empty()) {
                Some(n) => n.to_string(),
                None => match broker.topic_name(t.topic_id) {
                    Some(n) => n,
                    None => return true,
                },
            };
            allowed(&name)
        },
        |t| delete_topics_response::DeletableTopicResult {
            name: t.name,
            topic_id: t.topic_id,
            error_code: code(TOPIC_DENIED),
            ..Default::default()
        },
    ));
    run_then_reinsert!(DeleteTopics, r, refused, responses)
}
