//! OAUTHBEARER sessions with Kafka's unsecured validator, and a plugged-in validator.

use std::collections::BTreeMap;
use std::sync::Arc;

use josef_sasl::client::{oauthbearer_client_response, unsecured_token};
use josef_sasl::oauthbearer::{
    OAuthBearerSaslServer, OAuthBearerToken, OAuthBearerValidator, TokenRejection,
    UnsecuredJwsValidator,
};
use josef_sasl::{AuthFailure, KafkaPrincipal, SaslError, SaslServer, SaslStep};
use serde_json::json;

const NOW: i64 = 1_700_000_000_000;

fn server() -> OAuthBearerSaslServer {
    OAuthBearerSaslServer::new(Arc::new(UnsecuredJwsValidator::default()))
}

fn response(claims: serde_json::Value, authzid: &str) -> Vec<u8> {
    let ext = BTreeMap::from([("traceId".to_string(), "t-1".to_string())]);
    oauthbearer_client_response(&unsecured_token(&claims), authzid, &ext)
}

#[test]
fn valid_token_authenticates_with_expiry_and_extensions() {
    let mut s = server();
    let step = s
        .evaluate_response(
            &response(json!({"sub":"alice","exp":1_700_000_060}), ""),
            NOW,
        )
        .unwrap();
    let SaslStep::Complete(done) = step else {
        panic!("{step:?}")
    };
    assert_eq!(done.principal, KafkaPrincipal::user("alice"));
    assert!(done.response.is_empty());
    assert_eq!(done.credential_expiry_ms, Some(1_700_000_060_000));
    assert_eq!(done.extensions["traceId"], "t-1");
}

#[test]
fn expired_token_gets_the_json_challenge_then_fails_on_ctrl_a() {
    let mut s = server();
    let step = s.evaluate_response(&response(json!({"sub":"alice","exp":1}), ""), NOW);
    assert_eq!(
        step,
        Ok(SaslStep::Challenge(
            br#"{"status":"invalid_token"}"#.to_vec()
        ))
    );
    let e = s.evaluate_response(b"\x01", NOW).unwrap_err();
    assert_eq!(
        e,
        SaslError::Authentication(AuthFailure::OAuthBearerTokenRejected {
            json: r#"{"status":"invalid_token"}"#.into()
        })
    );
    // The JSON is what the client sees.
    assert_eq!(
        e.client_message(josef_sasl::SaslMechanism::OAuthBearer, false),
        r#"{"status":"invalid_token"}"#
    );
}

#[test]
fn after_a_challenge_a_new_initial_response_is_read_again() {
    let mut s = server();
    assert!(matches!(
        s.evaluate_response(&response(json!({"sub":"a","exp":1}), ""), NOW),
        Ok(SaslStep::Challenge(_))
    ));
    assert!(matches!(
        s.evaluate_response(&response(json!({"sub":"a","exp":1_800_000_000}), ""), NOW),
        Ok(SaslStep::Complete(_))
    ));
}

#[test]
fn authzid_must_be_the_principal() {
    let mut s = server();
    assert_eq!(
        s.evaluate_response(
            &response(json!({"sub":"alice","exp":1_800_000_000}), "bob"),
            NOW
        ),
        Err(AuthFailure::OAuthBearerAuthorizationIdMismatch {
            authorization_id: "bob".into(),
            principal: "alice".into()
        }
        .into())
    );
    let mut s = server();
    assert!(s
        .evaluate_response(
            &response(json!({"sub":"alice","exp":1_800_000_000}), "alice"),
            NOW
        )
        .is_ok());
}

#[test]
fn malformed_messages_fail_generically() {
    for bad in [&b"garbage"[..], b"n,,\x01auth=Basic abc\x01\x01", b"\x01"] {
        let e = server().evaluate_response(bad, NOW).unwrap_err();
        assert_eq!(
            e.client_message(josef_sasl::SaslMechanism::OAuthBearer, false),
            "Authentication failed during authentication due to invalid credentials with SASL mechanism OAUTHBEARER"
        );
    }
}

/// A validator standing in for a JWKS one: accepts the token `good`, refuses extension `bad`.
struct Fixed;

impl OAuthBearerValidator for Fixed {
    fn validate_token(
        &self,
        token: &str,
        _now_ms: i64,
    ) -> Result<OAuthBearerToken, TokenRejection> {
        if token != "good" {
            let mut r = TokenRejection::invalid(std::fmt::Error);
            r.openid_configuration = Some("https://idp/.well-known/openid-configuration".into());
            return Err(r);
        }
        Ok(OAuthBearerToken {
            value: token.into(),
            principal_name: "svc".into(),
            scope: Default::default(),
            lifetime_ms: 42,
            start_time_ms: None,
        })
    }

    fn validate_extensions(
        &self,
        _token: &OAuthBearerToken,
        extensions: &BTreeMap<String, String>,
    ) -> Result<BTreeMap<String, String>, BTreeMap<String, String>> {
        match extensions.get("bad") {
            Some(_) => Err(BTreeMap::from([(
                "bad".to_string(),
                "not allowed".to_string(),
            )])),
            None => Ok(extensions.clone()),
        }
    }
}

#[test]
fn plugged_validator_decides() {
    let mut s = OAuthBearerSaslServer::new(Arc::new(Fixed));
    let ok = oauthbearer_client_response("good", "", &BTreeMap::new());
    assert!(
        matches!(s.evaluate_response(&ok, 0), Ok(SaslStep::Complete(a)) if a.credential_expiry_ms == Some(42))
    );

    let mut s = OAuthBearerSaslServer::new(Arc::new(Fixed));
    let bad = oauthbearer_client_response("other", "", &BTreeMap::new());
    assert_eq!(
        s.evaluate_response(&bad, 0),
        Ok(SaslStep::Challenge(
            br#"{"status":"invalid_token", "openid-configuration":"https://idp/.well-known/openid-configuration"}"#.to_vec()
        ))
    );

    let mut s = OAuthBearerSaslServer::new(Arc::new(Fixed));
    let ext = BTreeMap::from([("bad".to_string(), "1".to_string())]);
    let e = s
        .evaluate_response(&oauthbearer_client_response("good", "", &ext), 0)
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "Authentication failed: 1 extensions are invalid! They are: bad: not allowed"
    );
}
