//! Topic administration and cluster description: CreateTopics, DeleteTopics, CreatePartitions,
//! DeleteRecords, DescribeCluster, DescribeLogDirs. A single node does inline what Kafka's
//! controller does, and answers the same way.

use std::collections::{BTreeMap, HashSet};

use josef_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use josef_protocol::messages::create_topics_response::{
    CreatableTopicConfigs, CreatableTopicResult,
};
use josef_protocol::messages::delete_records_response::{
    DeleteRecordsPartitionResult, DeleteRecordsTopicResult,
};
use josef_protocol::messages::delete_topics_response::DeletableTopicResult;
use josef_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use josef_protocol::messages::describe_log_dirs_response::{
    DescribeLogDirsPartition, DescribeLogDirsResult, DescribeLogDirsTopic,
};
use josef_protocol::messages::*;
use josef_protocol::{ErrorCode, StrBytes, Uuid};

use crate::connection::ConnectionInfo;
use crate::delayed_delete_records::{DelayedDeleteRecords, DeletingPartition};
use crate::delayed_fetch::DelayedOp;
use crate::kit::partition_store::TopicPartition;
use crate::state::BrokerState;
use crate::topic_config;
use crate::topics::{validate_topic_name, NewTopic};

/// Kafka's config sources as CreateTopics v5+ reports them.
const SOURCE_TOPIC_CONFIG: i8 = 1;
const SOURCE_DEFAULT_CONFIG: i8 = 5;

fn err_msg(s: impl Into<String>) -> Option<StrBytes> {
    Some(StrBytes::from(s.into()))
}

fn fail(r: &mut CreatableTopicResult, code: ErrorCode, msg: String) {
    r.error_code = code.code();
    r.error_message = err_msg(msg);
    r.num_partitions = -1;
    r.replication_factor = -1;
}

/// CreateTopics (api 19).
pub fn create_topics(
    state: &BrokerState,
    req: CreateTopicsRequest,
    version: i16,
) -> CreateTopicsResponse {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for t in &req.topics {
        *counts.entry(t.name.as_str()).or_default() += 1;
    }
    let mut results = Vec::with_capacity(req.topics.len());
    // Checked one by one, created together: one write of the topics file per request.
    let mut to_create: Vec<(usize, NewTopic)> = Vec::new();
    for t in &req.topics {
        let mut r = CreatableTopicResult {
            name: t.name.clone(),
            topic_id: Uuid::ZERO,
            num_partitions: -1,
            replication_factor: -1,
            configs: None,
            ..Default::default()
        };
        let outcome = (|| -> Result<Option<NewTopic>, (ErrorCode, String)> {
            if counts[t.name.as_str()] > 1 || t.name.as_str() == "__cluster_metadata" {
                return Err((
                    ErrorCode::InvalidRequest,
                    format!("Duplicate or reserved topic name {}", t.name),
                ));
            }
            validate_topic_name(&t.name).map_err(|e| (e.code, e.message))?;
            let mut configs = BTreeMap::new();
            for c in &t.configs {
                let Some(v) = &c.value else {
                    return Err((
                        ErrorCode::InvalidConfig,
                        format!("Null value not supported for topic configs: {}", c.name),
                    ));
                };
                configs.insert(c.name.to_string(), v.to_string());
            }
            if !t.assignments.is_empty() {
                if t.num_partitions != -1 || t.replication_factor != -1 {
                    return Err((ErrorCode::InvalidRequest, "Both numPartitions or replicationFactor and replicasAssignments were set. Both cannot be used at the same time.".into()));
                }
                for a in &t.assignments {
                    if a.broker_ids[..] != [state.config.node_id] {
                        return Err((
                            ErrorCode::InvalidReplicaAssignment,
                            format!(
                                "Invalid replica assignment for partition {}",
                                a.partition_index
                            ),
                        ));
                    }
                }
            }
            let rf = if t.replication_factor == -1 {
                state.config.default_replication_factor
            } else {
                t.replication_factor
            };
            if rf == 0 || rf < -1 {
                return Err((
                    ErrorCode::InvalidReplicationFactor,
                    "Replication factor must be larger than 0, or -1 to use the default value."
                        .into(),
                ));
            }
            let partitions = if !t.assignments.is_empty() {
                t.assignments.len() as i32
            } else if t.num_partitions == -1 {
                state.config.num_partitions
            } else {
                t.num_partitions
            };
            if partitions == 0 || partitions < -1 {
                return Err((
                    ErrorCode::InvalidPartitions,
                    "Number of partitions was set to an invalid non-positive value.".into(),
                ));
            }
            if rf > 1 {
                return Err((ErrorCode::InvalidReplicationFactor, format!("Unable to replicate the partition {rf} time(s): The target replication factor of {rf} cannot be reached because only 1 broker(s) are registered.")));
            }
            state
                .topics
                .check_new(&t.name, partitions, &configs)
                .map_err(|e| (e.code, e.message))?;
            r.num_partitions = partitions;
            r.replication_factor = 1;
            if req.validate_only {
                return Ok(None);
            }
            Ok(Some(NewTopic {
                name: t.name.to_string(),
                partitions,
                configs,
            }))
        })();
        match outcome {
            Ok(Some(new)) => to_create.push((results.len(), new)),
            Ok(None) => {}
            Err((code, msg)) => fail(&mut r, code, msg),
        }
        results.push(r);
    }
    let (at, new): (Vec<usize>, Vec<NewTopic>) = to_create.into_iter().unzip();
    for (i, created) in at.into_iter().zip(state.topics.create_all(new)) {
        let r = &mut results[i];
        match created {
            Err(e) => fail(r, e.code, e.message),
            Ok(topic) => {
                r.topic_id = topic.id;
                if version >= 5 {
                    r.configs = Some(
                        topic_config::TOPIC_CONFIGS
                            .iter()
                            .map(|d| {
                                let over = topic.configs.get(d.name);
                                CreatableTopicConfigs {
                                    name: StrBytes::from(d.name),
                                    value: Some(StrBytes::from(over.cloned().unwrap_or_else(
                                        || {
                                            topic_config::effective_default(
                                                d.name,
                                                &state.topics.dynamic_defaults(),
                                                &state.config,
                                            )
                                        },
                                    ))),
                                    read_only: false,
                                    config_source: if over.is_some() {
                                        SOURCE_TOPIC_CONFIG
                                    } else {
                                        SOURCE_DEFAULT_CONFIG
                                    },
                                    is_sensitive: false,
                                    ..Default::default()
                                }
                            })
                            .collect(),
                    );
                }
            }
        }
    }
    CreateTopicsResponse {
        topics: results,
        ..Default::default()
    }
}

