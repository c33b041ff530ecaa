//! Writing v2 record batches.

use bytes::{BufMut, Bytes, BytesMut};

use crate::header::{
    offsets, BATCH_HEADER_LEN, LOG_OVERHEAD, MAGIC_V2, NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH, NO_PRODUCER_ID, NO_SEQUENCE, NO_TIMESTAMP,
};
use crate::rewrite::write_crc;
use crate::varint::{put_varint, put_varlong, varint_size, varlong_size};
use crate::{
    compress_into, Attributes, Compression, CompressionOptions, RecordsError, TimestampType,
};

/// Builds one v2 record batch with any codec, timestamp type and producer fields.
///
/// The base timestamp is the first record's timestamp (or the delete horizon when one is set);
/// the max timestamp is the largest record timestamp, or the log append time for
/// [`TimestampType::LogAppendTime`]. Offset deltas are 0, 1, 2 … unless given explicitly with
/// [`RecordBatchBuilder::push_with_offset_delta`] (compacted batches have gaps).
///
/// ```
/// use josef_records::{Compression, RecordBatch, RecordBatchBuilder, TimestampType};
/// let bytes = RecordBatchBuilder::new()
///     .base_offset(1_000)
///     .compression(Compression::Lz4)
///     .producer(42, 3, 0)
///     .transactional(true)
///     .record_with_headers(5, Some(b"k"), Some(b"v"), &[(b"trace", Some(b"abc"))])
///     .build()
///     .unwrap();
/// let batch = RecordBatch::parse(bytes.freeze()).unwrap();
/// batch.validate_crc().unwrap();
/// assert!(batch.is_transactional());
/// assert_eq!(batch.producer_id, 42);
/// assert_eq!(batch.compression().unwrap(), Compression::Lz4);
/// ```
#[derive(Debug, Clone)]
pub struct RecordBatchBuilder {
    base_offset: i64,
    partition_leader_epoch: i32,
    attributes: Attributes,
    options: CompressionOptions,
    log_append_time: i64,
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
    delete_horizon: Option<i64>,
    min_last_offset_delta: i32,
    records: Vec<Pending>,
    body_size: usize,
    max_timestamp: i64,
    error: Option<RecordsError>,
}

#[derive(Debug, Clone)]
struct Pending {
    attributes: i8,
    offset_delta: i32,
    timestamp: i64,
    key: Option<Bytes>,
    value: Option<Bytes>,
    headers: Vec<(Bytes, Option<Bytes>)>,
}

impl Default for RecordBatchBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl RecordBatchBuilder {
    /// A builder for an uncompressed `CreateTime` batch at offset 0, with no producer id.
    pub fn new() -> RecordBatchBuilder {
        RecordBatchBuilder {
            base_offset: 0,
            partition_leader_epoch: NO_PARTITION_LEADER_EPOCH,
            attributes: Attributes::default(),
            options: CompressionOptions::default(),
            log_append_time: NO_TIMESTAMP,
            producer_id: NO_PRODUCER_ID,
            producer_epoch: NO_PRODUCER_EPOCH,
            base_sequence: NO_SEQUENCE,
            delete_horizon: None,
            min_last_offset_delta: 0,
            records: Vec::new(),
            body_size: 0,
            max_timestamp: NO_TIMESTAMP,
            error: None,
        }
    }

    /// Sets the base offset.
    pub fn base_offset(mut self, offset: i64) -> Self {
        self.base_offset = offset;
        self
    }

    /// Sets the partition leader epoch.
    pub fn partition_leader_epoch(mut self, epoch: i32) -> Self {
        self.partition_leader_epoch = epoch;
        self
    }

    /// Sets the codec.
    pub fn compression(mut self, codec: Compression) -> Self {
        self.attributes.set_compression(codec);
        self
    }

    /// Sets the codec level and snappy framing.
    pub fn compression_options(mut self, options: CompressionOptions) -> Self {
        self.options = options;
        self
    }

    /// Uses `CreateTime` (the record timestamps).
    pub fn create_time(mut self) -> Self {
        self.attributes
            .set_timestamp_type(TimestampType::CreateTime);
        self
    }

    /// Uses `LogAppendTime` with append time `ts` (stored as the max timestamp).
    pub fn log_append_time(mut self, ts: i64) -> Self {
        self.attributes
            .set_timestamp_type(TimestampType::LogAppendTime);
        self.log_append_time = ts;
        self
    }

