//! Fetch (api 1): read through the state's [`PartitionStore`](crate::kit::PartitionStore) up
//! to the HW (or the LSO for read_committed), and if fewer than
//! `min_bytes` are there, park a `DelayedFetch` in the fetch purgatory (josef-timer) keyed by its
//! partitions until an append to one of them completes it (at once, from the appending task) or
//! the purgatory's timer expires it at `max_wait_ms`; then read again and answer.
//!
//! A fetch with a replica id ≥ 0 (or `ReplicaState` from v15) is a follower's: each partition
//! goes through josef-partition's `fetch_from_follower` (FENCED/UNKNOWN_LEADER_EPOCH, unknown
//! replica, `diverging_epoch` from the last fetched epoch, a read to the LEO, the follower's state
//! updated, which moves the HW and may propose an ISR expansion); a divergence is answered at
//! once so the follower truncates without waiting.
//!
//! Fetch sessions (KIP-227) come from `josef_fetch::FetchSessionCache` (one per broker, behind a
//! mutex held only around `new_context` and `update_and_generate_response`, never across the
//! read or the wait): a full fetch with epoch 0 creates a session; an incremental fetch reads
//! every partition of its session with the parameters the session remembers and answers only
//! the partitions that changed.
//!
//! Fetch v0–3 clients read only legacy message sets: the v2 data read is down-converted (magic 0
//! for v0/v1, magic 1 for v2/v3) with `josef_records::down_convert`, outside the partition lock,
//! like Kafka 2.x's `LazyDownConversionRecords`: a partition sends at most as many bytes as the
//! v2 read held, but never less than its first converted batch, so an old consumer can always
//! move on; whatever is cut off arrives as a partial message, which old clients drop. v0–2 have a
//! hard byte limit (no KIP-74): a first batch larger than partition_max_bytes comes as a partial
//! message of exactly that many bytes, which old clients report as "message too large".

use std::sync::Arc;

use josef_fetch::{
    forgotten_partitions, request_metadata, request_partitions, uses_topic_ids, ContextKind,
    PartitionFetch, PartitionOutcome, TopicIdPartition,
};
use josef_log::storage::FileRegion;
use josef_protocol::constants::NO_PARTITION_LEADER_EPOCH;
use josef_protocol::messages::fetch_response::{
    AbortedTransaction, FetchableTopicResponse, PartitionData,
};
use josef_protocol::messages::{FetchRequest, FetchResponse};
use josef_protocol::{ErrorCode, RecordsFile, StrBytes};

use bytes::Bytes;
use josef_records::{down_convert, AnyBatches, DecompressLimits, RecordsError};

use crate::delayed_fetch::{DelayedFetch, DelayedOp, WaitingPartition};
use crate::file_slice::RegionSlice;
use crate::kit::partition_store::{PartitionStore, TopicPartition};
use crate::partition::{FetchIsolation, FollowerFetch, Partition, ReadParams, ReadResult};
use crate::replication_quotas::{Direction, ReplicationQuotas};
use crate::state::BrokerState;
use crate::topic_config;
use crate::topics::now_ms;
use josef_partition::{SessionCover, SessionFetch};

/// One partition to read: its key, the fetcher's parameters, and its topic's name (or why not).
struct Wanted {
    key: TopicIdPartition,
    fetch: PartitionFetch,
    topic: Result<String, ErrorCode>,
}

/// The read bound of a consumer fetch.
fn isolation(read_committed: bool) -> FetchIsolation {
    if read_committed {
        FetchIsolation::TxnCommitted
    } else {
        FetchIsolation::HighWatermark
    }
}

