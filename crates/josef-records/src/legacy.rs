//! Legacy message sets (magic 0 and 1): reading, CRC-32 checks, compressed wrappers, conversion up
//! to a v2 batch, and a small writer (for tests and for serving old formats).
//!
//! Layout of one message: `offset: int64, size: int32, crc: uint32 (CRC-32 IEEE of magic..end),
//! magic: int8, attributes: int8, [timestamp: int64, magic 1 only], key: int32-length bytes,
//! value: int32-length bytes` (-1 = null). A compressed message ("wrapper") holds a whole inner
//! message set in its value. In magic 1 the inner offsets are relative (0, 1, …) and the absolute
//! offset of an inner message is `wrapper.offset - last_inner.offset + inner.offset` (a wrapper
//! offset of 0, as producers send, keeps the inner offsets); in magic 0 they are absolute. A `LogAppendTime` magic-1 wrapper's timestamp applies to all inner messages.

use bytes::{BufMut, Bytes, BytesMut};

use crate::compression::{break_lz4_header_checksum_v0, decompress_lz4_legacy_v0};
use crate::header::{be_i32, be_i64, be_u32, LOG_OVERHEAD, NO_TIMESTAMP};
use crate::{
    compress, decompress, AnyBatch, AnyBatches, Compression, CompressionOptions, DecompressLimits,
    RecordBatchBuilder, RecordsError, TimestampType,
};

/// Size after the offset/size prefix of the smallest v0 message (`RECORD_OVERHEAD_V0`).
pub const LEGACY_MIN_SIZE: usize = 14;
/// Size after the offset/size prefix of the smallest v1 message (`RECORD_OVERHEAD_V1`).
pub const LEGACY_V1_MIN_SIZE: usize = 22;

const CRC_AT: usize = 12;
const MAGIC_AT: usize = 16;
const ATTRIBUTES_AT: usize = 17;
const TIMESTAMP_AT: usize = 18;
const LEGACY_COMPRESSION_MASK: i8 = 0x07;
const LEGACY_TIMESTAMP_TYPE_BIT: i8 = 0x08;

/// One legacy message (shallow: a compressed wrapper is one message), over its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LegacyMessage {
    /// Offset (for a magic-1 wrapper: the offset of its last inner message).
    pub offset: i64,
    /// 0 or 1.
    pub magic: i8,
    /// Stored CRC-32.
    pub crc: u32,
    /// Codec bits and (magic 1) the timestamp-type bit.
    pub attributes: i8,
    /// Timestamp (magic 1), or -1 for magic 0.
    pub timestamp: i64,
    /// Key, `None` when null.
    pub key: Option<Bytes>,
    /// Value, `None` when null (for a wrapper: the compressed inner set).
    pub value: Option<Bytes>,
    bytes: Bytes,
}

/// A record read out of a legacy message set (inner messages of wrappers are flattened).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LegacyRecord {
    /// Absolute offset.
    pub offset: i64,
    /// Magic of the message.
    pub magic: i8,
    /// Timestamp (the wrapper's for `LogAppendTime` wrappers), -1 for magic 0.
    pub timestamp: i64,
    /// Timestamp type (always `CreateTime` for magic 0).
    pub timestamp_type: TimestampType,
    /// Key.
    pub key: Option<Bytes>,
    /// Value.
    pub value: Option<Bytes>,
}