/// DeleteTopics (api 20).
pub fn delete_topics(
    state: &BrokerState,
    req: DeleteTopicsRequest,
    version: i16,
) -> DeleteTopicsResponse {
    let mut wanted: Vec<(Option<StrBytes>, Uuid)> = if version >= 6 {
        req.topics
            .iter()
            .map(|t| (t.name.clone(), t.topic_id))
            .collect()
    } else {
        req.topic_names
            .iter()
            .map(|n| (Some(n.clone()), Uuid::ZERO))
            .collect()
    };
    let mut seen = HashSet::new();
    let dup: HashSet<usize> = wanted
        .iter()
        .enumerate()
        .filter(|(_, (n, id))| !seen.insert((n.as_ref().map(|s| s.to_string()), *id)))
        .map(|(i, _)| i)
        .collect();
    let mut responses = Vec::new();
    for (i, (name, id)) in wanted.drain(..).enumerate() {
        let mut r = DeletableTopicResult {
            name: name.clone(),
            topic_id: id,
            ..Default::default()
        };
        let res: Result<(), (ErrorCode, String)> = (|| {
            if !state.config.delete_topic_enable {
                let code = if version < 3 {
                    ErrorCode::InvalidRequest
                } else {
                    ErrorCode::TopicDeletionDisabled
                };
                return Err((code, "Topic deletion is disabled.".into()));
            }
            let has_name = name.as_ref().is_some_and(|n| !n.is_empty());
            if dup.contains(&i) || (has_name && !id.is_zero()) {
                return Err((
                    ErrorCode::InvalidRequest,
                    "Duplicate topic or both name and id given".into(),
                ));
            }
            let topic_name = if has_name {
                let n = name.clone().unwrap_or_default();
                if state.topics.get(&n).is_none() {
                    return Err((
                        ErrorCode::UnknownTopicOrPartition,
                        "This server does not host this topic-partition.".into(),
                    ));
                }
                n.to_string()
            } else {
                match state.topics.get_by_id(&id) {
                    Some(t) => t.name.clone(),
                    None => {
                        return Err((
                            ErrorCode::UnknownTopicId,
                            "This server does not host this topic ID.".into(),
                        ))
                    }
                }
            };
            let t = state.topics.get(&topic_name);
            state
                .topics
                .delete(&topic_name)
                .map_err(|e| (e.code, e.message))?;
            if let Some(t) = t {
                r.name = Some(StrBytes::from(t.name.as_str()));
                r.topic_id = t.id;
            }
            Ok(())
        })();
        if let Err((code, msg)) = res {
            r.error_code = code.code();
            r.error_message = err_msg(msg);
        }
        responses.push(r);
    }
    DeleteTopicsResponse {
        responses,
        ..Default::default()
    }
}