/// Reads one partition into `out` through `read` (the store's: epoch, leadership and range
/// checks, HW or LSO bound, aborted transactions); returns the bytes read and where to cut them.
/// `hard_limit` (Fetch v0–2): a first batch larger than `limit` is read whole with the cut at
/// `limit`, for the caller to cut its converted form there (Kafka sends those clients the first
/// `limit` bytes of the log, a partial message); the returned count is then `limit`.
fn read_partition(
    read: impl FnOnce(&ReadParams) -> Result<(ReadResult, Option<FileRegion>), ErrorCode>,
    fp: &PartitionFetch,
    read_committed: bool,
    limit: i64,
    min_one: bool,
    hard_limit: bool,
    out: &mut PartitionData,
) -> (usize, Option<usize>) {
    let params = ReadParams {
        fetch_offset: fp.fetch_offset,
        current_leader_epoch: fp.current_leader_epoch,
        max_bytes: limit,
        min_one_message: min_one,
        hard_limit,
        isolation: isolation(read_committed),
        require_leader: true,
    };
    match read(&params) {
        Ok((r, region)) => {
            out.high_watermark = r.high_watermark;
            out.last_stable_offset = r.last_stable_offset;
            out.log_start_offset = r.log_start_offset;
            out.aborted_transactions = r.aborted_transactions.map(|txns| {
                txns.into_iter()
                    .map(|a| AbortedTransaction {
                        producer_id: a.producer_id,
                        first_offset: a.first_offset,
                        ..Default::default()
                    })
                    .collect()
            });
            out.records = Some(r.records);
            // Records left in their segment file: the connection sends them with sendfile
            // (plaintext) or reads them once (TLS); the response's size counts them all the same.
            out.records_file =
                region.map(|region| RecordsFile(Arc::new(RegionSlice(region)) as Arc<_>));
            (r.size, r.cut_to)
        }
        Err(code) => {
            out.error_code = code.code();
            out.high_watermark = -1;
            out.last_stable_offset = -1;
            out.log_start_offset = -1;
            (0, None)
        }
    }
}

/// Who fetches: a consumer (bound HW or LSO) or a follower replica (bound LEO; its fetch updates
/// the leader's view of it).
#[derive(Debug, Clone, Copy)]
enum Fetcher {
    Consumer {
        read_committed: bool,
    },
    Follower {
        replica_id: i32,
        broker_epoch: i64,
        /// The incremental fetch session the fetch belongs to (none for a full fetch: its
        /// session, if any, exists only once the response is generated).
        session: Option<SessionFetch>,
    },
}

impl Fetcher {
    fn isolation(self) -> FetchIsolation {
        match self {
            Fetcher::Consumer { read_committed } => isolation(read_committed),
            Fetcher::Follower { .. } => FetchIsolation::LogEnd,
        }
    }
}

/// Answers a follower's fetch of one partition into `out` (josef-partition's
/// `fetch_from_follower`: epoch and replica checks, diverging epoch, read to the LEO, follower
/// state); returns the bytes read, whether the follower diverged and whether it was at the
/// leader's log end (nothing to read: change tracking skips the partition until it changes).
/// Replication is between josef-partition partitions: `p` is the store's, or why there is none.
/// `session`: the follower's incremental fetch session, which then covers the partition while it
/// is idle (`josef_partition::session_cover`).
#[allow(clippy::too_many_arguments)]
fn read_follower_partition(
    p: Result<&Partition, ErrorCode>,
    fp: &PartitionFetch,
    replica_id: i32,
    broker_epoch: i64,
    limit: i64,
    min_one: bool,
    version: i16,
    session: Option<SessionFetch>,
    out: &mut PartitionData,
) -> (usize, bool, bool) {
    let fetch = FollowerFetch {
        replica_id,
        broker_epoch,
        fetch_offset: fp.fetch_offset,
        log_start_offset: fp.log_start_offset,
        current_leader_epoch: fp.current_leader_epoch,
        last_fetched_epoch: if version >= 12 {
            fp.last_fetched_epoch
        } else {
            -1
        },
        max_bytes: limit,
        min_one_message: min_one,
    };
    let p = match p {
        Ok(p) => p,
        Err(code) => {
            out.error_code = code.code();
            return (0, false, false);
        }
    };
    match p.fetch_from_follower_in_session(&fetch, session, now_ms()) {
        Ok(r) => {
            out.high_watermark = r.read.high_watermark;
            out.last_stable_offset = r.read.last_stable_offset;
            out.log_start_offset = r.read.log_start_offset;
            let diverged = r.diverging_epoch.is_some();
            if let Some(d) = r.diverging_epoch {
                out.diverging_epoch.epoch = d.epoch;
                out.diverging_epoch.end_offset = d.end_offset;
            }
            out.records = Some(r.read.records);
            let at_end = fp.fetch_offset >= r.read.log_end_offset;
            (r.read.size, diverged, at_end)
        }
        Err(code) => {
            out.error_code = code.code();
            (0, false, false)
        }
    }
}

