//! Small helpers to build v2 batches in tests, examples and benches (over josef-records'
//! [`josef_records::RecordBatchBuilder`]).

use bytes::BytesMut;
use josef_records::{build_control_batch, ControlRecordType, EndTxnMarker, RecordBatchBuilder};

/// Key and value of one record.
pub type KeyValue<'a> = (Option<&'a [u8]>, Option<&'a [u8]>);

/// A batch under construction.
#[derive(Debug)]
pub struct TestBatch {
    builder: Option<RecordBatchBuilder>,
    base_offset: i64,
    producer: (i64, i16, i32),
    marker: Option<(i64, bool)>,
}

impl TestBatch {
    /// An empty batch at `base_offset` without producer id.
    pub fn new(base_offset: i64) -> Self {
        TestBatch {
            builder: Some(RecordBatchBuilder::new().base_offset(base_offset)),
            base_offset,
            producer: (-1, -1, -1),
            marker: None,
        }
    }

    fn map(mut self, f: impl FnOnce(RecordBatchBuilder) -> RecordBatchBuilder) -> Self {
        self.builder = self.builder.take().map(f);
        self
    }

    /// Sets producer id, epoch and base sequence.
    pub fn producer(mut self, id: i64, epoch: i16, base_sequence: i32) -> Self {
        self.producer = (id, epoch, base_sequence);
        self.map(|b| b.producer(id, epoch, base_sequence))
    }

    /// Marks the batch transactional.
    pub fn transactional(self) -> Self {
        self.map(|b| b.transactional(true))
    }

    /// Makes the batch a control batch holding one COMMIT (`commit`) or ABORT marker.
    pub fn control_marker(mut self, timestamp: i64, commit: bool) -> Self {
        self.marker = Some((timestamp, commit));
        self
    }

    /// Adds a record.
    pub fn record(self, timestamp: i64, key: Option<&[u8]>, value: Option<&[u8]>) -> Self {
        self.map(|b| b.record(timestamp, key, value))
    }

    /// Encodes the batch.
    ///
    /// # Panics
    /// If josef-records refuses the batch (only for codec errors or batches over 2 GiB).
    pub fn build(self) -> BytesMut {
        if let Some((ts, commit)) = self.marker {
            let control_type = if commit {
                ControlRecordType::Commit
            } else {
                ControlRecordType::Abort
            };
            let marker = EndTxnMarker {
                control_type,
                coordinator_epoch: 0,
            };
            return build_control_batch(
                self.producer.0,
                self.producer.1,
                marker,
                self.base_offset,
                -1,
                ts,
            );
        }
        self.builder
            .map(|b| b.build().expect("test batch builds"))
            .unwrap_or_default()
    }
}

/// One uncompressed batch at `base_offset` whose records all carry `timestamp`.
///
/// ```
/// let b = josef_log::testing::batch(0, 10, &[(Some(b"k"), Some(b"v"))]);
/// assert_eq!(b[16], 2); // magic
/// ```
pub fn batch(base_offset: i64, timestamp: i64, records: &[KeyValue<'_>]) -> BytesMut {
    let mut t = TestBatch::new(base_offset);
    for (k, v) in records {
        t = t.record(timestamp, *k, *v);
    }
    t.build()
}

/// A transactional batch of one record (`value`, no key) from producer `producer_id`.
///
/// ```
/// let b = josef_log::testing::txn_batch(7, 0, 0, 10, b"v");
/// assert!(josef_log::BatchHeader::parse(&b).unwrap().is_transactional());
/// ```
pub fn txn_batch(
    producer_id: i64,
    epoch: i16,
    base_sequence: i32,
    timestamp: i64,
    value: &[u8],
) -> BytesMut {
    TestBatch::new(0)
        .producer(producer_id, epoch, base_sequence)
        .transactional()
        .record(timestamp, None, Some(value))
        .build()
}

/// The COMMIT (`commit`) or ABORT marker batch ending producer `producer_id`'s transaction.
///
/// ```
/// let m = josef_log::testing::end_txn_marker(7, 0, 10, false);
/// assert!(josef_log::BatchHeader::parse(&m).unwrap().is_control());
/// ```
pub fn end_txn_marker(producer_id: i64, epoch: i16, timestamp: i64, commit: bool) -> BytesMut {
    TestBatch::new(0)
        .producer(producer_id, epoch, -1)
        .control_marker(timestamp, commit)
        .build()
}