/// CreatePartitions (api 37).
pub fn create_partitions(
    state: &BrokerState,
    req: CreatePartitionsRequest,
) -> CreatePartitionsResponse {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for t in &req.topics {
        *counts.entry(t.name.to_string()).or_default() += 1;
    }
    let results = req
        .topics
        .iter()
        .map(|t| {
            let res: Result<(), (ErrorCode, String)> = (|| {
                if counts[t.name.as_str()] > 1 {
                    return Err((ErrorCode::InvalidRequest, "Duplicate topic in request.".into()));
                }
                let Some(topic) = state.topics.get(&t.name) else {
                    return Err((ErrorCode::UnknownTopicOrPartition, format!("The topic '{}' does not exist.", t.name)));
                };
                if let Some(a) = &t.assignments {
                    let added = t.count - topic.partitions.len() as i32;
                    if a.len() as i32 != added {
                        return Err((ErrorCode::InvalidReplicaAssignment, format!("Attempted to add {added} additional partition(s), but only {} assignment(s) were specified.", a.len())));
                    }
                }
                state.topics.add_partitions(&t.name, t.count, req.validate_only).map_err(|e| (e.code, e.message))
            })();
            let (code, msg) = match res {
                Ok(()) => (0, None),
                Err((c, m)) => (c.code(), err_msg(m)),
            };
            CreatePartitionsTopicResult {
                name: t.name.clone(),
                error_code: code,
                error_message: msg,
                ..Default::default()
            }
        })
        .collect();
    CreatePartitionsResponse {
        results,
        ..Default::default()
    }
}

/// DeleteRecords (api 21): the leader moves its log start offset (−1 = the HW) at once, then the
/// request waits in the purgatory until the low watermark (the lowest log start over the leader
/// and the followers on live brokers, which take the leader's from their next fetch and report
/// it in the one after) reaches the offset asked for, or `timeout_ms` passes (REQUEST_TIMED_OUT),
/// or leadership moves (NOT_LEADER_OR_FOLLOWER). A single replica answers at once. A follower
/// asked directly answers NOT_LEADER_OR_FOLLOWER.
pub async fn delete_records(
    state: &BrokerState,
    req: DeleteRecordsRequest,
) -> DeleteRecordsResponse {
    let image = state.cluster.as_ref().map(|n| n.log.image());
    let is_alive = |id: i32| match &image {
        None => true,
        Some(i) => i.broker(id).is_some_and(|b| !b.fenced),
    };
    let mut waiting = Vec::new();
    let mut waiting_at = Vec::new();
    let mut topics: Vec<DeleteRecordsTopicResult> = Vec::with_capacity(req.topics.len());
    for (ti, t) in req.topics.iter().enumerate() {
        let mut partitions = Vec::with_capacity(t.partitions.len());
        for (pi, rp) in t.partitions.iter().enumerate() {
            let mut out = DeleteRecordsPartitionResult {
                partition_index: rp.partition_index,
                low_watermark: -1,
                ..Default::default()
            };
            let tp = TopicPartition {
                topic: &t.name,
                partition: rp.partition_index,
            };
            match state
                .partition_store
                .delete_records(tp, rp.offset, &is_alive)
            {
                Ok(done) => {
                    out.low_watermark = done.low_watermark;
                    // A store without josef-partition's partition answers at once.
                    if let Some(p) = state.partition_store.delayed_operation_target(tp) {
                        waiting.push(DeletingPartition {
                            partition: p,
                            required_offset: done.requested_offset,
                            low_watermark: done.low_watermark,
                        });
                        waiting_at.push((ti, pi));
                    }
                }
                Err(e) => out.error_code = e.code.code(),
            }
            partitions.push(out);
        }
        topics.push(DeleteRecordsTopicResult {
            name: t.name.clone(),
            partitions,
            ..Default::default()
        });
    }
    if !waiting.is_empty() {
        let timeout = u64::try_from(req.timeout_ms).unwrap_or(0);
        let (op, done) = DelayedDeleteRecords::new(waiting, timeout, state.cluster.clone());
        let op = DelayedOp::DeleteRecords(op);
        let keys = op.keys();
        state.fetch_purgatory.try_complete_else_watch(op, keys);
        let statuses = done.await.unwrap_or_default();
        for (i, &(ti, pi)) in waiting_at.iter().enumerate() {
            let (code, low) = statuses
                .get(i)
                .copied()
                .unwrap_or((ErrorCode::RequestTimedOut, -1));
            let out = &mut topics[ti].partitions[pi];
            out.error_code = code.code();
            out.low_watermark = low;
        }
    }
    DeleteRecordsResponse {
        topics,
        ..Default::default()
    }
}

