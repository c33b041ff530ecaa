//! Control batches: the COMMIT / ABORT markers a transaction coordinator writes into partitions.
//!
//! A control record's key is `(version: int16, type: int16)`; a transaction marker's value is
//! `(version: int16, coordinator_epoch: int32)` (Kafka's `ControlRecordType` and
//! `EndTransactionMarker`). A marker batch is transactional *and* control, uncompressed, with no
//! base sequence, and holds exactly one record. An empty control batch is legal (compaction removed
//! its marker) and carries no marker.

use bytes::BytesMut;

use crate::header::NO_SEQUENCE;
use crate::{DecompressLimits, RecordBatch, RecordBatchBuilder, RecordsError};

/// Control record types of transaction markers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i16)]
pub enum ControlRecordType {
    /// The transaction was aborted.
    Abort = 0,
    /// The transaction was committed.
    Commit = 1,
}

impl ControlRecordType {
    /// The type for a stored id, `None` for types other than ABORT/COMMIT (e.g. KRaft's).
    pub fn from_i16(id: i16) -> Option<ControlRecordType> {
        match id {
            0 => Some(ControlRecordType::Abort),
            1 => Some(ControlRecordType::Commit),
            _ => None,
        }
    }

    /// The stored id.
    pub fn id(self) -> i16 {
        self as i16
    }
}

/// A transaction marker: which way the transaction ended, and the coordinator epoch that wrote it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EndTxnMarker {
    /// COMMIT or ABORT.
    pub control_type: ControlRecordType,
    /// Epoch of the transaction coordinator that wrote the marker.
    pub coordinator_epoch: i32,
}

const CONTROL_KEY_VERSION: i16 = 0;
const END_TXN_MARKER_VERSION: i16 = 0;

impl EndTxnMarker {
    /// The control record key: version 0, then the type.
    pub fn key_bytes(&self) -> [u8; 4] {
        let mut k = [0u8; 4];
        k[..2].copy_from_slice(&CONTROL_KEY_VERSION.to_be_bytes());
        k[2..].copy_from_slice(&self.control_type.id().to_be_bytes());
        k
    }

    /// The control record value: version 0, then the coordinator epoch.
    pub fn value_bytes(&self) -> [u8; 6] {
        let mut v = [0u8; 6];
        v[..2].copy_from_slice(&END_TXN_MARKER_VERSION.to_be_bytes());
        v[2..].copy_from_slice(&self.coordinator_epoch.to_be_bytes());
        v
    }

    /// Parses a marker from a control record's key and value.
    pub fn parse(key: &[u8], value: &[u8]) -> Result<EndTxnMarker, RecordsError> {
        let control_type = ControlRecordType::from_i16(control_record_type(key)?).ok_or(
            RecordsError::InvalidControlRecord("not a transaction marker"),
        )?;
        if value.len() < 6 {
            return Err(RecordsError::InvalidControlRecord(
                "marker value shorter than 6 bytes",
            ));
        }
        if i16::from_be_bytes([value[0], value[1]]) < 0 {
            return Err(RecordsError::InvalidControlRecord(
                "negative marker version",
            ));
        }
        Ok(EndTxnMarker {
            control_type,
            coordinator_epoch: i32::from_be_bytes([value[2], value[3], value[4], value[5]]),
        })
    }
}

/// The type id in a control record key (any type, including KRaft's), checking the key's shape.
pub fn control_record_type(key: &[u8]) -> Result<i16, RecordsError> {
    if key.len() < 4 {
        return Err(RecordsError::InvalidControlRecord(
            "key shorter than 4 bytes",
        ));
    }
    if i16::from_be_bytes([key[0], key[1]]) < 0 {
        return Err(RecordsError::InvalidControlRecord(
            "negative control key version",
        ));
    }
    Ok(i16::from_be_bytes([key[2], key[3]]))
}

/// Writes a transaction marker batch: one control record, transactional and control bits set,
/// uncompressed, base sequence -1.
///
/// ```
/// use josef_records::{build_control_batch, ControlRecordType, EndTxnMarker, RecordBatch, DecompressLimits};
/// let marker = EndTxnMarker { control_type: ControlRecordType::Commit, coordinator_epoch: 4 };
/// let buf = build_control_batch(9, 2, marker, 100, 7, 1_700_000_000_000);
/// let batch = RecordBatch::parse(buf.freeze()).unwrap();
/// batch.validate_crc().unwrap();
/// assert!(batch.is_control() && batch.is_transactional());
/// assert_eq!(batch.control_marker(&DecompressLimits::default()).unwrap(), Some(marker));
/// ```
pub fn build_control_batch(
    producer_id: i64,
    producer_epoch: i16,
    marker: EndTxnMarker,
    base_offset: i64,
    partition_leader_epoch: i32,
    timestamp: i64,
) -> BytesMut {
    let mut b = RecordBatchBuilder::new()
        .base_offset(base_offset)
        .partition_leader_epoch(partition_leader_epoch)
        .producer(producer_id, producer_epoch, NO_SEQUENCE)
        .transactional(true)
        .control(true);
    let key = marker.key_bytes();
    let value = marker.value_bytes();
    b.push(timestamp, Some(&key), Some(&value), &[]);
    // Building fails only for compression errors or over 2 GiB; neither applies to one
    // uncompressed 10-byte record, whatever the arguments.
    b.build()
        .expect("an uncompressed one-record batch always builds")
}

impl RecordBatch {
    /// The transaction marker of a control batch: `None` when the batch is not a control batch or
    /// is empty (its marker was compacted away); an error when its record is not a valid marker.
    pub fn control_marker(
        &self,
        limits: &DecompressLimits,
    ) -> Result<Option<EndTxnMarker>, RecordsError> {
        if !self.is_control() {
            return Ok(None);
        }
        let Some(record) = self.records(limits)?.next() else {
            return Ok(None);
        };
        let record = record?;
        let key = record.key.ok_or(RecordsError::InvalidControlRecord(
            "null control record key",
        ))?;
        let value = record
            .value
            .ok_or(RecordsError::InvalidControlRecord("null marker value"))?;
        EndTxnMarker::parse(&key, &value).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marker_bytes_match_kafka_layout() {
        let m = EndTxnMarker {
            control_type: ControlRecordType::Abort,
            coordinator_epoch: 0x01020304,
        };
        assert_eq!(m.key_bytes(), [0, 0, 0, 0]);
        assert_eq!(m.value_bytes(), [0, 0, 1, 2, 3, 4]);
        assert_eq!(
            EndTxnMarker::parse(&m.key_bytes(), &m.value_bytes()).unwrap(),
            m
        );
    }

    #[test]
    fn empty_control_batch_has_no_marker() {
        let b = RecordBatchBuilder::new()
            .producer(1, 0, -1)
            .transactional(true)
            .control(true)
            .build_bytes()
            .unwrap();
        let batch = RecordBatch::parse(b).unwrap();
        assert_eq!(
            batch.control_marker(&DecompressLimits::default()).unwrap(),
            None
        );
    }

    #[test]
    fn control_record_with_short_key_is_invalid() {
        assert!(matches!(
            EndTxnMarker::parse(&[0, 0, 0], &[0; 6]),
            Err(RecordsError::InvalidControlRecord(_))
        ));
        assert!(matches!(
            EndTxnMarker::parse(&[0, 0, 0, 2], &[0; 6]),
            Err(RecordsError::InvalidControlRecord(_))
        ));
    }
}