impl LegacyMessage {
    /// Parses the message at the start of `bytes`, keeping exactly its bytes. The CRC is not
    /// checked ([`LegacyMessage::validate_crc`]).
    pub fn parse(bytes: Bytes) -> Result<LegacyMessage, RecordsError> {
        if bytes.len() < LOG_OVERHEAD {
            return Err(RecordsError::Truncated {
                needed: LOG_OVERHEAD,
                available: bytes.len(),
            });
        }
        let size = be_i32(&bytes, 8);
        if size < LEGACY_MIN_SIZE as i32 {
            return Err(RecordsError::InvalidLength {
                what: "legacy message",
                length: size as i64,
            });
        }
        let total = LOG_OVERHEAD + size as usize;
        if bytes.len() < total {
            return Err(RecordsError::Truncated {
                needed: total,
                available: bytes.len(),
            });
        }
        let bytes = bytes.slice(..total);
        let magic = bytes[MAGIC_AT] as i8;
        let mut pos = match magic {
            0 => TIMESTAMP_AT,
            1 => {
                if (size as usize) < LEGACY_V1_MIN_SIZE {
                    return Err(RecordsError::InvalidLength {
                        what: "legacy message",
                        length: size as i64,
                    });
                }
                TIMESTAMP_AT + 8
            }
            2 => {
                return Err(RecordsError::UnexpectedMagic {
                    found: 2,
                    expected: 1,
                })
            }
            m => return Err(RecordsError::UnknownMagic(m)),
        };
        let timestamp = if magic == 1 {
            be_i64(&bytes, TIMESTAMP_AT)
        } else {
            NO_TIMESTAMP
        };
        let key = read_sized(&bytes, &mut pos, "legacy key")?;
        let value = read_sized(&bytes, &mut pos, "legacy value")?;
        if pos != total {
            return Err(RecordsError::InvalidRecord(
                "legacy message fields do not add up to its size",
            ));
        }
        Ok(LegacyMessage {
            offset: be_i64(&bytes, 0),
            magic,
            crc: be_u32(&bytes, CRC_AT),
            attributes: bytes[ATTRIBUTES_AT] as i8,
            timestamp,
            key,
            value,
            bytes,
        })
    }

    /// The bytes of the whole message.
    pub fn as_bytes(&self) -> &Bytes {
        &self.bytes
    }

    /// CRC-32 (IEEE) computed over magic..end.
    pub fn compute_crc(&self) -> u32 {
        crc32fast::hash(&self.bytes[MAGIC_AT..])
    }

    /// Checks the stored CRC ([`RecordsError::CorruptCrc`] otherwise).
    pub fn validate_crc(&self) -> Result<(), RecordsError> {
        let actual = self.compute_crc();
        if actual != self.crc {
            return Err(RecordsError::CorruptCrc {
                expected: self.crc,
                actual,
            });
        }
        Ok(())
    }

    /// The codec; zstd and the unused ids are [`RecordsError::UnknownCompression`] (legacy
    /// messages cannot use zstd).
    pub fn compression(&self) -> Result<Compression, RecordsError> {
        match (self.attributes & LEGACY_COMPRESSION_MASK) as u8 {
            id @ 0..=3 => Compression::from_id(id),
            id => Err(RecordsError::UnknownCompression(id)),
        }
    }

    /// The timestamp type (magic 1 only; magic 0 has none and reports `CreateTime`).
    pub fn timestamp_type(&self) -> TimestampType {
        if self.magic > 0 && self.attributes & LEGACY_TIMESTAMP_TYPE_BIT != 0 {
            TimestampType::LogAppendTime
        } else {
            TimestampType::CreateTime
        }
    }

    /// The records of this message: itself when uncompressed, else its inner messages (each CRC
    /// checked) with absolute offsets and effective timestamps. Decompression is bounded by `limits`.
    pub fn records(&self, limits: &DecompressLimits) -> Result<Vec<LegacyRecord>, RecordsError> {
        self.records_and_inflated_size(limits).map(|(r, _)| r)
    }