/// DescribeCluster (api 60): the brokers and controller of the state's
/// [`MetadataView`](crate::kit::MetadataView), in every mode.
pub fn describe_cluster(
    state: &BrokerState,
    conn: &ConnectionInfo,
    req: DescribeClusterRequest,
) -> DescribeClusterResponse {
    // From one moment of the metadata view, as Metadata is.
    let snapshot = state.metadata_view.snapshot();
    let view = snapshot.as_deref().unwrap_or(state.metadata_view.as_ref());
    let mut r = DescribeClusterResponse {
        endpoint_type: req.endpoint_type,
        cluster_id: StrBytes::from(state.cluster_id.as_str()),
        controller_id: view.controller_id(conn),
        brokers: view
            .brokers(conn)
            .into_iter()
            .map(|b| DescribeClusterBroker {
                broker_id: b.node_id,
                host: StrBytes::from(b.host),
                port: b.port,
                rack: b.rack.map(StrBytes::from),
                ..Default::default()
            })
            .collect(),
        cluster_authorized_operations: i32::MIN,
        ..Default::default()
    };
    if req.endpoint_type != 1 {
        r.error_code = ErrorCode::UnsupportedEndpointType.code();
        r.error_message = err_msg("only broker endpoints are served");
        r.brokers.clear();
    }
    r
}

/// DescribeLogDirs (api 35).
pub fn describe_log_dirs(
    state: &BrokerState,
    req: DescribeLogDirsRequest,
) -> DescribeLogDirsResponse {
    let want = |topic: &str, p: i32| match &req.topics {
        None => true,
        Some(ts) => ts
            .iter()
            .any(|t| t.topic.as_str() == topic && t.partitions.contains(&p)),
    };
    let mut results = Vec::new();
    for dir in &state.config.log_dirs {
        let mut topics = Vec::new();
        for t in state.topics.all() {
            let mut parts = Vec::new();
            for p in &t.partitions {
                if !want(&t.name, p.index) {
                    continue;
                }
                let s = p.log_dir_summary();
                if s.dir.parent() != Some(dir.as_path()) {
                    continue;
                }
                parts.push(DescribeLogDirsPartition {
                    partition_index: p.index,
                    partition_size: s.size_in_bytes as i64,
                    offset_lag: s.offset_lag,
                    is_future_key: false,
                    ..Default::default()
                });
            }
            if !parts.is_empty() {
                topics.push(DescribeLogDirsTopic {
                    name: StrBytes::from(t.name.as_str()),
                    partitions: parts,
                    ..Default::default()
                });
            }
        }
        let (error_code, total_bytes, usable_bytes) = match crate::log_dir_space::space(dir) {
            Ok(s) => (
                0,
                i64::try_from(s.total_bytes).unwrap_or(i64::MAX),
                i64::try_from(s.usable_bytes).unwrap_or(i64::MAX),
            ),
            Err(e) => {
                tracing::warn!(dir = %dir.display(), error = %e, "log dir unreadable");
                (ErrorCode::KafkaStorageError.code(), -1, -1)
            }
        };
        results.push(DescribeLogDirsResult {
            error_code,
            log_dir: StrBytes::from(dir.display().to_string()),
            topics,
            total_bytes,
            usable_bytes,
            ..Default::default()
        });
    }
    DescribeLogDirsResponse {
        results,
        ..Default::default()
    }
}
