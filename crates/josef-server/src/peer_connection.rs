//! Connections this node opens to other nodes (replica fetches, transaction markers and
//! verification, ListOffsets for a reset follower, requests to the controller), authenticated
//! as the listener they go to requires: TCP, then TLS on SSL / SASL_SSL (the listener's
//! truststore checks the peer, its keystore is this node's certificate), then the SASL login on
//! SASL_PLAINTEXT / SASL_SSL (`sasl.mechanism.inter.broker.protocol`, or
//! `sasl.mechanism.controller.protocol` to the controllers; the listener's JAAS `username` /
//! `password`). Every inter-node client opens its connections through
//! [`PeerConnector::connect`].

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use josef_protocol::messages::{SaslAuthenticateRequest, SaslHandshakeRequest};
use josef_protocol::{
    decode_response_frame, encode_request_frame, ApiKey, ErrorCode, RequestBody, RequestHeader,
    ResponseBody, StrBytes,
};
use josef_sasl::client::{ClientStep, SaslClientError, SaslClientExchange};
use josef_sasl::settings::ClientCredentials;
use josef_sasl::{AuthenticateResponse, HandshakeResponse};
use josef_tls::{HandshakeError, TlsConnector};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::connection::Transport;
use crate::security_config::{PeerClientSettings, SecurityProtocol};

/// What a connection to another node is carried over: TCP or TLS, shareable between threads
/// (the metadata quorum's connections must be).
pub trait PeerIo: Transport + Sync {}

impl<T: Transport + Sync> PeerIo for T {}

/// An open, authenticated connection to another node.
pub type PeerStream = Box<dyn PeerIo>;

/// SaslHandshake v1: the exchange goes on in SaslAuthenticate requests.
const SASL_HANDSHAKE_VERSION: i16 = 1;
/// SaslAuthenticate v2 (flexible; carries KIP-368's session lifetime).
const SASL_AUTHENTICATE_VERSION: i16 = 2;
/// The largest answer read during the login (Kafka's `sasl.server.max.receive.size` order).
const MAX_SASL_RESPONSE_BYTES: usize = 512 * 1024;
/// The whole TCP connect + TLS + SASL must end within this.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// Why a connection to another node could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum PeerConnectError {
    /// TCP connect, or a read or write during the login, failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The TLS handshake failed (the peer's certificate is not trusted or not for this host, or
    /// the peer refused this node's certificate).
    #[error("TLS: {0}")]
    Tls(#[from] HandshakeError),
    /// The SASL login failed.
    #[error("SASL: {0}")]
    Sasl(#[from] SaslClientError),
    /// The peer's answer during the login was not a valid response.
    #[error("invalid answer during the SASL login: {0}")]
    Protocol(String),
    /// Connect, handshake and login took longer than their bound.
    #[error("connect timed out after {0:?}")]
    TimedOut(Duration),
}

impl PeerConnectError {
    /// True for failures an operator fixes in the configuration (certificates, credentials,
    /// mechanisms), worth a warning on every attempt; false for a peer that is down or slow.
    pub fn is_authentication_failure(&self) -> bool {
        match self {
            PeerConnectError::Tls(HandshakeError::Failed(e)) => {
                e.kind() == std::io::ErrorKind::InvalidData
            }
            PeerConnectError::Tls(_) | PeerConnectError::Sasl(_) => true,
            _ => false,
        }
    }
}

/// How this node connects to the listener of one kind of peer (the inter-broker listener of
/// the other brokers, the controller listener of the voters). Cheap to clone.
#[derive(Clone, Debug)]
pub struct PeerConnector {
    listener: String,
    protocol: SecurityProtocol,
    tls: Option<TlsConnector>,
    sasl: Option<ClientCredentials>,
}

/// Why a [`PeerConnector`] cannot be built from its settings.
#[derive(Debug, thiserror::Error)]
#[error("connections to listener {listener}: {source}")]
pub struct PeerConnectorError {
    /// The listener.
    pub listener: String,
    /// The TLS configuration error.
    pub source: josef_tls::TlsConfigError,
}

impl PeerConnector {
    /// Plain TCP (a PLAINTEXT listener).
    pub fn plaintext(listener: impl Into<String>) -> Self {
        PeerConnector {
            listener: listener.into(),
            protocol: SecurityProtocol::Plaintext,
            tls: None,
            sasl: None,
        }
    }

    /// A connector for `s` (reads the PEM files now).
    pub fn new(s: &PeerClientSettings) -> Result<Self, PeerConnectorError> {
        let tls = s
            .ssl
            .as_ref()
            .map(TlsConnector::new)
            .transpose()
            .map_err(|source| PeerConnectorError {
                listener: s.listener.clone(),
                source,
            })?;
        Ok(PeerConnector {
            listener: s.listener.clone(),
            protocol: s.protocol,
            tls,
            sasl: s.sasl.clone(),
        })
    }

    /// The listener name this connector's peers are reached on.
    pub fn listener(&self) -> &str {
        &self.listener
    }

    /// The listener's security protocol.
    pub fn protocol(&self) -> SecurityProtocol {
        self.protocol
    }

    /// The TLS client configuration (SSL, SASL_SSL listeners).
    pub fn tls(&self) -> Option<&TlsConnector> {
        self.tls.as_ref()
    }

    /// Opens a connection to `addr` (`host:port`) and authenticates it as the listener requires;
    /// `client_id` goes in the login's request headers. A failure that a configuration change
    /// must fix (a refused certificate, wrong credentials) is logged as a warning here, so each
    /// caller need only retry.
    pub async fn connect(
        &self,
        addr: &str,
        client_id: &str,
    ) -> Result<PeerStream, PeerConnectError> {
        let result = match tokio::time::timeout(CONNECT_TIMEOUT, self.open(addr, client_id)).await {
            Ok(r) => r,
            Err(_) => Err(PeerConnectError::TimedOut(CONNECT_TIMEOUT)),
        };
        if let Err(e) = &result {
            if e.is_authentication_failure() {
                tracing::warn!(
                    peer = addr,
                    listener = %self.listener,
                    protocol = self.protocol.name(),
                    error = %e,
                    "authentication to a cluster peer failed"
                );
            }
        }
        result
    }

    async fn open(&self, addr: &str, client_id: &str) -> Result<PeerStream, PeerConnectError> {
        let tcp = TcpStream::connect(addr).await?;
        let _ = tcp.set_nodelay(true);
        let mut stream: PeerStream = match &self.tls {
            None => Box::new(tcp),
            Some(tls) => Box::new(tls.connect(host_of(addr), tcp).await?),
        };
        if let Some(c) = &self.sasl {
            login(&mut stream, c, client_id).await?;
        }
        Ok(stream)
    }
}

/// The host part of `host:port` (an IPv6 literal without its brackets).
pub(crate) fn host_of(addr: &str) -> &str {
    let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h);
    host.strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host)
}