    /// The records, and how many decompressed bytes they hold on to (0 when uncompressed).
    fn records_and_inflated_size(
        &self,
        limits: &DecompressLimits,
    ) -> Result<(Vec<LegacyRecord>, usize), RecordsError> {
        let codec = self.compression()?;
        if codec == Compression::None {
            return Ok((
                vec![LegacyRecord {
                    offset: self.offset,
                    magic: self.magic,
                    timestamp: self.timestamp,
                    timestamp_type: self.timestamp_type(),
                    key: self.key.clone(),
                    value: self.value.clone(),
                }],
                0,
            ));
        }
        let Some(value) = &self.value else {
            return Err(RecordsError::InvalidRecord(
                "compressed legacy message without value",
            ));
        };
        let inner = if codec == Compression::Lz4 && self.magic == 0 {
            decompress_lz4_legacy_v0(value, limits)?
        } else {
            decompress(codec, value, limits)?
        };
        let inflated = inner.len();
        let mut out = Vec::new();
        for m in LegacyMessageSet::new(Bytes::from(inner)) {
            let m = m?;
            m.validate_crc()?;
            if m.compression()? != Compression::None {
                return Err(RecordsError::InvalidRecord(
                    "compressed legacy message inside a compressed message",
                ));
            }
            if m.magic != self.magic {
                return Err(RecordsError::InvalidRecord(
                    "inner legacy message magic differs from its wrapper",
                ));
            }
            out.push(LegacyRecord {
                offset: m.offset,
                magic: m.magic,
                timestamp: m.timestamp,
                timestamp_type: self.timestamp_type(),
                key: m.key,
                value: m.value,
            });
        }
        let Some(last) = out.last() else {
            return Err(RecordsError::InvalidRecord(
                "compressed legacy message with no inner messages",
            ));
        };
        if self.magic == 1 {
            // Producers (kafka-python, some librdkafka versions) send a wrapper offset of 0; Kafka
            // then takes the inner offsets as they are (`AbstractLegacyRecordBatch`).
            let base = if self.offset == 0 {
                0
            } else if last.offset > self.offset {
                return Err(RecordsError::InvalidRecord(
                    "wrapper offset below its last inner offset",
                ));
            } else {
                self.offset - last.offset
            };
            for r in &mut out {
                r.offset = base.wrapping_add(r.offset);
                if self.timestamp_type() == TimestampType::LogAppendTime {
                    r.timestamp = self.timestamp;
                }
            }
        }
        Ok((out, inflated))
    }
}

fn read_sized(
    bytes: &Bytes,
    pos: &mut usize,
    what: &'static str,
) -> Result<Option<Bytes>, RecordsError> {
    if bytes.len() - *pos < 4 {
        return Err(RecordsError::InvalidRecord(
            "legacy message fields exceed its size",
        ));
    }
    let len = be_i32(bytes, *pos);
    *pos += 4;
    if len == -1 {
        return Ok(None);
    }
    if len < 0 || len as usize > bytes.len() - *pos {
        return Err(RecordsError::InvalidLength {
            what,
            length: len as i64,
        });
    }
    let start = *pos;
    *pos += len as usize;
    Ok(Some(bytes.slice(start..*pos)))
}

/// Iterator over the (shallow) messages of a legacy message set; a v2 batch in it is
/// [`RecordsError::UnexpectedMagic`]. Errors end the iteration; a torn tail is
/// [`RecordsError::Truncated`].
///
/// ```
/// use josef_records::{LegacyMessageSet, LegacySetBuilder, Compression, DecompressLimits};
/// let set = LegacySetBuilder::new(1)
///     .compression(Compression::Gzip)
///     .base_offset(10)
///     .record(5, Some(b"k"), Some(b"v"))
///     .record(6, None, None)
///     .build()
///     .unwrap()
///     .freeze();
/// let wrappers: Vec<_> = LegacyMessageSet::new(set).collect::<Result<_, _>>().unwrap();
/// assert_eq!(wrappers.len(), 1);
/// wrappers[0].validate_crc().unwrap();
/// let records = wrappers[0].records(&DecompressLimits::default()).unwrap();
/// assert_eq!(records[1].offset, 11);
/// assert_eq!(records[1].value, None);
/// ```
#[derive(Debug, Clone)]
pub struct LegacyMessageSet {
    inner: AnyBatches,
}

impl LegacyMessageSet {
    /// Iterates the messages of `bytes`.
    pub fn new(bytes: Bytes) -> LegacyMessageSet {
        LegacyMessageSet {
            inner: AnyBatches::new(bytes),
        }
    }

