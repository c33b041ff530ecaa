//! Followers fetch from their leaders (Kafka's `ReplicaFetcherManager` / `ReplicaFetcherThread`):
//! `num.replica.fetchers` fetcher tasks per leader broker (a partition's fetcher chosen by
//! [`fetcher_key::fetcher_id`], as Kafka does), each sending Fetch on its own connection with
//! this broker's replica id from each partition's log end offset and last fetched epoch,
//! appending what comes back as follower (byte for byte), taking the HW from the response, and
//! truncating on a diverging epoch.
//!
//! Each fetcher keeps an incremental fetch session (KIP-227) with its leader through
//! `josef_fetch::FetchSessionHandler`, as Kafka's `ReplicaFetcherThread` does: the first fetch on
//! a connection is full, the next ones list only the partitions whose fetch state changed (new
//! fetch offset, leader epoch, log start) or that were added, and forget those left out (not
//! ready after an error, held back by the KIP-73 follower throttle, moved to another leader).
//! Like Kafka's `buildFetch`, a held-back partition is left out, so the session forgets it and
//! re-adds it whole when it is fetched again; the leader then stops counting the session's
//! fetches for it (josef-partition's `session_cover`). The leader answers only partitions with
//! something new (records, an HW or log start change, an error); the others keep their state
//! here. A top-level error or a lost connection makes the next fetch full.
//!
//! The set of partitions each fetcher serves is reconciled from every metadata image
//! ([`ReplicaFetcherManager::reconcile`]): the publisher passes the partitions this broker follows
//! and their leaders.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Weak};
use std::time::Duration;

use bytes::BytesMut;
use josef_fetch::{FetchSessionHandler, PartitionFetch};
use josef_partition::{
    EpochEndOffset, FetchResponseAction, FollowerFetchRequest, LeaderFetchAnswer,
};
use josef_protocol::messages::fetch_request::{FetchPartition, FetchTopic, ForgottenTopic};
use josef_protocol::messages::{FetchRequest, FetchResponse};
use josef_protocol::{
    encode_request_frame, ErrorCode, RequestBody, RequestHeader, ResponseBody, StrBytes, Uuid,
};
use parking_lot::Mutex;
use tokio::sync::Notify;

use super::channel::{exchange, SendError};
use super::fetcher_key::{self, FetcherKey};
use super::ClusterNode;
use crate::peer_connection::PeerStream;
use crate::replication_quotas::Direction;
use crate::state::BrokerState;
use crate::topics::now_ms;

/// Fetch v12: topic names, `last_fetched_epoch` and `diverging_epoch` (KIP-595/KIP-320 style
/// truncation without a separate OffsetsForLeaderEpoch round trip).
const FETCH_VERSION: i16 = 12;

/// One partition a follower fetches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchTarget {
    /// Topic name (shared: every fetch lists it again, see [`run`]).
    pub topic: Arc<str>,
    /// The leader epoch the follower knows (sent as `current_leader_epoch`).
    pub leader_epoch: i32,
}

type Key = (Uuid, i32);

/// Follower fetch requests sent, by `kind` (`full` or `incremental`).
pub const FETCH_REQUESTS: &str = "josef_server_replica_fetch_requests_total";
/// Partitions listed in follower fetch requests, by `kind` (`full` or `incremental`): with
/// fetch sessions, idle followers list none.
pub const FETCH_PARTITIONS: &str = "josef_server_replica_fetch_partitions_total";

/// A partition's fetch state as the fetch session holds it (what was last sent).
#[derive(Debug, Clone, PartialEq, Eq)]
struct SessionPartition {
    topic: Arc<str>,
    fetch: PartitionFetch,
}

/// What a fetch asked of one partition: the position its answer is applied at.
struct Sent {
    topic: Arc<str>,
    key: Key,
    position: FollowerFetchRequest,
}

struct Fetcher {
    leader: i32,
    fetcher_id: i32,
    partitions: Mutex<BTreeMap<Key, (FetchTarget, Option<tokio::time::Instant>)>>,
    wake: Notify,
    stopped: std::sync::atomic::AtomicBool,
    /// Partitions whose last answer left no lag behind the leader's high watermark (Kafka's
    /// `PartitionFetchState.isReplicaInSync`): the follower throttle never holds them back.
    caught_up: Mutex<BTreeSet<Key>>,
}

