//! Per-transactional-id metadata and the transitions Kafka's `TransactionMetadata` prepares.
//!
//! Each `prepare_*` method computes the metadata after a transition (a [`TxnLogValue`]) without
//! changing `self`; the value is persisted as a record and applied by replay
//! ([`TransactionMetadata::apply`]). A transition whose target state may not follow the current
//! one is refused with [`IllegalTransition`].

use std::collections::BTreeSet;

use thiserror::Error;

use crate::{TopicPartition, TransactionVersion, TxnLogValue, TxnState};

pub use josef_protocol::constants::{NO_PRODUCER_EPOCH, NO_PRODUCER_ID};

/// Whether `epoch` leaves no room for another bump plus a fence (`>= i16::MAX - 1`).
pub fn is_epoch_exhausted(epoch: i16) -> bool {
    epoch >= i16::MAX - 1
}

/// A transition the state table (or Kafka's other transition checks) forbids. Reaching it is a
/// coordinator bug; requests answer `UNKNOWN_SERVER_ERROR`, as Kafka's `IllegalStateException`.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("illegal transition of {transactional_id} from {from:?} (pending {pending:?}) to {to:?}")]
pub struct IllegalTransition {
    /// The id.
    pub transactional_id: String,
    /// Current state.
    pub from: TxnState,
    /// Pending state, if any.
    pub pending: Option<TxnState>,
    /// Refused target.
    pub to: TxnState,
}

/// Everything the coordinator knows about one transactional id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransactionMetadata {
    /// The transactional id.
    pub transactional_id: String,
    /// Producer id in use.
    pub producer_id: i64,
    /// Producer id before the last transition.
    pub prev_producer_id: i64,
    /// Producer id to move to after the current transaction (V2 epoch overflow), or −1.
    pub next_producer_id: i64,
    /// Current producer epoch (−1 for metadata just created).
    pub producer_epoch: i16,
    /// Previous producer epoch (InitProducerId retry detection), −1 if unknown.
    pub last_producer_epoch: i16,
    /// Transaction timeout in ms.
    pub txn_timeout_ms: i32,
    /// Current state.
    pub state: TxnState,
    /// Partitions in the open transaction.
    pub partitions: BTreeSet<TopicPartition>,
    /// Start of the open transaction, −1 if none.
    pub txn_start_timestamp: i64,
    /// Last transition time.
    pub txn_last_update_timestamp: i64,
    /// Transaction version of the client that caused the last transition.
    pub client_transaction_version: TransactionVersion,
    /// State a transition in progress will enter. Persisted state never has one here: the runtime
    /// applies a transition when its record is replayed. Handlers use it on a working copy for
    /// the in-memory `PrepareEpochFence` step, exactly where Kafka does.
    pub pending_state: Option<TxnState>,
}

impl TransactionMetadata {
    /// Metadata for an id seen for the first time (InitProducerId): `producer_id` allocated,
    /// epoch −1, state Empty.
    pub fn new_for_init(
        transactional_id: impl Into<String>,
        producer_id: i64,
        txn_timeout_ms: i32,
        now_ms: i64,
    ) -> Self {
        Self {
            transactional_id: transactional_id.into(),
            producer_id,
            prev_producer_id: NO_PRODUCER_ID,
            next_producer_id: NO_PRODUCER_ID,
            producer_epoch: NO_PRODUCER_EPOCH,
            last_producer_epoch: NO_PRODUCER_EPOCH,
            txn_timeout_ms,
            state: TxnState::Empty,
            partitions: BTreeSet::new(),
            txn_start_timestamp: -1,
            txn_last_update_timestamp: now_ms,
            client_transaction_version: TransactionVersion::V0,
            pending_state: None,
        }
    }

    /// Metadata rebuilt from a persisted value.
    pub fn from_value(transactional_id: impl Into<String>, v: &TxnLogValue) -> Self {
        let mut m = Self::new_for_init(transactional_id, v.producer_id, v.txn_timeout_ms, 0);
        m.apply(v);
        m
    }

    /// Applies a persisted transition (replay).
    pub fn apply(&mut self, v: &TxnLogValue) {
        self.producer_id = v.producer_id;
        self.prev_producer_id = v.prev_producer_id;
        self.next_producer_id = v.next_producer_id;
        self.producer_epoch = v.producer_epoch;
        self.last_producer_epoch = v.last_producer_epoch;
        self.txn_timeout_ms = v.txn_timeout_ms;
        self.state = v.state;
        self.partitions = v.partitions.clone();
        self.txn_start_timestamp = v.txn_start_timestamp;
        self.txn_last_update_timestamp = v.txn_last_update_timestamp;
        self.client_transaction_version = v.client_transaction_version;
        self.pending_state = None;
    }

