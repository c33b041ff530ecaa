//! Producer-state snapshots in Kafka's `.snapshot` file layout (ProducerSnapshot version 1),
//! so a Josef snapshot can be read by Kafka and the other way round.
//!
//! Layout, all big-endian:
//!
//! ```text
//! version: i16 (= 1)
//! crc:     u32 (CRC-32C of every byte after this field)
//! count:   i32
//! count × entry (46 bytes):
//!   producer_id i64, epoch i16, last_sequence i32, last_offset i64, offset_delta i32,
//!   timestamp i64, coordinator_epoch i32, current_txn_first_offset i64 (-1: none)
//! ```
//!
//! Kafka stores one entry per producer, for the newest of its five remembered batches, so after
//! a clean restart a retry of an older in-flight batch is no longer recognised as a duplicate:
//! it is refused with OUT_OF_ORDER_SEQUENCE_NUMBER, which librdkafka treats as fatal for the
//! head of its in-flight queue ("sequence desynchronization"; Josef's fault-injection soak hit
//! it when a node restarted with SIGTERM and led the partition again before the producer's
//! retries had been answered). Josef writes one entry per remembered batch instead, oldest
//! first, the newest last, all in the same layout: Kafka's reader keeps the last entry it reads
//! for a producer id (the newest batch, what Kafka itself would have written), and Josef's
//! reader puts a producer's consecutive entries back together as its remembered batches.

use crate::entry::{BatchMetadata, ProducerStateEntry};
use crate::error::SnapshotError;
use crate::table::{ProducerStateConfig, ProducerStateTable};

/// The only snapshot version Kafka writes and reads.
pub const PRODUCER_SNAPSHOT_VERSION: i16 = 1;
const HEADER_LEN: usize = 2 + 4 + 4;
const CRC_START: usize = 6;
/// Size of one encoded producer entry.
pub const SNAPSHOT_ENTRY_LEN: usize = 8 + 2 + 4 + 8 + 4 + 8 + 4 + 8;

impl ProducerStateTable {
    /// Encodes every producer (sorted by producer id, so equal tables give equal bytes).
    ///
    /// ```
    /// use josef_sequencer::{BatchInfo, ProducerStateConfig, ProducerStateTable};
    /// let mut t = ProducerStateTable::new(ProducerStateConfig::default());
    /// t.replay(&BatchInfo::idempotent(7, 0, 0, 2).with_offsets(0, 1, 1_000));
    /// let bytes = t.encode_snapshot();
    /// let restored = ProducerStateTable::from_snapshot(*t.config(), &bytes, t.map_end_offset(), 1_000).unwrap();
    /// assert_eq!(restored.producer(7).unwrap().last_seq(), 1);
    /// ```
    pub fn encode_snapshot(&self) -> Vec<u8> {
        let mut entries: Vec<&ProducerStateEntry> = self.producers().collect();
        entries.sort_unstable_by_key(|e| e.producer_id());
        encode_entries(entries)
    }

    /// Builds a table from a snapshot taken at `snapshot_offset` (the number in the file
    /// name), dropping producers already expired at `now_ms` as Kafka does on load. Replay
    /// the log from `snapshot_offset` afterwards.
    pub fn from_snapshot(
        config: ProducerStateConfig,
        bytes: &[u8],
        snapshot_offset: i64,
        now_ms: i64,
    ) -> Result<Self, SnapshotError> {
        let entries = decode_snapshot(bytes)?;
        let mut table = ProducerStateTable::new(config);
        table.load_entries(entries, snapshot_offset, now_ms);
        Ok(table)
    }
}

/// Encodes producer entries in Kafka's snapshot layout.
pub fn encode_entries<'a>(entries: impl IntoIterator<Item = &'a ProducerStateEntry>) -> Vec<u8> {
    let mut out = vec![0u8; HEADER_LEN];
    out[0..2].copy_from_slice(&PRODUCER_SNAPSHOT_VERSION.to_be_bytes());
    let mut count: i32 = 0;
    for e in entries {
        let mut put = |last_seq: i32, last_offset: i64, offset_delta: i32, timestamp: i64| {
            count += 1;
            out.extend_from_slice(&e.producer_id().to_be_bytes());
            out.extend_from_slice(&e.producer_epoch().to_be_bytes());
            out.extend_from_slice(&last_seq.to_be_bytes());
            out.extend_from_slice(&last_offset.to_be_bytes());
            out.extend_from_slice(&offset_delta.to_be_bytes());
            out.extend_from_slice(&timestamp.to_be_bytes());
            out.extend_from_slice(&e.coordinator_epoch().to_be_bytes());
            out.extend_from_slice(&e.current_txn_first_offset().unwrap_or(-1).to_be_bytes());
        };
        let batches = e.batches();
        let Some((newest, older)) = batches.split_last() else {
            put(
                e.last_seq(),
                e.last_data_offset(),
                e.last_offset_delta(),
                e.last_timestamp(),
            );
            continue;
        };
        for b in older {
            put(b.last_seq, b.last_offset, b.offset_delta, b.timestamp);
        }
        // The newest entry carries the producer's last timestamp (a marker's, if one came
        // after the batch): what Kafka expires the producer by.
        put(
            newest.last_seq,
            newest.last_offset,
            newest.offset_delta,
            e.last_timestamp(),
        );
    }
    out[6..10].copy_from_slice(&count.to_be_bytes());
    let crc = crc32c::crc32c(&out[CRC_START..]);
    out[2..6].copy_from_slice(&crc.to_be_bytes());
    out
}

