//! The connection authenticator: which requests each state admits, the handshake answer, the
//! failure closes, the v0 raw-token flow, KIP-368 lifetimes and re-authentication.

use std::sync::Arc;

use josef_protocol::{ApiKey, ErrorCode};
use josef_sasl::client::{
    oauthbearer_client_response, plain_message, unsecured_token, ScramClient,
};
use josef_sasl::oauthbearer::UnsecuredJwsValidator;
use josef_sasl::plain::PlainUsers;
use josef_sasl::scram::{ScramCredential, ScramCredentials, ScramMechanism};
use josef_sasl::{
    Admission, AuthenticatorConfig, Close, CloseReason, CountingNonce, SaslListener, SaslMechanism,
    SaslServerFactory, SaslState, ServerAuthenticator,
};
use serde_json::json;

const NOW: i64 = 1_700_000_000_000;

fn factory() -> SaslServerFactory {
    let users = PlainUsers::new()
        .with_user("alice", "alice-secret")
        .with_user("bob", "bob-secret");
    let mut store = ScramCredentials::new();
    for m in [ScramMechanism::Sha256, ScramMechanism::Sha512] {
        store.insert(
            m,
            "alice",
            ScramCredential::from_password(m, "alice-secret", b"salt", 4096),
        );
    }
    SaslServerFactory::new()
        .with_plain(users)
        .with_scram(Arc::new(store), Arc::new(CountingNonce::new("s")))
        .with_oauthbearer(Arc::new(UnsecuredJwsValidator::default()))
}

fn listener(config: AuthenticatorConfig) -> Arc<SaslListener> {
    SaslListener::new(config, factory()).unwrap()
}

fn all() -> AuthenticatorConfig {
    AuthenticatorConfig::new(["PLAIN", "SCRAM-SHA-512", "OAUTHBEARER"])
}

fn key(k: ApiKey) -> i16 {
    k as i16
}

fn plain_login(c: &mut ServerAuthenticator, user: &str, pw: &str, now: i64) -> ErrorCode {
    assert_eq!(
        c.admit(key(ApiKey::SaslHandshake), now),
        Admission::Authenticator
    );
    assert_eq!(
        c.handshake(1, "PLAIN").response.unwrap().error_code,
        ErrorCode::None
    );
    assert_eq!(
        c.admit(key(ApiKey::SaslAuthenticate), now),
        Admission::Authenticator
    );
    c.authenticate(2, &plain_message("", user, pw), now)
        .response
        .unwrap()
        .error_code
}

fn oauth_login(
    c: &mut ServerAuthenticator,
    exp_s: i64,
    now: i64,
) -> josef_sasl::AuthenticateResponse {
    assert_eq!(
        c.admit(key(ApiKey::SaslHandshake), now),
        Admission::Authenticator
    );
    assert_eq!(
        c.handshake(1, "OAUTHBEARER").response.unwrap().error_code,
        ErrorCode::None
    );
    let token = unsecured_token(&json!({"sub":"alice","exp":exp_s}));
    c.authenticate(
        1,
        &oauthbearer_client_response(&token, "", &Default::default()),
        now,
    )
    .response
    .unwrap()
}

#[test]
fn metadata_before_authentication_closes_without_reply() {
    let l = listener(all());
    let mut c = l.connection();
    assert_eq!(
        c.admit(key(ApiKey::Metadata), NOW),
        Admission::Close(CloseReason::UnexpectedRequest { api_key: 3 })
    );
    assert_eq!(c.state(), SaslState::Failed);
}

#[test]
fn api_versions_then_handshake_then_only_handshake() {
    let l = listener(all());
    let mut c = l.connection();
    assert_eq!(
        c.admit(key(ApiKey::ApiVersions), NOW),
        Admission::Authenticator
    );
    // UNSUPPORTED_VERSION lets the client retry.
    c.api_versions_answered(ErrorCode::UnsupportedVersion);
    assert_eq!(c.state(), SaslState::HandshakeOrVersions);
    assert_eq!(
        c.admit(key(ApiKey::ApiVersions), NOW),
        Admission::Authenticator
    );
    c.api_versions_answered(ErrorCode::None);
    assert_eq!(c.state(), SaslState::HandshakeRequest);
    // A second answered ApiVersions is not allowed.
    assert!(matches!(
        c.admit(key(ApiKey::ApiVersions), NOW),
        Admission::Close(_)
    ));

    let mut c = l.connection();
    c.admit(key(ApiKey::ApiVersions), NOW);
    c.api_versions_answered(ErrorCode::None);
    assert_eq!(
        plain_login(&mut c, "alice", "alice-secret", NOW),
        ErrorCode::None
    );
    assert!(c.is_authenticated());
}

