//! Down-conversion (Fetch v0–3): arbitrary bytes as log data must convert or fail cleanly, never
//! panic; and batches built from the input must survive down-conversion and the legacy reader
//! with their offsets, keys and values intact (magic 1 also keeps timestamps).
#![no_main]

use bytes::Bytes;
use josef_records::{
    down_convert, Compression, DecompressLimits, LegacyMessageSet, RecordBatchBuilder,
};
use libfuzzer_sys::fuzz_target;

const LIMITS: DecompressLimits = DecompressLimits::new(1 << 20);

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let magic = (mode & 1) as i8;
    let fetch_offset = i64::from(mode >> 4);
    if mode & 2 == 0 {
        // Raw bytes as a log read: any result but a panic is fine; output is well formed.
        if let Ok(d) = down_convert(Bytes::copy_from_slice(rest), magic, fetch_offset, &LIMITS) {
            for m in LegacyMessageSet::new(d.records) {
                let m = m.expect("down-converted output parses");
                assert!(m.magic <= magic, "no message above the target magic");
            }
        }
        return;
    }
    // Structured: records from the input, one batch, every legacy codec.
    let codec = [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
    ][usize::from((mode >> 2) & 3)];
    let mut b = RecordBatchBuilder::new().base_offset(3).compression(codec);
    let mut want = Vec::new();
    for (i, chunk) in rest.chunks(7).enumerate() {
        let (k, v) = chunk.split_at(
            chunk
                .len()
                .min(chunk.first().map_or(0, |&x| usize::from(x % 4))),
        );
        let key = (!k.is_empty()).then_some(k);
        let ts = 1_000 + i as i64 * i64::from(chunk[0]);
        b = b.record(ts, key, Some(v));
        want.push((3 + i as i64, ts, key.map(<[u8]>::to_vec), v.to_vec()));
    }
    if want.is_empty() {
        return;
    }
    let batch = b.build_bytes().expect("builds");
    let d = down_convert(batch, magic, fetch_offset, &LIMITS).expect("a built batch converts");
    let got = LegacyMessageSet::new(d.records)
        .records(&LIMITS)
        .expect("converted set reads back");
    let want: Vec<_> = want
        .into_iter()
        .filter(|w| codec != Compression::None || w.0 >= fetch_offset)
        .collect();
    assert_eq!(got.len(), want.len());
    for (g, (offset, ts, key, value)) in got.iter().zip(want) {
        assert_eq!(g.offset, offset);
        assert_eq!(g.key.as_deref(), key.as_deref());
        assert_eq!(g.value.as_deref(), Some(&value[..]));
        assert_eq!(g.timestamp, if magic == 1 { ts } else { -1 });
    }
});
