//! SCRAM messages (RFC 5802 section 7) with the grammar Kafka's `ScramMessages` accepts.
//!
//! Kafka's rules, stricter than the RFC in places: every attribute value is 7-bit ASCII; the
//! gs2 header is `n,` plus an optional `a=<saslname>` (no channel binding); a reserved `m=`
//! attribute may precede the user name; extensions are `,<letters>=<value>`.

use std::collections::BTreeMap;

use base64::alphabet;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::DecodePaddingMode;
use base64::Engine;

/// Java's basic Base64 decoder: padding required, stray low bits tolerated.
pub(crate) const B64: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::RequireCanonical)
        .with_decode_allow_trailing_bits(true),
);

/// The SCRAM extension that selects delegation-token authentication.
pub const TOKEN_AUTH_EXTENSION: &str = "tokenauth";

/// Why a SCRAM message does not parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ScramParseError {
    /// Not 7-bit ASCII without NUL.
    #[error("not ASCII")]
    NotAscii,
    /// The gs2 header is not `n,[a=<saslname>],`.
    #[error("invalid gs2 header")]
    Gs2Header,
    /// A required attribute is missing or out of order.
    #[error("missing attribute {0}")]
    Missing(&'static str),
    /// An attribute value breaks its grammar.
    #[error("invalid attribute {0}")]
    Invalid(&'static str),
}

fn is_value_char(c: u8) -> bool {
    (0x01..=0x7f).contains(&c) && c != b','
}

fn is_printable(c: u8) -> bool {
    (0x21..=0x7e).contains(&c) && c != b','
}

/// RFC 5802's `saslname`: ASCII without `,` and `=`, except `=2C` and `=3D`. Non-empty.
fn valid_saslname(s: &str) -> bool {
    let b = s.as_bytes();
    if b.is_empty() {
        return false;
    }
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'=' => {
                if b.get(i + 1..i + 3) != Some(b"2C") && b.get(i + 1..i + 3) != Some(b"3D") {
                    return false;
                }
                i += 3;
            }
            c if is_value_char(c) => i += 1,
            _ => return false,
        }
    }
    true
}

/// The user name a saslname stands for (`=2C` → `,`, `=3D` → `=`).
pub fn username_of_saslname(saslname: &str) -> String {
    saslname.replace("=2C", ",").replace("=3D", "=")
}

/// The saslname of a user name: the inverse of [`username_of_saslname`].
pub fn saslname_of_username(username: &str) -> String {
    username.replace('=', "=3D").replace(',', "=2C")
}

fn valid_base64(s: &str) -> Option<Vec<u8>> {
    // The grammar allows the empty string; the decoder needs whole 4-character groups.
    B64.decode(s).ok()
}

/// Parses `<letters>=<value>` extensions.
fn parse_extensions<'a>(
    parts: impl Iterator<Item = &'a str>,
) -> Result<BTreeMap<String, String>, ScramParseError> {
    let mut out = BTreeMap::new();
    for part in parts {
        let (k, v) = part
            .split_once('=')
            .ok_or(ScramParseError::Invalid("extension"))?;
        if k.is_empty() || !k.bytes().all(|c| c.is_ascii_alphabetic()) || v.is_empty() {
            return Err(ScramParseError::Invalid("extension"));
        }
        out.insert(k.to_string(), v.to_string());
    }
    Ok(out)
}

/// A parsed client-first message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientFirstMessage<'a> {
    /// The gs2 header as sent (`n,,` or `n,a=<authzid>,`): its base64 is the expected channel
    /// binding of client-final.
    pub gs2_header: &'a str,
    /// The authzid (empty when absent), still a saslname.
    pub authorization_id: &'a str,
    /// The user name as a saslname.
    pub saslname: &'a str,
    /// The client nonce.
    pub nonce: &'a str,
    /// Extensions (`tokenauth=true`).
    pub extensions: BTreeMap<String, String>,
    /// `client-first-message-bare`, the first part of the AuthMessage.
    pub bare: &'a str,
}

