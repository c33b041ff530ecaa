//! Encoding into `FrameChunks`: the same bytes as the contiguous encoding, with large `records`
//! fields referenced (not copied) and small ones copied into the tail.

use bytes::{Buf, Bytes, BytesMut};
use josef_protocol::messages::{fetch_response, produce_request, FetchResponse, ProduceRequest};
use josef_protocol::*;
use proptest::prelude::*;

fn fetch_with(records: &[Bytes]) -> FetchResponse {
    FetchResponse {
        responses: vec![fetch_response::FetchableTopicResponse {
            topic: "t".into(),
            partitions: records
                .iter()
                .enumerate()
                .map(|(i, r)| fetch_response::PartitionData {
                    partition_index: i as i32,
                    high_watermark: 10,
                    records: Some(r.clone()),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// Pointers of the pieces that are shared records.
fn shared_pieces(chunks: &FrameChunks, records: &[Bytes]) -> usize {
    chunks
        .chunks()
        .filter(|c| {
            records
                .iter()
                .any(|r| r.as_ptr() == c.as_ptr() && !r.is_empty())
        })
        .count()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn fetch_response_chunks_equal_contiguous_bytes_and_share_large_records(
        sizes in proptest::collection::vec(0usize..6000, 0..8),
        version in 0i16..=17,
    ) {
        let records: Vec<Bytes> = sizes.iter().enumerate().map(|(i, n)| vec![i as u8; *n].into()).collect();
        let m = fetch_with(&records);
        let mut flat = BytesMut::new();
        m.encode(&mut flat, version).unwrap();
        let mut chunks = FrameChunks::new();
        m.encode(&mut chunks, version).unwrap();
        prop_assert_eq!(chunks.remaining(), flat.len());
        let large = sizes.iter().filter(|n| **n >= FrameChunks::SHARE_MIN).count();
        prop_assert_eq!(shared_pieces(&chunks, &records), large);
        prop_assert_eq!(chunks.copy_to_bytes(flat.len()), flat.freeze());
    }

    #[test]
    fn produce_request_chunks_equal_contiguous_bytes(size in 0usize..9000, version in 3i16..=11) {
        let records: Bytes = vec![5u8; size].into();
        let m = ProduceRequest {
            acks: -1,
            timeout_ms: 1000,
            topic_data: vec![produce_request::TopicProduceData {
                name: "t".into(),
                partition_data: vec![produce_request::PartitionProduceData {
                    index: 0,
                    records: Some(records.clone()),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        let mut flat = BytesMut::new();
        m.encode(&mut flat, version).unwrap();
        let mut chunks = FrameChunks::new();
        m.encode(&mut chunks, version).unwrap();
        prop_assert_eq!(shared_pieces(&chunks, &[records]), usize::from(size >= FrameChunks::SHARE_MIN));
        prop_assert_eq!(chunks.to_bytes(), flat.freeze());
    }
}

#[test]
fn response_frame_chunks_decode_like_the_contiguous_frame() {
    let records: Vec<Bytes> = (0..3).map(|i| vec![i as u8; 5000].into()).collect();
    let body = ResponseBody::Fetch(fetch_with(&records));
    let mut flat = BytesMut::new();
    encode_response_frame(9, ApiKey::Fetch, 12, &body, &mut flat).unwrap();
    let chunks = encode_response_frame_chunks(9, ApiKey::Fetch, 12, &body).unwrap();
    assert_eq!(shared_pieces(&chunks, &records), 3);
    let bytes = chunks.to_bytes();
    assert_eq!(bytes, flat.freeze());
    let (h, b) = decode_response_frame(ApiKey::Fetch, 12, bytes.slice(4..)).unwrap();
    assert_eq!(h.correlation_id, 9);
    assert_eq!(b, body);
}

#[test]
fn a_mismatched_body_is_an_error_not_a_frame() {
    let body = ResponseBody::Fetch(FetchResponse::default());
    assert!(matches!(
        encode_response_frame_chunks(1, ApiKey::Produce, 3, &body),
        Err(EncodeError::ApiKeyMismatch { .. })
    ));
}
