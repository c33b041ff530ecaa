//! Property tests: random values of every message at every version (built by the generated
//! `generated/values.rs`, which honours per-version field presence, nullability and tagged fields)
//! survive encode → decode unchanged, and re-encoding the decoded value gives the same bytes.

#[path = "generated/values.rs"]
mod values;

use bytes::{Bytes, BytesMut};
use josef_protocol::*;
use proptest::prelude::*;
use values::*;

fn check_body<B: PartialEq + std::fmt::Debug>(
    what: &str,
    version: i16,
    m: &B,
    encode: impl Fn(&B, &mut BytesMut) -> Result<(), EncodeError>,
    encode_chunks: impl Fn(&B, &mut FrameChunks) -> Result<(), EncodeError>,
    encoded_len: impl Fn(&B) -> Result<usize, EncodeError>,
    decode: impl Fn(&mut Bytes) -> Result<B, DecodeError>,
) {
    let mut buf = BytesMut::new();
    encode(m, &mut buf).unwrap_or_else(|e| panic!("{what} v{version}: encode: {e}"));
    assert_eq!(
        buf.len(),
        encoded_len(m).unwrap(),
        "{what} v{version}: encoded_len"
    );
    let bytes = buf.freeze();
    let mut chunks = FrameChunks::new();
    encode_chunks(m, &mut chunks).unwrap();
    assert_eq!(
        chunks.to_bytes(),
        bytes,
        "{what} v{version}: FrameChunks encoding != contiguous encoding"
    );
    let mut rest = bytes.clone();
    let d = decode(&mut rest).unwrap_or_else(|e| panic!("{what} v{version}: decode: {e}\n{m:?}"));
    assert!(
        rest.is_empty(),
        "{what} v{version}: {} bytes left",
        rest.len()
    );
    assert_eq!(&d, m, "{what} v{version}: decode(encode(m)) != m");
    let mut again = BytesMut::new();
    encode(&d, &mut again).unwrap();
    assert_eq!(
        again.freeze(),
        bytes,
        "{what} v{version}: encode(decode(x)) != x"
    );
}

/// The borrowed view of `bytes` (the encoding of `expected`) reads all of them and converts back
/// to `expected`.
fn check_view<'a, B: PartialEq + std::fmt::Debug, V>(
    what: &str,
    version: i16,
    expected: &B,
    bytes: &'a [u8],
    decode_view: impl Fn(&mut &'a [u8]) -> Result<V, DecodeError>,
    to_owned: impl Fn(&V) -> B,
) {
    let mut rest = bytes;
    let view = decode_view(&mut rest)
        .unwrap_or_else(|e| panic!("{what} v{version}: decode_view: {e}\n{expected:?}"));
    assert!(
        rest.is_empty(),
        "{what} v{version}: view left {} bytes",
        rest.len()
    );
    assert_eq!(
        &to_owned(&view),
        expected,
        "{what} v{version}: view.to_message() != m"
    );
}

/// The owned decoder and the view decoder agree on `bytes`: both fail with the same error, or both
/// succeed, consume the same bytes and give equal messages.
fn same_as_view(k: ApiKey, v: i16, bytes: &[u8], request: bool) {
    let mut owned_rest = Bytes::copy_from_slice(bytes);
    let mut view_rest = bytes;
    let (owned, view) = if request {
        (
            RequestBody::decode(k, v, &mut owned_rest).map(|b| format!("{b:?}")),
            RequestBodyView::decode_view(k, v, &mut view_rest)
                .map(|b| format!("{:?}", b.to_body())),
        )
    } else {
        (
            ResponseBody::decode(k, v, &mut owned_rest).map(|b| format!("{b:?}")),
            ResponseBodyView::decode_view(k, v, &mut view_rest)
                .map(|b| format!("{:?}", b.to_body())),
        )
    };
    assert_eq!(
        owned,
        view,
        "{} v{v}: owned and view decoders disagree",
        k.name()
    );
    if owned.is_ok() {
        assert_eq!(
            owned_rest.len(),
            view_rest.len(),
            "{} v{v}: consumed lengths differ",
            k.name()
        );
    }
}

struct Checker;

