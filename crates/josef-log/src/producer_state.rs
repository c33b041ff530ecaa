//! Rebuilding a partition's producer state from the log after it opens (Kafka's
//! `UnifiedLog.loadProducerState`): the newest producer snapshot, then every batch after it.
//!
//! The producer-state table itself is not this crate's (josef-sequencer has one, and josef-log
//! must not depend on it): the caller's table is reached through [`ProducerStateReplay`], which a
//! broker implements in a few lines over its own table. The log does the rest: picking the
//! snapshot, falling back to a full replay when it is unusable, walking the batches one at a time,
//! reading each marker's type, and indexing again in `.txnindex` the aborted transactions whose
//! entry a crash lost (the marker was durable, the index entry was not).

use std::sync::Arc;

use bytes::Bytes;
use josef_records::{DecompressLimits, EndTxnMarker, RecordBatch};

use crate::batch::BatchHeader;
use crate::error::LogError;
use crate::index::AbortedTxn;
use crate::log::Log;

/// A producer-state table the log can rebuild (implemented by the caller over its own table).
pub trait ProducerStateReplay {
    /// Replaces the state with the snapshot taken at `offset` (bytes the caller stored earlier
    /// with [`Log::write_producer_snapshot`]). An error means the snapshot is unusable: the state
    /// must be left empty, and the log is then replayed from its start.
    fn load_snapshot(&mut self, offset: i64, bytes: &[u8]) -> Result<(), Self::SnapshotError>;

    /// Why a snapshot cannot be loaded (kept, as the source, in
    /// [`ProducerStateRebuild::snapshot_error`]).
    type SnapshotError: std::error::Error + Send + Sync + 'static;

    /// Replays a producer's data batch (it has a producer id and is not a control batch).
    fn replay_batch(&mut self, header: &BatchHeader);

    /// Replays a COMMIT or ABORT marker batch; returns the aborted transaction it completed, if
    /// it completed one that was aborted, so that the log can index it.
    fn replay_marker(&mut self, header: &BatchHeader, marker: EndTxnMarker) -> Option<AbortedTxn>;
}

/// The newest producer snapshot could not be loaded (the state was rebuilt from the log instead).
#[derive(Debug, Clone)]
pub struct SnapshotLoadError {
    /// The snapshot's offset.
    pub offset: i64,
    /// What [`ProducerStateReplay::load_snapshot`] answered (its `source()`, so callers can
    /// downcast it to the replay's own error type).
    pub source: Arc<dyn std::error::Error + Send + Sync>,
}

impl std::fmt::Display for SnapshotLoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "producer snapshot at offset {} unusable: {}",
            self.offset, self.source
        )
    }
}

impl std::error::Error for SnapshotLoadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&*self.source)
    }
}

/// What [`Log::rebuild_producer_state`] did.
#[derive(Debug, Clone, Default)]
pub struct ProducerStateRebuild {
    /// Offset of the snapshot loaded, if one was.
    pub snapshot_offset: Option<i64>,
    /// Why the newest snapshot could not be used, if it could not.
    pub snapshot_error: Option<SnapshotLoadError>,
    /// Offset the replay started from.
    pub replayed_from: i64,
    /// Producer batches (data and markers) replayed.
    pub replayed_batches: usize,
    /// Aborted transactions indexed again in `.txnindex` (lost by a crash).
    pub reindexed_aborted_txns: usize,
}