#[test]
fn disabled_mechanism_answers_the_enabled_list_then_closes_after_the_delay() {
    let l = listener(AuthenticatorConfig::new(["PLAIN"]));
    let mut c = l.connection();
    c.admit(key(ApiKey::SaslHandshake), NOW);
    let out = c.handshake(1, "SCRAM-SHA-512");
    let r = out.response.unwrap();
    assert_eq!(r.error_code, ErrorCode::UnsupportedSaslMechanism);
    assert_eq!(r.mechanisms, ["PLAIN"]);
    assert_eq!(
        out.close,
        Some(Close {
            reason: CloseReason::UnsupportedMechanism,
            delay_ms: 100
        })
    );
    // Names match exactly.
    let mut c = l.connection();
    c.admit(key(ApiKey::SaslHandshake), NOW);
    assert_eq!(
        c.handshake(1, "plain").response.unwrap().error_code,
        ErrorCode::UnsupportedSaslMechanism
    );
}

#[test]
fn unsupported_handshake_version_closes_without_reply() {
    let l = listener(all());
    let mut c = l.connection();
    c.admit(key(ApiKey::SaslHandshake), NOW);
    let out = c.handshake(2, "PLAIN");
    assert_eq!(out.response, None);
    assert_eq!(out.close.unwrap().reason, CloseReason::UnsupportedVersion);
}

#[test]
fn wrong_plain_password_fails_with_kafkas_message_and_delayed_close() {
    let l = listener(all());
    let mut c = l.connection();
    c.admit(key(ApiKey::SaslHandshake), NOW);
    c.handshake(1, "PLAIN");
    let out = c.authenticate(1, &plain_message("", "alice", "nope"), NOW);
    let r = out.response.unwrap();
    assert_eq!(r.error_code, ErrorCode::SaslAuthenticationFailed);
    assert_eq!(
        r.error_message.as_deref(),
        Some("Authentication failed: Invalid username or password")
    );
    assert!(r.auth_bytes.is_empty());
    assert_eq!(
        out.close,
        Some(Close {
            reason: CloseReason::AuthenticationFailed,
            delay_ms: 100
        })
    );
    assert_eq!(c.state(), SaslState::Failed);
    assert!(matches!(
        c.admit(key(ApiKey::Metadata), NOW),
        Admission::Close(_)
    ));
}

#[test]
fn other_request_during_authenticate_is_illegal_sasl_state_and_closes() {
    let l = listener(all());
    let mut c = l.connection();
    c.admit(key(ApiKey::SaslHandshake), NOW);
    c.handshake(1, "SCRAM-SHA-512");
    assert_eq!(
        c.admit(key(ApiKey::Metadata), NOW),
        Admission::IllegalSaslState {
            message: Some(
                "Unexpected Kafka request of type Metadata during SASL authentication.".into()
            ),
            close: true
        }
    );
}

