//! Transactions of one partition ordered by first offset, for the last stable offset (LSO).

use std::collections::BTreeMap;

/// A transaction closed by a COMMIT or ABORT marker on this partition.
///
/// For an aborted one the log writes a `.txnindex` entry
/// `(producer_id, first_offset, last_offset, last_stable_offset)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompletedTxn {
    /// Producer id of the transaction.
    pub producer_id: i64,
    /// Offset of the transaction's first batch on this partition.
    pub first_offset: i64,
    /// Offset of the marker that closed it.
    pub last_offset: i64,
    /// True for ABORT.
    pub is_aborted: bool,
    /// The LSO once this transaction is complete, as Kafka records it in the transaction index
    /// (`ProducerStateManager.lastStableOffset(CompletedTxn)`): the first offset of the oldest
    /// transaction of another producer still open, else `last_offset + 1`.
    pub last_stable_offset: i64,
}

/// Open transactions and completed ones whose marker is not yet below the high watermark,
/// each keyed by first offset (Kafka's `ongoingTxns` and `unreplicatedTxns`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct TxnIndex {
    /// first offset → producer id.
    ongoing: BTreeMap<i64, i64>,
    /// first offset → (producer id, marker offset).
    unreplicated: BTreeMap<i64, (i64, i64)>,
}

impl TxnIndex {
    pub(crate) fn begin(&mut self, first_offset: i64, producer_id: i64) {
        self.ongoing.insert(first_offset, producer_id);
    }

    /// Moves the transaction starting at `first_offset` from open to completed; returns the
    /// LSO to record for it.
    pub(crate) fn complete(
        &mut self,
        producer_id: i64,
        first_offset: i64,
        marker_offset: i64,
    ) -> i64 {
        // Only remove it if it is this producer's: replay of an inconsistent log must not
        // close another producer's transaction.
        if self.ongoing.get(&first_offset) == Some(&producer_id) {
            self.ongoing.remove(&first_offset);
        }
        self.unreplicated
            .insert(first_offset, (producer_id, marker_offset));
        self.ongoing
            .iter()
            .find(|(_, pid)| **pid != producer_id)
            .map_or(marker_offset.saturating_add(1), |(first, _)| *first)
    }

    pub(crate) fn first_undecided_offset(&self) -> Option<i64> {
        self.ongoing.keys().next().copied()
    }

    pub(crate) fn first_unstable_offset(&self) -> Option<i64> {
        let undecided = self.first_undecided_offset();
        let unreplicated = self.unreplicated.keys().next().copied();
        match (undecided, unreplicated) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// First offset of the oldest transaction that is open or whose marker is at or above
    /// `high_watermark`.
    pub(crate) fn first_unstable_offset_at(&self, high_watermark: i64) -> Option<i64> {
        let undecided = self.first_undecided_offset();
        let unreplicated = self
            .unreplicated
            .iter()
            .find(|(_, (_, last))| *last >= high_watermark)
            .map(|(first, _)| *first);
        match (undecided, unreplicated) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Forgets completed transactions whose marker is below `offset`.
    pub(crate) fn remove_unreplicated_before(&mut self, offset: i64) {
        self.unreplicated.retain(|_, (_, last)| *last >= offset);
    }

    pub(crate) fn ongoing(&self) -> impl Iterator<Item = (i64, i64)> + '_ {
        self.ongoing.iter().map(|(f, p)| (*f, *p))
    }

    pub(crate) fn clear(&mut self) {
        self.ongoing.clear();
        self.unreplicated.clear();
    }
}
