//! Parses arbitrary bytes as a stream of v2 batches, as a mixed stream and as a legacy message
//! set, iterating every record and exercising the in-place rewrites: nothing may panic, and
//! decompression stays within a small limit.
#![no_main]

use bytes::Bytes;
use josef_records::{
    legacy_to_v2, set_log_append_time, AnyBatch, AnyBatches, Batches, DecompressLimits,
    LegacyConversion, LegacyMessageSet,
};
use libfuzzer_sys::fuzz_target;

const LIMITS: DecompressLimits = DecompressLimits::new(1 << 20);

fuzz_target!(|data: &[u8]| {
    let bytes = Bytes::copy_from_slice(data);
    for batch in Batches::new(bytes.clone()) {
        let Ok(batch) = batch else { break };
        let _ = batch.validate_crc();
        let _ = batch.last_sequence();
        let _ = batch.control_marker(&LIMITS);
        if let Ok(records) = batch.records(&LIMITS) {
            for r in records {
                if r.is_err() {
                    break;
                }
            }
        }
        let mut copy = batch.as_bytes().to_vec();
        let _ = set_log_append_time(&mut copy, 1);
    }
    for entry in AnyBatches::new(bytes.clone()) {
        match entry {
            Ok(AnyBatch::Legacy(m)) => {
                let _ = m.validate_crc();
                let _ = m.records(&LIMITS);
            }
            Ok(AnyBatch::V2(b)) => {
                let _ = b.records(&LIMITS).map(|it| it.count());
            }
            Err(_) => break,
        }
    }
    let _ = LegacyMessageSet::new(bytes.clone()).records(&LIMITS);
    let _ = legacy_to_v2(bytes, &LIMITS, &LegacyConversion::default());
});