impl CheckMessage for Checker {
    fn check<M: Message>(&mut self, name: &str, m: &M, version: i16) {
        check_body(
            name,
            version,
            m,
            |m, b| m.encode(b, version),
            |m, b| m.encode(b, version),
            |m| m.encoded_len(version),
            |b| M::decode(b, version),
        );
        let mut buf = BytesMut::new();
        m.encode(&mut buf, version).unwrap();
        check_view(
            name,
            version,
            m,
            &buf,
            |b| M::View::decode_view(b, version),
            |view| view.to_message(),
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn every_request_and_response_round_trips_at_every_version(seed in any::<u64>()) {
        let mut g = Gen::new(seed);
        for k in ApiKey::ALL {
            let (lo, hi) = k.valid_versions();
            for v in lo..=hi {
                let req = random_request(k, &mut g, v);
                check_body(k.name(), v, &req, |m, b| m.encode(b, v), |m, b| m.encode(b, v), |m| m.encoded_len(v), |b| RequestBody::decode(k, v, b));
                let resp = random_response(k, &mut g, v);
                check_body(k.name(), v, &resp, |m, b| m.encode(b, v), |m, b| m.encode(b, v), |m| m.encoded_len(v), |b| ResponseBody::decode(k, v, b));
                let mut buf = BytesMut::new();
                req.encode(&mut buf, v).unwrap();
                check_view(k.name(), v, &req, &buf, |b| RequestBodyView::decode_view(k, v, b), |view| view.to_body());
                let mut buf = BytesMut::new();
                resp.encode(&mut buf, v).unwrap();
                check_view(k.name(), v, &resp, &buf, |b| ResponseBodyView::decode_view(k, v, b), |view| view.to_body());
            }
        }
    }

    #[test]
    fn every_data_message_header_and_coordinator_record_round_trips(seed in any::<u64>()) {
        let mut g = Gen::new(seed);
        for_each_non_rpc_message(&mut g, &mut Checker);
    }

    #[test]
    fn request_frames_round_trip(seed in any::<u64>(), client_id in proptest::option::of("[a-z0-9-]{0,12}")) {
        let mut g = Gen::new(seed);
        for k in ApiKey::ALL {
            let (lo, hi) = k.valid_versions();
            let v = lo + (g.next() % (hi - lo + 1) as u64) as i16;
            let header = RequestHeader {
                request_api_key: k as i16,
                request_api_version: v,
                correlation_id: g.next() as i32,
                client_id: if k.request_header_version(v) == 0 { Some(StrBytes::new()) } else { client_id.clone().map(StrBytes::from) },
                unknown_tagged_fields: if k.request_header_version(v) == 2 { g.unknown_tagged_fields() } else { Default::default() },
            };
            let body = random_request(k, &mut g, v);
            let mut buf = BytesMut::new();
            encode_request_frame(&header, &body, &mut buf).unwrap();
            let frame = buf.freeze();
            prop_assert_eq!(frame.len() - 4, i32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]]) as usize);
            let (h, b) = decode_request_frame(frame.slice(4..)).unwrap();
            prop_assert_eq!(h, header);
            prop_assert_eq!(b, body);
        }
    }

    #[test]
    fn response_frames_round_trip(seed in any::<u64>()) {
        let mut g = Gen::new(seed);
        for k in ApiKey::ALL {
            let (lo, hi) = k.valid_versions();
            let v = lo + (g.next() % (hi - lo + 1) as u64) as i16;
            let body = random_response(k, &mut g, v);
            let correlation_id = g.next() as i32;
            let mut buf = BytesMut::new();
            encode_response_frame(correlation_id, k, v, &body, &mut buf).unwrap();
            let (h, b) = decode_response_frame(k, v, buf.freeze().slice(4..)).unwrap();
            prop_assert_eq!(h.correlation_id, correlation_id);
            prop_assert_eq!(b, body);
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic_the_frame_decoder(data in proptest::collection::vec(any::<u8>(), 0..300)) {
        if let Ok((h, b)) = decode_request_frame(Bytes::from(data)) {
            let mut out = BytesMut::new();
            if encode_request_frame(&h, &b, &mut out).is_ok() {
                let (h2, b2) = decode_request_frame(out.freeze().slice(4..)).unwrap();
                prop_assert_eq!(h2, h);
                prop_assert_eq!(b2, b);
            }
        }
    }

    #[test]
    fn mutated_valid_frames_never_panic(seed in any::<u64>(), flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..4)) {
        let mut g = Gen::new(seed);
        for k in ApiKey::ALL {
            let (lo, hi) = k.valid_versions();
            let v = lo + (g.next() % (hi - lo + 1) as u64) as i16;
            let header = RequestHeader { request_api_key: k as i16, request_api_version: v, client_id: Some("c".into()), ..Default::default() };
            let mut buf = BytesMut::new();
            encode_request_frame(&header, &random_request(k, &mut g, v), &mut buf).unwrap();
            let mut frame = buf.split_off(4).to_vec();
            for (at, x) in &flips {
                let i = at % frame.len();
                frame[i] ^= x;
            }
            let _ = decode_request_frame(Bytes::from(frame.clone()));
            // Past the header, the owned and the view decoders accept the same bodies.
            let mut rest = Bytes::from(frame);
            if decode_request_header(&mut rest).is_ok() {
                same_as_view(k, v, &rest, true);
            }
        }
    }

    #[test]
    fn owned_and_view_decoders_agree_on_mutated_bodies(seed in any::<u64>(), flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..4), cut in any::<usize>()) {
        let mut g = Gen::new(seed);
        for k in ApiKey::ALL {
            let (lo, hi) = k.valid_versions();
            let v = lo + (g.next() % (hi - lo + 1) as u64) as i16;
            for request in [true, false] {
                let mut buf = BytesMut::new();
                if request {
                    random_request(k, &mut g, v).encode(&mut buf, v).unwrap();
                } else {
                    random_response(k, &mut g, v).encode(&mut buf, v).unwrap();
                }
                let mut body = buf.to_vec();
                if !body.is_empty() {
                    for (at, x) in &flips {
                        let i = at % body.len();
                        body[i] ^= x;
                    }
                    body.truncate(body.len() - cut % (body.len() / 4 + 1));
                }
                same_as_view(k, v, &body, request);
            }
        }
    }
}