    /// Sets producer id, epoch and the sequence of the first record.
    pub fn producer(mut self, producer_id: i64, producer_epoch: i16, base_sequence: i32) -> Self {
        self.producer_id = producer_id;
        self.producer_epoch = producer_epoch;
        self.base_sequence = base_sequence;
        self
    }

    /// Sets or clears the transactional bit.
    pub fn transactional(mut self, on: bool) -> Self {
        self.attributes.set_transactional(on);
        self
    }

    /// Sets or clears the control bit.
    pub fn control(mut self, on: bool) -> Self {
        self.attributes.set_control(on);
        self
    }

    /// Stores `horizon_ms` as the base timestamp and sets the delete-horizon bit (KIP-534).
    pub fn delete_horizon(mut self, horizon_ms: i64) -> Self {
        self.attributes.set_delete_horizon(true);
        self.delete_horizon = Some(horizon_ms);
        self
    }

    /// The smallest `last_offset_delta` to write: lets a batch keep its offset range when
    /// compaction removed its last records, or an empty batch cover offsets.
    pub fn last_offset_delta_at_least(mut self, delta: i32) -> Self {
        self.min_last_offset_delta = delta;
        self
    }

    /// Adds a record without headers (chaining form of [`RecordBatchBuilder::push`]).
    pub fn record(mut self, timestamp: i64, key: Option<&[u8]>, value: Option<&[u8]>) -> Self {
        self.push(timestamp, key, value, &[]);
        self
    }

    /// Adds a record with headers (chaining form of [`RecordBatchBuilder::push`]).
    pub fn record_with_headers(
        mut self,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[(&[u8], Option<&[u8]>)],
    ) -> Self {
        self.push(timestamp, key, value, headers);
        self
    }

    /// Adds a record at the next offset delta (0 for the first record, then previous + 1).
    pub fn push(
        &mut self,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[(&[u8], Option<&[u8]>)],
    ) {
        let delta = match self.records.last() {
            None => Some(0),
            Some(p) => p.offset_delta.checked_add(1),
        };
        match delta {
            Some(d) => self.push_pending(Pending {
                attributes: 0,
                offset_delta: d,
                timestamp,
                key: key.map(Bytes::copy_from_slice),
                value: value.map(Bytes::copy_from_slice),
                headers: headers
                    .iter()
                    .map(|(k, v)| (Bytes::copy_from_slice(k), v.map(Bytes::copy_from_slice)))
                    .collect(),
            }),
            None => self.fail(RecordsError::Build("offset delta overflow")),
        }
    }

    /// Adds a record with an explicit offset delta, which must be larger than the previous one.
    /// Keys, values and header parts are taken as `Bytes` (no copy).
    pub fn push_with_offset_delta(
        &mut self,
        offset_delta: i32,
        timestamp: i64,
        key: Option<Bytes>,
        value: Option<Bytes>,
        headers: Vec<(Bytes, Option<Bytes>)>,
    ) -> Result<(), RecordsError> {
        if offset_delta < 0
            || self
                .records
                .last()
                .is_some_and(|p| p.offset_delta >= offset_delta)
        {
            return Err(RecordsError::Build("offset deltas must increase from 0"));
        }
        self.push_pending(Pending {
            attributes: 0,
            offset_delta,
            timestamp,
            key,
            value,
            headers,
        });
        self.error.clone().map_or(Ok(()), Err)
    }

    /// Number of records added.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether no record was added.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Size the batch would have without compression.
    pub fn uncompressed_size(&self) -> usize {
        BATCH_HEADER_LEN + self.body_size
    }

    fn fail(&mut self, e: RecordsError) {
        if self.error.is_none() {
            self.error = Some(e);
        }
    }

    fn base_timestamp(&self) -> i64 {
        match (self.delete_horizon, self.records.first()) {
            (Some(h), _) => h,
            (None, Some(first)) => first.timestamp,
            (None, None) => NO_TIMESTAMP,
        }
    }

    fn push_pending(&mut self, p: Pending) {
        self.max_timestamp = self.max_timestamp.max(p.timestamp);
        self.records.push(p);
        // Deltas depend on the base timestamp, known once the first record is in.
        let base = self.base_timestamp();
        let size = record_size(self.records.last().expect("just pushed"), base);
        self.body_size = self.body_size.saturating_add(size);
    }

