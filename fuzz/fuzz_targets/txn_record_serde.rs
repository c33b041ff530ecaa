//! `__transaction_state` records from arbitrary bytes: decoding never panics, and whatever decodes
//! survives a re-encode (at value version 1) unchanged.
#![no_main]

use josef_coordinator::RecordSerde;
use josef_txn::{TransactionVersion, TxnRecordSerde};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    // First byte: where the key ends; second: tombstone or not.
    let split = (data[0] as usize).min(data.len() - 2);
    let rest = &data[2..];
    let (key, value) = rest.split_at(split.min(rest.len()));
    let value = (data[1] & 1 == 0).then_some(value);
    let serde = TxnRecordSerde::new(TransactionVersion::V2);
    if let Ok(record) = serde.deserialize(key, value) {
        let (k, v) = serde.serialize(&record);
        let again = serde
            .deserialize(&k.expect("key always written"), v.as_deref())
            .expect("re-encoded record decodes");
        assert_eq!(again, record);
    }
});