    /// Bytes covered by the messages yielded so far.
    pub fn position(&self) -> usize {
        self.inner.position()
    }

    /// All records of the set: every message's CRC checked, wrappers decompressed, offsets made
    /// absolute. `limits` bounds the decompressed bytes of all wrappers *together*, since the
    /// records keep them alive: many small wrappers cannot add up to more than the limit.
    pub fn records(self, limits: &DecompressLimits) -> Result<Vec<LegacyRecord>, RecordsError> {
        let limit = limits.max_decompressed_bytes;
        let mut used = 0usize;
        let mut out = Vec::new();
        for m in self {
            let m = m?;
            m.validate_crc()?;
            let (records, inflated) =
                m.records_and_inflated_size(&DecompressLimits::new(limit - used))?;
            used += inflated;
            out.extend(records);
        }
        Ok(out)
    }
}

impl Iterator for LegacyMessageSet {
    type Item = Result<LegacyMessage, RecordsError>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.inner.next()? {
            Ok(AnyBatch::Legacy(m)) => Some(Ok(m)),
            Ok(AnyBatch::V2(_)) => {
                // Stop here: the rest of the buffer is not a legacy set.
                self.inner = AnyBatches::new(Bytes::new());
                Some(Err(RecordsError::UnexpectedMagic {
                    found: 2,
                    expected: 1,
                }))
            }
            Err(e) => Some(Err(e)),
        }
    }
}

/// How [`legacy_to_v2`] builds the v2 batch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LegacyConversion {
    /// Codec of the v2 batch.
    pub compression: Compression,
    /// Keep the legacy offsets (as offset deltas from the first one; they must increase), instead
    /// of numbering records 0, 1, 2 … from base offset 0 as the append path does before it assigns
    /// offsets.
    pub keep_offsets: bool,
}

/// Converts a legacy message set (magic 0/1, any codec) into one v2 batch, like Kafka's up-conversion
/// on append: CRCs are checked, wrappers decompressed, keys/values/timestamps kept (magic 0 has
/// no timestamp: -1). If the messages used `LogAppendTime`, so does the batch, with the largest
/// timestamp as the append time. Producer fields are unset (-1).
///
/// ```
/// use josef_records::{legacy_to_v2, LegacyConversion, LegacySetBuilder, RecordBatch, DecompressLimits};
/// let set = LegacySetBuilder::new(0).record(-1, Some(b"k"), Some(b"v")).build().unwrap();
/// let v2 = legacy_to_v2(set.freeze(), &DecompressLimits::default(), &LegacyConversion::default()).unwrap();
/// let batch = RecordBatch::parse(v2.freeze()).unwrap();
/// let r = batch.records(&DecompressLimits::default()).unwrap().next().unwrap().unwrap();
/// assert_eq!(r.value.as_deref(), Some(&b"v"[..]));
/// ```
pub fn legacy_to_v2(
    set: Bytes,
    limits: &DecompressLimits,
    conversion: &LegacyConversion,
) -> Result<BytesMut, RecordsError> {
    let records = LegacyMessageSet::new(set).records(limits)?;
    let mut b = RecordBatchBuilder::new().compression(conversion.compression);
    let base_offset = match (conversion.keep_offsets, records.first()) {
        (true, Some(first)) => first.offset,
        _ => 0,
    };
    b = b.base_offset(base_offset);
    let mut log_append_time = None;
    for (i, r) in records.into_iter().enumerate() {
        let delta = if conversion.keep_offsets {
            i32::try_from(r.offset.wrapping_sub(base_offset))
                .map_err(|_| RecordsError::Build("legacy offsets span more than 2^31"))?
        } else {
            i32::try_from(i).map_err(|_| RecordsError::Build("too many records"))?
        };
        if r.timestamp_type == TimestampType::LogAppendTime {
            log_append_time = Some(log_append_time.unwrap_or(NO_TIMESTAMP).max(r.timestamp));
        }
        b.push_with_offset_delta(delta, r.timestamp, r.key, r.value, Vec::new())?;
    }
    if let Some(t) = log_append_time {
        b = b.log_append_time(t);
    }
    b.build()
}