/// The josef-partition partition a follower replicates from: UNKNOWN_TOPIC_OR_PARTITION (or the
/// store's own refusal) when the store does not host it, NOT_LEADER_OR_FOLLOWER when the store
/// hosts it without one.
fn replicated_partition(
    store: &dyn PartitionStore,
    tp: TopicPartition<'_>,
) -> Result<Arc<Partition>, ErrorCode> {
    store.delayed_operation_target(tp).ok_or_else(|| {
        store
            .check_leader_epoch(tp, NO_PARTITION_LEADER_EPOCH, false)
            .err()
            .unwrap_or(ErrorCode::NotLeaderOrFollower)
    })
}

/// Reads every wanted partition in order; returns the partition data (same order) with, for a
/// follower, whether it was at the leader's log end, the bytes read and whether the fetch must be
/// answered at once (a partition failed, or a follower diverged and must truncate).
fn read_all(
    store: &dyn PartitionStore,
    throttles: &ReplicationQuotas,
    wanted: &[Wanted],
    fetcher: Fetcher,
    max_bytes: i64,
    version: i16,
) -> (Vec<(PartitionData, bool)>, i64, bool) {
    let mut total: i64 = 0;
    let mut any_error = false;
    let mut parts = Vec::with_capacity(wanted.len());
    for w in wanted {
        let mut at_end = false;
        let mut out = PartitionData {
            partition_index: w.key.partition,
            high_watermark: -1,
            last_stable_offset: -1,
            log_start_offset: -1,
            aborted_transactions: None,
            preferred_read_replica: -1,
            records: Some(bytes::Bytes::new()),
            ..Default::default()
        };
        match &w.topic {
            Err(code) => {
                out.error_code = code.code();
                any_error = true;
            }
            Ok(topic) => {
                let tp = TopicPartition {
                    topic,
                    partition: w.key.partition,
                };
                let limit = i64::from(w.fetch.max_bytes).min(max_bytes - total);
                // KIP-74: the first batch of the first non-empty partition comes whole.
                let min_one = version >= 3 && total == 0;
                let hard_limit = version <= 2;
                match fetcher {
                    Fetcher::Consumer { read_committed } => {
                        // Fetch v4+ sends the log's own batches: they may stay in the file
                        // (sendfile). v0–3 down-convert, which needs the bytes.
                        let (n, cut_to) = read_partition(
                            |params| {
                                if version >= 4 {
                                    store.read_region(tp, params)
                                } else {
                                    store.read(tp, params).map(|r| (r, None))
                                }
                            },
                            &w.fetch,
                            read_committed,
                            limit,
                            min_one,
                            hard_limit,
                            &mut out,
                        );
                        total += n as i64;
                        if version <= 3 && out.error_code == 0 {
                            down_convert_partition(&mut out, w.fetch.fetch_offset, version, cut_to);
                        }
                    }
                    Fetcher::Follower {
                        replica_id,
                        broker_epoch,
                        session,
                    } => {
                        let partition = replicated_partition(store, tp);
                        let (mut n, diverged, end) = read_follower_partition(
                            partition.as_deref().map_err(|e| *e),
                            &w.fetch,
                            replica_id,
                            broker_epoch,
                            limit,
                            min_one,
                            version,
                            session,
                            &mut out,
                        );
                        at_end = end;
                        // KIP-73: read (the follower's state moved), then send nothing of a
                        // throttled out-of-sync replica while the leader rate is over its quota.
                        if let Ok(p) = &partition {
                            if n > 0
                                && throttles.leader_holds_back(
                                    topic,
                                    w.key.partition,
                                    p,
                                    replica_id,
                                    now_ms() as u64,
                                )
                            {
                                out.records = Some(Bytes::new());
                                n = 0;
                                crate::replication_quotas::count_held_back(Direction::Leader);
                            }
                        }
                        total += n as i64;
                        any_error |= diverged;
                    }
                }
                if out.error_code != 0 {
                    any_error = true;
                }
            }
        }
        parts.push((out, at_end));
    }
    (parts, total, any_error)
}

