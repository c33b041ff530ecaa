//! The bookkeeping of transaction markers in flight (Kafka's `TransactionMarkerChannelManager`
//! and `TransactionMarkerRequestCompletionHandler`), without the network: which marker goes to
//! which broker, what to retry, when a transaction's markers are all written.
//!
//! The broker feeds it the marker effects the coordinator releases ([`TxnMarkerChannel::add`]),
//! asks it for the requests to send with the partition leaders of its current metadata
//! ([`TxnMarkerChannel::drain`], one batch per broker, the coordinator epoch on every marker),
//! hands it each answer ([`TxnMarkerChannel::on_response`]) or a lost connection
//! ([`TxnMarkerChannel::on_send_failed`]), and collects the outcomes
//! ([`TxnMarkerChannel::take_outcomes`]): [`MarkerOutcome::Completed`] means every partition
//! acknowledged its marker (or was dropped because its topic is gone) and CompleteCommit /
//! CompleteAbort may now be written (`markers_completed`); [`MarkerOutcome::Abandoned`] means a
//! partition fenced the marker (a newer producer or coordinator epoch) and nothing more is sent.

use std::collections::{BTreeMap, BTreeSet};

use josef_protocol::ErrorCode;

use crate::{TopicPartition, TxnMarkerRequest};

/// Where the metadata says a partition's marker must go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaderLookup {
    /// The partition's leader.
    Leader(i32),
    /// The partition exists but has no live leader now: keep it and retry later.
    NoLeader,
    /// The topic or partition no longer exists (deleted): its marker is dropped.
    Unknown,
}

/// One WriteTxnMarkers request to send: every marker this channel has for one broker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarkerBatch {
    /// Identifies the request in [`TxnMarkerChannel::on_response`].
    pub request_id: u64,
    /// The broker leading every partition in `markers`.
    pub broker: i32,
    /// One entry per transaction, each with the partitions of it led by `broker`.
    pub markers: Vec<TxnMarkerRequest>,
}

/// What happened to a transaction's markers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MarkerOutcome {
    /// Every partition acknowledged (or was dropped): write the Complete state with this marker.
    Completed(TxnMarkerRequest),
    /// A partition refused the marker with `error` (INVALID_PRODUCER_EPOCH or
    /// TRANSACTION_COORDINATOR_FENCED): the transaction is no longer this coordinator's to end.
    Abandoned {
        /// The marker given up.
        marker: TxnMarkerRequest,
        /// Why.
        error: ErrorCode,
    },
}

/// How an answer for one partition is handled (Kafka's completion handler).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkerErrorAction {
    /// Written.
    Acknowledged,
    /// Retry after looking up the leader again.
    Retry,
    /// The producer or the coordinator was fenced: stop this transaction's markers.
    Abandon,
    /// The partition cannot hold a marker (old message format): forget it.
    Drop,
}

/// The handling Kafka gives `error` in a WriteTxnMarkers answer.
///
/// ```
/// use josef_protocol::ErrorCode;
/// use josef_txn::{marker_error_action, MarkerErrorAction};
/// assert_eq!(marker_error_action(ErrorCode::NotLeaderOrFollower), MarkerErrorAction::Retry);
/// assert_eq!(
///     marker_error_action(ErrorCode::TransactionCoordinatorFenced),
///     MarkerErrorAction::Abandon
/// );
/// ```
pub fn marker_error_action(error: ErrorCode) -> MarkerErrorAction {
    match error {
        ErrorCode::None => MarkerErrorAction::Acknowledged,
        ErrorCode::InvalidProducerEpoch | ErrorCode::TransactionCoordinatorFenced => {
            MarkerErrorAction::Abandon
        }
        ErrorCode::UnsupportedForMessageFormat => MarkerErrorAction::Drop,
        // NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, NOT_ENOUGH_REPLICAS(_AFTER_APPEND),
        // REQUEST_TIMED_OUT, KAFKA_STORAGE_ERROR are Kafka's retriable set; anything else is
        // retried too (Kafka throws on it), since completing without the marker would leave a
        // hanging transaction on that partition.
        _ => MarkerErrorAction::Retry,
    }
}