/// Writes a legacy message set: one message per record when uncompressed, else one wrapper.
///
/// Offsets are `base_offset`, `base_offset + 1`, …; a magic-1 wrapper stores relative inner offsets
/// and the last absolute offset, a magic-0 wrapper absolute inner offsets (as Kafka's broker wrote).
#[derive(Debug, Clone)]
pub struct LegacySetBuilder {
    magic: i8,
    compression: Compression,
    timestamp_type: TimestampType,
    log_append_time: i64,
    base_offset: i64,
    records: Vec<(i64, Option<Bytes>, Option<Bytes>)>,
}

impl LegacySetBuilder {
    /// A builder for magic 0 or 1 (other values are rejected by `build`).
    pub fn new(magic: i8) -> LegacySetBuilder {
        LegacySetBuilder {
            magic,
            compression: Compression::None,
            timestamp_type: TimestampType::CreateTime,
            log_append_time: NO_TIMESTAMP,
            base_offset: 0,
            records: Vec::new(),
        }
    }

    /// Sets the codec (zstd is rejected by `build`).
    pub fn compression(mut self, codec: Compression) -> Self {
        self.compression = codec;
        self
    }

    /// Marks the messages `LogAppendTime` with append time `ts` (magic 1 only).
    pub fn log_append_time(mut self, ts: i64) -> Self {
        self.timestamp_type = TimestampType::LogAppendTime;
        self.log_append_time = ts;
        self
    }

    /// Sets the first offset.
    pub fn base_offset(mut self, offset: i64) -> Self {
        self.base_offset = offset;
        self
    }

    /// Adds a record (the timestamp is ignored for magic 0).
    pub fn record(mut self, timestamp: i64, key: Option<&[u8]>, value: Option<&[u8]>) -> Self {
        self.records.push((
            timestamp,
            key.map(Bytes::copy_from_slice),
            value.map(Bytes::copy_from_slice),
        ));
        self
    }

    /// Writes the set.
    pub fn build(self) -> Result<BytesMut, RecordsError> {
        if !(0..=1).contains(&self.magic) {
            return Err(RecordsError::UnknownMagic(self.magic));
        }
        let entries: Vec<LegacyEntry<'_>> = self
            .records
            .iter()
            .enumerate()
            .map(|(i, (t, k, v))| LegacyEntry {
                offset: self.base_offset.wrapping_add(i as i64),
                timestamp: *t,
                key: k.as_deref(),
                value: v.as_deref(),
            })
            .collect();
        let log_append_time =
            (self.timestamp_type == TimestampType::LogAppendTime).then_some(self.log_append_time);
        let mut out = BytesMut::new();
        write_legacy_set(
            &mut out,
            self.magic,
            self.compression,
            log_append_time,
            &entries,
        )?;
        Ok(out)
    }
}

/// One record to write into a legacy set: its absolute offset, timestamp, key and value.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LegacyEntry<'a> {
    pub(crate) offset: i64,
    pub(crate) timestamp: i64,
    pub(crate) key: Option<&'a [u8]>,
    pub(crate) value: Option<&'a [u8]>,
}

