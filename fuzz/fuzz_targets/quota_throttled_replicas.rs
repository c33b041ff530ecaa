//! `*.replication.throttled.replicas` values from arbitrary text: parsing never panics, and a
//! parsed value prints back to a string that parses to the same value.
#![no_main]

use josef_quota::ThrottledReplicas;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let Ok(text) = std::str::from_utf8(input) else {
        return;
    };
    if let Ok(parsed) = ThrottledReplicas::parse(text) {
        let printed = parsed.to_string();
        assert_eq!(ThrottledReplicas::parse(&printed).as_ref(), Ok(&parsed), "{printed:?}");
    }
});