    /// Whether the current epoch is exhausted.
    pub fn is_producer_epoch_exhausted(&self) -> bool {
        is_epoch_exhausted(self.producer_epoch)
    }

    /// The current metadata as a value with target `state` (Kafka's `TransitionData`).
    fn data(&self, state: TxnState) -> TxnLogValue {
        TxnLogValue {
            producer_id: self.producer_id,
            prev_producer_id: self.producer_id,
            next_producer_id: self.next_producer_id,
            producer_epoch: self.producer_epoch,
            last_producer_epoch: self.last_producer_epoch,
            txn_timeout_ms: self.txn_timeout_ms,
            state,
            partitions: self.partitions.clone(),
            txn_start_timestamp: self.txn_start_timestamp,
            txn_last_update_timestamp: self.txn_last_update_timestamp,
            client_transaction_version: self.client_transaction_version,
        }
    }

    /// Checks the transition to `data.state` and stamps `prev_producer_id` (Kafka's
    /// `prepareTransitionTo`).
    fn transition(&self, mut data: TxnLogValue) -> Result<TxnLogValue, IllegalTransition> {
        let illegal = || IllegalTransition {
            transactional_id: self.transactional_id.clone(),
            from: self.state,
            pending: self.pending_state,
            to: data.state,
        };
        if self.pending_state.is_some()
            || data.producer_id < 0
            || (data.state != TxnState::Dead && data.producer_epoch < 0)
            || !self
                .state
                .can_transition_to(data.state, data.client_transaction_version)
        {
            return Err(illegal());
        }
        data.prev_producer_id = self.producer_id;
        Ok(data)
    }

    /// Fence the current producer: epoch + 1 (not past `i16::MAX`), state PrepareEpochFence.
    pub fn prepare_fence_producer_epoch(&self) -> Result<TxnLogValue, IllegalTransition> {
        let mut d = self.data(TxnState::PrepareEpochFence);
        if self.producer_epoch < i16::MAX {
            d.producer_epoch = self.producer_epoch + 1;
        }
        self.transition(d)
    }

    /// InitProducerId on an Empty/Complete* id: bump the epoch (Kafka's
    /// `prepareIncrementProducerEpoch`). `expected_epoch` is the client's epoch (KIP-360).
    /// Returns `Ok(Err(()))` when the client is fenced.
    pub fn prepare_increment_producer_epoch(
        &self,
        new_txn_timeout_ms: i32,
        expected_epoch: Option<i16>,
        now_ms: i64,
    ) -> Result<Result<TxnLogValue, ()>, IllegalTransition> {
        if self.is_producer_epoch_exhausted() {
            return Err(IllegalTransition {
                transactional_id: self.transactional_id.clone(),
                from: self.state,
                pending: self.pending_state,
                to: TxnState::Empty,
            });
        }
        let mut d = self.data(TxnState::Empty);
        let bumped = self.producer_epoch + 1;
        match expected_epoch {
            None => {
                d.producer_epoch = bumped;
                d.last_producer_epoch = NO_PRODUCER_EPOCH;
            }
            Some(e) if self.producer_epoch == NO_PRODUCER_EPOCH || e == self.producer_epoch => {
                d.producer_epoch = bumped;
                d.last_producer_epoch = self.producer_epoch;
            }
            // A retry of a call that succeeded: answer the current epoch without bumping.
            Some(e) if e == self.last_producer_epoch => {}
            Some(_) => return Ok(Err(())),
        }
        d.txn_timeout_ms = new_txn_timeout_ms;
        d.partitions.clear();
        d.txn_start_timestamp = -1;
        d.txn_last_update_timestamp = now_ms;
        self.transition(d).map(Ok)
    }

    /// InitProducerId when the epoch is exhausted: move to `new_producer_id` with epoch 0.
    pub fn prepare_producer_id_rotation(
        &self,
        new_producer_id: i64,
        new_txn_timeout_ms: i32,
        now_ms: i64,
        record_last_epoch: bool,
    ) -> Result<TxnLogValue, IllegalTransition> {
        let mut d = self.data(TxnState::Empty);
        if self.state.has_pending_transaction() {
            return Err(IllegalTransition {
                transactional_id: self.transactional_id.clone(),
                from: self.state,
                pending: self.pending_state,
                to: TxnState::Empty,
            });
        }
        d.producer_id = new_producer_id;
        d.producer_epoch = 0;
        d.last_producer_epoch = if record_last_epoch {
            self.producer_epoch
        } else {
            NO_PRODUCER_EPOCH
        };
        d.txn_timeout_ms = new_txn_timeout_ms;
        d.partitions.clear();
        d.txn_start_timestamp = -1;
        d.txn_last_update_timestamp = now_ms;
        self.transition(d)
    }