/// Runs the SASL client exchange on `stream`.
async fn login<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    c: &ClientCredentials,
    client_id: &str,
) -> Result<(), PeerConnectError> {
    let nonce = josef_sasl::kafka_nonce(rand::random());
    let mut exchange = SaslClientExchange::new(c.mechanism, &c.username, &c.password, &nonce)?;
    let mut correlation = 0;
    let handshake = SaslHandshakeRequest {
        mechanism: StrBytes::from(c.mechanism.name()),
    };
    let answer = request(
        stream,
        client_id,
        &mut correlation,
        RequestBody::SaslHandshake(handshake),
        SASL_HANDSHAKE_VERSION,
    )
    .await?;
    let ResponseBody::SaslHandshake(r) = answer else {
        return Err(PeerConnectError::Protocol(
            "not a SaslHandshake answer".into(),
        ));
    };
    let mut token = exchange.on_handshake(&HandshakeResponse {
        error_code: code(r.error_code),
        mechanisms: r.mechanisms.iter().map(|m| m.to_string()).collect(),
    })?;
    // PLAIN takes one round trip, SCRAM two; a server asking for more is broken.
    for _ in 0..4 {
        let body = RequestBody::SaslAuthenticate(SaslAuthenticateRequest {
            auth_bytes: Bytes::from(std::mem::take(&mut token)),
            ..Default::default()
        });
        let answer = request(
            stream,
            client_id,
            &mut correlation,
            body,
            SASL_AUTHENTICATE_VERSION,
        )
        .await?;
        let ResponseBody::SaslAuthenticate(r) = answer else {
            return Err(PeerConnectError::Protocol(
                "not a SaslAuthenticate answer".into(),
            ));
        };
        let step = exchange.on_authenticate(&AuthenticateResponse {
            error_code: code(r.error_code),
            error_message: r.error_message.map(|m| m.to_string()),
            auth_bytes: r.auth_bytes.to_vec(),
            session_lifetime_ms: r.session_lifetime_ms,
        })?;
        match step {
            ClientStep::Send(next) => token = next,
            ClientStep::Done => return Ok(()),
        }
    }
    Err(PeerConnectError::Protocol(
        "the SASL exchange did not end".into(),
    ))
}

