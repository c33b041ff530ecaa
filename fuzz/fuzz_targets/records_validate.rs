//! Runs the broker's produce-side validation (`josef_records::validate`) on arbitrary bytes as a
//! client's batch, with topic settings taken from the first bytes. The CRC is fixed up first, so
//! the fuzzer reaches the batch and record rules instead of stopping at the checksum. Nothing may
//! panic; a batch that validates can be rebuilt (consecutive offsets, another codec), and the
//! rebuilt batch validates again with the same records' max timestamp.
#![no_main]

use josef_records::header::offsets;
use josef_records::validate::{
    rebuild_with_compression, rebuild_with_consecutive_offsets, validate_client_batch,
    ValidationConfig,
};
use josef_records::{BatchHeader, Compression, DecompressLimits, TimestampType};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((settings, batch)) = data.split_first_chunk::<4>() else {
        return;
    };
    let limits = DecompressLimits::new(1 << 20);
    let config = ValidationConfig {
        timestamp_type: if settings[0] & 1 == 0 {
            TimestampType::CreateTime
        } else {
            TimestampType::LogAppendTime
        },
        timestamp_before_max_ms: i64::from(settings[1]) * 1_000,
        timestamp_after_max_ms: i64::from(settings[2]) * 1_000,
        compacted: settings[0] & 2 != 0,
        max_batch_bytes: if settings[0] & 4 != 0 { 512 } else { usize::MAX },
        decompress_limits: limits,
        target_compression: None,
    };
    let now_ms = 1_700_000_000_000;
    let mut batch = batch.to_vec();
    if let Ok(h) = BatchHeader::parse(&batch) {
        let end = h.total_size().min(batch.len());
        if end > offsets::ATTRIBUTES {
            let crc = crc32c::crc32c(&batch[offsets::ATTRIBUTES..end]);
            batch[offsets::CRC..offsets::CRC + 4].copy_from_slice(&crc.to_be_bytes());
        }
    }
    let Ok(validated) = validate_client_batch(&batch, &config, now_ms) else {
        return;
    };
    let codec = match settings[3] % 5 {
        0 => Compression::None,
        1 => Compression::Gzip,
        2 => Compression::Snappy,
        3 => Compression::Lz4,
        _ => Compression::Zstd,
    };
    let whole = &batch[..BatchHeader::parse(&batch).expect("validated").total_size()];
    for rebuilt in [
        rebuild_with_consecutive_offsets(whole, &limits),
        rebuild_with_compression(whole, codec, &limits),
    ] {
        let rebuilt = rebuilt.expect("a validated batch can be rebuilt");
        // Compression may make a small batch bigger: the size limit is not what is tested here.
        let unbounded = ValidationConfig {
            max_batch_bytes: usize::MAX,
            ..config
        };
        let again = validate_client_batch(&rebuilt, &unbounded, now_ms)
            .expect("a rebuilt batch validates again");
        assert_eq!(again.max_timestamp, validated.max_timestamp);
    }
});
