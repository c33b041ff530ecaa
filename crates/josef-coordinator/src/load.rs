//! Reading a coordinator partition's stored batches back into the entries a shard replays: the
//! one loading path of every coordinator (groups and transactions alike), as Kafka's
//! `CoordinatorLoaderImpl` is.

use bytes::Bytes;
use josef_records::{ControlRecordType, DecompressLimits, RecordBatch};

use crate::{LogEntry, RecordSerde, StoredRecord, TransactionResult};

/// What a coordinator partition holds, read from its batches for loading: the entries to replay
/// (data records and transaction markers, in offset order), what could not be read, and where the
/// log ends.
///
/// Unreadable input is skipped and counted, never fatal: a batch whose header, CRC or compression
/// is broken, a record without a key, a key or value the serde does not know (a record type of a
/// newer version, say). A control batch that is not a transaction marker (or an empty one whose
/// marker compaction removed) is passed over without counting.
///
/// ```
/// use bytes::Bytes;
/// use josef_coordinator::{LoadedLog, LogEntry, RecordSerde, SerdeError, TransactionResult};
/// use josef_records::{build_control_batch, ControlRecordType, EndTxnMarker, RecordBatchBuilder};
///
/// /// Keys and values as UTF-8 strings.
/// struct Utf8;
/// impl RecordSerde<String> for Utf8 {
///     fn serialize(&self, r: &String) -> (Option<Bytes>, Option<Bytes>) {
///         (Some(Bytes::from(r.clone())), None)
///     }
///     fn deserialize(&self, key: &[u8], _v: Option<&[u8]>) -> Result<String, SerdeError> {
///         String::from_utf8(key.to_vec()).map_err(|e| SerdeError::Invalid(e.to_string()))
///     }
/// }
///
/// let data = RecordBatchBuilder::new()
///     .base_offset(0)
///     .producer(7, 1, 0)
///     .transactional(true)
///     .record(0, Some(b"a"), None)
///     .record(0, Some(&[0xff][..]), None) // not UTF-8: skipped
///     .build()
///     .unwrap()
///     .freeze();
/// let marker = EndTxnMarker { control_type: ControlRecordType::Commit, coordinator_epoch: 3 };
/// let commit = build_control_batch(7, 1, marker, 2, 0, 0).freeze();
///
/// let log = LoadedLog::read([data, commit], &Utf8);
/// assert_eq!(log.entries.len(), 2);
/// assert_eq!(log.skipped_records, 1);
/// assert_eq!(log.log_end_offset, 3);
/// assert!(matches!(
///     log.entries[1],
///     LogEntry::EndTransaction { offset: 2, coordinator_epoch: 3, result: TransactionResult::Commit, .. }
/// ));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedLog<R> {
    /// Entries to replay, in offset order.
    pub entries: Vec<LogEntry<R>>,
    /// Records skipped: no key, or a key/value the serde could not read.
    pub skipped_records: usize,
    /// Batches skipped whole: a header, CRC, compression or marker that does not read.
    pub skipped_batches: usize,
    /// The offset after the last batch read (0 when none): a loaded coordinator has written up to
    /// here, committed or not.
    pub log_end_offset: i64,
}

impl<R> LoadedLog<R> {
    /// Reads `batches` (whole v2 record batches, in offset order, as the log stores them) with
    /// `serde`.
    pub fn read<I, S>(batches: I, serde: &S) -> Self
    where
        I: IntoIterator<Item = Bytes>,
        S: RecordSerde<R> + ?Sized,
    {
        let mut log = LoadedLog {
            entries: Vec::new(),
            skipped_records: 0,
            skipped_batches: 0,
            log_end_offset: 0,
        };
        for bytes in batches {
            log.read_batch(bytes, serde);
        }
        log
    }

