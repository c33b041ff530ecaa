//! SCRAM sessions: RFC 7677's example byte for byte, a SHA-512 round trip against the crate's
//! separate client, and each refusal of Kafka's `ScramSaslServer`.

use std::sync::Arc;

use base64::Engine;
use josef_sasl::client::{ScramClient, ScramClientError};
use josef_sasl::scram::{
    DelegationTokenCredential, ScramCredential, ScramCredentials, ScramMechanism, ScramSaslServer,
};
use josef_sasl::{AuthFailure, CountingNonce, KafkaPrincipal, SaslError, SaslServer, SaslStep};

fn b64(s: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD.decode(s).unwrap()
}

fn server(m: ScramMechanism, store: ScramCredentials) -> ScramSaslServer {
    ScramSaslServer::new(m, Arc::new(store), Arc::new(CountingNonce::new("srv")))
}

fn challenge(step: Result<SaslStep, SaslError>) -> Vec<u8> {
    match step {
        Ok(SaslStep::Challenge(c)) => c,
        other => panic!("expected a challenge, got {other:?}"),
    }
}

#[test]
fn rfc7677_example_byte_for_byte() {
    let m = ScramMechanism::Sha256;
    let salt = b64("W22ZaJ0SNY7soEsUEjb6gQ==");
    let mut store = ScramCredentials::new();
    store.insert(
        m,
        "user",
        ScramCredential::from_password(m, "pencil", &salt, 4096),
    );
    let nonce = || "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0".to_string();
    let mut s = ScramSaslServer::new(m, Arc::new(store), Arc::new(nonce));

    let server_first = challenge(s.evaluate_response(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO", 0));
    assert_eq!(
        String::from_utf8(server_first).unwrap(),
        "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    );
    let step = s
        .evaluate_response(
            b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,\
              p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
            0,
        )
        .unwrap();
    let SaslStep::Complete(done) = step else {
        panic!("not complete: {step:?}")
    };
    assert_eq!(
        String::from_utf8(done.response).unwrap(),
        "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    );
    assert_eq!(done.principal, KafkaPrincipal::user("user"));
    assert_eq!(done.credential_expiry_ms, None);
    // A finished session takes no more tokens.
    assert_eq!(
        s.evaluate_response(b"n,,n=user,r=x", 0),
        Err(SaslError::IllegalSaslState { state: "COMPLETE" })
    );
}

#[test]
fn rfc7677_client_side_produces_the_published_proof() {
    let mut c = ScramClient::new(
        ScramMechanism::Sha256,
        "user",
        "pencil",
        "rOprNGfwEbeRWgbNEkqO",
    );
    assert_eq!(c.client_first(), b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
    let fin = c
        .client_final(
            b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
        )
        .unwrap();
    assert_eq!(
        String::from_utf8(fin).unwrap(),
        "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    );
    assert_eq!(
        c.verify_server_final(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="),
        Ok(())
    );
    assert_eq!(
        c.verify_server_final(b"v=AAAATRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="),
        Err(ScramClientError::InvalidServerSignature)
    );
    assert_eq!(
        c.verify_server_final(b"e=invalid-proof"),
        Err(ScramClientError::ServerError("invalid-proof".into()))
    );
}

/// Runs client against server; the server's final step result.
fn exchange(
    s: &mut ScramSaslServer,
    c: &mut ScramClient,
) -> Result<josef_sasl::Authenticated, SaslError> {
    let first = challenge(s.evaluate_response(&c.client_first(), 0));
    let fin = c.client_final(&first).unwrap();
    match s.evaluate_response(&fin, 0)? {
        SaslStep::Complete(done) => {
            c.verify_server_final(&done.response).unwrap();
            Ok(done)
        }
        other => panic!("expected completion, got {other:?}"),
    }
}

#[test]
fn sha512_round_trip_and_wrong_password() {
    let m = ScramMechanism::Sha512;
    let mut store = ScramCredentials::new();
    store.insert(
        m,
        "al,i=ce",
        ScramCredential::from_password(m, "s3cr3t", b"NaCl", 4096),
    );
    let mut s = server(m, store.clone());
    let mut c = ScramClient::new(m, "al,i=ce", "s3cr3t", "clientnonce");
    let done = exchange(&mut s, &mut c).unwrap();
    assert_eq!(done.principal, KafkaPrincipal::user("al,i=ce"));

    let mut s = server(m, store.clone());
    let mut c = ScramClient::new(m, "al,i=ce", "wrong", "clientnonce");
    assert_eq!(
        exchange(&mut s, &mut c).unwrap_err(),
        SaslError::Authentication(AuthFailure::ScramInvalidProof)
    );
    assert!(matches!(
        s.evaluate_response(b"anything", 0),
        Err(SaslError::IllegalSaslState { .. })
    ));

    // A SHA-256 credential does not serve SHA-512.
    let mut s = server(ScramMechanism::Sha256, store);
    assert_eq!(
        s.evaluate_response(b"n,,n=al=2Ci=3Dce,r=abc", 0),
        Err(SaslError::Authentication(AuthFailure::ScramUnknownUser))
    );
}

fn sha256_store(iterations: u32) -> ScramCredentials {
    let m = ScramMechanism::Sha256;
    let mut store = ScramCredentials::new();
    store.insert(
        m,
        "bob",
        ScramCredential::from_password(m, "pw", b"salt", iterations),
    );
    store
}

#[test]
fn client_first_refusals() {
    let m = ScramMechanism::Sha256;
    let cases: [(&[u8], AuthFailure); 4] = [
        (b"n,,n=nobody,r=abc", AuthFailure::ScramUnknownUser),
        (
            b"n,a=alice,n=bob,r=abc",
            AuthFailure::AuthorizationIdMismatch,
        ),
        (b"y,,n=bob,r=abc", AuthFailure::ScramInvalidClientFirst),
        (
            b"n,,n=bob,r=abc,tokenauth=true",
            AuthFailure::ScramInvalidTokenId {
                token_id: "bob".into(),
            },
        ),
    ];
    for (msg, failure) in cases {
        let mut s = server(m, sha256_store(4096));
        assert_eq!(s.evaluate_response(msg, 0), Err(failure.into()), "{msg:?}");
    }
    let mut s = server(m, sha256_store(4096));
    assert!(s.evaluate_response(b"n,a=bob,n=bob,r=abc", 0).is_ok());

    let mut s = server(m, sha256_store(4095));
    assert_eq!(
        s.evaluate_response(b"n,,n=bob,r=abc", 0),
        Err(AuthFailure::ScramIterationsTooLow {
            iterations: 4095,
            minimum: 4096,
            mechanism: "SCRAM-SHA-256"
        }
        .into())
    );
}

/// The server's answer to `fin` after bob's client-first (`r=abc`; the server nonce is `srv0`).
fn client_final_for_bob(fin: &[u8]) -> Result<SaslStep, SaslError> {
    let mut s = server(ScramMechanism::Sha256, sha256_store(4096));
    challenge(s.evaluate_response(b"n,,n=bob,r=abc", 0));
    s.evaluate_response(fin, 0)
}

/// A SHA-256-sized proof of zeros, base64 (never the right one).
fn zero_proof() -> String {
    base64::engine::general_purpose::STANDARD.encode([0u8; 32])
}

#[test]
fn client_final_refusals() {
    let run = client_final_for_bob;
    let proof = zero_proof();
    assert_eq!(
        run(format!("c=biws,r=abcsrvX,p={proof}").as_bytes()),
        Err(AuthFailure::ScramInvalidNonce.into())
    );
    assert_eq!(
        run(format!("c=eSws,r=abcsrv0,p={proof}").as_bytes()),
        Err(AuthFailure::ScramInvalidChannelBinding.into())
    );
    assert_eq!(
        run(format!("c=biws,r=abcsrv0,p={proof}").as_bytes()),
        Err(AuthFailure::ScramInvalidProof.into())
    );
    assert_eq!(
        run(b"c=biws,r=abcsrv0,p=AAAA"),
        Err(AuthFailure::ScramInvalidProof.into())
    );
    assert_eq!(
        run(b"c=biws,r=abcsrv0"),
        Err(AuthFailure::ScramInvalidClientFinal.into())
    );
}

#[test]
fn delegation_token_login_uses_owner_and_expiry() {
    let m = ScramMechanism::Sha512;
    let mut store = ScramCredentials::new();
    store.insert_token(
        m,
        "token-1",
        DelegationTokenCredential {
            credential: ScramCredential::from_password(m, "hmac-of-token", b"ts", 4096),
            owner: "carol".into(),
            expiry_timestamp_ms: 5_000,
        },
    );
    let mut s = server(m, store);
    let mut c =
        ScramClient::new(m, "token-1", "hmac-of-token", "n1").with_extension("tokenauth", "true");
    let done = exchange(&mut s, &mut c).unwrap();
    assert_eq!(done.principal, KafkaPrincipal::user("carol"));
    assert_eq!(done.credential_expiry_ms, Some(5_000));
    assert_eq!(done.extensions["tokenauth"], "true");
}

#[test]
fn alter_user_scram_credentials_derivation_logs_in() {
    // The client of AlterUserScramCredentials sends Hi(password, salt, i) and the salt.
    let m = ScramMechanism::Sha256;
    let salted = josef_sasl::scram::hi(m, b"pw2", b"fresh-salt", 4096);
    let cred = ScramCredential::from_salted_password(m, &salted, b"fresh-salt", 4096).unwrap();
    let mut store = ScramCredentials::new();
    store.insert(m, "dave", cred);
    let mut s = server(m, store);
    let mut c = ScramClient::new(m, "dave", "pw2", "xyz");
    assert!(exchange(&mut s, &mut c).is_ok());
    assert!(ScramCredential::from_salted_password(m, &salted, b"fresh-salt", 4095).is_err());
}

/// librdkafka before 2.2 (Debian's kcat 1.7.1 links 2.0.2) repeats its own nonce in front of the
/// combined nonce in client-final; Kafka accepted that, so that one form passes the nonce check
/// (and still has to prove the password), while any other prefix is refused.
#[test]
fn the_client_nonce_repeated_in_front_is_accepted_and_nothing_else() {
    let run = client_final_for_bob;
    let proof = zero_proof();
    assert_eq!(
        run(format!("c=biws,r=abcabcsrv0,p={proof}").as_bytes()),
        Err(AuthFailure::ScramInvalidProof.into()),
        "the nonce is accepted; the (zero) proof is what fails"
    );
    for other in ["xyzabcsrv0", "ababcsrv0", "abcabcabcsrv0", "bcsrv0"] {
        assert_eq!(
            run(format!("c=biws,r={other},p={proof}").as_bytes()),
            Err(AuthFailure::ScramInvalidNonce.into()),
            "{other}"
        );
    }
}