impl<'a> ClientFirstMessage<'a> {
    /// Parses `n,[a=<authzid>],[m=<reserved>,]n=<saslname>,r=<nonce>[,<ext>=<value>]*`.
    pub fn parse(bytes: &'a [u8]) -> Result<ClientFirstMessage<'a>, ScramParseError> {
        if !bytes.iter().all(|&c| (0x01..=0x7f).contains(&c)) {
            return Err(ScramParseError::NotAscii);
        }
        // All ASCII: valid UTF-8.
        let text = std::str::from_utf8(bytes).map_err(|_| ScramParseError::NotAscii)?;
        let rest = text.strip_prefix("n,").ok_or(ScramParseError::Gs2Header)?;
        let (authzid_part, bare) = rest.split_once(',').ok_or(ScramParseError::Gs2Header)?;
        let authorization_id = if authzid_part.is_empty() {
            ""
        } else {
            let a = authzid_part
                .strip_prefix("a=")
                .ok_or(ScramParseError::Gs2Header)?;
            if !valid_saslname(a) {
                return Err(ScramParseError::Gs2Header);
            }
            a
        };
        let gs2_header = &text[..2 + authzid_part.len() + 1];
        let mut parts = bare.split(',').peekable();
        if let Some(m) = parts.peek().and_then(|p| p.strip_prefix("m=")) {
            if m.is_empty() {
                return Err(ScramParseError::Invalid("m"));
            }
            parts.next();
        }
        let saslname = parts
            .next()
            .and_then(|p| p.strip_prefix("n="))
            .ok_or(ScramParseError::Missing("n"))?;
        if !valid_saslname(saslname) {
            return Err(ScramParseError::Invalid("n"));
        }
        let nonce = parts
            .next()
            .and_then(|p| p.strip_prefix("r="))
            .ok_or(ScramParseError::Missing("r"))?;
        if nonce.is_empty() || !nonce.bytes().all(is_printable) {
            return Err(ScramParseError::Invalid("r"));
        }
        let extensions = parse_extensions(parts)?;
        Ok(ClientFirstMessage {
            gs2_header,
            authorization_id,
            saslname,
            nonce,
            extensions,
            bare,
        })
    }

    /// True when the client asked for delegation-token authentication (`tokenauth=true`, any case).
    pub fn token_authenticated(&self) -> bool {
        self.extensions
            .get(TOKEN_AUTH_EXTENSION)
            .is_some_and(|v| v.eq_ignore_ascii_case("true"))
    }
}

/// A parsed client-final message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientFinalMessage<'a> {
    /// The decoded channel binding (`c=`).
    pub channel_binding: Vec<u8>,
    /// The combined nonce (`r=`).
    pub nonce: &'a str,
    /// The decoded proof (`p=`).
    pub proof: Vec<u8>,
    /// `client-final-message-without-proof`, the last part of the AuthMessage.
    pub without_proof: &'a str,
}

impl<'a> ClientFinalMessage<'a> {
    /// Parses `c=<base64>,r=<nonce>[,<ext>=<value>]*,p=<base64>`.
    pub fn parse(bytes: &'a [u8]) -> Result<ClientFinalMessage<'a>, ScramParseError> {
        if !bytes.iter().all(|&c| (0x01..=0x7f).contains(&c)) {
            return Err(ScramParseError::NotAscii);
        }
        let text = std::str::from_utf8(bytes).map_err(|_| ScramParseError::NotAscii)?;
        let (without_proof, proof) = text
            .rsplit_once(",p=")
            .ok_or(ScramParseError::Missing("p"))?;
        let proof = valid_base64(proof).ok_or(ScramParseError::Invalid("p"))?;
        let mut parts = without_proof.split(',');
        let channel = parts
            .next()
            .and_then(|p| p.strip_prefix("c="))
            .ok_or(ScramParseError::Missing("c"))?;
        let channel_binding = valid_base64(channel).ok_or(ScramParseError::Invalid("c"))?;
        let nonce = parts
            .next()
            .and_then(|p| p.strip_prefix("r="))
            .ok_or(ScramParseError::Missing("r"))?;
        if nonce.is_empty() || !nonce.bytes().all(is_printable) {
            return Err(ScramParseError::Invalid("r"));
        }
        parse_extensions(parts)?;
        Ok(ClientFinalMessage {
            channel_binding,
            nonce,
            proof,
            without_proof,
        })
    }
}

/// `r=<client nonce><server nonce>,s=<base64 salt>,i=<iterations>`.
pub fn server_first_message(combined_nonce: &str, salt: &[u8], iterations: u32) -> String {
    format!("r={combined_nonce},s={},i={iterations}", B64.encode(salt))
}

/// A server-final message: the signature, or a server error (`e=`), which a client must treat as
/// a failed authentication.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerFinalMessage {
    /// `v=<base64 ServerSignature>`.
    Verifier(Vec<u8>),
    /// `e=<server-error-value>`, for example `invalid-proof` or `unknown-user`.
    Error(String),
}