#[test]
fn scram_over_the_connection_and_after_success() {
    let l = listener(all());
    let mut c = l.connection();
    c.admit(key(ApiKey::SaslHandshake), NOW);
    c.handshake(1, "SCRAM-SHA-512");
    let mut client = ScramClient::new(ScramMechanism::Sha512, "alice", "alice-secret", "cn");
    let first = c
        .authenticate(2, &client.client_first(), NOW)
        .response
        .unwrap();
    assert_eq!(first.error_code, ErrorCode::None);
    assert_eq!(first.session_lifetime_ms, 0);
    let fin = client.client_final(&first.auth_bytes).unwrap();
    let last = c.authenticate(2, &fin, NOW).response.unwrap();
    assert_eq!(last.error_code, ErrorCode::None);
    client.verify_server_final(&last.auth_bytes).unwrap();
    assert_eq!(c.principal().unwrap().to_string(), "User:alice");
    assert_eq!(c.session().unwrap().mechanism, SaslMechanism::ScramSha512);
    assert_eq!(c.max_receive_size(), None);

    assert_eq!(c.admit(key(ApiKey::Produce), NOW), Admission::Process);
    assert_eq!(
        c.admit(key(ApiKey::SaslAuthenticate), NOW),
        Admission::IllegalSaslState {
            message: Some(
                "SaslAuthenticate request received after successful authentication".into()
            ),
            close: false
        }
    );
    // No expiry: a handshake is not a re-authentication.
    assert_eq!(
        c.admit(key(ApiKey::SaslHandshake), NOW + 5000),
        Admission::IllegalSaslState {
            message: None,
            close: false
        }
    );
    let again = c.authenticate(2, b"x", NOW).response.unwrap();
    assert_eq!(again.error_code, ErrorCode::IllegalSaslState);
}

#[test]
fn handshake_v0_then_raw_tokens() {
    let l = listener(all());
    let mut c = l.connection();
    c.admit(key(ApiKey::SaslHandshake), NOW);
    c.handshake(0, "PLAIN");
    assert!(c.expects_raw_tokens());
    let out = c.raw_token(&plain_message("", "bob", "bob-secret"), NOW);
    assert_eq!(out.response, Some(Vec::new()));
    assert_eq!(out.close, None);
    assert!(c.is_authenticated());
    assert!(!c.expects_raw_tokens());

    let mut c = l.connection();
    c.admit(key(ApiKey::SaslHandshake), NOW);
    c.handshake(0, "PLAIN");
    let out = c.raw_token(&plain_message("", "bob", "x"), NOW);
    assert_eq!(out.response, None);
    assert_eq!(out.close.unwrap().reason, CloseReason::AuthenticationFailed);
}

#[test]
fn frames_over_the_limit_fail_before_authentication() {
    let mut cfg = all();
    cfg.max_receive_size = 10;
    let l = listener(cfg);
    let mut c = l.connection();
    assert_eq!(c.check_frame_size(10), Ok(()));
    assert_eq!(c.check_frame_size(11), Err(CloseReason::FrameTooLarge));
    assert_eq!(c.state(), SaslState::Failed);
}

#[test]
fn oauthbearer_session_lifetime_and_expiry_close() {
    let l = listener(all());
    let mut c = l.connection();
    let r = oauth_login(&mut c, 1_700_000_060, NOW);
    assert_eq!(r.error_code, ErrorCode::None);
    assert_eq!(r.session_lifetime_ms, 60_000);
    assert_eq!(
        c.admit(key(ApiKey::Fetch), NOW + 59_999),
        Admission::Process
    );
    assert_eq!(
        c.admit(key(ApiKey::Fetch), NOW + 60_000),
        Admission::Close(CloseReason::SessionExpired)
    );
}