/// The fetchers of this broker.
pub struct ReplicaFetcherManager {
    fetchers: Mutex<BTreeMap<FetcherKey, Arc<Fetcher>>>,
    /// `num.replica.fetchers`: fetchers per leader broker.
    num_fetchers: i32,
    state: Weak<BrokerState>,
    node: Weak<ClusterNode>,
}

impl ReplicaFetcherManager {
    /// A manager for `state`'s partitions; fetchers start as partitions are given.
    pub fn new(state: Weak<BrokerState>, node: Weak<ClusterNode>) -> Arc<Self> {
        let num_fetchers = node
            .upgrade()
            .map_or(1, |n| n.config.num_replica_fetchers.max(1));
        Arc::new(ReplicaFetcherManager {
            fetchers: Mutex::new(BTreeMap::new()),
            num_fetchers,
            state,
            node,
        })
    }

    /// Makes the fetchers serve exactly `wanted` (partition → (leader, target)): each partition
    /// goes to the fetcher of its (leader, fetcher id), new ones start, fetchers left without
    /// partitions stop.
    pub fn reconcile(&self, wanted: BTreeMap<Key, (i32, FetchTarget)>) {
        let by_fetcher =
            fetcher_key::group_by_fetcher(wanted, self.num_fetchers, |t| &*t.topic, |k| k.1);
        let mut fetchers = self.fetchers.lock();
        fetchers.retain(|key, f| {
            let keep = by_fetcher.contains_key(key);
            if !keep {
                f.stopped.store(true, std::sync::atomic::Ordering::Relaxed);
                f.wake.notify_one();
            }
            keep
        });
        for (key, parts) in by_fetcher {
            let f = fetchers.entry(key).or_insert_with(|| {
                tracing::info!(
                    leader = key.leader,
                    fetcher_id = key.fetcher_id,
                    "replica fetcher started"
                );
                let f = Arc::new(Fetcher {
                    leader: key.leader,
                    fetcher_id: key.fetcher_id,
                    partitions: Mutex::new(BTreeMap::new()),
                    wake: Notify::new(),
                    stopped: std::sync::atomic::AtomicBool::new(false),
                    caught_up: Mutex::new(BTreeSet::new()),
                });
                let (state, node, fc) = (self.state.clone(), self.node.clone(), f.clone());
                tokio::spawn(async move { run(fc, state, node).await });
                f
            });
            f.caught_up.lock().retain(|k| parts.contains_key(k));
            let mut current = f.partitions.lock();
            current.retain(|k, _| parts.contains_key(k));
            for (k, t) in parts {
                match current.get_mut(&k) {
                    // A new leader epoch retries at once (the partition may have been backing off).
                    Some(entry) if entry.0 != t => *entry = (t, None),
                    Some(_) => {}
                    None => {
                        current.insert(k, (t, None));
                    }
                }
            }
            drop(current);
            f.wake.notify_one();
        }
    }

    /// The fetchers running now, by (leader, fetcher id).
    pub fn fetchers(&self) -> Vec<FetcherKey> {
        self.fetchers.lock().keys().copied().collect()
    }

    /// Stops every fetcher.
    pub fn shutdown(&self) {
        self.reconcile(BTreeMap::new());
    }
}

