//! Builds a ProduceRequest, writes it as a complete request frame, then reads it back as a broker would.
//!
//! `cargo run --example encode_decode`

use bytes::{Bytes, BytesMut};
use josef_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use josef_protocol::messages::ProduceRequest;
use josef_protocol::{
    decode_request_frame, encode_request_frame, split_frame, ApiKey, RequestBody, RequestHeader,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let request = ProduceRequest {
        transactional_id: None,
        acks: -1,
        timeout_ms: 30_000,
        topic_data: vec![TopicProduceData {
            name: "events".into(),
            partition_data: vec![PartitionProduceData {
                index: 0,
                // A real client puts a RecordBatch here; the protocol layer carries it as opaque bytes.
                records: Some(Bytes::from_static(b"record batch bytes")),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let version = 9;
    let header = RequestHeader {
        request_api_key: ApiKey::Produce as i16,
        request_api_version: version,
        correlation_id: 1,
        client_id: Some("example".into()),
        ..Default::default()
    };

    let mut wire = BytesMut::new();
    encode_request_frame(&header, &RequestBody::Produce(request.clone()), &mut wire)?;
    println!(
        "encoded Produce v{version}: {} bytes with the length prefix",
        wire.len()
    );

    // The broker side: cut the frame off the socket buffer, then decode header and body.
    let frame = split_frame(&mut wire, 1 << 20)?.ok_or("incomplete frame")?;
    let (decoded_header, body) = decode_request_frame(frame.freeze())?;
    println!(
        "decoded {} v{} from {:?}, correlation id {}",
        ApiKey::from_i16(decoded_header.request_api_key).map_or("?", |k| k.name()),
        decoded_header.request_api_version,
        decoded_header.client_id.as_deref(),
        decoded_header.correlation_id
    );
    match body {
        RequestBody::Produce(p) => {
            assert_eq!(p, request);
            for t in &p.topic_data {
                for part in &t.partition_data {
                    let n = part.records.as_ref().map_or(0, |r| r.len());
                    println!("  {}[{}]: {n} bytes of records", t.name, part.index);
                }
            }
        }
        other => return Err(format!("unexpected body {:?}", other.api_key()).into()),
    }
    Ok(())
}
