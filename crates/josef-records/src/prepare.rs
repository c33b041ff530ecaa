//! The produce-side preparation of one partition's records in one call: what a broker does to a
//! client's bytes between the request and the log append. Legacy message sets (Produce v0–v2) are
//! up-converted to one v2 batch, the batch is validated ([`crate::validate`], Kafka's
//! `LogValidator`), rebuilt in the topic's `compression.type` (or with consecutive inner offsets),
//! and on a CreateTime topic its header gets Kafka's `setMaxTimestamp` fix.
//!
//! The usual batch (v2, already in the topic's codec or `producer`, right max timestamp) comes back
//! as the request's own bytes ([`PreparedRecords::Shared`], a reference count, no copy); only a
//! batch that has to change is copied or rebuilt.
//!
//! ```
//! use bytes::Bytes;
//! use josef_records::prepare::{prepare_client_batch, PreparedRecords, ProduceFormat};
//! use josef_records::validate::ValidationConfig;
//! use josef_records::RecordBatchBuilder;
//! let now = 1_700_000_000_000;
//! let batch = RecordBatchBuilder::new().record(now, Some(b"k"), Some(b"v")).build_bytes().unwrap();
//! let format = ProduceFormat::for_version(9);
//! let p = prepare_client_batch(&batch, format, &ValidationConfig::default(), now).unwrap();
//! assert!(matches!(p.records, PreparedRecords::Shared(ref b) if b.as_ptr() == batch.as_ptr()));
//! ```

use bytes::{Bytes, BytesMut};

use crate::header::offsets;
use crate::validate::{
    codes, produce_batch_header, rebuild_with_compression, validate_client_batch, RecordError,
    ValidationConfig, ValidationError,
};
use crate::{
    legacy_to_v2, set_max_timestamp, BatchHeader, Compression, LegacyConversion, LegacyMessageSet,
    RecordsError,
};

/// What the Produce request's version allows in its records (Kafka's
/// `ProduceRequest.validateRecords`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProduceFormat {
    /// Produce v0–v2: the records may be a legacy message set (magic 0 or 1).
    pub legacy_message_sets: bool,
    /// Produce v7+: zstd-compressed batches are allowed.
    pub zstd: bool,
}

impl ProduceFormat {
    /// The rules of a Produce request of `version`.
    pub fn for_version(version: i16) -> Self {
        ProduceFormat {
            legacy_message_sets: version < 3,
            zstd: version >= 7,
        }
    }

    /// Whether `records` are a legacy message set this request may carry. A v2 batch in an old
    /// request is taken as it is.
    fn is_legacy(&self, records: &[u8]) -> bool {
        self.legacy_message_sets && records.get(offsets::MAGIC).is_some_and(|&magic| magic < 2)
    }
}

/// Why a partition's records cannot be appended. [`PrepareError::kafka_error_code`] gives the
/// Produce partition error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PrepareError {
    /// A zstd batch in a Produce request older than v7.
    #[error("zstd-compressed record batches need Produce v7 or later")]
    UnsupportedCompression,
    /// A legacy message set (Produce v0–v2) with no message in it.
    #[error("the legacy message set holds no message")]
    EmptyLegacySet,
    /// A legacy message set that cannot be read or converted (a bad CRC, mixed magics, ...).
    #[error("cannot up-convert the legacy message set: {0}")]
    UpConversion(RecordsError),
    /// The v2 batch broke a rule of [`crate::validate`].
    #[error(transparent)]
    Invalid(#[from] ValidationError),
    /// A validated batch could not be rebuilt or its header fixed.
    #[error("{0}")]
    Rewrite(RecordsError),
}

impl PrepareError {
    /// The Kafka error code of the Produce partition response.
    pub fn kafka_error_code(&self) -> i16 {
        match self {
            PrepareError::UnsupportedCompression => codes::UNSUPPORTED_COMPRESSION_TYPE,
            PrepareError::UpConversion(RecordsError::CorruptCrc { .. })
            | PrepareError::Rewrite(_) => codes::CORRUPT_MESSAGE,
            PrepareError::EmptyLegacySet | PrepareError::UpConversion(_) => codes::INVALID_RECORD,
            PrepareError::Invalid(e) => e.kafka_error_code(),
        }
    }

    /// The Produce v8+ `error_message`: Kafka sends one for record-level errors
    /// (`RecordValidationException`); a batch that could not be rewritten says why too. Other
    /// failures answer with the code alone.
    pub fn error_message(&self) -> Option<String> {
        match self {
            PrepareError::Invalid(e) if e.is_record_level() => Some(e.to_string()),
            PrepareError::Rewrite(_) => Some(self.to_string()),
            _ => None,
        }
    }