    /// AddPartitionsToTxn / AddOffsetsToTxn: enter Ongoing with `added` partitions; the start
    /// time is reset when a new transaction begins.
    pub fn prepare_add_partitions(
        &self,
        added: &BTreeSet<TopicPartition>,
        now_ms: i64,
        client_tv: TransactionVersion,
    ) -> Result<TxnLogValue, IllegalTransition> {
        let mut d = self.data(TxnState::Ongoing);
        d.txn_start_timestamp = match self.state {
            TxnState::Empty | TxnState::CompleteAbort | TxnState::CompleteCommit => now_ms,
            _ => self.txn_start_timestamp,
        };
        d.partitions.extend(added.iter().cloned());
        d.txn_last_update_timestamp = now_ms;
        d.client_transaction_version = client_tv;
        self.transition(d)
    }

    /// EndTxn: enter PrepareCommit/PrepareAbort. With V2 the epoch is bumped (unless an abort is
    /// already at `i16::MAX`) and `next_producer_id` carries a new id on exhaustion.
    pub fn prepare_abort_or_commit(
        &self,
        new_state: TxnState,
        client_tv: TransactionVersion,
        next_producer_id: i64,
        now_ms: i64,
        no_partition_added: bool,
    ) -> Result<TxnLogValue, IllegalTransition> {
        let mut d = self.data(new_state);
        if client_tv.supports_epoch_bump() {
            if !(self.producer_epoch == i16::MAX && new_state == TxnState::PrepareAbort) {
                d.producer_epoch = self.producer_epoch.saturating_add(1);
            }
            d.last_producer_epoch = self.producer_epoch;
        }
        d.txn_start_timestamp = if no_partition_added {
            now_ms
        } else {
            self.txn_start_timestamp
        };
        d.next_producer_id = next_producer_id;
        d.txn_last_update_timestamp = now_ms;
        d.client_transaction_version = client_tv;
        self.transition(d)
    }

    /// All markers written: enter CompleteCommit/CompleteAbort, moving to `next_producer_id` if
    /// a V2 overflow allocated one.
    pub fn prepare_complete(&self, now_ms: i64) -> Result<TxnLogValue, IllegalTransition> {
        let target = if self.state == TxnState::PrepareCommit {
            TxnState::CompleteCommit
        } else {
            TxnState::CompleteAbort
        };
        let mut d = self.data(target);
        if self.client_transaction_version.supports_epoch_bump()
            && self.next_producer_id != NO_PRODUCER_ID
        {
            d.producer_id = self.next_producer_id;
            d.producer_epoch = 0;
        }
        d.next_producer_id = NO_PRODUCER_ID;
        d.partitions.clear();
        d.txn_last_update_timestamp = now_ms;
        self.transition(d)
    }

    /// Expiration: enter Dead (persisted as a tombstone).
    pub fn prepare_dead(&self) -> Result<TxnLogValue, IllegalTransition> {
        let mut d = self.data(TxnState::Dead);
        d.partitions.clear();
        self.transition(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(state: TxnState, epoch: i16) -> TransactionMetadata {
        let mut m = TransactionMetadata::new_for_init("t", 10, 60_000, 0);
        m.state = state;
        m.producer_epoch = epoch;
        m
    }

    #[test]
    fn transition_table_is_enforced() {
        let m = meta(TxnState::Empty, 0);
        assert!(m
            .prepare_abort_or_commit(
                TxnState::PrepareCommit,
                TransactionVersion::V0,
                -1,
                1,
                false
            )
            .is_err());
        let m = meta(TxnState::Ongoing, 0);
        assert!(m.prepare_dead().is_err());
        assert!(m.prepare_fence_producer_epoch().is_ok());
    }

    #[test]
    fn pending_state_blocks_another_transition() {
        let mut m = meta(TxnState::Ongoing, 0);
        m.pending_state = Some(TxnState::PrepareEpochFence);
        assert!(m.prepare_fence_producer_epoch().is_err());
    }

    #[test]
    fn fence_does_not_overflow_epoch() {
        let m = meta(TxnState::Ongoing, i16::MAX);
        assert_eq!(
            m.prepare_fence_producer_epoch().unwrap().producer_epoch,
            i16::MAX
        );
    }

    #[test]
    fn prev_producer_id_is_the_id_before_the_transition() {
        let m = meta(TxnState::CompleteCommit, i16::MAX - 1);
        let v = m.prepare_producer_id_rotation(77, 1000, 5, true).unwrap();
        assert_eq!(
            (v.producer_id, v.prev_producer_id, v.producer_epoch),
            (77, 10, 0)
        );
        assert_eq!(v.last_producer_epoch, i16::MAX - 1);
    }
}
