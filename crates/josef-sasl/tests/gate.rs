//! The SASL gate over request frames: what it answers itself, what it lets through, when it
//! closes, and that no frame (truncated, huge or garbage) makes it panic or let a request through
//! before authentication.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use josef_protocol::messages::{
    ApiVersionsRequest, MetadataRequest, SaslAuthenticateRequest, SaslHandshakeRequest,
};
use josef_protocol::{
    decode_response_frame, encode_request_frame, ApiKey, ErrorCode, RequestBody, RequestHeader,
    ResponseBody, StrBytes,
};
use josef_sasl::gate::{Answer, Gate, GateClose, SaslGate};
use josef_sasl::plain::PlainUsers;
use josef_sasl::{client, AuthenticatorConfig, CloseReason, SaslListener, SaslServerFactory};
use proptest::prelude::*;

fn listener(reauth_ms: i64) -> Arc<SaslListener> {
    let mut config = AuthenticatorConfig::new(["PLAIN"]);
    config.connections_max_reauth_ms = reauth_ms;
    SaslListener::new(
        config,
        SaslServerFactory::new().with_plain(PlainUsers::new().with_user("alice", "secret")),
    )
    .unwrap()
}

fn frame(version: i16, correlation_id: i32, body: RequestBody) -> Bytes {
    let header = RequestHeader {
        request_api_key: body.api_key() as i16,
        request_api_version: version,
        correlation_id,
        client_id: Some(StrBytes::from_static_str("test")),
        ..Default::default()
    };
    let mut buf = BytesMut::new();
    encode_request_frame(&header, &body, &mut buf).unwrap();
    buf.freeze().slice(4..)
}

fn handshake(version: i16, mechanism: &'static str) -> Bytes {
    frame(
        version,
        1,
        RequestBody::SaslHandshake(SaslHandshakeRequest {
            mechanism: StrBytes::from_static_str(mechanism),
        }),
    )
}

fn authenticate(version: i16, token: Vec<u8>) -> Bytes {
    frame(
        version,
        2,
        RequestBody::SaslAuthenticate(SaslAuthenticateRequest {
            auth_bytes: Bytes::from(token),
            ..Default::default()
        }),
    )
}

fn metadata() -> Bytes {
    frame(
        12,
        3,
        RequestBody::Metadata(MetadataRequest {
            topics: None,
            ..Default::default()
        }),
    )
}

/// The response of `key` v`version` in `frame` (length prefix included), with its correlation id.
fn response(frame: &josef_protocol::FrameChunks, key: ApiKey, version: i16) -> (i32, ResponseBody) {
    let bytes = frame.to_bytes();
    let len = i32::from_be_bytes(bytes[..4].try_into().unwrap());
    assert_eq!(len as usize, bytes.len() - 4);
    let (h, body) = decode_response_frame(key, version, bytes.slice(4..)).unwrap();
    (h.correlation_id, body)
}

fn respond(g: Gate) -> josef_protocol::FrameChunks {
    match g {
        Gate::Answer(Answer::Respond(f)) => f,
        other => panic!("expected a response, got {other:?}"),
    }
}

fn login(gate: &mut SaslGate, now: i64) {
    let hs = respond(gate.on_frame(&handshake(1, "PLAIN"), now));
    let (corr, body) = response(&hs, ApiKey::SaslHandshake, 1);
    assert_eq!(corr, 1);
    let ResponseBody::SaslHandshake(hs) = body else {
        panic!("{body:?}")
    };
    assert_eq!(hs.error_code, ErrorCode::None.code());
    assert_eq!(hs.mechanisms, vec![StrBytes::from_static_str("PLAIN")]);
    let token = client::plain_message("", "alice", "secret");
    let auth = respond(gate.on_frame(&authenticate(2, token), now));
    let (corr, body) = response(&auth, ApiKey::SaslAuthenticate, 2);
    assert_eq!(corr, 2);
    let ResponseBody::SaslAuthenticate(a) = body else {
        panic!("{body:?}")
    };
    assert_eq!(a.error_code, ErrorCode::None.code());
}