    /// The per-record errors (Produce v8+ `record_errors`; empty unless a record broke a rule).
    pub fn into_record_errors(self) -> Vec<RecordError> {
        match self {
            PrepareError::Invalid(ValidationError::Records { errors, .. }) => errors,
            _ => Vec::new(),
        }
    }
}

/// The records to append, as the log takes them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PreparedRecords {
    /// The request's own bytes, unchanged (the log writes offsets and epoch into a copy of the
    /// header only).
    Shared(Bytes),
    /// A batch the broker wrote or changed (up-converted, recompressed, timestamp fixed), CRC
    /// recomputed.
    Owned(BytesMut),
}

/// A batch ready to append.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreparedBatch {
    /// The header of the validated v2 batch (the up-converted one for a legacy set). A rebuild
    /// keeps what the append needs of it: producer id, epoch, sequence, transactional flag and
    /// record count.
    pub header: BatchHeader,
    /// The bytes to append.
    pub records: PreparedRecords,
}

/// The framing check Kafka runs first, before the acks and internal-topic checks
/// (`ProduceRequest.validateRecords`): a v3+ request (or a v2 batch in an older one) must hold
/// exactly one whole v2 batch, and zstd needs Produce v7. A legacy set is checked when it is
/// converted. [`prepare_client_batch`] repeats this.
pub fn check_produce_records(records: &[u8], format: ProduceFormat) -> Result<(), PrepareError> {
    if format.is_legacy(records) {
        return Ok(());
    }
    let header = produce_batch_header(records)?;
    if header.attributes.compression_id() == Compression::Zstd.id() && !format.zstd {
        return Err(PrepareError::UnsupportedCompression);
    }
    Ok(())
}

/// Prepares one partition's records of a Produce request for the append: framing, up-conversion
/// of a legacy set, validation against `config` at broker time `now_ms`, recompression, the
/// CreateTime max-timestamp fix. Nothing of a refused batch may be appended.
pub fn prepare_client_batch(
    records: &Bytes,
    format: ProduceFormat,
    config: &ValidationConfig,
    now_ms: i64,
) -> Result<PreparedBatch, PrepareError> {
    check_produce_records(records, format)?;
    let converted = if format.is_legacy(records) {
        Some(up_convert(records, config)?)
    } else {
        None
    };
    let batch: &[u8] = converted.as_deref().unwrap_or(records);
    let validated = validate_client_batch(batch, config, now_ms)?;
    let rebuilt = match validated.rebuild_codec(config) {
        Some(codec) => Some(
            rebuild_with_compression(batch, codec, &config.decompress_limits)
                .map_err(PrepareError::Rewrite)?,
        ),
        None => converted,
    };
    let records = match (rebuilt, validated.header_timestamp_fix(config)) {
        (None, None) => PreparedRecords::Shared(records.clone()),
        (rebuilt, fix) => {
            // Not rebuilt means not converted either: the batch is the request's bytes, copied
            // only because its header changes.
            let mut owned = rebuilt.unwrap_or_else(|| BytesMut::from(&records[..]));
            if let Some((timestamp_type, max_timestamp)) = fix {
                set_max_timestamp(&mut owned, timestamp_type, max_timestamp)
                    .map_err(PrepareError::Rewrite)?;
            }
            PreparedRecords::Owned(owned)
        }
    };
    Ok(PreparedBatch {
        header: validated.header,
        records,
    })
}