fn code(c: i16) -> ErrorCode {
    ErrorCode::from_i16(c).unwrap_or(ErrorCode::UnknownServerError)
}

async fn request<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    client_id: &str,
    correlation: &mut i32,
    body: RequestBody,
    version: i16,
) -> Result<ResponseBody, PeerConnectError> {
    *correlation += 1;
    let key = body.api_key();
    let header = RequestHeader {
        request_api_key: key as i16,
        request_api_version: version,
        correlation_id: *correlation,
        client_id: Some(StrBytes::from(client_id.to_string())),
        ..Default::default()
    };
    let mut buf = BytesMut::new();
    encode_request_frame(&header, &body, &mut buf)
        .map_err(|e| PeerConnectError::Protocol(e.to_string()))?;
    exchange(
        stream,
        &buf,
        key,
        version,
        *correlation,
        MAX_SASL_RESPONSE_BYTES,
    )
    .await
    .map_err(|e| match e {
        ExchangeError::Io(e) => PeerConnectError::Io(e),
        ExchangeError::Invalid(m) => PeerConnectError::Protocol(m),
    })
}

/// Why one request/response round trip failed.
#[derive(Debug)]
pub(crate) enum ExchangeError {
    /// The stream failed or closed.
    Io(std::io::Error),
    /// The answer is too large, does not decode or answers another request.
    Invalid(String),
}

/// Writes one request frame and reads its answer: at most `max_response` bytes, the
/// correlation id checked.
pub(crate) async fn exchange<S: AsyncRead + AsyncWrite + Unpin + ?Sized>(
    stream: &mut S,
    frame: &[u8],
    key: ApiKey,
    version: i16,
    correlation_id: i32,
    max_response: usize,
) -> Result<ResponseBody, ExchangeError> {
    let io = |e: std::io::Error| {
        // A TLS 1.3 server checks the client certificate after the client's handshake ended:
        // its refusal arrives here, on the first request.
        if let Some(why) = josef_tls::tls_error(&e) {
            tracing::warn!(error = %why, ?key, "authentication to a cluster peer failed: the peer ended the TLS session (did it refuse this node's certificate?)");
        }
        ExchangeError::Io(e)
    };
    stream.write_all(frame).await.map_err(io)?;
    stream.flush().await.map_err(io)?;
    let size = stream.read_i32().await.map_err(io)?;
    let size = usize::try_from(size)
        .ok()
        .filter(|s| *s <= max_response && *s >= 4)
        .ok_or_else(|| ExchangeError::Invalid(format!("response size {size}")))?;
    let mut buf = vec![0u8; size];
    stream.read_exact(&mut buf).await.map_err(io)?;
    let (h, body) = decode_response_frame(key, version, buf.into())
        .map_err(|e| ExchangeError::Invalid(format!("{key:?} response: {e}")))?;
    if h.correlation_id != correlation_id {
        return Err(ExchangeError::Invalid(format!(
            "answered correlation id {} to {correlation_id}",
            h.correlation_id
        )));
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_of_an_address_is_what_tls_checks() {
        assert_eq!(host_of("127.0.0.1:9092"), "127.0.0.1");
        assert_eq!(host_of("broker-1.example:9093"), "broker-1.example");
        assert_eq!(host_of("[::1]:9092"), "::1");
        assert_eq!(host_of("nohost"), "nohost");
    }

    #[test]
    fn configuration_failures_are_told_apart_from_a_peer_that_is_down() {
        let refused = PeerConnectError::Io(std::io::ErrorKind::ConnectionRefused.into());
        assert!(!refused.is_authentication_failure());
        let sasl = PeerConnectError::Sasl(SaslClientError::AuthenticationFailed {
            message: "Authentication failed: Invalid username or password".into(),
        });
        assert!(sasl.is_authentication_failure());
        let tls = PeerConnectError::Tls(HandshakeError::Failed(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "invalid peer certificate: UnknownIssuer",
        )));
        assert!(tls.is_authentication_failure());
        assert!(!PeerConnectError::TimedOut(CONNECT_TIMEOUT).is_authentication_failure());
    }
}