impl Log {
    /// Rebuilds `state` from the newest producer snapshot at or below the LEO plus a replay of the
    /// batches after it (from the log start when there is no usable snapshot). Batches without a
    /// producer id are skipped; an empty marker batch (its marker compacted away) is skipped too.
    /// Aborted transactions the replay completes are indexed in `.txnindex` if missing there.
    ///
    /// ```
    /// use josef_log::producer_state::ProducerStateReplay;
    /// use josef_log::{AbortedTxn, BatchHeader, Log, LogConfig, TimestampType};
    /// use josef_records::EndTxnMarker;
    ///
    /// #[derive(Default)]
    /// struct LastSequences(std::collections::HashMap<i64, i32>);
    /// impl ProducerStateReplay for LastSequences {
    ///     type SnapshotError = std::io::Error;
    ///     fn load_snapshot(&mut self, _: i64, _: &[u8]) -> std::io::Result<()> {
    ///         Err(std::io::ErrorKind::Unsupported.into())
    ///     }
    ///     fn replay_batch(&mut self, h: &BatchHeader) { self.0.insert(h.producer_id, h.last_sequence()); }
    ///     fn replay_marker(&mut self, _: &BatchHeader, _: EndTxnMarker) -> Option<AbortedTxn> { None }
    /// }
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// let mut log = Log::open(dir.path().join("t-0"), LogConfig::default(), 0).unwrap();
    /// let b = josef_log::testing::TestBatch::new(0).producer(7, 0, 10).record(1, None, Some(b"v")).build();
    /// log.append_as_leader(b, 0, 1, TimestampType::CreateTime).unwrap();
    /// let mut state = LastSequences::default();
    /// let report = log.rebuild_producer_state(&mut state).unwrap();
    /// assert_eq!((report.replayed_batches, state.0[&7]), (1, 10));
    /// ```
    pub fn rebuild_producer_state(
        &mut self,
        state: &mut impl ProducerStateReplay,
    ) -> Result<ProducerStateRebuild, LogError> {
        let mut report = ProducerStateRebuild {
            replayed_from: self.log_start_offset,
            ..ProducerStateRebuild::default()
        };
        if let Some((offset, bytes)) = self.latest_producer_snapshot()? {
            match state.load_snapshot(offset, &bytes) {
                Ok(()) => {
                    report.snapshot_offset = Some(offset);
                    report.replayed_from = offset;
                }
                Err(e) => {
                    report.snapshot_error = Some(SnapshotLoadError {
                        offset,
                        source: Arc::new(e),
                    })
                }
            }
        }
        if report.replayed_from >= self.log_end_offset {
            return Ok(report);
        }
        let limits = DecompressLimits::default();
        let mut aborted: Vec<AbortedTxn> = Vec::new();
        for item in self.iter_batches_from(report.replayed_from) {
            let (_, b, bytes) = item?;
            let h = b.header;
            if !h.has_producer_id() {
                continue;
            }
            if h.is_control() {
                let Some(marker) = marker_of(bytes, &limits) else {
                    continue;
                };
                if let Some(t) = state.replay_marker(&h, marker) {
                    aborted.push(t);
                }
            } else {
                state.replay_batch(&h);
            }
            report.replayed_batches += 1;
        }
        for t in aborted {
            let known = self
                .collect_aborted_transactions(t.last_offset, t.last_offset + 1)
                .iter()
                .any(|k| k.producer_id == t.producer_id && k.last_offset == t.last_offset);
            if !known && self.append_aborted_txn(t).is_ok() {
                report.reindexed_aborted_txns += 1;
            }
        }
        Ok(report)
    }
}

impl Log {
    /// Replays batches just appended as a follower ([`Log::append_as_follower`]'s records) into
    /// the caller's producer-state table, as the leader's appends updated its own: producer
    /// batches through `replay_batch`, markers through `replay_marker`, and the aborted
    /// transactions they close indexed in `.txnindex` (Kafka's follower path keeps producer state,
    /// transaction index and LSO the same as on the leader). Returns the number of batches
    /// replayed. Bytes that are not whole batches stop the replay there (the append checked them).
    pub fn replay_appended_batches(
        &mut self,
        records: &Bytes,
        state: &mut impl ProducerStateReplay,
    ) -> Result<usize, LogError> {
        let limits = DecompressLimits::default();
        let mut pos = 0usize;
        let mut replayed = 0usize;
        while pos < records.len() {
            let crate::batch::Next::Batch(h) = crate::batch::next_batch(&records[pos..]) else {
                break;
            };
            let size = h.total_size();
            if h.has_producer_id() {
                if h.is_control() {
                    if let Some(marker) = marker_of(records.slice(pos..pos + size), &limits) {
                        if let Some(t) = state.replay_marker(&h, marker) {
                            self.append_aborted_txn(t)?;
                        }
                    }
                } else {
                    state.replay_batch(&h);
                }
                replayed += 1;
            }
            pos += size;
        }
        Ok(replayed)
    }
}

/// The marker of a control batch; `None` for an empty one or one that is not a transaction marker.
fn marker_of(bytes: Bytes, limits: &DecompressLimits) -> Option<EndTxnMarker> {
    RecordBatch::parse(bytes)
        .ok()?
        .control_marker(limits)
        .ok()?
}
