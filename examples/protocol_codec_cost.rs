//! Runs one codec path of josef-protocol or of the `kafka-protocol` crate 200 times on the inputs of
//! `benches/protocol.rs`, so their costs can be compared in instructions, which stay repeatable on a
//! busy machine where criterion's wall-clock figures do not:
//!
//! ```text
//! cargo build --release --example protocol_codec_cost
//! for m in {produce,fetch,metadata}_{decode_josef,decode_josef_view,decode_josef_view_read_all,decode_kafka_protocol,encode_josef,encode_josef_chunks,encode_kafka_protocol}; do
//!   for r in 0 200; do
//!     echo -n "$m rounds=$r "; ROUNDS=$r valgrind --tool=callgrind \
//!       --callgrind-out-file=/dev/null target/release/examples/protocol_codec_cost $m 2>&1 \
//!       | grep Collected
//!   done
//! done
//! ```
//! (instructions at 200 rounds − instructions at 0 rounds) / 200 = instructions per message.

use std::hint::black_box;

use josef_protocol::{DecodeView, Message};
use kafka_protocol::protocol::{Decodable, Encodable};

#[path = "../benches/support/protocol_inputs.rs"]
mod inputs;
use inputs::{encode_ours, encode_ours_chunks, encode_theirs, fetch, metadata, produce, ReadAll};

/// Runs `mode`'s path for one message kind; returns false when `mode` is not about this kind.
fn run<O, T>(mode: &str, kind: &str, version: i16, ours: O) -> bool
where
    O: Message,
    for<'a> O::View<'a>: ReadAll,
    T: Decodable + Encodable,
{
    let Some(path) = mode.strip_prefix(kind) else {
        return false;
    };
    let bytes = encode_ours(&ours, version);
    let theirs = T::decode(&mut bytes.clone(), version).expect("kafka-protocol decodes");
    assert_eq!(
        encode_theirs(&theirs, version),
        bytes,
        "both crates write the same bytes"
    );
    let rounds: usize = std::env::var("ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(200);
    let mut n = 0usize;
    for _ in 0..rounds {
        n += match path {
            "_decode_josef" => {
                black_box(O::decode(&mut black_box(bytes.clone()), version).expect("decode"));
                1
            }
            "_decode_josef_view" => {
                black_box(
                    O::View::decode_view(&mut black_box(&bytes[..]), version).expect("decode"),
                );
                1
            }
            "_decode_josef_view_read_all" => {
                let view =
                    O::View::decode_view(&mut black_box(&bytes[..]), version).expect("decode");
                black_box(view.read_all());
                1
            }
            "_decode_kafka_protocol" => {
                black_box(T::decode(&mut black_box(bytes.clone()), version).expect("decode"));
                1
            }
            "_encode_josef" => encode_ours(black_box(&ours), version).len(),
            "_encode_josef_chunks" => encode_ours_chunks(black_box(&ours), version).len(),
            "_encode_kafka_protocol" => encode_theirs(black_box(&theirs), version).len(),
            _ => return false,
        };
    }
    println!("{mode}: {n}");
    true
}

fn main() {
    let mode = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "produce_decode_josef".into());
    let (p, f, m) = (produce(), fetch(), metadata());
    let done = run::<_, kafka_protocol::messages::ProduceRequest>(&mode, "produce", 9, p)
        || run::<_, kafka_protocol::messages::FetchResponse>(&mode, "fetch", 16, f)
        || run::<_, kafka_protocol::messages::MetadataResponse>(&mode, "metadata", 12, m);
    if !done {
        eprintln!("unknown mode {mode}");
        std::process::exit(2);
    }
}
