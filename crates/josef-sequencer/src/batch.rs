//! The plain inputs of the sequencer: a data batch, an end-transaction marker, and the
//! wrapping sequence arithmetic Kafka uses for them.

pub use josef_protocol::constants::{NO_PRODUCER_EPOCH, NO_PRODUCER_ID, NO_SEQUENCE, NO_TIMESTAMP};

/// Adds `increment` to a producer sequence, wrapping from `i32::MAX` to 0 the way
/// Kafka's `DefaultRecordBatch.incrementSequence` does.
///
/// ```
/// use josef_sequencer::increment_sequence;
/// assert_eq!(increment_sequence(5, 3), 8);
/// assert_eq!(increment_sequence(i32::MAX, 1), 0);
/// assert_eq!(increment_sequence(i32::MAX - 1, 3), 1);
/// ```
pub fn increment_sequence(sequence: i32, increment: i32) -> i32 {
    // Computed in i64 so malformed (negative) input cannot overflow; the result is the
    // same as Kafka's for every valid input (0 <= sequence, 0 <= increment).
    let s = i64::from(sequence);
    let i = i64::from(increment);
    let max = i64::from(i32::MAX);
    let r = if s > max - i {
        i - (max - s) - 1
    } else {
        s + i
    };
    r as i32
}

/// Subtracts `decrement` from a producer sequence, wrapping below 0 to `i32::MAX`
/// (`DefaultRecordBatch.decrementSequence`).
///
/// ```
/// use josef_sequencer::decrement_sequence;
/// assert_eq!(decrement_sequence(8, 3), 5);
/// assert_eq!(decrement_sequence(0, 1), i32::MAX);
/// assert_eq!(decrement_sequence(1, 3), i32::MAX - 1);
/// ```
pub fn decrement_sequence(sequence: i32, decrement: i32) -> i32 {
    let s = i64::from(sequence);
    let d = i64::from(decrement);
    let max = i64::from(i32::MAX);
    let r = if s < d { max - (d - s) + 1 } else { s - d };
    r as i32
}

/// What the sequencer needs to know about one record batch.
///
/// A broker fills it from the v2 batch header (josef-records' `BatchHeader` or anything
/// else): `base_sequence` is the header's base sequence, `last_sequence` is
/// `increment_sequence(base_sequence, last_offset_delta)` (see [`BatchInfo::last_sequence_for`]).
/// `first_offset`, `last_offset` and `max_timestamp` may be placeholders at validation
/// time; the real values are given to [`AppendPlan::with_offsets`](crate::AppendPlan::with_offsets)
/// once the log has assigned them. For replay from a log they are the batch's real values.
///
/// ```
/// use josef_sequencer::BatchInfo;
/// let b = BatchInfo::idempotent(1000, 0, 0, 10).with_offsets(0, 9, 1_700_000_000_000);
/// assert_eq!(b.last_sequence, 9);
/// assert_eq!(b.record_count(), 10);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchInfo {
    /// The batch's producer id; [`NO_PRODUCER_ID`] (-1) for a non-idempotent batch.
    pub producer_id: i64,
    /// The batch's producer epoch.
    pub producer_epoch: i16,
    /// Sequence of the first record.
    pub base_sequence: i32,
    /// Sequence of the last record (wraps past `i32::MAX` to 0).
    pub last_sequence: i32,
    /// Offset of the first record in the log.
    pub first_offset: i64,
    /// Offset of the last record in the log.
    pub last_offset: i64,
    /// Largest timestamp in the batch (or the log-append time).
    pub max_timestamp: i64,
    /// The batch's transactional attribute bit.
    pub is_transactional: bool,
    /// The batch's control attribute bit (markers; use the marker API for them).
    pub is_control: bool,
}

impl BatchInfo {
    /// An idempotent (non-transactional) data batch of `record_count` records starting at
    /// `base_sequence`; offsets and timestamp are unset (-1).
    pub fn idempotent(
        producer_id: i64,
        producer_epoch: i16,
        base_sequence: i32,
        record_count: i32,
    ) -> Self {
        BatchInfo {
            producer_id,
            producer_epoch,
            base_sequence,
            last_sequence: Self::last_sequence_for(base_sequence, record_count),
            first_offset: -1,
            last_offset: -1,
            max_timestamp: NO_TIMESTAMP,
            is_transactional: false,
            is_control: false,
        }
    }

    /// A transactional data batch of `record_count` records starting at `base_sequence`.
    pub fn transactional(
        producer_id: i64,
        producer_epoch: i16,
        base_sequence: i32,
        record_count: i32,
    ) -> Self {
        BatchInfo {
            is_transactional: true,
            ..Self::idempotent(producer_id, producer_epoch, base_sequence, record_count)
        }
    }