/// Appends `entries` to `out` as Kafka's `MemoryRecordsBuilder` writes a legacy set: one message
/// per entry when `codec` is none, else one wrapper whose offset is the last entry's and whose
/// value is the compressed inner set (relative inner offsets for magic 1, absolute for magic 0).
/// With `log_append_time` (magic 1) every timestamp, inner and outer, is that time and every
/// message carries the timestamp-type bit; otherwise a magic-1 wrapper's timestamp is the largest
/// inner one. A magic-0 lz4 wrapper gets the header checksum Kafka's old writer computed
/// (`KafkaLZ4BlockOutputStream`, broken flag-descriptor checksum), as Kafka still writes it.
pub(crate) fn write_legacy_set(
    out: &mut BytesMut,
    magic: i8,
    codec: Compression,
    log_append_time: Option<i64>,
    entries: &[LegacyEntry<'_>],
) -> Result<(), RecordsError> {
    if !(0..=1).contains(&magic) {
        return Err(RecordsError::UnknownMagic(magic));
    }
    if codec == Compression::Zstd {
        return Err(RecordsError::UnknownCompression(Compression::Zstd.id()));
    }
    let log_append_time = if magic == 0 { None } else { log_append_time };
    let ts_bit = if log_append_time.is_some() {
        LEGACY_TIMESTAMP_TYPE_BIT
    } else {
        0
    };
    if codec == Compression::None {
        for e in entries {
            let ts = log_append_time.unwrap_or(e.timestamp);
            write_message(out, magic, e.offset, ts_bit, ts, e.key, e.value)?;
        }
        return Ok(());
    }
    let (Some(first), Some(last)) = (entries.first(), entries.last()) else {
        return Ok(());
    };
    let mut inner = BytesMut::new();
    let mut max_ts = NO_TIMESTAMP;
    for e in entries {
        let offset = if magic == 1 {
            e.offset.wrapping_sub(first.offset)
        } else {
            e.offset
        };
        let ts = log_append_time.unwrap_or(e.timestamp);
        max_ts = max_ts.max(ts);
        write_message(&mut inner, magic, offset, ts_bit, ts, e.key, e.value)?;
    }
    let mut value = compress(
        codec,
        &inner,
        &CompressionOptions {
            snappy_framing: crate::SnappyFraming::Xerial,
            ..Default::default()
        },
    )?;
    if codec == Compression::Lz4 && magic == 0 {
        break_lz4_header_checksum_v0(&mut value);
    }
    write_message(
        out,
        magic,
        last.offset,
        codec.id() as i8 | ts_bit,
        log_append_time.unwrap_or(max_ts),
        None,
        Some(&value),
    )
}

fn write_message(
    out: &mut BytesMut,
    magic: i8,
    offset: i64,
    attributes: i8,
    timestamp: i64,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
) -> Result<(), RecordsError> {
    let len_of = |b: Option<&[u8]>| b.map_or(0, <[u8]>::len);
    let size = 4 + 1 + 1 + if magic == 1 { 8 } else { 0 } + 4 + len_of(key) + 4 + len_of(value);
    let size = i32::try_from(size).map_err(|_| RecordsError::Build("message larger than 2 GiB"))?;
    let start = out.len();
    out.put_i64(offset);
    out.put_i32(size);
    out.put_u32(0);
    out.put_i8(magic);
    out.put_i8(attributes);
    if magic == 1 {
        out.put_i64(timestamp);
    }
    for b in [key, value] {
        match b {
            None => out.put_i32(-1),
            Some(b) => {
                out.put_i32(b.len() as i32);
                out.put_slice(b);
            }
        }
    }
    let crc = crc32fast::hash(&out[start + MAGIC_AT..]);
    out[start + CRC_AT..start + CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_wrapper_inner_offsets_are_relative_to_the_wrapper() {
        let set = LegacySetBuilder::new(1)
            .compression(Compression::Snappy)
            .base_offset(100)
            .record(1, Some(b"a"), Some(b"1"))
            .record(2, Some(b"b"), Some(b"2"))
            .record(3, Some(b"c"), Some(b"3"))
            .build()
            .unwrap()
            .freeze();
        let m = LegacyMessageSet::new(set).next().unwrap().unwrap();
        assert_eq!(m.offset, 102);
        let recs = m.records(&DecompressLimits::default()).unwrap();
        assert_eq!(
            recs.iter().map(|r| r.offset).collect::<Vec<_>>(),
            [100, 101, 102]
        );
    }

    /// Rewrites the offset of the first (wrapper) message and fixes nothing else: offsets are
    /// not covered by the CRC.
    fn with_wrapper_offset(set: &BytesMut, offset: i64) -> Bytes {
        let mut s = set.clone();
        s[..8].copy_from_slice(&offset.to_be_bytes());
        s.freeze()
    }

    #[test]
    fn v1_wrapper_offset_zero_keeps_inner_offsets_like_kafka() {
        let set = LegacySetBuilder::new(1)
            .compression(Compression::Gzip)
            .record(1, None, Some(b"1"))
            .record(2, None, Some(b"2"))
            .build()
            .unwrap();
        let limits = DecompressLimits::default();
        let zero = LegacyMessageSet::new(with_wrapper_offset(&set, 0)).records(&limits);
        let offsets: Vec<i64> = zero.unwrap().iter().map(|r| r.offset).collect();
        assert_eq!(offsets, [0, 1]);
        let at_50 = LegacyMessageSet::new(with_wrapper_offset(&set, 50)).records(&limits);
        let offsets: Vec<i64> = at_50.unwrap().iter().map(|r| r.offset).collect();
        assert_eq!(offsets, [49, 50]);
        // A non-zero wrapper offset below the last relative offset is invalid.
        let bad = LegacyMessageSet::new(with_wrapper_offset(&set, -3)).records(&limits);
        assert!(matches!(bad, Err(RecordsError::InvalidRecord(_))));
    }

    #[test]
    fn v1_log_append_time_wrapper_timestamp_applies_to_inner() {
        let set = LegacySetBuilder::new(1)
            .compression(Compression::Gzip)
            .log_append_time(999)
            .record(1, None, Some(b"1"))
            .record(2, None, Some(b"2"))
            .build()
            .unwrap()
            .freeze();
        let recs = LegacyMessageSet::new(set)
            .records(&DecompressLimits::default())
            .unwrap();
        assert!(recs
            .iter()
            .all(|r| r.timestamp == 999 && r.timestamp_type == TimestampType::LogAppendTime));
    }

    #[test]
    fn legacy_crc_mismatch_is_corrupt_crc() {
        let mut set = LegacySetBuilder::new(0)
            .record(0, Some(b"k"), Some(b"v"))
            .build()
            .unwrap();
        let n = set.len();
        set[n - 1] ^= 1;
        let m = LegacyMessageSet::new(set.freeze()).next().unwrap().unwrap();
        assert!(matches!(
            m.validate_crc(),
            Err(RecordsError::CorruptCrc { .. })
        ));
    }

    #[test]
    fn legacy_key_length_past_the_end_is_invalid_length() {
        let mut set = LegacySetBuilder::new(0)
            .record(0, Some(b"k"), Some(b"v"))
            .build()
            .unwrap();
        set[18..22].copy_from_slice(&1000i32.to_be_bytes());
        let err = LegacyMessageSet::new(set.freeze())
            .next()
            .unwrap()
            .unwrap_err();
        assert!(matches!(
            err,
            RecordsError::InvalidLength {
                what: "legacy key",
                ..
            }
        ));
    }

    #[test]
    fn many_wrappers_share_one_decompression_budget() {
        let mut set = BytesMut::new();
        for i in 0..4 {
            let w = LegacySetBuilder::new(1)
                .compression(Compression::Gzip)
                .base_offset(i)
                .record(1, None, Some(&[0u8; 1000]))
                .build()
                .unwrap();
            set.extend_from_slice(&w);
        }
        let set = set.freeze();
        // Each wrapper inflates to ~1.03 KB: alone each fits 2 KB, all four do not.
        let err = LegacyMessageSet::new(set.clone())
            .records(&DecompressLimits::new(2000))
            .unwrap_err();
        assert_eq!(
            err,
            RecordsError::DecompressedTooLarge { limit: 2000 - 1034 }
        );
        assert_eq!(
            LegacyMessageSet::new(set)
                .records(&DecompressLimits::new(5000))
                .unwrap()
                .len(),
            4
        );
    }

    #[test]
    fn legacy_zstd_is_unknown_compression() {
        assert!(LegacySetBuilder::new(1)
            .compression(Compression::Zstd)
            .build()
            .is_err());
    }
}