/// Counts the bytes sent to a follower for the replicas listed for the leader direction, in sync
/// or not (Kafka's `sizeOfThrottledPartitions`, here the records' bytes).
fn record_leader_throttled(
    throttles: &ReplicationQuotas,
    wanted: &[Wanted],
    parts: &[(PartitionData, bool)],
) {
    let bytes: usize = wanted
        .iter()
        .zip(parts)
        .filter(|(w, _)| {
            w.topic
                .as_deref()
                .is_ok_and(|t| throttles.is_throttled(Direction::Leader, t, w.key.partition))
        })
        .map(|(_, (d, _))| {
            d.records.as_ref().map_or(0, |r| r.len())
                + d.records_file.as_ref().map_or(0, |f| f.len())
        })
        .sum();
    throttles.record(Direction::Leader, bytes as u64, now_ms() as u64);
}

/// The legacy magic a Fetch v0–3 client reads: 0 for v0/v1, 1 for v2/v3.
fn legacy_magic(version: i16) -> i8 {
    if version <= 1 {
        0
    } else {
        1
    }
}

/// Replaces the v2 records of `out` with their legacy form for a Fetch v0–3 client, sized like
/// Kafka's `LazyDownConversionRecords`: at most the v2 size (or `cut_to`), at least the first
/// converted batch. A zstd batch cannot be expressed: UNSUPPORTED_COMPRESSION_TYPE; data that does
/// not decode: CORRUPT_MESSAGE.
fn down_convert_partition(
    out: &mut PartitionData,
    fetch_offset: i64,
    version: i16,
    cut_to: Option<usize>,
) {
    let Some(v2) = out.records.take().filter(|r| !r.is_empty()) else {
        out.records = Some(Bytes::new());
        return;
    };
    let v2_len = v2.len();
    let magic = legacy_magic(version);
    let limits = DecompressLimits::default();
    let converted = down_convert(v2.clone(), magic, fetch_offset, &limits).or_else(|e| {
        // Kafka converts lazily, batch by batch: what precedes the first batch it cannot convert
        // still reaches the client, and the error only when that batch comes first.
        let good = convertible_prefix(&v2, magic, fetch_offset, &limits);
        if good == 0 {
            return Err(e);
        }
        down_convert(v2.slice(..good), magic, fetch_offset, &limits)
    });
    match converted {
        Ok(converted) => {
            let size = cut_to.unwrap_or_else(|| v2_len.max(converted.first_entry_size));
            let records = converted.records;
            out.records = Some(records.slice(..size.min(records.len())));
        }
        Err(e) => {
            tracing::warn!(error = %e, version, "cannot down-convert fetched data");
            out.error_code = match e {
                RecordsError::UnknownCompression(_) => ErrorCode::UnsupportedCompressionType,
                _ => ErrorCode::CorruptMessage,
            }
            .code();
            out.records = Some(Bytes::new());
        }
    }
}

/// Bytes of the whole entries at the start of `v2` that down-convert without error.
fn convertible_prefix(
    v2: &Bytes,
    magic: i8,
    fetch_offset: i64,
    limits: &DecompressLimits,
) -> usize {
    let mut entries = AnyBatches::new(v2.clone());
    let mut good = 0;
    while let Some(Ok(entry)) = entries.next() {
        if down_convert(entry.as_bytes().clone(), magic, fetch_offset, limits).is_err() {
            break;
        }
        good = entries.position();
    }
    good
}

/// What the session cache needs to know about one partition of the response. `settled`: a
/// partition with nothing to read at its fetch offset (no error, no records, the offset at the HW
/// for a consumer, at the log end for a follower), which change tracking skips until the
/// partition changes (an append, an HW move, a leadership change).
fn outcome(d: &PartitionData, settled: bool) -> PartitionOutcome {
    // Records come in memory or as a file slice (sent with sendfile).
    let has_records = d.records.as_ref().is_some_and(|r| !r.is_empty())
        || d.records_file.as_ref().is_some_and(|f| !f.is_empty());
    PartitionOutcome {
        settled: settled
            && d.error_code == 0
            && !has_records
            && d.preferred_read_replica < 0
            && d.diverging_epoch.epoch < 0,
        error_code: d.error_code,
        high_watermark: d.high_watermark,
        log_start_offset: d.log_start_offset,
        has_records,
        has_preferred_read_replica: d.preferred_read_replica >= 0,
        has_diverging_epoch: d.diverging_epoch.epoch >= 0,
    }
}