    /// Writes the batch (header, records, compression, CRC).
    pub fn build(self) -> Result<BytesMut, RecordsError> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let codec = self.attributes.compression()?;
        let count = i32::try_from(self.records.len())
            .map_err(|_| RecordsError::Build("too many records"))?;
        let base_ts = self.base_timestamp();
        let last_delta = self
            .records
            .last()
            .map_or(0, |p| p.offset_delta)
            .max(self.min_last_offset_delta);
        let max_ts = match self.attributes.timestamp_type() {
            TimestampType::LogAppendTime => self.log_append_time,
            TimestampType::CreateTime => self.max_timestamp,
        };
        let mut out: Vec<u8> = Vec::with_capacity(match codec {
            Compression::None => BATCH_HEADER_LEN + self.body_size,
            _ => BATCH_HEADER_LEN + self.body_size / 2 + 64,
        });
        out.resize(BATCH_HEADER_LEN, 0);
        if codec == Compression::None {
            for p in &self.records {
                write_record(&mut out, p, base_ts);
            }
        } else {
            let mut body = Vec::with_capacity(self.body_size);
            for p in &self.records {
                write_record(&mut body, p, base_ts);
            }
            compress_into(codec, &body, &self.options, &mut out)?;
        }
        let batch_length = i32::try_from(out.len() - LOG_OVERHEAD)
            .map_err(|_| RecordsError::Build("batch larger than 2 GiB"))?;
        let mut h = &mut out[..BATCH_HEADER_LEN];
        h.put_i64(self.base_offset);
        h.put_i32(batch_length);
        h.put_i32(self.partition_leader_epoch);
        h.put_i8(MAGIC_V2);
        h.put_u32(0);
        h.put_i16(self.attributes.0);
        h.put_i32(last_delta);
        h.put_i64(base_ts);
        h.put_i64(max_ts);
        h.put_i64(self.producer_id);
        h.put_i16(self.producer_epoch);
        h.put_i32(self.base_sequence);
        h.put_i32(count);
        debug_assert_eq!(h.len(), 0);
        debug_assert_eq!(offsets::RECORDS, BATCH_HEADER_LEN);
        write_crc(&mut out);
        // Vec -> Bytes -> BytesMut keeps the allocation (the Bytes is unique).
        Ok(Bytes::from(out)
            .try_into_mut()
            .unwrap_or_else(|b| BytesMut::from(&b[..])))
    }

    /// Writes the batch and freezes it.
    pub fn build_bytes(self) -> Result<Bytes, RecordsError> {
        self.build().map(BytesMut::freeze)
    }
}

fn bytes_size(b: &Option<Bytes>) -> usize {
    match b {
        None => 1,
        Some(b) => varint_size(b.len() as i32) + b.len(),
    }
}

/// Size of the record body (after its length varint).
fn record_body_size(p: &Pending, base_ts: i64) -> usize {
    let mut n = 1
        + varlong_size(p.timestamp.wrapping_sub(base_ts))
        + varint_size(p.offset_delta)
        + bytes_size(&p.key)
        + bytes_size(&p.value)
        + varint_size(p.headers.len() as i32);
    for (k, v) in &p.headers {
        n += varint_size(k.len() as i32) + k.len() + bytes_size(v);
    }
    n
}

fn record_size(p: &Pending, base_ts: i64) -> usize {
    let body = record_body_size(p, base_ts);
    varint_size(body as i32) + body
}

fn put_bytes(out: &mut Vec<u8>, b: &Option<Bytes>) {
    match b {
        None => put_varint(out, -1),
        Some(b) => {
            put_varint(out, b.len() as i32);
            out.extend_from_slice(b);
        }
    }
}

fn write_record(out: &mut Vec<u8>, p: &Pending, base_ts: i64) {
    put_varint(out, record_body_size(p, base_ts) as i32);
    out.push(p.attributes as u8);
    put_varlong(out, p.timestamp.wrapping_sub(base_ts));
    put_varint(out, p.offset_delta);
    put_bytes(out, &p.key);
    put_bytes(out, &p.value);
    put_varint(out, p.headers.len() as i32);
    for (k, v) in &p.headers {
        put_varint(out, k.len() as i32);
        out.extend_from_slice(k);
        put_bytes(out, v);
    }
}