async fn run(f: Arc<Fetcher>, state: Weak<BrokerState>, node: Weak<ClusterNode>) {
    let mut conn: Option<PeerStream> = None;
    let mut correlation = 0i32;
    // One fetch session per connection: a new connection starts with a full fetch.
    let mut session: FetchSessionHandler<Key, SessionPartition> = FetchSessionHandler::new();
    loop {
        if f.stopped.load(std::sync::atomic::Ordering::Relaxed) {
            return;
        }
        let (Some(state), Some(node)) = (state.upgrade(), node.upgrade()) else {
            return;
        };
        let cl = &node.config;
        let backoff = Duration::from_millis(cl.replica_fetch_backoff_ms.clamp(10, 1000) as u64);
        let now = tokio::time::Instant::now();
        let ready: Vec<(Key, FetchTarget)> = f
            .partitions
            .lock()
            .iter()
            .filter(|(_, (_, delayed))| delayed.is_none_or_past(now))
            .map(|(k, (t, _))| (*k, t.clone()))
            .collect();
        if ready.is_empty() {
            drop((state, node));
            let _ = tokio::time::timeout(backoff, f.wake.notified()).await;
            continue;
        }
        let image = node.log.image();
        let endpoint = image
            .broker(f.leader)
            .and_then(|b| b.listener(node.inter_broker.listener()))
            .map(|e| format!("{}:{}", e.host, e.port));
        let Some(endpoint) = endpoint else {
            drop((state, node));
            tokio::time::sleep(backoff).await;
            continue;
        };
        // Every partition to fetch now, with its position; the session decides what to list.
        // An idle follower sends this every `replica.fetch.wait.max.ms` listing nothing, yet
        // builds it over every partition it follows, so no topic name is copied per partition
        // and no map is built (at 10,000 partitions per leader, three String copies and a map
        // keyed by them per partition were ~60 % of an idle node's profile).
        let mut next: Vec<(Key, SessionPartition)> = Vec::with_capacity(ready.len());
        let mut sent: Vec<Sent> = Vec::with_capacity(ready.len());
        let throttle_now = now_ms() as u64;
        // In a block: a guard dropped with `drop` still counts as held across the awaits below.
        {
            let caught_up = f.caught_up.lock();
            for ((id, index), t) in &ready {
                // KIP-73 (Kafka's `shouldFollowerThrottle`): a throttled replica still catching up
                // is left out of the fetch while the follower rate is over its quota.
                let in_sync = caught_up.contains(&(*id, *index));
                if state.replication_quotas.should_throttle(
                    Direction::Follower,
                    &t.topic,
                    *index,
                    in_sync,
                    throttle_now,
                ) {
                    crate::replication_quotas::count_held_back(Direction::Follower);
                    continue;
                }
                let Some(p) = state.topics.partition(&t.topic, *index) else {
                    continue;
                };
                // The partition's own view (josef-partition): not a follower of this leader (any
                // more) means nothing to fetch here.
                let Some(position) = p
                    .follower_fetch_request()
                    .filter(|r| r.leader_id == f.leader)
                else {
                    continue;
                };
                next.push((
                    (*id, *index),
                    SessionPartition {
                        topic: t.topic.clone(),
                        fetch: PartitionFetch {
                            fetch_offset: position.fetch_offset,
                            max_bytes: cl.replica_fetch_max_bytes,
                            current_leader_epoch: position.current_leader_epoch,
                            log_start_offset: position.log_start_offset,
                            last_fetched_epoch: position.last_fetched_epoch,
                        },
                    },
                ));
                sent.push(Sent {
                    topic: t.topic.clone(),
                    key: (*id, *index),
                    position,
                });
            }
        }
        if sent.is_empty() && session.is_empty() {
            drop((state, node));
            tokio::time::sleep(backoff).await;
            continue;
        }
        // With nothing to fetch but a session that still holds partitions, the request goes
        // anyway: it forgets them on the leader.
        let data = session.build(next);
        let kind = if data.is_full() {
            "full"
        } else {
            "incremental"
        };
        metrics::counter!(FETCH_REQUESTS, "kind" => kind).increment(1);
        metrics::counter!(FETCH_PARTITIONS, "kind" => kind).increment(data.to_send.len() as u64);
        let req = FetchRequest {
            replica_id: node.node_id,
            max_wait_ms: cl.replica_fetch_wait_max_ms,
            min_bytes: cl.replica_fetch_min_bytes,
            max_bytes: cl.replica_fetch_response_max_bytes,
            session_id: data.metadata.session_id,
            session_epoch: data.metadata.epoch,
            topics: request_topics(&data.to_send),
            forgotten_topics_data: forgotten_topics(&data.to_forget),
            ..Default::default()
        };
        correlation = correlation.wrapping_add(1);
        let client_id = format!("josef-replica-fetcher-{}-{}", node.node_id, f.fetcher_id);
        let header = RequestHeader {
            request_api_key: josef_protocol::ApiKey::Fetch as i16,
            request_api_version: FETCH_VERSION,
            correlation_id: correlation,
            client_id: Some(StrBytes::from(client_id.as_str())),
            ..Default::default()
        };
        let mut buf = BytesMut::new();
        if let Err(e) = encode_request_frame(&header, &RequestBody::Fetch(req), &mut buf) {
            tracing::error!(error = %e, "cannot encode a follower fetch");
            session.handle_error();
            drop((state, node));
            tokio::time::sleep(backoff).await;
            continue;
        }
        let timeout = Duration::from_millis(
            cl.replica_fetch_wait_max_ms.max(0) as u64
                + cl.quorum_request_timeout_ms as u64
                + 30_000,
        );
        let started = tokio::time::Instant::now();
        let result = tokio::time::timeout(timeout, async {
            if conn.is_none() {
                let s = node
                    .inter_broker
                    .connect(&endpoint, &client_id)
                    .await
                    .map_err(SendError::Connect)?;
                conn = Some(s);
            }
            let stream = conn.as_mut().expect("connected above");
            exchange(
                stream,
                &buf,
                josef_protocol::ApiKey::Fetch,
                FETCH_VERSION,
                correlation,
            )
            .await
        })
        .await;
        let resp = match result {
            Ok(Ok(ResponseBody::Fetch(r))) => r,
            Ok(Ok(_)) | Ok(Err(_)) | Err(_) => {
                tracing::debug!(leader = f.leader, %endpoint, "follower fetch failed; reconnecting");
                conn = None;
                // The leader may or may not have applied it: start the session over.
                session.handle_error();
                drop((state, node));
                tokio::time::sleep(backoff).await;
                continue;
            }
        };
        if !session.handle_response(resp.session_id, resp.error_code) {
            tracing::debug!(
                leader = f.leader,
                code = resp.error_code,
                "follower fetch session reset; the next fetch is full"
            );
        }
        // Partitions the response leaves out (an incremental fetch answers only what changed)
        // keep their state.
        let moved = apply_response(&f, &state, &resp, sent, backoff);
        if !moved && started.elapsed() < Duration::from_millis(5) {
            // The leader answered at once with nothing (it may not park follower fetches yet):
            // do not spin.
            drop((state, node));
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// The request's topics from the session's partitions to list, grouped by topic (v12 names
/// topics; the id is set for later versions).
fn request_topics(partitions: &[(Key, SessionPartition)]) -> Vec<FetchTopic> {
    let mut topics: BTreeMap<&str, FetchTopic> = BTreeMap::new();
    for ((id, index), p) in partitions {
        let entry = topics.entry(&*p.topic).or_insert_with(|| FetchTopic {
            topic: StrBytes::from(&*p.topic),
            topic_id: *id,
            ..Default::default()
        });
        entry.partitions.push(FetchPartition {
            partition: *index,
            current_leader_epoch: p.fetch.current_leader_epoch,
            fetch_offset: p.fetch.fetch_offset,
            last_fetched_epoch: p.fetch.last_fetched_epoch,
            log_start_offset: p.fetch.log_start_offset,
            partition_max_bytes: p.fetch.max_bytes,
            ..Default::default()
        });
    }
    topics.into_values().collect()
}

/// The request's `forgotten_topics_data` from the partitions the session drops.
fn forgotten_topics(partitions: &[(Key, SessionPartition)]) -> Vec<ForgottenTopic> {
    let mut topics: BTreeMap<&str, ForgottenTopic> = BTreeMap::new();
    for ((id, index), p) in partitions {
        topics
            .entry(&*p.topic)
            .or_insert_with(|| ForgottenTopic {
                topic: StrBytes::from(&*p.topic),
                topic_id: *id,
                ..Default::default()
            })
            .partitions
            .push(*index);
    }
    topics.into_values().collect()
}

trait PastOrNone {
    fn is_none_or_past(&self, now: tokio::time::Instant) -> bool;
}

impl PastOrNone for Option<tokio::time::Instant> {
    fn is_none_or_past(&self, now: tokio::time::Instant) -> bool {
        self.map_or(true, |t| t <= now)
    }
}

/// Applies one fetch response through josef-partition's follower step (stale answers, from an
/// older leader, epoch or fetch offset, are dropped there); true when anything was appended or
/// truncated.
fn apply_response(
    f: &Fetcher,
    state: &BrokerState,
    resp: &FetchResponse,
    mut sent: Vec<Sent>,
    backoff: Duration,
) -> bool {
    let now = now_ms();
    let mut moved = false;
    if resp.error_code != 0 {
        tracing::debug!(
            leader = f.leader,
            code = resp.error_code,
            "follower fetch refused"
        );
        return false;
    }
    if resp.responses.iter().all(|t| t.partitions.is_empty()) {
        return false;
    }
    // Sorted only when the answer has partitions (an idle incremental fetch's has none).
    sent.sort_unstable_by(|a, b| (&*a.topic, a.key.1).cmp(&(&*b.topic, b.key.1)));
    for t in &resp.responses {
        for pd in &t.partitions {
            let name = t.topic.to_string();
            let Ok(at) = sent.binary_search_by(|s| {
                (&*s.topic, s.key.1).cmp(&(name.as_str(), pd.partition_index))
            }) else {
                continue;
            };
            let (key, request) = (&sent[at].key, &sent[at].position);
            let Some(p) = state.topics.partition(&name, pd.partition_index) else {
                continue;
            };
            let delay = |why: ErrorCode| {
                tracing::debug!(topic = %name, partition = pd.partition_index, ?why, "follower fetch backs off");
                if let Some(e) = f.partitions.lock().get_mut(key) {
                    e.1 = Some(tokio::time::Instant::now() + backoff);
                }
            };
            let diverging = (pd.diverging_epoch.epoch >= 0).then_some(EpochEndOffset {
                epoch: pd.diverging_epoch.epoch,
                end_offset: pd.diverging_epoch.end_offset,
            });
            let throttled = state.replication_quotas.is_throttled(
                Direction::Follower,
                &name,
                pd.partition_index,
            );
            if throttled {
                let bytes = pd.records.as_ref().map_or(0, |r| r.len());
                state
                    .replication_quotas
                    .record(Direction::Follower, bytes as u64, now as u64);
            }
            let answer = LeaderFetchAnswer {
                error: ErrorCode::from_i16(pd.error_code).unwrap_or(ErrorCode::UnknownServerError),
                high_watermark: pd.high_watermark,
                log_start_offset: pd.log_start_offset,
                diverging_epoch: diverging,
                records: pd.records.clone().unwrap_or_default(),
            };
            let leader_hw = pd.high_watermark;
            match p.on_follower_fetch_response(request, answer, now) {
                Ok(FetchResponseAction::Appended(a)) => {
                    moved |= a.appended.is_some();
                    let leo = p.follower_fetch_request().map(|r| r.fetch_offset);
                    let mut caught_up = f.caught_up.lock();
                    if leader_hw >= 0 && leo.is_some_and(|leo| leo >= leader_hw) {
                        caught_up.insert(*key);
                    } else {
                        caught_up.remove(key);
                    }
                }
                Ok(FetchResponseAction::Truncated(d)) => {
                    tracing::info!(topic = %name, partition = pd.partition_index, offset = d.offset, "follower truncated by diverging epoch");
                    moved = true;
                }
                Ok(FetchResponseAction::Stale) => {}
                Ok(FetchResponseAction::Fenced) => delay(ErrorCode::FencedLeaderEpoch),
                Ok(FetchResponseAction::OffsetOutOfRange) => {
                    // Backs off while the leader's offsets are asked for and the log reset.
                    delay(ErrorCode::OffsetOutOfRange);
                    if let Some(node) = state.cluster.clone() {
                        super::out_of_range::spawn(node, p.clone(), *request);
                    }
                }
                Ok(FetchResponseAction::Backoff(code)) => delay(code),
                Err(e) => {
                    tracing::warn!(topic = %name, partition = pd.partition_index, error = %e, "append as follower failed");
                    delay(ErrorCode::KafkaStorageError);
                }
            }
        }
    }
    moved
}