#[derive(Debug)]
struct Pending {
    generation: u64,
    txn_partition: i32,
    marker: TxnMarkerRequest,
    unsent: BTreeSet<TopicPartition>,
    in_flight: BTreeSet<TopicPartition>,
}

#[derive(Debug)]
struct InFlight {
    /// (transactional id, generation, producer id, partitions sent).
    entries: Vec<(String, u64, i64, BTreeSet<TopicPartition>)>,
}

/// The markers a coordinator node still has to get written.
///
/// ```
/// use josef_protocol::ErrorCode;
/// use josef_txn::*;
///
/// let mut ch = TxnMarkerChannel::new();
/// let marker = TxnMarkerRequest {
///     transactional_id: "t".into(),
///     producer_id: 7,
///     producer_epoch: 0,
///     coordinator_epoch: 3,
///     result: TransactionResult::Commit,
///     partitions: [TopicPartition::new("a", 0), TopicPartition::new("a", 1)].into(),
///     transaction_version: TransactionVersion::V0,
/// };
/// ch.add(0, marker.clone());
/// // a-0 is led by broker 1, a-1 by broker 2: two requests.
/// let batches = ch.drain(|tp| LeaderLookup::Leader(1 + tp.partition));
/// assert_eq!(batches.len(), 2);
/// for b in &batches {
///     let tp = b.markers[0].partitions.iter().next().unwrap().clone();
///     ch.on_response(b.request_id, &[(7, tp, ErrorCode::None)]);
/// }
/// assert_eq!(ch.take_outcomes(), vec![MarkerOutcome::Completed(marker)]);
/// ```
#[derive(Debug, Default)]
pub struct TxnMarkerChannel {
    pending: BTreeMap<String, Pending>,
    in_flight: BTreeMap<u64, InFlight>,
    outcomes: Vec<MarkerOutcome>,
    next_request: u64,
    next_generation: u64,
}

impl TxnMarkerChannel {
    /// An empty channel.
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts sending `marker` (decided by `__transaction_state` partition `txn_partition`).
    /// It replaces markers of the same transactional id still pending (a reload re-sends them
    /// under a new coordinator epoch); answers to the old ones are then ignored.
    pub fn add(&mut self, txn_partition: i32, marker: TxnMarkerRequest) {
        self.next_generation += 1;
        let pending = Pending {
            generation: self.next_generation,
            txn_partition,
            unsent: marker.partitions.clone(),
            in_flight: BTreeSet::new(),
            marker,
        };
        let id = pending.marker.transactional_id.clone();
        self.pending.insert(id.clone(), pending);
        self.maybe_complete(&id);
    }

    /// Forgets every marker decided by `txn_partition` (this node stopped coordinating it:
    /// the new coordinator loads the Prepare state and sends them again, Kafka's
    /// `removeMarkersForTxnTopicPartition`). Returns how many transactions were dropped.
    pub fn remove_txn_partition(&mut self, txn_partition: i32) -> usize {
        let before = self.pending.len();
        self.pending.retain(|_, p| p.txn_partition != txn_partition);
        before - self.pending.len()
    }

    /// Transactions whose markers are not all written yet.
    pub fn pending_transactions(&self) -> usize {
        self.pending.len()
    }

    /// Requests waiting for an answer.
    pub fn requests_in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// Whether partitions wait to be (re)sent.
    pub fn has_unsent(&self) -> bool {
        self.pending.values().any(|p| !p.unsent.is_empty())
    }