/// A legacy message set as one v2 batch in the topic's `compression.type`, or the codec of its
/// first message for `producer` (Kafka's `convertAndAssignOffsetsNonCompressed` /
/// `buildRecordsAndAssignOffsets`). Every message CRC (and every inner one of a compressed
/// wrapper) is checked.
fn up_convert(records: &Bytes, config: &ValidationConfig) -> Result<BytesMut, PrepareError> {
    let codec = match LegacyMessageSet::new(records.clone()).next() {
        Some(Ok(first)) => first.compression().map_err(PrepareError::UpConversion)?,
        Some(Err(e)) => return Err(PrepareError::UpConversion(e)),
        None => return Err(PrepareError::EmptyLegacySet),
    };
    let conversion = LegacyConversion {
        compression: config.target_compression.unwrap_or(codec),
        keep_offsets: false,
    };
    legacy_to_v2(records.clone(), &config.decompress_limits, &conversion)
        .map_err(PrepareError::UpConversion)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{write_crc, Batches, DecompressLimits, LegacySetBuilder, RecordBatchBuilder};
    use crate::{TimestampType, BATCH_HEADER_LEN};

    const NOW: i64 = 1_700_000_000_000;
    const V9: i16 = 9;

    fn prepare(records: &Bytes, version: i16, config: &ValidationConfig) -> PreparedBatch {
        prepare_client_batch(records, ProduceFormat::for_version(version), config, NOW).unwrap()
    }

    fn refuse(records: &Bytes, version: i16, config: &ValidationConfig) -> PrepareError {
        prepare_client_batch(records, ProduceFormat::for_version(version), config, NOW).unwrap_err()
    }

    fn owned(p: &PreparedBatch) -> &[u8] {
        match &p.records {
            PreparedRecords::Owned(b) => b,
            PreparedRecords::Shared(_) => panic!("expected a rewritten batch"),
        }
    }

    /// Keys and values of the one v2 batch in `bytes`, after a CRC check.
    fn contents(bytes: &[u8]) -> Vec<(i64, Option<Bytes>, Option<Bytes>)> {
        let mut batches = Batches::new(Bytes::copy_from_slice(bytes));
        let batch = batches.next().unwrap().unwrap();
        batch.validate_crc().unwrap();
        assert!(batches.next().is_none());
        batch
            .records(&DecompressLimits::default())
            .unwrap()
            .map(|r| {
                let r = r.unwrap();
                (r.timestamp, r.key, r.value)
            })
            .collect()
    }

    #[test]
    fn an_acceptable_batch_is_appended_as_sent_without_a_copy() {
        let b = RecordBatchBuilder::new()
            .compression(Compression::Lz4)
            .record(NOW, Some(b"k"), Some(b"v"))
            .build_bytes()
            .unwrap();
        let p = prepare(&b, V9, &ValidationConfig::default());
        match p.records {
            PreparedRecords::Shared(s) => assert_eq!(s.as_ptr(), b.as_ptr()),
            other => panic!("copied: {other:?}"),
        }
        assert_eq!(p.header.record_count, 1);
    }

    #[test]
    fn a_timestamp_out_of_range_is_invalid_timestamp_with_its_record() {
        let b = RecordBatchBuilder::new()
            .record(NOW, Some(b"k"), Some(b"v"))
            .record(NOW - 10_000, Some(b"k"), Some(b"v"))
            .build_bytes()
            .unwrap();
        let config = ValidationConfig {
            timestamp_before_max_ms: 1_000,
            ..ValidationConfig::default()
        };
        let e = refuse(&b, V9, &config);
        assert_eq!(e.kafka_error_code(), codes::INVALID_TIMESTAMP);
        assert!(e.error_message().is_some());
        let errors = e.into_record_errors();
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].batch_index, 1);
        // Inside the bound it goes through.
        prepare(&b, V9, &ValidationConfig::default());
    }

    #[test]
    fn a_record_without_key_on_a_compacted_topic_is_invalid_record() {
        let b = RecordBatchBuilder::new()
            .record(NOW, None, Some(b"v"))
            .build_bytes()
            .unwrap();
        let compacted = ValidationConfig {
            compacted: true,
            ..ValidationConfig::default()
        };
        let e = refuse(&b, V9, &compacted);
        assert_eq!(e.kafka_error_code(), codes::INVALID_RECORD);
        assert_eq!(e.into_record_errors()[0].batch_index, 0);
    }

    #[test]
    fn a_batch_is_recompressed_to_the_topics_compression_type() {
        let b = RecordBatchBuilder::new()
            .compression(Compression::Snappy)
            .producer(7, 1, 0)
            .record(NOW, Some(b"k"), Some(b"v"))
            .record(NOW + 1, Some(b"k2"), None)
            .build_bytes()
            .unwrap();
        let config = ValidationConfig {
            target_compression: Some(Compression::Gzip),
            ..ValidationConfig::default()
        };
        let p = prepare(&b, V9, &config);
        let out = owned(&p);
        let h = BatchHeader::parse(out).unwrap();
        assert_eq!(h.compression().unwrap(), Compression::Gzip);
        assert_eq!(
            (h.producer_id, h.producer_epoch, h.base_sequence),
            (7, 1, 0)
        );
        assert_eq!(contents(out), contents(&b));
        // `producer` keeps the producer's codec, and so does a topic of the same codec.
        for target in [None, Some(Compression::Snappy)] {
            let config = ValidationConfig {
                target_compression: target,
                ..ValidationConfig::default()
            };
            assert!(matches!(
                prepare(&b, V9, &config).records,
                PreparedRecords::Shared(_)
            ));
        }
    }

    #[test]
    fn a_legacy_message_set_is_up_converted_in_its_own_codec_or_the_topics() {
        let set: Bytes = LegacySetBuilder::new(1)
            .compression(Compression::Gzip)
            .record(NOW, Some(b"a"), Some(b"1"))
            .record(NOW + 5, Some(b"b"), Some(b"2"))
            .build()
            .unwrap()
            .freeze();
        let p = prepare(&set, 2, &ValidationConfig::default());
        let out = owned(&p);
        let h = BatchHeader::parse(out).unwrap();
        assert_eq!(h.magic, 2);
        assert_eq!(h.compression().unwrap(), Compression::Gzip);
        assert_eq!((h.record_count, h.max_timestamp), (2, NOW + 5));
        let records = contents(out);
        assert_eq!(records[1].0, NOW + 5);
        assert_eq!(records[1].1.as_deref(), Some(&b"b"[..]));
        let config = ValidationConfig {
            target_compression: Some(Compression::None),
            ..ValidationConfig::default()
        };
        let h = prepare(&set, 2, &config).header;
        assert_eq!(h.compression().unwrap(), Compression::None);
        // A legacy set is refused from Produce v3 on (magic 2 only).
        assert_eq!(
            refuse(&set, 3, &config).kafka_error_code(),
            codes::INVALID_RECORD
        );
    }

    #[test]
    fn a_legacy_message_set_with_a_bad_crc_is_corrupt_message() {
        let mut set = LegacySetBuilder::new(0)
            .record(0, Some(b"a"), Some(b"1"))
            .build()
            .unwrap();
        let last = set.len() - 1;
        set[last] ^= 0xff;
        let e = refuse(&set.freeze(), 0, &ValidationConfig::default());
        assert!(matches!(
            e,
            PrepareError::UpConversion(RecordsError::CorruptCrc { .. })
        ));
        assert_eq!(e.kafka_error_code(), codes::CORRUPT_MESSAGE);
        // Too short to carry a magic: no batch; a torn message: nothing to convert.
        let empty = refuse(&Bytes::new(), 0, &ValidationConfig::default());
        assert_eq!(empty, PrepareError::Invalid(ValidationError::NoBatch));
        let torn = refuse(&Bytes::from(vec![0u8; 20]), 0, &ValidationConfig::default());
        assert_eq!(torn.kafka_error_code(), codes::INVALID_RECORD, "{torn:?}");
    }

    #[test]
    fn a_batch_above_max_message_bytes_is_message_too_large() {
        let b = RecordBatchBuilder::new()
            .record(NOW, Some(b"k"), Some(&[0u8; 200]))
            .build_bytes()
            .unwrap();
        let config = ValidationConfig {
            max_batch_bytes: b.len() - 1,
            ..ValidationConfig::default()
        };
        let e = refuse(&b, V9, &config);
        assert_eq!(e.kafka_error_code(), codes::MESSAGE_TOO_LARGE);
        assert_eq!(e.error_message(), None);
        let config = ValidationConfig {
            max_batch_bytes: b.len(),
            ..ValidationConfig::default()
        };
        prepare(&b, V9, &config);
    }

    #[test]
    fn zstd_needs_produce_v7() {
        let b = RecordBatchBuilder::new()
            .compression(Compression::Zstd)
            .record(NOW, Some(b"k"), Some(b"v"))
            .build_bytes()
            .unwrap();
        let format = ProduceFormat::for_version(6);
        let e = check_produce_records(&b, format).unwrap_err();
        assert_eq!(e.kafka_error_code(), codes::UNSUPPORTED_COMPRESSION_TYPE);
        assert_eq!(refuse(&b, 6, &ValidationConfig::default()), e);
        prepare(&b, 7, &ValidationConfig::default());
    }

    #[test]
    fn a_wrong_max_timestamp_is_fixed_in_a_copy_on_a_create_time_topic() {
        let b = RecordBatchBuilder::new()
            .record(NOW, Some(b"k"), Some(b"v"))
            .build()
            .unwrap();
        let mut wrong = b.to_vec();
        let at = BatchHeader::parse(&wrong).unwrap();
        assert_eq!(at.max_timestamp, NOW);
        wrong[offsets::MAX_TIMESTAMP..offsets::MAX_TIMESTAMP + 8]
            .copy_from_slice(&(NOW - 1).to_be_bytes());
        write_crc(&mut wrong);
        let wrong = Bytes::from(wrong);
        let p = prepare(&wrong, V9, &ValidationConfig::default());
        let h = BatchHeader::parse(owned(&p)).unwrap();
        assert_eq!(h.max_timestamp, NOW);
        assert_eq!(&owned(&p)[BATCH_HEADER_LEN..], &wrong[BATCH_HEADER_LEN..]);
        // A LogAppendTime topic leaves it to the log, which stamps the batch itself.
        let lat = ValidationConfig {
            timestamp_type: TimestampType::LogAppendTime,
            ..ValidationConfig::default()
        };
        assert!(matches!(
            prepare(&wrong, V9, &lat).records,
            PreparedRecords::Shared(_)
        ));
    }
}
