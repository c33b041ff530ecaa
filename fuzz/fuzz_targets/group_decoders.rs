//! Client-supplied and stored group bytes: ConsumerProtocol subscriptions and assignments, sticky
//! assignor user data, and `__consumer_offsets` key/value records must decode or fail, never panic.
#![no_main]

use josef_coordinator::RecordSerde;
use josef_group::assignor::decode_sticky_user_data;
use josef_group::consumer_protocol::{Assignment, Subscription};
use josef_group::serde::GroupRecordSerde;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = Subscription::decode(data);
    let _ = Assignment::decode(data);
    let _ = decode_sticky_user_data(data);
    // First byte splits the input into a key and an optional value.
    if let Some((&split, rest)) = data.split_first() {
        let at = (split as usize).min(rest.len());
        let (key, value) = rest.split_at(at);
        let serde = GroupRecordSerde::default();
        let decoded = serde.deserialize(key, if split % 2 == 0 { Some(value) } else { None });
        if let (Ok(record), true) = (decoded, data.len() < i16::MAX as usize) {
            // Whatever decodes (with strings short enough for the non-flexible versions we write)
            // re-encodes and decodes to the same record.
            let (k, v) = serde.serialize(&record);
            let again = serde
                .deserialize(&k.unwrap(), v.as_deref())
                .expect("re-decode");
            assert_eq!(again, record);
        }
    }
});
