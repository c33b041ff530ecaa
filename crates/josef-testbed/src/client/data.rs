//! Topics and records, spoken raw for tests: create a topic, produce one batch with chosen acks,
//! fetch a partition from its leader, and a partition's leader and ISR. One blocking request per
//! connection (see [`call`]), no retries: a test sees each answer's error code as the broker
//! gave it, and decides itself what to retry.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use josef_protocol::messages::create_topics_request::{
    CreatableReplicaAssignment, CreatableTopic, CreatableTopicConfig,
};
use josef_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use josef_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use josef_protocol::messages::{CreateTopicsRequest, FetchRequest, ProduceRequest};
use josef_protocol::ResponseBody;
use josef_records::{Batches, DecompressLimits, RecordBatchBuilder};

use super::{call, metadata};
use crate::Error;

fn unexpected(addr: SocketAddr, what: &str, got: &ResponseBody) -> Error {
    Error::Request {
        addr,
        reason: format!("not a {what} response: {got:?}"),
    }
}

/// CreateTopics v5 at `addr` for one topic (`configs` as topic configs); the topic's error code
/// (0, or TOPIC_ALREADY_EXISTS and the like).
pub fn create_topic(
    addr: SocketAddr,
    name: &str,
    partitions: i32,
    replication_factor: i16,
    configs: &[(&str, &str)],
) -> Result<i16, Error> {
    create(
        addr,
        CreatableTopic {
            name: name.into(),
            num_partitions: partitions,
            replication_factor,
            configs: configs
                .iter()
                .map(|(k, v)| CreatableTopicConfig {
                    name: (*k).into(),
                    value: Some((*v).into()),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        },
    )
}

/// Creates topic `name` with one partition on exactly `replicas` (the first is the preferred
/// leader) and no configs; the topic's error code, as [`create_topic`].
pub fn create_topic_assigned(addr: SocketAddr, name: &str, replicas: &[i32]) -> Result<i16, Error> {
    create(
        addr,
        CreatableTopic {
            name: name.into(),
            num_partitions: -1,
            replication_factor: -1,
            assignments: vec![CreatableReplicaAssignment {
                partition_index: 0,
                broker_ids: replicas.iter().copied().collect(),
                ..Default::default()
            }],
            ..Default::default()
        },
    )
}

fn create(addr: SocketAddr, topic: CreatableTopic) -> Result<i16, Error> {
    let req = CreateTopicsRequest {
        topics: vec![topic],
        timeout_ms: 30_000,
        ..Default::default()
    };
    match call(addr, 5, req.into())? {
        ResponseBody::CreateTopics(r) => {
            r.topics
                .first()
                .map(|t| t.error_code)
                .ok_or_else(|| Error::Request {
                    addr,
                    reason: "CreateTopics answered no topic".into(),
                })
        }
        other => Err(unexpected(addr, "CreateTopics", &other)),
    }
}

/// Partition `partition` of `topic` as every node of `nodes` describes it, when they agree on
/// its leader and ISR size and `ok` holds; `None` while any node cannot answer or they differ.
pub fn agreed_partition(
    addrs: &BTreeMap<i32, SocketAddr>,
    nodes: &[i32],
    topic: &str,
    partition: i32,
    ok: impl Fn(&PartitionState) -> bool,
) -> Option<PartitionState> {
    let views: Vec<PartitionState> = nodes
        .iter()
        .map(|n| {
            self::partition(*addrs.get(n)?, topic, partition)
                .ok()
                .flatten()
        })
        .collect::<Option<_>>()?;
    let first = views.first()?.clone();
    (views
        .iter()
        .all(|v| v.leader == first.leader && v.isr.len() == first.isr.len())
        && ok(&first))
    .then_some(first)
}

/// Creates `topic` with one partition replicated on every node of `addrs` and
/// `min.insync.replicas` = `min_insync`, through the first node, then waits (at most `timeout`)
/// until every node names the same leader with all of them in the ISR: that state.
pub fn create_in_sync_topic(
    addrs: &BTreeMap<i32, SocketAddr>,
    topic: &str,
    min_insync: usize,
    timeout: Duration,
) -> Result<PartitionState, Error> {
    let (&first, nodes) = match addrs.values().next() {
        Some(a) => (a, addrs.keys().copied().collect::<Vec<i32>>()),
        None => return Err(Error::Invalid("no node to create a topic on".into())),
    };
    let replicas = i16::try_from(nodes.len()).unwrap_or(i16::MAX);
    let min_isr = min_insync.to_string();
    let code = create_topic(
        first,
        topic,
        1,
        replicas,
        &[("min.insync.replicas", &min_isr)],
    )?;
    if code != 0 {
        return Err(Error::Request {
            addr: first,
            reason: format!("CreateTopics {topic}: error {code}"),
        });
    }
    crate::wait_for(timeout, Duration::from_millis(100), || {
        agreed_partition(addrs, &nodes, topic, 0, |p| {
            p.leader >= 0 && p.isr.len() == nodes.len()
        })
    })
    .ok_or_else(|| Error::Request {
        addr: first,
        reason: format!("{topic}: no leader with a full ISR on every node within {timeout:?}"),
    })
}

/// A partition's answer to a produce.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Produced {
    /// Its error code (0: written with the acks asked).
    pub error_code: i16,
    /// The offset of the batch's first record, -1 on an error.
    pub base_offset: i64,
    /// The broker's message, if any.
    pub error_message: Option<String>,
}

/// Produce v9 at `addr` of one batch (no producer id) with `values` to `topic`-`partition`,
/// `acks` (-1 for all) and the broker's `timeout` for them.
pub fn produce(
    addr: SocketAddr,
    topic: &str,
    partition: i32,
    acks: i16,
    timeout: Duration,
    values: &[&[u8]],
) -> Result<Produced, Error> {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0);
    let batch = values
        .iter()
        .fold(RecordBatchBuilder::new(), |b, v| {
            b.record(now, None, Some(v))
        })
        .build_bytes()
        .map_err(|e| Error::Request {
            addr,
            reason: format!("building a batch: {e}"),
        })?;
    let req = ProduceRequest {
        acks,
        timeout_ms: i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX),
        topic_data: vec![TopicProduceData {
            name: topic.into(),
            partition_data: vec![PartitionProduceData {
                index: partition,
                records: Some(batch),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    match call(addr, 9, req.into())? {
        ResponseBody::Produce(r) => r
            .responses
            .first()
            .and_then(|t| t.partition_responses.first())
            .map(|p| Produced {
                error_code: p.error_code,
                base_offset: p.base_offset,
                error_message: p.error_message.as_ref().map(|m| m.to_string()),
            })
            .ok_or_else(|| Error::Request {
                addr,
                reason: "Produce answered no partition".into(),
            }),
        other => Err(unexpected(addr, "Produce", &other)),
    }
}

/// One record read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Its offset.
    pub offset: i64,
    /// Its value (`None` for a null one).
    pub value: Option<Bytes>,
}

/// A partition's answer to a fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    /// Its error code.
    pub error_code: i16,
    /// The high watermark the leader answered.
    pub high_watermark: i64,
    /// The records at or after the offset asked (control batches left out).
    pub records: Vec<Record>,
}

/// A consumer's one-partition Fetch (no session, no wait, no leader epoch) of `topic`-`partition`
/// from `offset`, at most `max_bytes`, with `isolation_level` (0 read_uncommitted, 1
/// read_committed).
pub(crate) fn consumer_fetch(
    topic: &str,
    partition: i32,
    offset: i64,
    max_bytes: i32,
    isolation_level: i8,
) -> FetchRequest {
    FetchRequest {
        replica_id: -1,
        max_wait_ms: 0,
        max_bytes,
        isolation_level,
        session_epoch: -1,
        topics: vec![FetchTopic {
            topic: topic.into(),
            partitions: vec![FetchPartition {
                partition,
                fetch_offset: offset,
                partition_max_bytes: max_bytes,
                current_leader_epoch: -1,
                last_fetched_epoch: -1,
                log_start_offset: -1,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// Fetch v12 at `addr` (a consumer's, read_uncommitted, no wait) of `topic`-`partition` from
/// `offset`, at most `max_bytes`.
pub fn fetch(
    addr: SocketAddr,
    topic: &str,
    partition: i32,
    offset: i64,
    max_bytes: i32,
) -> Result<Fetched, Error> {
    let req = consumer_fetch(topic, partition, offset, max_bytes, 0);
    let r = match call(addr, 12, req.into())? {
        ResponseBody::Fetch(r) => r,
        other => return Err(unexpected(addr, "Fetch", &other)),
    };
    let p = r
        .responses
        .first()
        .and_then(|t| t.partitions.first())
        .ok_or_else(|| Error::Request {
            addr,
            reason: "Fetch answered no partition".into(),
        })?;
    let bad = |e: String| Error::Request {
        addr,
        reason: format!("records of {topic}-{partition}: {e}"),
    };
    let mut records = Vec::new();
    let limits = DecompressLimits::default();
    for batch in Batches::new(p.records.clone().unwrap_or_default()) {
        let batch = batch.map_err(|e| bad(e.to_string()))?;
        if batch.header().is_control() {
            continue;
        }
        for r in batch.records(&limits).map_err(|e| bad(e.to_string()))? {
            let r = r.map_err(|e| bad(e.to_string()))?;
            if r.offset >= offset {
                records.push(Record {
                    offset: r.offset,
                    value: r.value,
                });
            }
        }
    }
    Ok(Fetched {
        error_code: p.error_code,
        high_watermark: p.high_watermark,
        records,
    })
}

/// Every record of `topic`-`partition` below the high watermark, fetched from its leader at
/// `addr` in rounds of 1 MiB (at most `max_rounds`, a bound on a log that keeps growing).
pub fn read_all(
    addr: SocketAddr,
    topic: &str,
    partition: i32,
    max_rounds: usize,
) -> Result<Vec<Record>, Error> {
    let mut out: Vec<Record> = Vec::new();
    let mut next = 0;
    for _ in 0..max_rounds {
        let f = fetch(addr, topic, partition, next, 1 << 20)?;
        if f.error_code != 0 {
            return Err(Error::Request {
                addr,
                reason: format!(
                    "fetch of {topic}-{partition} at {next}: error {}",
                    f.error_code
                ),
            });
        }
        if let Some(last) = f.records.last() {
            next = last.offset + 1;
        }
        let done = next >= f.high_watermark || f.records.is_empty();
        out.extend(
            f.records
                .into_iter()
                .filter(|r| r.offset < f.high_watermark),
        );
        if done {
            return Ok(out);
        }
    }
    Err(Error::Request {
        addr,
        reason: format!("{topic}-{partition} not read to its end in {max_rounds} fetches"),
    })
}

/// A partition as one node's Metadata shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionState {
    /// Its leader, -1 without one.
    pub leader: i32,
    /// The leader epoch.
    pub leader_epoch: i32,
    /// The replicas.
    pub replicas: Vec<i32>,
    /// The in-sync replicas.
    pub isr: Vec<i32>,
}

/// `topic`-`partition` in the Metadata of the node at `addr`; `None` if it lists no such
/// partition (or the topic has an error there).
pub fn partition(
    addr: SocketAddr,
    topic: &str,
    partition: i32,
) -> Result<Option<PartitionState>, Error> {
    let m = metadata(addr)?;
    Ok(m.topics
        .iter()
        .find(|t| t.name.as_deref() == Some(topic) && t.error_code == 0)
        .and_then(|t| t.partitions.iter().find(|p| p.partition_index == partition))
        .map(|p| PartitionState {
            leader: p.leader_id,
            leader_epoch: p.leader_epoch,
            replicas: p.replica_nodes.to_vec(),
            isr: p.isr_nodes.to_vec(),
        }))
}