    /// Returns the batch with its log offsets and max timestamp set.
    pub fn with_offsets(mut self, first_offset: i64, last_offset: i64, max_timestamp: i64) -> Self {
        self.first_offset = first_offset;
        self.last_offset = last_offset;
        self.max_timestamp = max_timestamp;
        self
    }

    /// The last sequence of a batch of `record_count` records starting at `base_sequence`
    /// (`record_count` ≥ 1; the header's `last_offset_delta` is `record_count - 1`).
    pub fn last_sequence_for(base_sequence: i32, record_count: i32) -> i32 {
        increment_sequence(base_sequence, record_count.saturating_sub(1).max(0))
    }

    /// Number of records covered by the sequence range, derived with wrapping.
    pub fn record_count(&self) -> i64 {
        let d = i64::from(self.last_sequence) - i64::from(self.base_sequence);
        if d >= 0 {
            d + 1
        } else {
            d + i64::from(i32::MAX) + 2
        }
    }

    /// True when the batch carries a producer id (`RecordBatch.hasProducerId`).
    pub fn has_producer_id(&self) -> bool {
        self.producer_id > NO_PRODUCER_ID
    }
}

/// The kind of an end-transaction control record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ControlType {
    /// The transaction aborted (control record type 0).
    Abort,
    /// The transaction committed (control record type 1).
    Commit,
}

impl ControlType {
    /// Kafka's numeric control record type (ABORT = 0, COMMIT = 1).
    pub fn id(self) -> i16 {
        match self {
            ControlType::Abort => 0,
            ControlType::Commit => 1,
        }
    }

    /// Parses Kafka's numeric control record type; other types (e.g. leader change) are `None`.
    pub fn from_id(id: i16) -> Option<Self> {
        match id {
            0 => Some(ControlType::Abort),
            1 => Some(ControlType::Commit),
            _ => None,
        }
    }
}

/// An end-transaction marker (a COMMIT or ABORT control batch) written by WriteTxnMarkers.
///
/// `offset` and `timestamp` may be placeholders at validation time and set later with
/// [`MarkerPlan::with_offset`](crate::MarkerPlan::with_offset).
///
/// ```
/// use josef_sequencer::{ControlType, EndTxnMarker};
/// let m = EndTxnMarker::new(1000, 0, ControlType::Commit, 3).at(42, 1_700_000_000_000);
/// assert_eq!(m.offset, 42);
/// assert_eq!(m.transaction_version, 0);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EndTxnMarker {
    /// Producer id of the transaction.
    pub producer_id: i64,
    /// Producer epoch carried by the marker batch.
    pub producer_epoch: i16,
    /// COMMIT or ABORT.
    pub control_type: ControlType,
    /// Epoch of the transaction coordinator that sent the marker.
    pub coordinator_epoch: i32,
    /// Offset of the marker in the log.
    pub offset: i64,
    /// Timestamp of the marker record.
    pub timestamp: i64,
    /// Transaction version of the WriteTxnMarkers request (0/1 = legacy, 2 = KIP-890 TV2,
    /// where the marker epoch must be strictly greater than the producer's epoch).
    pub transaction_version: i16,
}

impl EndTxnMarker {
    /// A legacy (TV0/1) marker with unset offset and timestamp (-1).
    pub fn new(
        producer_id: i64,
        producer_epoch: i16,
        control_type: ControlType,
        coordinator_epoch: i32,
    ) -> Self {
        EndTxnMarker {
            producer_id,
            producer_epoch,
            control_type,
            coordinator_epoch,
            offset: -1,
            timestamp: NO_TIMESTAMP,
            transaction_version: 0,
        }
    }

    /// Returns the marker placed at `offset` with record timestamp `timestamp`.
    pub fn at(mut self, offset: i64, timestamp: i64) -> Self {
        self.offset = offset;
        self.timestamp = timestamp;
        self
    }

    /// True for an ABORT marker.
    pub fn is_abort(&self) -> bool {
        self.control_type == ControlType::Abort
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn increment_and_decrement_are_inverse_across_the_wrap() {
        for s in [0, 1, 100, i32::MAX - 10, i32::MAX - 1, i32::MAX] {
            for d in [0, 1, 5, 11, 1000] {
                assert_eq!(
                    decrement_sequence(increment_sequence(s, d), d),
                    s,
                    "{s} {d}"
                );
            }
        }
    }

    #[test]
    fn malformed_sequence_input_does_not_panic() {
        for s in [i32::MIN, -1, 0, i32::MAX] {
            for d in [i32::MIN, -1, 0, i32::MAX] {
                let _ = increment_sequence(s, d);
                let _ = decrement_sequence(s, d);
            }
        }
    }

    #[test]
    fn record_count_wraps() {
        let b = BatchInfo::idempotent(1, 0, i32::MAX - 1, 4);
        assert_eq!(b.last_sequence, 1);
        assert_eq!(b.record_count(), 4);
    }
}
