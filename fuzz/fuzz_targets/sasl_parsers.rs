//! SASL parsers and mechanism sessions from arbitrary bytes (`josef_sasl`): the first byte picks
//! the target, the rest is its input.
//!
//! - 0: SCRAM client-first, then (split at the first NUL) client-final, against a session.
//! - 1: SCRAM message parsers alone (client-first, client-final, server-final).
//! - 2: OAUTHBEARER client response, against an unsecured-validator session.
//! - 3: `sasl.jaas.config` text: what parses prints to text that parses back equal.
//! - 4: PLAIN message, against a session.
//!
//! Nothing may panic, and no session may authenticate: no input knows the password.
#![no_main]

use std::sync::Arc;

use josef_sasl::jaas::JaasConfig;
use josef_sasl::oauthbearer::{OAuthBearerSaslServer, UnsecuredJwsValidator};
use josef_sasl::plain::{PlainMessage, PlainSaslServer, PlainUsers};
use josef_sasl::scram::messages::{ClientFinalMessage, ClientFirstMessage, ServerFinalMessage};
use josef_sasl::scram::{ScramCredential, ScramCredentials, ScramMechanism, ScramSaslServer};
use josef_sasl::{CountingNonce, SaslServer, SaslStep};
use libfuzzer_sys::fuzz_target;

const NOW: i64 = 1_700_000_000_000;

fn not_complete(s: &mut dyn SaslServer, token: &[u8]) {
    assert!(!matches!(
        s.evaluate_response(token, NOW),
        Ok(SaslStep::Complete(_))
    ));
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, input)) = data.split_first() else {
        return;
    };
    match selector % 5 {
        0 => {
            // Kafka's minimum iteration count, the cheapest a login accepts.
            let m = ScramMechanism::Sha256;
            let mut store = ScramCredentials::new();
            store.insert(m, "user", ScramCredential::from_password(m, "pencil", b"salt", 4096));
            let mut s = ScramSaslServer::new(m, Arc::new(store), Arc::new(CountingNonce::new("n")));
            let (first, fin) = match input.iter().position(|&b| b == 0) {
                Some(i) => (&input[..i], Some(&input[i + 1..])),
                None => (input, None),
            };
            let step = s.evaluate_response(first, NOW);
            assert!(!matches!(step, Ok(SaslStep::Complete(_))));
            if let (Ok(SaslStep::Challenge(_)), Some(fin)) = (step, fin) {
                not_complete(&mut s, fin);
            }
        }
        1 => {
            if let Ok(m) = ClientFirstMessage::parse(input) {
                assert!(m.bare.len() < input.len());
                assert!(!m.nonce.is_empty() && !m.saslname.is_empty());
            }
            if let Ok(m) = ClientFinalMessage::parse(input) {
                assert!(m.without_proof.len() < input.len());
            }
            if let Ok(m) = ServerFinalMessage::parse(input) {
                assert_eq!(ServerFinalMessage::parse(m.to_message().as_bytes()), Ok(m));
            }
        }
        2 => {
            let mut s = OAuthBearerSaslServer::new(Arc::new(UnsecuredJwsValidator::default()));
            let step = s.evaluate_response(input, NOW);
            // An unsecured token anyone can mint may authenticate; it must name a principal.
            if let Ok(SaslStep::Complete(done)) = step {
                assert!(!done.principal.name.trim().is_empty());
                assert!(done.credential_expiry_ms.is_some_and(|e| e > NOW));
            } else {
                not_complete(&mut s, b"\x01");
            }
        }
        3 => {
            let Ok(text) = std::str::from_utf8(input) else {
                return;
            };
            if let Ok(c) = JaasConfig::parse(text) {
                assert_eq!(JaasConfig::parse(&c.to_string()), Ok(c));
            }
        }
        _ => {
            let _ = PlainMessage::parse(input);
            // The seed corpus holds `alice-secret`, a wrong password; the right one is long and
            // compared in constant time, so the fuzzer cannot learn it byte by byte.
            let users = Arc::new(
                PlainUsers::new().with_user("alice", "Vb3Q8x-not-in-any-corpus-7Jm2Rk0pLw"),
            );
            not_complete(&mut PlainSaslServer::new(users), input);
        }
    }
});
