//! Decoding is zero-copy: the number of allocations made while decoding a ProduceRequest does not
//! depend on how many records (or bytes) its batch carries. A counting global allocator proves it.

use bytes::{Bytes, BytesMut};
use josef_protocol::messages::{produce_request, ProduceRequest};
use josef_protocol::{
    decode_request_frame, encode_request_frame, ApiKey, Decode, Encode, RequestBody, RequestHeader,
};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;

thread_local! {
    // Counted per thread: the test harness's own threads (which allocate when they report another
    // test's result) never land in a measurement. A process-wide counter made this test flaky.
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// A stand-in record batch: `records` x 100-byte values (the protocol layer never looks inside).
fn produce_with(records: usize) -> ProduceRequest {
    ProduceRequest {
        transactional_id: Some("tx-1".into()),
        acks: -1,
        timeout_ms: 30_000,
        topic_data: vec![produce_request::TopicProduceData {
            name: "topic".into(),
            partition_data: vec![produce_request::PartitionProduceData {
                index: 0,
                records: Some(Bytes::from(vec![7u8; 61 + records * 110])),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

fn frame_of(m: &ProduceRequest) -> Bytes {
    let header = RequestHeader {
        request_api_key: ApiKey::Produce as i16,
        request_api_version: 9,
        correlation_id: 1,
        client_id: Some("client".into()),
        ..Default::default()
    };
    let mut buf = BytesMut::new();
    encode_request_frame(&header, &RequestBody::Produce(m.clone()), &mut buf).unwrap();
    buf.freeze().slice(4..)
}

fn count<T>(f: impl FnOnce() -> T) -> (usize, T) {
    let before = ALLOCATIONS.with(Cell::get);
    let r = f();
    (ALLOCATIONS.with(Cell::get) - before, r)
}

#[test]
fn allocations_per_decoded_produce_request_do_not_depend_on_record_count() {
    let small = frame_of(&produce_with(10));
    let large = frame_of(&produce_with(1_000));
    let huge = frame_of(&produce_with(10_000));
    // Warm up (first use of thread-locals etc.).
    let _ = decode_request_frame(small.clone()).unwrap();
    let (a_small, d_small) = count(|| decode_request_frame(small.clone()).unwrap());
    let (a_large, d_large) = count(|| decode_request_frame(large.clone()).unwrap());
    let (a_huge, _) = count(|| decode_request_frame(huge.clone()).unwrap());
    assert_eq!(a_small, a_large);
    assert_eq!(a_small, a_huge);
    // Header + two Vecs + the promotion of the frame's Bytes to shared storage: a handful, no copies.
    assert!(a_small <= 8, "{a_small} allocations");
    drop((d_small, d_large));
}

#[test]
fn a_view_of_a_produce_request_allocates_nothing() {
    use josef_protocol::RequestBodyView;
    let frame = frame_of(&produce_with(1_000));
    let mut rest = frame.clone();
    let (_, header) = josef_protocol::decode_request_header(&mut rest).unwrap();
    let body: &[u8] = &rest;
    let (allocs, view) = count(|| {
        let mut buf = body;
        let view =
            RequestBodyView::decode_view(ApiKey::Produce, header.request_api_version, &mut buf)
                .unwrap();
        // Reading it all (the records of every partition) allocates nothing either.
        let RequestBodyView::Produce(p) = view else {
            unreachable!("a produce frame")
        };
        let records: usize = p
            .topic_data
            .iter()
            .flat_map(|t| t.partition_data.iter())
            .map(|partition| partition.records.map_or(0, <[u8]>::len))
            .sum();
        (view, records)
    });
    assert_eq!(allocs, 0, "decoding and reading a view allocates nothing");
    assert_eq!(view.1, 61 + 1_000 * 110);
    assert_eq!(view.0.to_body(), RequestBody::Produce(produce_with(1_000)));
}

#[test]
fn encoding_reserves_once() {
    let m = produce_with(1_000);
    let len = m.encoded_len(9).unwrap();
    let mut buf = BytesMut::with_capacity(len);
    let (allocs, ()) = count(|| m.encode(&mut buf, 9).unwrap());
    assert_eq!(
        allocs, 0,
        "encode into an exactly reserved buffer allocates nothing"
    );
    assert_eq!(buf.len(), len);
    let d = ProduceRequest::decode(&mut buf.freeze(), 9).unwrap();
    assert_eq!(d, m);
}
