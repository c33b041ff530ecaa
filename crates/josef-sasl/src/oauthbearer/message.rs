//! The OAUTHBEARER client initial response (RFC 7628 section 3.1), as Kafka's
//! `OAuthBearerClientInitialResponse` reads it:
//! `n,[a=<authzid>],\x01auth=Bearer <token>\x01[<key>=<value>\x01]*\x01`.

use std::collections::BTreeMap;

/// The separator, `%x01` (control-A).
pub const SEPARATOR: u8 = 0x01;
/// The key of the token.
pub const AUTH_KEY: &str = "auth";

/// Why a client initial response does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientResponseError {
    /// The message does not have RFC 7628's (Kafka's) shape.
    #[error("Invalid OAUTHBEARER client first message")]
    Malformed,
    /// No `auth` key.
    #[error("Invalid OAUTHBEARER client first message: 'auth' not specified")]
    AuthMissing,
    /// `auth` is not `<scheme> <token>` with a token of `[-_.a-zA-Z0-9]`.
    #[error("Invalid OAUTHBEARER client first message: invalid 'auth' format")]
    AuthFormat,
    /// The scheme is not `Bearer` (in any case).
    #[error("Invalid scheme in OAUTHBEARER client first message: {0}")]
    Scheme(String),
}

/// A parsed client initial response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientInitialResponse<'a> {
    /// The authzid (empty when absent).
    pub authorization_id: &'a str,
    /// The bearer token.
    pub token: &'a str,
    /// The other key/value pairs: SASL extensions.
    pub extensions: BTreeMap<String, String>,
}

fn valid_saslname(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'=' if matches!(b.get(i + 1..i + 3), Some(b"2C" | b"3D")) => i += 3,
            0x01..=0x7f if b[i] != b',' && b[i] != b'=' => i += 1,
            _ => return false,
        }
    }
    !b.is_empty()
}

fn valid_key(k: &str) -> bool {
    !k.is_empty() && k.bytes().all(|c| c.is_ascii_alphabetic())
}

fn valid_value(v: &str) -> bool {
    !v.is_empty()
        && v.bytes()
            .all(|c| (0x21..=0x7e).contains(&c) || matches!(c, b' ' | b'\t' | b'\r' | b'\n'))
}

impl<'a> ClientInitialResponse<'a> {
    /// Parses a client initial response.
    pub fn parse(bytes: &'a [u8]) -> Result<ClientInitialResponse<'a>, ClientResponseError> {
        let text = std::str::from_utf8(bytes).map_err(|_| ClientResponseError::Malformed)?;
        let rest = text
            .strip_prefix("n,")
            .ok_or(ClientResponseError::Malformed)?;
        let (authzid, rest) = rest.split_once(',').ok_or(ClientResponseError::Malformed)?;
        let authorization_id = if authzid.is_empty() {
            ""
        } else {
            let a = authzid
                .strip_prefix("a=")
                .ok_or(ClientResponseError::Malformed)?;
            if !valid_saslname(a) {
                return Err(ClientResponseError::Malformed);
            }
            a
        };
        // \x01 (key=value \x01)* \x01
        let sep = char::from(SEPARATOR);
        let kv = rest
            .strip_prefix(sep)
            .and_then(|r| r.strip_suffix(sep))
            .ok_or(ClientResponseError::Malformed)?;
        let mut pairs = BTreeMap::new();
        if !kv.is_empty() {
            let body = kv.strip_suffix(sep).ok_or(ClientResponseError::Malformed)?;
            for pair in body.split(sep) {
                let (k, v) = pair.split_once('=').ok_or(ClientResponseError::Malformed)?;
                if !valid_key(k) || !valid_value(v) {
                    return Err(ClientResponseError::Malformed);
                }
                pairs.insert(k, v);
            }
        }
        let auth = pairs
            .remove(AUTH_KEY)
            .ok_or(ClientResponseError::AuthMissing)?;
        let token = parse_auth(auth)?;
        Ok(ClientInitialResponse {
            authorization_id,
            token,
            extensions: pairs
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        })
    }
}

/// `<scheme> +<token>`: the scheme `\w+`, which must be `bearer` in any case.
fn parse_auth(auth: &str) -> Result<&str, ClientResponseError> {
    let (scheme, token) = auth
        .split_once(' ')
        .ok_or(ClientResponseError::AuthFormat)?;
    let token = token.trim_start_matches(' ');
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let token_char = |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.');
    if scheme.is_empty()
        || !scheme.bytes().all(word)
        || token.is_empty()
        || !token.bytes().all(token_char)
    {
        return Err(ClientResponseError::AuthFormat);
    }
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(ClientResponseError::Scheme(scheme.to_string()));
    }
    Ok(token)
}