#[test]
fn only_api_versions_and_the_handshake_pass_before_authentication() {
    let l = listener(0);
    let mut gate = SaslGate::new(&l);
    assert_eq!(gate.max_receive_size(), Some(524_288));
    let versions = frame(
        3,
        9,
        RequestBody::ApiVersions(ApiVersionsRequest::default()),
    );
    assert!(matches!(gate.on_frame(&versions, 0), Gate::Handle));
    assert_eq!(gate.principal(), None);
    match gate.on_frame(&metadata(), 0) {
        Gate::Answer(Answer::Close(GateClose::Refused {
            reason: CloseReason::UnexpectedRequest { api_key: 3 },
            api_key: 3,
        })) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_login_lets_requests_through_as_the_principal() {
    let l = listener(0);
    let mut gate = SaslGate::new(&l);
    login(&mut gate, 0);
    assert_eq!(gate.principal().unwrap().to_string(), "User:alice");
    assert_eq!(gate.max_receive_size(), None);
    assert!(matches!(gate.on_frame(&metadata(), 1), Gate::Handle));
    // A second SaslAuthenticate is ILLEGAL_SASL_STATE, answered, the connection kept.
    let again = respond(gate.on_frame(&authenticate(2, vec![0]), 1));
    let (_, body) = response(&again, ApiKey::SaslAuthenticate, 2);
    let ResponseBody::SaslAuthenticate(a) = body else {
        panic!("{body:?}")
    };
    assert_eq!(a.error_code, ErrorCode::IllegalSaslState.code());
    assert!(matches!(gate.on_frame(&metadata(), 1), Gate::Handle));
}

#[test]
fn a_wrong_password_is_answered_then_closed_after_the_delay() {
    let l = listener(0);
    let mut gate = SaslGate::new(&l);
    respond(gate.on_frame(&handshake(1, "PLAIN"), 0));
    let token = client::plain_message("", "alice", "wrong");
    match gate.on_frame(&authenticate(1, token), 0) {
        Gate::Answer(Answer::RespondAndClose { frame, close }) => {
            assert_eq!(close.reason, CloseReason::AuthenticationFailed);
            assert_eq!(close.delay_ms, 100);
            let (_, body) = response(&frame, ApiKey::SaslAuthenticate, 1);
            let ResponseBody::SaslAuthenticate(a) = body else {
                panic!("{body:?}")
            };
            assert_eq!(a.error_code, ErrorCode::SaslAuthenticationFailed.code());
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(gate.principal(), None);
    assert!(matches!(
        gate.on_frame(&metadata(), 0),
        Gate::Answer(Answer::Close(_))
    ));
}

#[test]
fn an_unknown_mechanism_is_answered_then_closed() {
    let l = listener(0);
    let mut gate = SaslGate::new(&l);
    match gate.on_frame(&handshake(1, "GSSAPI"), 0) {
        Gate::Answer(Answer::RespondAndClose { frame, close }) => {
            assert_eq!(close.reason, CloseReason::UnsupportedMechanism);
            let (_, body) = response(&frame, ApiKey::SaslHandshake, 1);
            let ResponseBody::SaslHandshake(h) = body else {
                panic!("{body:?}")
            };
            assert_eq!(h.error_code, ErrorCode::UnsupportedSaslMechanism.code());
            assert_eq!(h.mechanisms, vec![StrBytes::from_static_str("PLAIN")]);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_request_during_the_exchange_fails_the_connection() {
    let l = listener(0);
    let mut gate = SaslGate::new(&l);
    respond(gate.on_frame(&handshake(1, "PLAIN"), 0));
    match gate.on_frame(&metadata(), 0) {
        Gate::Answer(Answer::Close(e @ GateClose::IllegalState { .. })) => {
            assert_eq!(
                e.to_string(),
                "Unexpected Kafka request of type Metadata during SASL authentication."
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn after_a_v0_handshake_tokens_come_raw() {
    let l = listener(0);
    let mut gate = SaslGate::new(&l);
    respond(gate.on_frame(&handshake(0, "PLAIN"), 0));
    let token = Bytes::from(client::plain_message("", "alice", "secret"));
    let answer = respond(gate.on_frame(&token, 0));
    // An empty token, size-prefixed, and no Kafka response header.
    assert_eq!(answer.to_bytes().as_ref(), [0, 0, 0, 0]);
    assert_eq!(gate.principal().unwrap().to_string(), "User:alice");
    assert!(matches!(gate.on_frame(&metadata(), 0), Gate::Handle));
}

#[test]
fn an_expired_session_closes_unless_reauthenticated() {
    let l = listener(10_000);
    let mut gate = SaslGate::new(&l);
    login(&mut gate, 0);
    assert!(matches!(gate.on_frame(&metadata(), 9_999), Gate::Handle));
    // Re-authentication (KIP-368) before expiry keeps the connection.
    login(&mut gate, 9_999);
    assert!(matches!(gate.on_frame(&metadata(), 19_000), Gate::Handle));
    match gate.on_frame(&metadata(), 19_999) {
        Gate::Answer(Answer::Close(GateClose::Refused {
            reason: CloseReason::SessionExpired,
            ..
        })) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn short_and_malformed_frames_close() {
    let l = listener(0);
    for f in [&[][..], &[0, 17, 0, 1][..], &[0, 17, 0, 1, 0, 0, 0][..]] {
        let mut gate = SaslGate::new(&l);
        assert!(matches!(
            gate.on_frame(&Bytes::copy_from_slice(f), 0),
            Gate::Answer(Answer::Close(GateClose::TooShort))
        ));
    }
    let good = handshake(1, "PLAIN");
    for cut in 8..good.len() {
        let mut gate = SaslGate::new(&l);
        match gate.on_frame(&good.slice(..cut), 0) {
            Gate::Answer(Answer::Close(GateClose::Malformed(_))) => {}
            other => panic!("cut at {cut}: {other:?}"),
        }
    }
    // A string length far beyond the frame: an error, not an allocation.
    let mut huge = good[..8].to_vec();
    huge.extend_from_slice(&[0, 4, b't', b'e', b's', b't', 0x7f, 0xff]);
    let mut gate = SaslGate::new(&l);
    assert!(matches!(
        gate.on_frame(&Bytes::from(huge), 0),
        Gate::Answer(Answer::Close(GateClose::Malformed(_)))
    ));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Arbitrary frames never panic and never reach the handler before a login, except
    /// ApiVersions.
    #[test]
    fn garbage_never_passes_before_authentication(
        frames in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 1..6),
        raw in any::<bool>(),
    ) {
        let l = listener(0);
        let mut gate = SaslGate::new(&l);
        if raw {
            respond(gate.on_frame(&handshake(0, "PLAIN"), 0));
        }
        for f in frames {
            let key = f.get(..2).map(|k| i16::from_be_bytes([k[0], k[1]]));
            let passed = matches!(gate.on_frame(&Bytes::from(f), 0), Gate::Handle);
            if gate.principal().is_none() {
                prop_assert!(!passed || key == Some(ApiKey::ApiVersions as i16));
            }
        }
    }
}