    /// The requests to send now: every partition not yet sent whose leader `leader_of` knows,
    /// grouped by broker into one request (one entry per transaction). Partitions without a
    /// leader wait; partitions whose topic is gone are dropped (which may complete their
    /// transaction).
    pub fn drain(
        &mut self,
        mut leader_of: impl FnMut(&TopicPartition) -> LeaderLookup,
    ) -> Vec<MarkerBatch> {
        let mut by_broker: BTreeMap<i32, Vec<(String, u64, TxnMarkerRequest)>> = BTreeMap::new();
        let mut touched = Vec::new();
        for (id, p) in &mut self.pending {
            if p.unsent.is_empty() {
                continue;
            }
            let mut per_broker: BTreeMap<i32, BTreeSet<TopicPartition>> = BTreeMap::new();
            let mut dropped = false;
            for tp in std::mem::take(&mut p.unsent) {
                match leader_of(&tp) {
                    LeaderLookup::Leader(b) => {
                        per_broker.entry(b).or_default().insert(tp);
                    }
                    LeaderLookup::NoLeader => {
                        p.unsent.insert(tp);
                    }
                    LeaderLookup::Unknown => dropped = true,
                }
            }
            if dropped {
                touched.push(id.clone());
            }
            for (b, parts) in per_broker {
                p.in_flight.extend(parts.iter().cloned());
                let marker = TxnMarkerRequest {
                    partitions: parts,
                    ..p.marker.clone()
                };
                by_broker
                    .entry(b)
                    .or_default()
                    .push((id.clone(), p.generation, marker));
            }
        }
        for id in touched {
            self.maybe_complete(&id);
        }
        let mut out = Vec::new();
        for (broker, entries) in by_broker {
            self.next_request += 1;
            let request_id = self.next_request;
            let flight = InFlight {
                entries: entries
                    .iter()
                    .map(|(id, g, m)| (id.clone(), *g, m.producer_id, m.partitions.clone()))
                    .collect(),
            };
            self.in_flight.insert(request_id, flight);
            out.push(MarkerBatch {
                request_id,
                broker,
                markers: entries.into_iter().map(|(_, _, m)| m).collect(),
            });
        }
        out
    }

    /// The answer to request `request_id`: an error per (producer id, partition). A partition
    /// sent but missing from `results` is retried.
    pub fn on_response(&mut self, request_id: u64, results: &[(i64, TopicPartition, ErrorCode)]) {
        let Some(flight) = self.in_flight.remove(&request_id) else {
            return;
        };
        for (id, generation, producer_id, sent) in flight.entries {
            let Some(p) = self
                .pending
                .get_mut(&id)
                .filter(|p| p.generation == generation)
            else {
                continue;
            };
            let mut abandon = None;
            for tp in sent {
                if !p.in_flight.remove(&tp) {
                    continue;
                }
                let error = results
                    .iter()
                    .find(|(pid, t, _)| *pid == producer_id && *t == tp)
                    .map_or(ErrorCode::RequestTimedOut, |(_, _, e)| *e);
                match marker_error_action(error) {
                    MarkerErrorAction::Acknowledged | MarkerErrorAction::Drop => {}
                    MarkerErrorAction::Retry => {
                        p.unsent.insert(tp);
                    }
                    MarkerErrorAction::Abandon => abandon = Some(error),
                }
            }
            if let Some(error) = abandon {
                if let Some(p) = self.pending.remove(&id) {
                    self.outcomes.push(MarkerOutcome::Abandoned {
                        marker: p.marker,
                        error,
                    });
                }
                continue;
            }
            self.maybe_complete(&id);
        }
    }

    /// Request `request_id` got no answer (connection lost, timeout): its partitions are
    /// retried after a new leader lookup.
    pub fn on_send_failed(&mut self, request_id: u64) {
        let Some(flight) = self.in_flight.remove(&request_id) else {
            return;
        };
        for (id, generation, _, sent) in flight.entries {
            if let Some(p) = self
                .pending
                .get_mut(&id)
                .filter(|p| p.generation == generation)
            {
                for tp in sent {
                    if p.in_flight.remove(&tp) {
                        p.unsent.insert(tp);
                    }
                }
            }
        }
    }

    /// The outcomes since the last call, in the order they happened.
    pub fn take_outcomes(&mut self) -> Vec<MarkerOutcome> {
        std::mem::take(&mut self.outcomes)
    }

    fn maybe_complete(&mut self, id: &str) {
        let done = self
            .pending
            .get(id)
            .is_some_and(|p| p.unsent.is_empty() && p.in_flight.is_empty());
        if done {
            if let Some(p) = self.pending.remove(id) {
                self.outcomes.push(MarkerOutcome::Completed(p.marker));
            }
        }
    }
}