/// Writes a client initial response (the client side, for tests and tools): the authzid empty
/// or not, extensions in key order.
pub fn client_initial_response(
    token: &str,
    authorization_id: &str,
    extensions: &BTreeMap<String, String>,
) -> Vec<u8> {
    let mut out = String::from("n,");
    if !authorization_id.is_empty() {
        out.push_str("a=");
        out.push_str(authorization_id);
    }
    out.push_str(",\x01auth=Bearer ");
    out.push_str(token);
    for (k, v) in extensions {
        out.push('\x01');
        out.push_str(k);
        out.push('=');
        out.push_str(v);
    }
    out.push_str("\x01\x01");
    out.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kafkas_client_message() {
        let m = ClientInitialResponse::parse(b"n,,\x01auth=Bearer abc.def.\x01\x01").unwrap();
        assert_eq!(m.authorization_id, "");
        assert_eq!(m.token, "abc.def.");
        assert!(m.extensions.is_empty());

        let m = ClientInitialResponse::parse(
            b"n,a=alice,\x01traceId=1=2 x\x01auth=bearer   t-_.9\x01\x01",
        )
        .unwrap();
        assert_eq!(m.authorization_id, "alice");
        assert_eq!(m.token, "t-_.9");
        assert_eq!(m.extensions["traceId"], "1=2 x");
    }

    #[test]
    fn writer_and_parser_agree() {
        let ext = BTreeMap::from([("a".to_string(), "b c".to_string())]);
        let bytes = client_initial_response("x.y.", "bob", &ext);
        let m = ClientInitialResponse::parse(&bytes).unwrap();
        assert_eq!((m.token, m.authorization_id), ("x.y.", "bob"));
        assert_eq!(m.extensions, ext);
    }

    #[test]
    fn refusals() {
        let cases: [(&[u8], ClientResponseError); 9] = [
            (b"", ClientResponseError::Malformed),
            (b"n,,auth=Bearer t\x01\x01", ClientResponseError::Malformed),
            (b"n,,\x01auth=Bearer t\x01", ClientResponseError::Malformed),
            (
                b"y,,\x01auth=Bearer t\x01\x01",
                ClientResponseError::Malformed,
            ),
            (b"n,,\x01\x01", ClientResponseError::AuthMissing),
            (b"n,,\x01k=v\x01\x01", ClientResponseError::AuthMissing),
            (
                b"n,,\x01auth=Bearer\x01\x01",
                ClientResponseError::AuthFormat,
            ),
            (
                b"n,,\x01auth=Bearer a+b\x01\x01",
                ClientResponseError::AuthFormat,
            ),
            (
                b"n,,\x01auth=Basic abc\x01\x01",
                ClientResponseError::Scheme("Basic".into()),
            ),
        ];
        for (bytes, e) in cases {
            assert_eq!(ClientInitialResponse::parse(bytes), Err(e), "{bytes:?}");
        }
        assert!(ClientInitialResponse::parse(b"n,,\x011=v\x01auth=Bearer t\x01\x01").is_err());
    }
}
