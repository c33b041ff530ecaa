//! Bad input gives typed errors, never a panic or an allocation sized by an unchecked field.

use bytes::Bytes;
use josef_records::varint::put_varint;
use josef_records::{
    compress, write_crc, Batches, Compression, CompressionOptions, DecompressLimits, RecordBatch,
    RecordBatchBuilder, RecordsError,
};

/// A v2 batch with a hand-written records section, declared count and codec; CRC made valid.
fn batch_with_records(records: &[u8], count: i32, codec: Compression) -> Bytes {
    let mut b = RecordBatchBuilder::new()
        .compression(codec)
        .build()
        .unwrap()
        .to_vec();
    b.truncate(61);
    b.extend_from_slice(records);
    let len = (b.len() - 12) as i32;
    b[8..12].copy_from_slice(&len.to_be_bytes());
    b[57..61].copy_from_slice(&count.to_be_bytes());
    write_crc(&mut b);
    Bytes::from(b)
}

fn iterate(batch: Bytes) -> Result<usize, RecordsError> {
    let batch = RecordBatch::parse(batch)?;
    batch.validate_crc()?;
    let mut n = 0;
    for r in batch.records(&DecompressLimits::default())? {
        r?;
        n += 1;
    }
    Ok(n)
}

/// One record: attributes 0, deltas 0, key "k", value "v", no headers.
fn good_record() -> Vec<u8> {
    let body = [0u8, 0, 0, 2, b'k', 2, b'v', 0];
    let mut r = Vec::new();
    put_varint(&mut r, body.len() as i32);
    r.extend_from_slice(&body);
    r
}

#[test]
fn hand_written_record_is_valid() {
    assert_eq!(
        iterate(batch_with_records(&good_record(), 1, Compression::None)),
        Ok(1)
    );
}

#[test]
fn wrong_crc_is_corrupt_crc() {
    let mut b = batch_with_records(&good_record(), 1, Compression::None).to_vec();
    b[64] ^= 1;
    assert!(matches!(
        iterate(Bytes::from(b)),
        Err(RecordsError::CorruptCrc { .. })
    ));
}

#[test]
fn fewer_records_than_declared_is_count_mismatch() {
    assert_eq!(
        iterate(batch_with_records(&good_record(), 2, Compression::None)),
        Err(RecordsError::RecordCountMismatch {
            declared: 2,
            found: 1
        })
    );
}

#[test]
fn bytes_after_the_declared_records_are_count_mismatch() {
    let mut two = good_record();
    two.extend_from_slice(&good_record());
    assert_eq!(
        iterate(batch_with_records(&two, 1, Compression::None)),
        Err(RecordsError::RecordCountMismatch {
            declared: 1,
            found: 2
        })
    );
}

#[test]
fn huge_declared_record_count_allocates_nothing_and_fails() {
    assert_eq!(
        iterate(batch_with_records(
            &good_record(),
            i32::MAX,
            Compression::None
        )),
        Err(RecordsError::RecordCountMismatch {
            declared: i32::MAX as i64,
            found: 1
        })
    );
}

#[test]
fn negative_record_count_is_invalid_length() {
    assert!(matches!(
        iterate(batch_with_records(&good_record(), -1, Compression::None)),
        Err(RecordsError::InvalidLength {
            what: "record count",
            ..
        })
    ));
}

#[test]
fn record_length_past_the_batch_is_invalid_length() {
    let mut r = good_record();
    r[0] = 0x7e; // 63 bytes claimed, 8 present
    assert!(matches!(
        iterate(batch_with_records(&r, 1, Compression::None)),
        Err(RecordsError::InvalidLength { what: "record", .. })
    ));
}

#[test]
fn key_length_past_the_record_is_invalid_length() {
    let mut r = good_record();
    r[4] = 40; // key length 20
    assert!(matches!(
        iterate(batch_with_records(&r, 1, Compression::None)),
        Err(RecordsError::InvalidLength { what: "key", .. })
    ));
}

#[test]
fn key_length_below_minus_one_is_invalid_length() {
    let mut r = good_record();
    r[4] = 3; // -2
    assert!(matches!(
        iterate(batch_with_records(&r, 1, Compression::None)),
        Err(RecordsError::InvalidLength {
            what: "key",
            length: -2
        })
    ));
}

#[test]
fn record_size_larger_than_its_fields_is_invalid_record() {
    let mut r = good_record();
    r[0] += 2;
    r.push(0);
    assert!(matches!(
        iterate(batch_with_records(&r, 1, Compression::None)),
        Err(RecordsError::InvalidRecord(_))
    ));
}