/// Decodes a snapshot into producer entries, checking version, CRC-32C and sizes before
/// allocating anything sized by the file.
pub fn decode_snapshot(bytes: &[u8]) -> Result<Vec<ProducerStateEntry>, SnapshotError> {
    if bytes.len() < HEADER_LEN {
        return Err(SnapshotError::Truncated {
            needed: HEADER_LEN,
            available: bytes.len(),
        });
    }
    let version = i16::from_be_bytes([bytes[0], bytes[1]]);
    if version != PRODUCER_SNAPSHOT_VERSION {
        return Err(SnapshotError::UnknownVersion(version));
    }
    let stored = u32::from_be_bytes([bytes[2], bytes[3], bytes[4], bytes[5]]);
    let computed = crc32c::crc32c(&bytes[CRC_START..]);
    if stored != computed {
        return Err(SnapshotError::CrcMismatch { stored, computed });
    }
    let count = i32::from_be_bytes([bytes[6], bytes[7], bytes[8], bytes[9]]);
    let count = usize::try_from(count).map_err(|_| SnapshotError::NegativeCount(count))?;
    let body = &bytes[HEADER_LEN..];
    let needed = count.saturating_mul(SNAPSHOT_ENTRY_LEN);
    if body.len() < needed {
        return Err(SnapshotError::Truncated {
            needed: needed.saturating_add(HEADER_LEN),
            available: bytes.len(),
        });
    }
    if body.len() > needed {
        return Err(SnapshotError::TrailingBytes(body.len() - needed));
    }
    let mut entries: Vec<ProducerStateEntry> = Vec::with_capacity(count);
    let mut current: Option<ProducerStateEntry> = None;
    let mut seen = std::collections::HashSet::with_capacity(count);
    for chunk in body.chunks_exact(SNAPSHOT_ENTRY_LEN) {
        let mut r = Reader(chunk);
        let producer_id = r.i64();
        let epoch = r.i16();
        let last_seq = r.i32();
        let last_offset = r.i64();
        let offset_delta = r.i32();
        let timestamp = r.i64();
        let coordinator_epoch = r.i32();
        let txn_first = r.i64();
        // A producer's entries are consecutive, one per remembered batch, oldest first.
        let mut e = match current.take() {
            Some(e) if e.producer_id == producer_id => e,
            other => {
                entries.extend(other);
                if !seen.insert(producer_id) {
                    return Err(SnapshotError::DuplicateProducer(producer_id));
                }
                ProducerStateEntry::empty(producer_id)
            }
        };
        // Batches of an older epoch than a later entry's are forgotten, as in the live table.
        e.maybe_update_epoch(epoch);
        // Kafka stores "no batch" as last_offset -1 (and last sequence -1); the sequence
        // is then irrelevant.
        if last_offset >= 0 {
            e.add_batch(
                epoch,
                BatchMetadata {
                    last_seq,
                    last_offset,
                    offset_delta,
                    timestamp,
                },
            );
        }
        e.coordinator_epoch = coordinator_epoch;
        e.last_timestamp = timestamp;
        e.current_txn_first_offset = (txn_first >= 0).then_some(txn_first);
        current = Some(e);
    }
    entries.extend(current);
    Ok(entries)
}

/// Reads fixed-size big-endian fields from a chunk whose length was checked by the caller.
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let mut a = [0u8; N];
        a.copy_from_slice(&self.0[..N]);
        self.0 = &self.0[N..];
        a
    }
    fn i16(&mut self) -> i16 {
        i16::from_be_bytes(self.take())
    }
    fn i32(&mut self) -> i32 {
        i32::from_be_bytes(self.take())
    }
    fn i64(&mut self) -> i64 {
        i64::from_be_bytes(self.take())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_snapshot_is_ten_bytes_and_round_trips() {
        let bytes = encode_entries(std::iter::empty());
        assert_eq!(bytes.len(), 10);
        assert_eq!(decode_snapshot(&bytes).unwrap(), vec![]);
    }

    #[test]
    fn huge_declared_count_is_refused_without_allocating() {
        let mut bytes = encode_entries(std::iter::empty());
        bytes[6..10].copy_from_slice(&i32::MAX.to_be_bytes());
        let crc = crc32c::crc32c(&bytes[6..]);
        bytes[2..6].copy_from_slice(&crc.to_be_bytes());
        assert!(matches!(
            decode_snapshot(&bytes),
            Err(SnapshotError::Truncated { .. })
        ));
    }
}
