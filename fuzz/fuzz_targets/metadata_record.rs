//! KRaft metadata records from arbitrary bytes (`josef_metadata::MetadataRecord::decode`):
//! decoding never panics, whatever decodes re-encodes at its version to a record that decodes
//! equal; the decoded records replayed into a `MetadataDelta` (refusals are fine) never panic and
//! `apply` gives an image whose `to_records()` (through their encoding, as a snapshot) replayed
//! into an empty delta gives that image again.
//!
//! Input: chunks of `length: u16 BE | record`. A chunk that does not decode ends the delta: it is
//! applied and a new delta starts on its image (so later records replay onto a non-empty base).
#![no_main]

use bytes::{Bytes, BytesMut};
use josef_metadata::{MetadataDelta, MetadataImage, MetadataProvenance, MetadataRecord};
use libfuzzer_sys::fuzz_target;

fn check_round_trip(record: &MetadataRecord, version: i16) {
    let mut buf = BytesMut::new();
    // A value that decodes but that its version cannot hold again (a tagged field decoding to its
    // default is dropped, ...) may fail to encode: no panic is all that is asked.
    if record.encode_at(version, &mut buf).is_err() {
        return;
    }
    let bytes = buf.freeze();
    let (again, v2) =
        MetadataRecord::decode_bytes(bytes.clone()).expect("re-encoded record decodes");
    assert_eq!(v2, version);
    if again != *record {
        // Only a NaN (not equal to itself) may differ by `==`: the bytes must still be the same.
        let mut buf2 = BytesMut::new();
        again
            .encode_at(version, &mut buf2)
            .expect("decoded from an encoding");
        assert_eq!(buf2.freeze(), bytes, "decode(encode(record)) != record");
    }
}

fn has_nan(image: &MetadataImage) -> bool {
    image
        .client_quotas()
        .values()
        .any(|q| q.values().any(|v| v.is_nan()))
}

/// The image's snapshot records, encoded and decoded, replayed into an empty delta.
fn check_snapshot(image: &MetadataImage) {
    let mut delta = MetadataDelta::new(&MetadataImage::empty());
    for r in image.to_records() {
        let bytes = r.encode().expect("a snapshot record encodes");
        let decoded = MetadataRecord::decode(&bytes).expect("a snapshot record decodes");
        if let Err(e) = delta.replay(&decoded) {
            panic!("snapshot record {decoded:?} does not replay: {e}");
        }
    }
    let rebuilt = delta.apply(image.provenance());
    if !has_nan(image) {
        assert_eq!(rebuilt, *image, "the snapshot rebuilds another image");
    }
}

fuzz_target!(|input: &[u8]| {
    let mut data = input;
    let mut delta = MetadataDelta::new(&MetadataImage::empty());
    let mut offset = 0u64;
    let mut images = 0;
    while data.len() >= 2 {
        let len = usize::from(u16::from_be_bytes([data[0], data[1]])).min(data.len() - 2);
        let chunk = &data[2..2 + len];
        data = &data[2 + len..];
        match MetadataRecord::decode_bytes(Bytes::copy_from_slice(chunk)) {
            Ok((record, version)) => {
                check_round_trip(&record, version);
                offset += 1;
                let _ = delta.replay(&record);
            }
            Err(_) if images < 4 => {
                images += 1;
                let image = delta.apply(MetadataProvenance {
                    last_offset: offset,
                    last_epoch: 1,
                });
                for broker in [0, 1, 2] {
                    let _ = delta.local_changes(broker);
                }
                check_snapshot(&image);
                delta = MetadataDelta::new(&image);
            }
            Err(_) => {}
        }
    }
    let image = delta.apply(MetadataProvenance {
        last_offset: offset,
        last_epoch: 1,
    });
    let _ = delta.local_changes(1);
    check_snapshot(&image);
});