/// Resolves a partition key to its topic's name (by id from v13, else as named), with the
/// refusals for old fetchers.
fn resolve(
    store: &dyn PartitionStore,
    broker_default: &dyn Fn(&str) -> String,
    key: &TopicIdPartition,
    by_id: bool,
    version: i16,
) -> Result<String, ErrorCode> {
    let topic = if by_id {
        store
            .topic_name(key.topic_id)
            .ok_or(ErrorCode::UnknownTopicId)?
    } else {
        key.topic.to_string()
    };
    if version < 10 {
        // Kafka refuses an old fetcher only a partition it hosts: an unknown one is told so
        // first. Newer fetchers never see the order, so they skip the extra lookup.
        let tp = TopicPartition {
            topic: &topic,
            partition: key.partition,
        };
        store.check_leader_epoch(tp, NO_PARTITION_LEADER_EPOCH, false)?;
        old_client_check(store, broker_default, &topic, version)?;
    }
    Ok(topic)
}

/// Kafka's per-topic refusals for old fetchers (`KafkaApis.handleFetchRequest`): a topic whose
/// `compression.type` is zstd cannot be read below v10 (UNSUPPORTED_COMPRESSION_TYPE), and with
/// `message.downconversion.enable=false` v0–3 get UNSUPPORTED_VERSION.
fn old_client_check(
    store: &dyn PartitionStore,
    broker_default: &dyn Fn(&str) -> String,
    topic: &str,
    version: i16,
) -> Result<(), ErrorCode> {
    let config = |name: &str| {
        store
            .topic_config(topic, name)
            .unwrap_or_else(|| broker_default(name))
    };
    if version < 10 && config("compression.type").eq_ignore_ascii_case("zstd") {
        return Err(ErrorCode::UnsupportedCompressionType);
    }
    if version <= 3 && config("message.downconversion.enable").eq_ignore_ascii_case("false") {
        return Err(ErrorCode::UnsupportedVersion);
    }
    Ok(())
}

/// Groups the partitions (in read order) into topics: consecutive partitions of one topic share
/// an entry, as Kafka's `FetchResponse.of` does.
fn group_by_topic(
    parts: Vec<(&TopicIdPartition, PartitionData)>,
    by_id: bool,
) -> Vec<FetchableTopicResponse> {
    let mut topics: Vec<FetchableTopicResponse> = Vec::new();
    let mut last: Option<&TopicIdPartition> = None;
    for (key, data) in parts {
        let same = last.is_some_and(|l| {
            if by_id {
                l.topic_id == key.topic_id
            } else {
                l.topic == key.topic
            }
        });
        match topics.last_mut() {
            Some(t) if same => t.partitions.push(data),
            _ => topics.push(FetchableTopicResponse {
                topic: if by_id {
                    StrBytes::default()
                } else {
                    key.topic.clone()
                },
                topic_id: key.topic_id,
                partitions: vec![data],
                ..Default::default()
            }),
        }
        last = Some(key);
    }
    topics
}

/// Ends the session cover of the partitions a follower's incremental fetch forgets
/// (`josef_partition::session_cover`): from now on only its explicit fetches of them count.
fn forget_session_covers(
    store: &dyn PartitionStore,
    req: &FetchRequest,
    version: i16,
    replica_id: i32,
) {
    for key in forgotten_partitions(req, version) {
        let topic = if uses_topic_ids(version) {
            store.topic_name(key.topic_id)
        } else {
            Some(key.topic.to_string())
        };
        let Some(topic) = topic else { continue };
        let tp = TopicPartition {
            topic: &topic,
            partition: key.partition,
        };
        if let Some(p) = store.delayed_operation_target(tp) {
            p.set_follower_session_cover(replica_id, None);
        }
    }
}