#[test]
fn expired_token_challenge_then_failure() {
    let l = listener(all());
    let mut c = l.connection();
    let r = oauth_login(&mut c, 1, NOW);
    assert_eq!(r.error_code, ErrorCode::None);
    assert_eq!(r.auth_bytes, br#"{"status":"invalid_token"}"#);
    let out = c.authenticate(1, b"\x01", NOW);
    let r = out.response.unwrap();
    assert_eq!(r.error_code, ErrorCode::SaslAuthenticationFailed);
    assert_eq!(
        r.error_message.as_deref(),
        Some(r#"{"status":"invalid_token"}"#)
    );
    assert_eq!(out.close.unwrap().delay_ms, 100);
}

#[test]
fn max_reauth_bounds_the_session_and_reauthentication_renews_it() {
    let mut cfg = all();
    cfg.connections_max_reauth_ms = 10_000;
    let l = listener(cfg);
    let mut c = l.connection();
    assert_eq!(
        plain_login(&mut c, "alice", "alice-secret", NOW),
        ErrorCode::None
    );
    assert_eq!(c.session().unwrap().expires_at_ms, Some(NOW + 10_000));

    // Re-authenticate: same mechanism, same principal.
    let t = NOW + 9_000;
    assert_eq!(
        plain_login(&mut c, "alice", "alice-secret", t),
        ErrorCode::None
    );
    assert_eq!(c.session().unwrap().expires_at_ms, Some(t + 10_000));
    assert_eq!(
        c.admit(key(ApiKey::Fetch), NOW + 12_000),
        Admission::Process
    );

    // Less than a second after the last start: processed as a plain handshake.
    assert_eq!(
        c.admit(key(ApiKey::SaslHandshake), t + 500),
        Admission::IllegalSaslState {
            message: None,
            close: false
        }
    );
}

#[test]
fn reauthentication_may_change_neither_principal_nor_mechanism() {
    let mut cfg = all();
    cfg.connections_max_reauth_ms = 10_000;
    let l = listener(cfg);

    let mut c = l.connection();
    plain_login(&mut c, "alice", "alice-secret", NOW);
    c.admit(key(ApiKey::SaslHandshake), NOW + 2000);
    c.handshake(1, "PLAIN");
    assert!(c.is_reauthenticating());
    let r = c
        .authenticate(2, &plain_message("", "bob", "bob-secret"), NOW + 2000)
        .response
        .unwrap();
    assert_eq!(r.error_code, ErrorCode::SaslAuthenticationFailed);
    assert_eq!(
        r.error_message.as_deref(),
        Some("Cannot change principals during re-authentication from User.alice: User.bob")
    );

    let mut c = l.connection();
    plain_login(&mut c, "alice", "alice-secret", NOW);
    c.admit(key(ApiKey::SaslHandshake), NOW + 2000);
    assert_eq!(
        c.handshake(1, "OAUTHBEARER").response.unwrap().error_code,
        ErrorCode::None
    );
    assert_eq!(c.state(), SaslState::ReauthBadMechanism);
    let r = c.authenticate(2, b"whatever", NOW + 2000).response.unwrap();
    assert_eq!(r.error_code, ErrorCode::SaslAuthenticationFailed);
    assert_eq!(
        r.error_message.as_deref(),
        Some("SASL mechanism 'OAUTHBEARER' requested by client is not supported for re-authentication of mechanism 'PLAIN'")
    );

    // A failed re-authentication uses Kafka's re-authentication wording.
    let mut c = l.connection();
    plain_login(&mut c, "alice", "alice-secret", NOW);
    c.admit(key(ApiKey::SaslHandshake), NOW + 2000);
    c.handshake(1, "PLAIN");
    let r = c.authenticate(2, b"no-nul", NOW + 2000).response.unwrap();
    assert_eq!(
        r.error_message.as_deref(),
        Some("Authentication failed during re-authentication due to invalid credentials with SASL mechanism PLAIN")
    );
}

#[test]
fn listener_refuses_implemented_mechanisms_it_was_given_nothing_for() {
    let e = SaslListener::new(
        AuthenticatorConfig::new(["PLAIN"]),
        SaslServerFactory::new(),
    )
    .unwrap_err();
    assert_eq!(
        e,
        josef_sasl::ConfigError::MechanismNotConfigured("PLAIN".into())
    );
}

#[test]
fn an_enabled_mechanism_this_crate_does_not_implement_is_unsupported_at_handshake() {
    // Kafka's default `sasl.enabled.mechanisms` is GSSAPI: it may stay in the list.
    let l = SaslListener::new(AuthenticatorConfig::new(["GSSAPI", "PLAIN"]), factory()).unwrap();
    let mut c = l.connection();
    assert_eq!(
        c.admit(key(ApiKey::SaslHandshake), NOW),
        Admission::Authenticator
    );
    let out = c.handshake(1, "GSSAPI");
    let r = out.response.unwrap();
    assert_eq!(r.error_code, ErrorCode::UnsupportedSaslMechanism);
    assert_eq!(
        r.mechanisms,
        vec!["GSSAPI".to_string(), "PLAIN".to_string()]
    );
    assert_eq!(out.close.unwrap().reason, CloseReason::UnsupportedMechanism);
    // PLAIN still works on another connection of the listener.
    let mut c = l.connection();
    c.admit(key(ApiKey::SaslHandshake), NOW);
    assert_eq!(
        c.handshake(1, "PLAIN").response.unwrap().error_code,
        ErrorCode::None
    );
}
