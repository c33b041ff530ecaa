//! The state-machine side of a coordinator: something records can be replayed into.

use crate::ReplayError;

/// Outcome of a transaction, carried by a transaction marker (control record).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TransactionResult {
    /// The transaction was committed.
    Commit,
    /// The transaction was aborted.
    Abort,
}

/// A deterministic coordinator state machine for one coordinator partition (a `__consumer_offsets`
/// or `__transaction_state` partition).
///
/// Its state changes only through [`CoordinatorShard::replay`], both when serving live requests
/// (the runtime replays the records a handler returned after appending them) and when loading the
/// partition at startup, so both paths run the same code.
///
/// ```
/// use josef_coordinator::{CoordinatorShard, ReplayError};
///
/// #[derive(Default)]
/// struct Counter { total: u64 }
///
/// impl CoordinatorShard for Counter {
///     type Record = u64;
///     fn replay(&mut self, _offset: i64, _pid: i64, _epoch: i16, r: &u64) -> Result<(), ReplayError> {
///         self.total += r;
///         Ok(())
///     }
/// }
///
/// let mut c = Counter::default();
/// c.replay(0, -1, -1, &5).unwrap();
/// assert_eq!(c.total, 5);
/// ```
pub trait CoordinatorShard {
    /// The record type stored in the coordinator partition.
    type Record;

    /// Applies one record, written at `offset` by `producer_id`/`producer_epoch` (−1/−1 for
    /// non-transactional writes).
    fn replay(
        &mut self,
        offset: i64,
        producer_id: i64,
        producer_epoch: i16,
        record: &Self::Record,
    ) -> Result<(), ReplayError>;

    /// Applies a transaction marker written at `offset` for `producer_id`/`producer_epoch`: records
    /// that producer wrote transactionally become visible (commit) or are dropped (abort). The
    /// default ignores markers, which suits shards that never write transactionally.
    fn replay_end_transaction_marker(
        &mut self,
        offset: i64,
        producer_id: i64,
        producer_epoch: i16,
        result: TransactionResult,
    ) -> Result<(), ReplayError> {
        let _ = (offset, producer_id, producer_epoch, result);
        Ok(())
    }
}