/// Handles a Fetch request (possibly parking until data arrives).
pub async fn handle(state: &BrokerState, req: FetchRequest, version: i16) -> FetchResponse {
    let by_id = uses_topic_ids(version);
    let replica_id = if version >= 15 {
        req.replica_state.replica_id
    } else {
        req.replica_id
    };
    let store = state.partition_store.as_ref();
    // Taken before the session decides which partitions changed: an event after this moves it.
    let read_at_event = crate::delayed_fetch::partition_event_seq();
    let mut context = {
        let mut sessions = state.fetch_sessions.lock();
        // Change tracking when the store tells its partitions' changes (see
        // `PartitionStore::change_generation`): an incremental fetch reads only those.
        sessions.sync_generation(store.change_generation());
        sessions.new_context(
            request_metadata(&req, version),
            by_id,
            replica_id >= 0,
            request_partitions(&req, version),
            forgotten_partitions(&req, version),
            now_ms(),
        )
    };
    if let Some(e) = context.session_error() {
        return FetchResponse {
            error_code: e.code(),
            session_id: 0,
            ..Default::default()
        };
    }
    let read_committed = version >= 4 && req.isolation_level == 1;
    // A replica id ≥ 0 (ReplicaState from v15) is a follower: it reads to the LEO and its fetch
    // moves the leader's view of it (HW, ISR).
    let fetcher = if replica_id >= 0 {
        let session = match (context.kind(), context.session_times()) {
            (ContextKind::Incremental { session_id, .. }, Some(t)) => Some(SessionFetch {
                cover: SessionCover {
                    session_id,
                    created_ms: t.created_ms,
                },
                previous_fetch_ms: t.previous_fetch_ms,
            }),
            _ => None,
        };
        if session.is_some() {
            // The follower stopped fetching these (backoff, throttle, a new leader): its
            // session no longer speaks for them.
            forget_session_covers(store, &req, version, replica_id);
        }
        Fetcher::Follower {
            replica_id,
            broker_epoch: if version >= 15 {
                req.replica_state.replica_epoch
            } else {
                -1
            },
            session,
        }
    } else {
        Fetcher::Consumer { read_committed }
    };
    let cap = i64::from(state.config.fetch_max_bytes);
    let max_bytes = if version >= 3 {
        i64::from(req.max_bytes).min(cap)
    } else {
        cap
    };
    let min_bytes = i64::from(req.min_bytes).min(max_bytes);
    // A topic without its own setting follows the broker's dynamic default, then its static one.
    let dynamic = state.topics.dynamic_defaults();
    let broker_default =
        |name: &str| topic_config::effective_default(name, &dynamic, &state.config);
    let to_wanted = |partitions: &[(TopicIdPartition, PartitionFetch)]| -> Vec<Wanted> {
        partitions
            .iter()
            .map(|(key, fetch)| Wanted {
                topic: resolve(store, &broker_default, key, by_id, version),
                key: key.clone(),
                fetch: *fetch,
            })
            .collect()
    };
    let mut wanted = to_wanted(context.partitions());
    let throttles = &state.replication_quotas;
    let (mut parts, total, any_error) =
        read_all(store, throttles, &wanted, fetcher, max_bytes, version);
    let must_answer = req.max_wait_ms <= 0 || total >= min_bytes || any_error;
    // A fetch that reads only the changed part of its session still waits on all of it.
    let park_on = match (must_answer, context.kind()) {
        (false, ContextKind::Incremental { session_id, .. }) if context.is_partial() => {
            let all: Vec<(TopicIdPartition, PartitionFetch)> = state
                .fetch_sessions
                .lock()
                .get(session_id)
                .map(|s| {
                    s.partitions()
                        .map(|(k, c)| (k.clone(), c.request))
                        .collect()
                })
                .unwrap_or_default();
            to_wanted(&all)
        }
        _ => Vec::new(),
    };
    let park_on = if park_on.is_empty() {
        &wanted
    } else {
        &park_on
    };
    let waiting: Vec<WaitingPartition> = park_on
        .iter()
        .filter_map(|w| {
            let tp = TopicPartition {
                topic: w.topic.as_deref().ok()?,
                partition: w.key.partition,
            };
            let partition = store.delayed_operation_target(tp)?;
            // Kafka's DelayedFetch does not count the bytes of a replica the leader holds back.
            let counts_bytes = match fetcher {
                Fetcher::Follower { replica_id, .. } => !throttles.leader_holds_back(
                    tp.topic,
                    tp.partition,
                    &partition,
                    replica_id,
                    now_ms() as u64,
                ),
                Fetcher::Consumer { .. } => true,
            };
            Some(WaitingPartition {
                partition,
                counts_bytes,
                fetch_offset: w.fetch.fetch_offset,
                current_leader_epoch: w.fetch.current_leader_epoch,
                max_bytes: w.fetch.max_bytes,
            })
        })
        .collect();
    let answer_now = must_answer || waiting.is_empty();
    if !answer_now {
        // Park in the purgatory: an append to any of these partitions completes it at once
        // (from the appending task), the reaper at max_wait. Either way, read again.
        let mut max_wait = u64::try_from(req.max_wait_ms).unwrap_or(0);
        // A replica held back by the leader throttle is read again once the leader rate is
        // back within its quota, not only at max_wait: with no appends meanwhile the whole wait
        // would go unused and the replica would catch up below the throttled rate.
        if waiting.iter().any(|w| !w.counts_bytes) {
            let resume = throttles.throttle_time_ms(Direction::Leader, now_ms() as u64);
            max_wait = max_wait.min(resume.max(1));
        }
        let (op, done) = DelayedFetch::new(waiting, min_bytes, fetcher.isolation(), max_wait);
        let op = DelayedOp::Fetch(op.read_at_event(read_at_event));
        let keys = op.keys();
        if !state.fetch_purgatory.try_complete_else_watch(op, keys) {
            // An error means the purgatory went away (shutdown): answer with what is there.
            let _ = done.await;
        }
        if context.is_partial() {
            // Read what changed while it waited, too.
            state.fetch_sessions.lock().refresh_context(&mut context);
            wanted = to_wanted(context.partitions());
        }
        parts = read_all(store, throttles, &wanted, fetcher, max_bytes, version).0;
    }
    if let Fetcher::Follower { .. } = fetcher {
        record_leader_throttled(throttles, &wanted, &parts);
    }
    let consumer = matches!(fetcher, Fetcher::Consumer { .. });
    let mut parts: Vec<(&TopicIdPartition, PartitionData, bool)> = wanted
        .iter()
        .zip(parts)
        .map(|(w, (d, at_end))| {
            let at_bound = if consumer {
                w.fetch.fetch_offset >= d.high_watermark
            } else {
                at_end
            };
            (&w.key, d, at_bound)
        })
        .collect();
    let created_for_follower = match (fetcher, context.kind()) {
        (Fetcher::Follower { replica_id, .. }, ContextKind::Full { .. }) => Some(replica_id),
        _ => None,
    };
    let session = state.fetch_sessions.lock().update_and_generate_response(
        &context,
        now_ms(),
        &mut parts,
        |(k, d, at_bound)| (*k, outcome(d, *at_bound)),
    );
    if let (Some(replica_id), true) = (created_for_follower, session.session_id != 0) {
        // A full follower fetch that created a session: its reads came first, so the session
        // covers the partitions they left at the log end only now.
        let created_ms = state
            .fetch_sessions
            .lock()
            .get(session.session_id)
            .map(|s| s.creation_ms());
        if let Some(created_ms) = created_ms {
            let cover = SessionCover {
                session_id: session.session_id,
                created_ms,
            };
            for w in &wanted {
                if let Some(p) = w.topic.as_deref().ok().and_then(|topic| {
                    store.delayed_operation_target(TopicPartition {
                        topic,
                        partition: w.key.partition,
                    })
                }) {
                    p.set_follower_session_cover(replica_id, Some(cover));
                }
            }
        }
    }
    let parts = parts.into_iter().map(|(k, d, _)| (k, d)).collect();
    FetchResponse {
        error_code: session.error_code,
        session_id: session.session_id,
        responses: group_by_topic(parts, by_id),
        ..Default::default()
    }
}