impl ServerFinalMessage {
    /// The message text.
    pub fn to_message(&self) -> String {
        match self {
            ServerFinalMessage::Verifier(v) => format!("v={}", B64.encode(v)),
            ServerFinalMessage::Error(e) => format!("e={e}"),
        }
    }

    /// Parses `v=<base64>[,ext]*` or `e=<value>`.
    pub fn parse(bytes: &[u8]) -> Result<ServerFinalMessage, ScramParseError> {
        let text = std::str::from_utf8(bytes).map_err(|_| ScramParseError::NotAscii)?;
        if let Some(e) = text.strip_prefix("e=") {
            if e.is_empty() || !e.bytes().all(|c| is_value_char(c) && c != b'=') {
                return Err(ScramParseError::Invalid("e"));
            }
            return Ok(ServerFinalMessage::Error(e.to_string()));
        }
        let mut parts = text.split(',');
        let v = parts
            .next()
            .and_then(|p| p.strip_prefix("v="))
            .ok_or(ScramParseError::Missing("v"))?;
        let v = valid_base64(v).ok_or(ScramParseError::Invalid("v"))?;
        parse_extensions(parts)?;
        Ok(ServerFinalMessage::Verifier(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_first_shapes() {
        let m = ClientFirstMessage::parse(b"n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL").unwrap();
        assert_eq!(m.gs2_header, "n,,");
        assert_eq!(m.authorization_id, "");
        assert_eq!(m.saslname, "user");
        assert_eq!(m.nonce, "fyko+d2lbbFgONRv9qkxdawL");
        assert_eq!(m.bare, "n=user,r=fyko+d2lbbFgONRv9qkxdawL");
        assert!(!m.token_authenticated());

        let m =
            ClientFirstMessage::parse(b"n,a=a=2Cb,m=x,n=a=2Cb,r=abc,tokenauth=TRUE,z=1=2").unwrap();
        assert_eq!(m.gs2_header, "n,a=a=2Cb,");
        assert_eq!(m.authorization_id, "a=2Cb");
        assert_eq!(username_of_saslname(m.saslname), "a,b");
        assert!(m.token_authenticated());
        assert_eq!(m.extensions["z"], "1=2");
        assert_eq!(m.bare, "m=x,n=a=2Cb,r=abc,tokenauth=TRUE,z=1=2");
    }

    #[test]
    fn client_first_refusals() {
        for bad in [
            &b""[..],
            b"y,,n=user,r=abc",
            b"p=tls-unique,,n=user,r=abc",
            b"n,,n=,r=abc",
            b"n,,n=us=er,r=abc",
            b"n,,n=user,r=",
            b"n,,n=user",
            b"n,,r=abc,n=user",
            b"n,,n=user,r=abc,1=2",
            b"n,,n=user,r=abc,x=",
            b"n,,n=us\xc3\xa9r,r=abc",
            b"n,b=x,n=user,r=abc",
            b"n,,n=user,r=a b",
        ] {
            assert!(ClientFirstMessage::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn client_final_shapes() {
        let m = ClientFinalMessage::parse(b"c=biws,r=abc,ext=1,p=dGVzdA==").unwrap();
        assert_eq!(m.channel_binding, b"n,,");
        assert_eq!(m.nonce, "abc");
        assert_eq!(m.proof, b"test");
        assert_eq!(m.without_proof, "c=biws,r=abc,ext=1");
        for bad in [
            &b"c=biws,r=abc"[..],
            b"c=biw,r=abc,p=dGVzdA==",
            b"c=biws,p=dGVzdA==",
            b"r=abc,c=biws,p=dGVzdA==",
            b"c=biws,r=abc,p=dGVzdA",
            b"c=biws,r=abc,p=dGVz*A==",
        ] {
            assert!(ClientFinalMessage::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn server_final_round_trips() {
        for m in [
            ServerFinalMessage::Verifier(vec![1, 2, 3]),
            ServerFinalMessage::Error("invalid-proof".into()),
        ] {
            assert_eq!(ServerFinalMessage::parse(m.to_message().as_bytes()), Ok(m));
        }
        assert!(ServerFinalMessage::parse(b"x=1").is_err());
    }

    #[test]
    fn saslname_escaping_inverts() {
        for u in ["plain", "a,b", "a=b", "=2C", ",=,"] {
            let s = saslname_of_username(u);
            assert!(valid_saslname(&s), "{s}");
            assert_eq!(username_of_saslname(&s), u);
        }
    }
}