#[test]
fn varint_overflow_in_a_record_is_varint_overflow() {
    let mut r = vec![0x1eu8, 0]; // size 15, attributes
    r.extend_from_slice(&[0xff; 11]); // timestamp delta: an 11-byte varlong
    r.extend_from_slice(&[0, 0, 0]);
    assert_eq!(
        iterate(batch_with_records(&r, 1, Compression::None)),
        Err(RecordsError::VarintOverflow)
    );
    let r = [0xffu8, 0xff, 0xff, 0xff, 0xff, 0x01]; // record size: a 6-byte varint
    assert_eq!(
        iterate(batch_with_records(&r, 1, Compression::None)),
        Err(RecordsError::VarintOverflow)
    );
}

#[test]
fn null_header_key_is_invalid_record() {
    let body = [0u8, 0, 0, 1, 1, 2, 1, 1]; // no key/value, 1 header with key -1, value -1
    let mut r = Vec::new();
    put_varint(&mut r, body.len() as i32);
    r.extend_from_slice(&body);
    assert_eq!(
        iterate(batch_with_records(&r, 1, Compression::None)),
        Err(RecordsError::InvalidRecord("null header key"))
    );
}

#[test]
fn huge_header_count_fails_without_allocating_for_it() {
    let mut body = vec![0u8, 0, 0, 1, 1];
    put_varint(&mut body, i32::MAX);
    let mut r = Vec::new();
    put_varint(&mut r, body.len() as i32);
    r.extend_from_slice(&body);
    assert!(iterate(batch_with_records(&r, 1, Compression::None)).is_err());
}

#[test]
fn negative_header_count_is_invalid_length() {
    let body = [0u8, 0, 0, 1, 1, 1];
    let mut r = Vec::new();
    put_varint(&mut r, body.len() as i32);
    r.extend_from_slice(&body);
    assert!(matches!(
        iterate(batch_with_records(&r, 1, Compression::None)),
        Err(RecordsError::InvalidLength {
            what: "header count",
            ..
        })
    ));
}

#[test]
fn unknown_compression_id_is_unknown_compression() {
    let mut b = batch_with_records(&good_record(), 1, Compression::None).to_vec();
    b[22] |= 0x07;
    write_crc(&mut b);
    assert_eq!(
        iterate(Bytes::from(b)),
        Err(RecordsError::UnknownCompression(7))
    );
}

#[test]
fn garbage_compressed_records_are_a_compression_error() {
    for codec in [
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ] {
        let err = iterate(batch_with_records(&[9; 40], 1, codec)).unwrap_err();
        assert!(
            matches!(err, RecordsError::Compression { .. }),
            "{codec:?}: {err:?}"
        );
    }
}

#[test]
fn compression_bomb_is_decompressed_too_large() {
    let zeros = vec![0u8; 8 << 20];
    for codec in [
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ] {
        let z = compress(codec, &zeros, &CompressionOptions::default()).unwrap();
        let batch = RecordBatch::parse(batch_with_records(&z, 1, codec)).unwrap();
        let err = batch.records(&DecompressLimits::new(1 << 20)).unwrap_err();
        assert_eq!(
            err,
            RecordsError::DecompressedTooLarge { limit: 1 << 20 },
            "{codec:?}"
        );
    }
}

#[test]
fn snappy_raw_block_declaring_a_huge_length_is_rejected_before_allocating() {
    // A raw snappy block starts with its uncompressed length as a varint: claim 2 GiB.
    let block = [0x80u8, 0x80, 0x80, 0x80, 0x08, 0x00];
    let batch = RecordBatch::parse(batch_with_records(&block, 1, Compression::Snappy)).unwrap();
    assert!(batch.records(&DecompressLimits::new(1 << 20)).is_err());
}

#[test]
fn truncated_batch_is_truncated_at_every_cut() {
    let b = RecordBatchBuilder::new()
        .compression(Compression::Zstd)
        .record(1, Some(b"key"), Some(b"value"))
        .build_bytes()
        .unwrap();
    for cut in 1..b.len() {
        let err = Batches::new(b.slice(..cut)).next().unwrap().unwrap_err();
        assert!(err.is_truncated(), "cut {cut}: {err:?}");
        assert!(
            RecordBatch::parse(b.slice(..cut))
                .unwrap_err()
                .is_truncated()
                || cut > 16
        );
    }
}

#[test]
fn every_single_byte_corruption_is_detected_or_harmless() {
    // Flip each byte of a compressed batch: parsing and iterating must never panic, and any
    // change under the CRC must be caught by it.
    let b = RecordBatchBuilder::new()
        .compression(Compression::Lz4)
        .record_with_headers(1, Some(b"key"), Some(b"value"), &[(b"h", Some(b"x"))])
        .record(2, None, None)
        .build_bytes()
        .unwrap();
    for i in 0..b.len() {
        let mut m = b.to_vec();
        m[i] ^= 0xa5;
        let r = iterate(Bytes::from(m));
        if i >= 17 {
            assert!(r.is_err(), "flip at {i} not detected");
        }
    }
}
