//! Java properties text from arbitrary bytes (josef-broker's `config::properties`, the reader of
//! `server.properties`): decoding the file bytes and parsing never panic, and whatever parses
//! written back out with the escaping writer parses to the same map.
#![no_main]

use libfuzzer_sys::fuzz_target;

// Included by path: the reader is std-only, so the fuzz build does not compile the whole broker.
#[path = "../../crates/josef-config/src/properties.rs"]
#[allow(dead_code)]
mod properties;

fuzz_target!(|input: &[u8]| {
    let text = properties::decode_file_bytes(input);
    if let Ok(map) = properties::parse(&text) {
        let again = properties::parse(&properties::write(&map)).expect("written text parses");
        assert_eq!(again, map, "write then parse is the identity");
    }
});