    fn read_batch<S: RecordSerde<R> + ?Sized>(&mut self, bytes: Bytes, serde: &S) {
        let limits = DecompressLimits::default();
        // A torn or corrupt batch cannot be trusted for any of its records, including where it
        // ends.
        let Ok(batch) = RecordBatch::parse(bytes) else {
            self.skipped_batches += 1;
            return;
        };
        if batch.validate_crc().is_err() {
            self.skipped_batches += 1;
            return;
        }
        self.log_end_offset = self.log_end_offset.max(batch.next_offset());
        if batch.is_control() {
            match batch.control_marker(&limits) {
                Ok(Some(marker)) => self.entries.push(LogEntry::EndTransaction {
                    offset: batch.base_offset,
                    producer_id: batch.producer_id,
                    producer_epoch: batch.producer_epoch,
                    coordinator_epoch: marker.coordinator_epoch,
                    result: match marker.control_type {
                        ControlRecordType::Commit => TransactionResult::Commit,
                        ControlRecordType::Abort => TransactionResult::Abort,
                    },
                }),
                Ok(None) => {}
                Err(_) => self.skipped_batches += 1,
            }
            return;
        }
        let Ok(records) = batch.records(&limits) else {
            self.skipped_batches += 1;
            return;
        };
        for record in records {
            let Ok(record) = record else {
                // The rest of the batch cannot be located past an unreadable record.
                self.skipped_records += 1;
                break;
            };
            let Some(key) = record.key.as_deref() else {
                self.skipped_records += 1;
                continue;
            };
            match serde.deserialize(key, record.value.as_deref()) {
                Ok(r) => self.entries.push(LogEntry::Record(StoredRecord {
                    offset: record.offset,
                    producer_id: batch.producer_id,
                    producer_epoch: batch.producer_epoch,
                    record: r,
                })),
                Err(_) => self.skipped_records += 1,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SerdeError;
    use josef_records::{build_control_batch, EndTxnMarker, RecordBatchBuilder};

    /// A record is its key's first byte; a key starting with 0xff does not read.
    struct FirstByte;

    impl RecordSerde<u8> for FirstByte {
        fn serialize(&self, r: &u8) -> (Option<Bytes>, Option<Bytes>) {
            (Some(Bytes::from(vec![*r])), None)
        }

        fn deserialize(&self, key: &[u8], _value: Option<&[u8]>) -> Result<u8, SerdeError> {
            match key.first() {
                Some(0xff) => Err(SerdeError::Invalid("0xff".into())),
                Some(b) => Ok(*b),
                None => Err(SerdeError::Truncated),
            }
        }
    }

    fn data(base_offset: i64, keys: &[&[u8]], producer: Option<(i64, i16)>) -> Bytes {
        let mut b = RecordBatchBuilder::new().base_offset(base_offset);
        if let Some((pid, epoch)) = producer {
            b = b.producer(pid, epoch, 0).transactional(true);
        }
        for k in keys {
            b = b.record(0, Some(*k), Some(b"v"));
        }
        b.build().unwrap().freeze()
    }

    fn marker(offset: i64, control_type: ControlRecordType, coordinator_epoch: i32) -> Bytes {
        let m = EndTxnMarker {
            control_type,
            coordinator_epoch,
        };
        build_control_batch(7, 2, m, offset, 0, 0).freeze()
    }

    fn record(offset: i64, producer_id: i64, producer_epoch: i16, r: u8) -> LogEntry<u8> {
        LogEntry::Record(StoredRecord {
            offset,
            producer_id,
            producer_epoch,
            record: r,
        })
    }

    #[test]
    fn records_keep_their_offsets_and_producer() {
        let log = LoadedLog::read(
            [data(0, &[b"a", b"b"], None), data(2, &[b"c"], Some((7, 2)))],
            &FirstByte,
        );
        assert_eq!(
            log.entries,
            vec![
                record(0, -1, -1, b'a'),
                record(1, -1, -1, b'b'),
                record(2, 7, 2, b'c')
            ]
        );
        assert_eq!((log.skipped_records, log.skipped_batches), (0, 0));
        assert_eq!(log.log_end_offset, 3);
    }

    /// A marker is loaded with the coordinator epoch its control record carries (never 0), and
    /// its commit or abort.
    #[test]
    fn markers_carry_their_coordinator_epoch_and_result() {
        let log = LoadedLog::read(
            [
                marker(4, ControlRecordType::Commit, 7),
                marker(5, ControlRecordType::Abort, 9),
            ],
            &FirstByte,
        );
        let end = |offset, coordinator_epoch, result| LogEntry::EndTransaction {
            offset,
            producer_id: 7,
            producer_epoch: 2,
            coordinator_epoch,
            result,
        };
        assert_eq!(
            log.entries,
            vec![
                end(4, 7, TransactionResult::Commit),
                end(5, 9, TransactionResult::Abort)
            ]
        );
        assert_eq!(log.log_end_offset, 6);
    }

    /// Unreadable input is skipped and counted, and whatever reads around it still loads.
    #[test]
    fn unreadable_batches_and_records_are_skipped_without_panic() {
        let good = data(0, &[b"a"], None);
        let truncated = data(1, &[b"b", b"c"], None).slice(..40);
        let mut flipped = data(1, &[b"d"], None).to_vec();
        let last = flipped.len() - 1;
        flipped[last] ^= 0x55;
        let unreadable_keys = data(1, &[&[0xff], b"e"], None);
        let keyless = RecordBatchBuilder::new()
            .base_offset(3)
            .record(0, None, Some(b"v"))
            .build()
            .unwrap()
            .freeze();
        let log = LoadedLog::read(
            [
                good,
                truncated,
                Bytes::from(flipped),
                Bytes::new(),
                unreadable_keys,
                keyless,
            ],
            &FirstByte,
        );
        assert_eq!(
            log.entries,
            vec![record(0, -1, -1, b'a'), record(2, -1, -1, b'e')]
        );
        assert_eq!(log.skipped_batches, 3);
        assert_eq!(log.skipped_records, 2);
        assert_eq!(log.log_end_offset, 4);
    }

    /// Every prefix of a batch, and the batch with any one byte changed, loads without panic.
    #[test]
    fn damaged_batches_never_panic() {
        let whole = data(0, &[b"a", b"b", b"c"], Some((7, 2)));
        for len in 0..whole.len() {
            let log = LoadedLog::read([whole.slice(..len)], &FirstByte);
            assert!(log.entries.is_empty(), "a torn batch replayed records");
        }
        for at in 0..whole.len() {
            let mut damaged = whole.to_vec();
            damaged[at] ^= 0xa5;
            let log = LoadedLog::read([Bytes::from(damaged)], &FirstByte);
            assert!(log.entries.len() <= 3);
        }
    }
}
