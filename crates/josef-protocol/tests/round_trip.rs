//! Hand-built messages round-trip through encode/decode, and the field-version rules hold.

use bytes::{Bytes, BytesMut};
use josef_protocol::messages::*;
use josef_protocol::*;

fn round_trip<M: Message>(m: &M, version: i16) -> M {
    let mut buf = BytesMut::new();
    m.encode(&mut buf, version).unwrap();
    assert_eq!(
        buf.len(),
        m.encoded_len(version).unwrap(),
        "encoded_len at v{version}"
    );
    let mut bytes = buf.freeze();
    let d = M::decode(&mut bytes, version).unwrap();
    assert!(bytes.is_empty(), "left-over bytes at v{version}");
    d
}

#[test]
fn produce_request_round_trips_at_every_version() {
    for v in 3..=11 {
        let m = ProduceRequest {
            transactional_id: Some("tx".into()),
            acks: -1,
            timeout_ms: 1000,
            topic_data: vec![produce_request::TopicProduceData {
                name: "t".into(),
                partition_data: vec![produce_request::PartitionProduceData {
                    index: 3,
                    records: Some(Bytes::from_static(b"batch")),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        assert_eq!(round_trip(&m, v), m);
    }
}

#[test]
fn non_default_value_in_absent_non_ignorable_field_is_an_encode_error() {
    // TransactionalId exists from v3 and is not ignorable.
    let m = ProduceRequest {
        transactional_id: Some("tx".into()),
        ..Default::default()
    };
    let err = m.encode(&mut BytesMut::new(), 2).unwrap_err();
    assert!(
        matches!(err, EncodeError::FieldNotInVersion { .. }),
        "{err}"
    );
    // At the default (null), v2 encodes fine.
    let m = ProduceRequest::default();
    assert_eq!(round_trip(&m, 2), m);
}

#[test]
fn ignorable_field_is_dropped_silently_in_versions_without_it() {
    // ApiVersionsRequest.ClientSoftwareName is ignorable and exists from v3.
    let m = ApiVersionsRequest {
        client_software_name: "josef".into(),
        ..Default::default()
    };
    let d = round_trip(&m, 2);
    assert_eq!(d.client_software_name, "");
    assert_eq!(round_trip(&m, 3), m);
    // A non-ignorable field does not get that treatment: IncludeClusterAuthorizedOperations is 8-10.
    let m = MetadataRequest {
        topics: None,
        include_cluster_authorized_operations: true,
        ..Default::default()
    };
    assert!(matches!(
        m.encode(&mut BytesMut::new(), 11),
        Err(EncodeError::FieldNotInVersion { .. })
    ));
}

#[test]
fn null_in_non_nullable_version_is_an_encode_error() {
    // MetadataRequest.Topics is nullable only from v1.
    let m = MetadataRequest {
        topics: None,
        ..Default::default()
    };
    assert!(matches!(
        m.encode(&mut BytesMut::new(), 0),
        Err(EncodeError::NullValue { .. })
    ));
}

#[test]
fn tagged_field_at_default_is_not_written_and_unknown_tags_are_kept() {
    // ApiVersionsResponse v3: SupportedFeatures (tag 0), FinalizedFeaturesEpoch (tag 1, default -1)...
    let mut m = api_versions_response();
    let plain = {
        let mut b = BytesMut::new();
        m.encode(&mut b, 3).unwrap();
        b
    };
    m.finalized_features_epoch = 5;
    m.unknown_tagged_fields
        .insert(9, Bytes::from_static(b"xyz"));
    let mut b = BytesMut::new();
    m.encode(&mut b, 3).unwrap();
    // epoch: tag 1, size 1..8 bytes; unknown: tag 9, size 3 + 3 bytes.
    assert_eq!(b.len(), plain.len() + (1 + 1 + 8) + (1 + 1 + 3));
    assert_eq!(round_trip(&m, 3), m);
}

#[test]
fn request_header_v2_keeps_the_non_compact_client_id() {
    let h = RequestHeader {
        request_api_key: 18,
        request_api_version: 3,
        correlation_id: 1,
        client_id: Some("ab".into()),
        ..Default::default()
    };
    let mut b = BytesMut::new();
    h.encode(&mut b, 2).unwrap();
    assert_eq!(&b[..], &[0, 18, 0, 3, 0, 0, 0, 1, 0, 2, b'a', b'b', 0]);
}

#[test]
fn api_versions_responses_always_use_response_header_v0() {
    assert_eq!(ApiKey::ApiVersions.response_header_version(3), 0);
    assert_eq!(ApiKey::Metadata.response_header_version(12), 1);
    assert_eq!(ApiKey::Metadata.response_header_version(8), 0);
    assert_eq!(ApiKey::ControlledShutdown.request_header_version(0), 0);
    assert_eq!(ApiKey::Produce.request_header_version(9), 2);
    assert_eq!(ApiKey::Produce.request_header_version(8), 1);
}

#[test]
fn api_key_covers_all_88_apis_and_default_bodies_round_trip_at_every_version() {
    assert_eq!(ApiKey::ALL.len(), 88);
    for k in ApiKey::ALL {
        assert_eq!(ApiKey::from_i16(k as i16), Some(k));
        let (lo, hi) = k.valid_versions();
        assert!(lo <= hi, "{}", k.name());
        for v in lo..=hi {
            for (req, resp) in [
                (Some(RequestBody::default_for(k)), None),
                (None, Some(ResponseBody::default_for(k))),
            ] {
                let mut b = BytesMut::new();
                if let Some(req) = req {
                    req.encode(&mut b, v)
                        .unwrap_or_else(|e| panic!("{} v{v} request: {e}", k.name()));
                    assert_eq!(b.len(), req.encoded_len(v).unwrap());
                    let mut bytes = b.freeze();
                    assert_eq!(RequestBody::decode(k, v, &mut bytes).unwrap(), req);
                    assert!(bytes.is_empty());
                } else if let Some(resp) = resp {
                    resp.encode(&mut b, v)
                        .unwrap_or_else(|e| panic!("{} v{v} response: {e}", k.name()));
                    assert_eq!(b.len(), resp.encoded_len(v).unwrap());
                    let mut bytes = b.freeze();
                    assert_eq!(ResponseBody::decode(k, v, &mut bytes).unwrap(), resp);
                    assert!(bytes.is_empty());
                }
            }
        }
        assert!(RequestBody::default_for(k)
            .encode(&mut BytesMut::new(), hi + 1)
            .is_err());
    }
    assert_eq!(ApiKey::from_i16(-1), None);
    assert_eq!(ApiKey::Produce.name(), "Produce");
}

#[test]
fn frame_decoder_tells_apart_unknown_key_unsupported_version_and_malformed_body() {
    // Unknown api key 999.
    let f = Bytes::from_static(&[0x03, 0xe7, 0, 0, 0, 0, 0, 5, 0, 0]);
    assert!(matches!(
        decode_request_frame(f),
        Err(FrameError::UnknownApiKey {
            api_key: 999,
            correlation_id: 5,
            ..
        })
    ));
    // ApiVersions v99: header parsed (v2: flexible), error carries it.
    let mut b = BytesMut::new();
    RequestHeader {
        request_api_key: 18,
        request_api_version: 99,
        correlation_id: 9,
        client_id: Some("c".into()),
        ..Default::default()
    }
    .encode(&mut b, 2)
    .unwrap();
    match decode_request_frame(b.freeze()) {
        Err(FrameError::UnsupportedVersion {
            api_key: ApiKey::ApiVersions,
            header,
        }) => {
            assert_eq!(header.correlation_id, 9);
            assert_eq!(header.client_id.as_deref(), Some("c"));
        }
        other => panic!("{other:?}"),
    }
    // Metadata v1 with a truncated body.
    let mut b = BytesMut::new();
    RequestHeader {
        request_api_key: 3,
        request_api_version: 1,
        correlation_id: 2,
        client_id: None,
        ..Default::default()
    }
    .encode(&mut b, 1)
    .unwrap();
    b.extend_from_slice(&[0, 0, 0, 5]);
    assert!(matches!(
        decode_request_frame(b.freeze()),
        Err(FrameError::MalformedBody {
            api_key: ApiKey::Metadata,
            ..
        })
    ));
}

#[test]
fn response_frame_has_exact_length_and_header_version() {
    let body = ResponseBody::Metadata(MetadataResponse {
        cluster_id: Some("c".into()),
        ..Default::default()
    });
    let mut buf = BytesMut::new();
    encode_response_frame(77, ApiKey::Metadata, 12, &body, &mut buf).unwrap();
    let len = i32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
    assert_eq!(len, buf.len() - 4);
    let (h, b) = decode_response_frame(ApiKey::Metadata, 12, buf.freeze().slice(4..)).unwrap();
    assert_eq!(h.correlation_id, 77);
    assert_eq!(b, body);
    // A body of another API is refused.
    assert!(encode_response_frame(1, ApiKey::Produce, 9, &body, &mut BytesMut::new()).is_err());
}

#[test]
fn unsupported_api_versions_answer_encodes_at_v0() {
    let mut r = api_versions_response();
    r.error_code = ErrorCode::UnsupportedVersion.code();
    let mut buf = BytesMut::new();
    encode_response_frame(
        3,
        ApiKey::ApiVersions,
        0,
        &ResponseBody::ApiVersions(r.clone()),
        &mut buf,
    )
    .unwrap();
    let (_, b) = decode_response_frame(ApiKey::ApiVersions, 0, buf.freeze().slice(4..)).unwrap();
    assert_eq!(b, ResponseBody::ApiVersions(r));
}

#[test]
fn uuid_and_strings_decode_without_copying() {
    let m = MetadataRequest {
        topics: Some(vec![metadata_request::MetadataRequestTopic {
            topic_id: Uuid::from_bytes([1; 16]),
            name: Some("topic-name".into()),
            ..Default::default()
        }]),
        ..Default::default()
    };
    let mut buf = BytesMut::new();
    m.encode(&mut buf, 12).unwrap();
    let frozen = buf.freeze();
    let range = frozen.as_ptr() as usize..frozen.as_ptr() as usize + frozen.len();
    let d = MetadataRequest::decode(&mut frozen.clone(), 12).unwrap();
    let name = d.topics.as_ref().unwrap()[0].name.as_ref().unwrap();
    assert!(
        range.contains(&(name.as_ptr() as usize)),
        "string is a slice of the input"
    );
}
