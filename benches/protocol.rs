//! josef-protocol benches, each side by side with the `kafka-protocol` crate in the same group:
//! decode and encode of a ProduceRequest v9 carrying one 1,000-record x 100 B batch, a FetchResponse
//! v16 carrying such a batch for 10 partitions, and a MetadataResponse v12 of 100 topics x 10 partitions.
//! Decode is measured for the owned messages (`josef`) and for the borrowed views (`josef_view`).
//!
//! `cargo bench --bench protocol -- --warm-up-time 1 --measurement-time 2`

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use josef_protocol::{DecodeView, Message};
use kafka_protocol::protocol::{Decodable, Encodable};

#[path = "support/protocol_inputs.rs"]
mod inputs;
use inputs::{encode_ours, encode_ours_chunks, encode_theirs, fetch, metadata, produce, ReadAll};

fn bench_pair<O, T>(c: &mut Criterion, name: &str, version: i16, ours: O)
where
    O: Message,
    for<'a> O::View<'a>: ReadAll,
    T: Decodable + Encodable,
{
    let bytes = encode_ours(&ours, version);
    let theirs = T::decode(&mut bytes.clone(), version).unwrap();
    assert_eq!(
        encode_theirs(&theirs, version),
        bytes,
        "{name}: both crates must produce the same bytes"
    );

    let mut g = c.benchmark_group(format!("{name}_decode"));
    g.throughput(Throughput::Bytes(bytes.len() as u64));
    g.bench_function("josef", |b| {
        b.iter(|| O::decode(&mut black_box(bytes.clone()), version).unwrap())
    });
    // The borrowed view: the same checks, no allocation (strings, bytes and records borrowed,
    // arrays checked now and decoded again when iterated).
    g.bench_function("josef_view", |b| {
        b.iter(|| O::View::decode_view(&mut black_box(&bytes[..]), version).unwrap())
    });
    // The view decoded and then every field of every element read (arrays decoded again as they
    // are iterated): what an owned decode gives, without building it.
    g.bench_function("josef_view_read_all", |b| {
        b.iter(|| {
            O::View::decode_view(&mut black_box(&bytes[..]), version)
                .unwrap()
                .read_all()
        })
    });
    g.bench_function("kafka_protocol", |b| {
        b.iter(|| T::decode(&mut black_box(bytes.clone()), version).unwrap())
    });
    g.finish();

    let mut g = c.benchmark_group(format!("{name}_encode"));
    g.throughput(Throughput::Bytes(bytes.len() as u64));
    g.bench_function("josef", |b| {
        b.iter(|| encode_ours(black_box(&ours), version))
    });
    // The same message as a vectored frame (records referenced): what a broker writes with writev.
    g.bench_function("josef_chunks", |b| {
        b.iter(|| encode_ours_chunks(black_box(&ours), version))
    });
    g.bench_function("kafka_protocol", |b| {
        b.iter(|| encode_theirs(black_box(&theirs), version))
    });
    g.finish();
}

fn benches(c: &mut Criterion) {
    bench_pair::<_, kafka_protocol::messages::ProduceRequest>(
        c,
        "produce_request_v9_1000x100B",
        9,
        produce(),
    );
    bench_pair::<_, kafka_protocol::messages::FetchResponse>(
        c,
        "fetch_response_v16_10_partitions",
        16,
        fetch(),
    );
    bench_pair::<_, kafka_protocol::messages::MetadataResponse>(
        c,
        "metadata_response_v12_100x10",
        12,
        metadata(),
    );
}

criterion_group!(protocol, benches);
criterion_main!(protocol);
