//! TLS and SASL listeners end to end inside the process: a broker with SSL, SASL_PLAINTEXT and
//! SASL_SSL listeners, raw josef-protocol clients over TCP or rustls, certificates made with rcgen.

use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use josef_protocol::messages::alter_user_scram_credentials_request::ScramCredentialUpsertion;
use josef_protocol::messages::{
    AlterUserScramCredentialsRequest, ApiVersionsRequest, DescribeUserScramCredentialsRequest,
    MetadataRequest, RequestHeader, SaslAuthenticateRequest, SaslHandshakeRequest,
};
use josef_protocol::{
    decode_response_frame, encode_request_frame, ErrorCode, RequestBody, ResponseBody,
};
use josef_sasl::client::{plain_message, ScramClient};
use josef_sasl::scram::{hi, ScramMechanism};
use josef_server::config::BrokerConfig;
use josef_server::Broker;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

struct Pki {
    ca_pem: String,
    server_pem: String,
    client_cert_pem: String,
    client_key_pem: String,
    ca: rustls_pki_types::CertificateDer<'static>,
}

fn pki() -> Pki {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "josef test CA");
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let server_key = rcgen::KeyPair::generate().unwrap();
    let server_params =
        rcgen::CertificateParams::new(vec!["localhost".into(), "127.0.0.1".into()]).unwrap();
    let server = server_params.signed_by(&server_key, &ca, &ca_key).unwrap();
    let client_key = rcgen::KeyPair::generate().unwrap();
    let mut client_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    let mut dn = rcgen::DistinguishedName::new();
    dn.push(rcgen::DnType::OrganizationName, "x");
    dn.push(rcgen::DnType::CommonName, "Bob");
    client_params.distinguished_name = dn;
    let client = client_params.signed_by(&client_key, &ca, &ca_key).unwrap();
    Pki {
        ca_pem: ca.pem(),
        server_pem: format!("{}{}", server_key.serialize_pem(), server.pem()),
        client_cert_pem: client.pem(),
        client_key_pem: client_key.serialize_pem(),
        ca: ca.der().clone(),
    }
}

async fn start(dir: &std::path::Path, pki: &Pki, extra: &[(&str, String)]) -> Broker {
    let keystore = dir.join("server.pem");
    std::fs::write(&keystore, &pki.server_pem).unwrap();
    let mut props = std::collections::BTreeMap::new();
    for (k, v) in [
        (
            "listeners",
            "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0".to_string(),
        ),
        ("log.dirs", dir.join("data").display().to_string()),
        ("ssl.keystore.type", "PEM".into()),
        ("ssl.keystore.location", keystore.display().to_string()),
        ("sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-512,GSSAPI".into()),
        (
            "listener.name.sasl_plaintext.plain.sasl.jaas.config",
            r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_alice="alice-secret";"#.into(),
        ),
        (
            "listener.name.sasl_ssl.plain.sasl.jaas.config",
            r#"org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";"#.into(),
        ),
        ("connection.failed.authentication.delay.ms", "0".into()),
    ] {
        props.insert(k.to_string(), v);
    }
    for (k, v) in extra {
        props.insert((*k).to_string(), v.clone());
    }
    Broker::start(BrokerConfig::from_properties(props).unwrap())
        .await
        .unwrap()
}

fn addr(b: &Broker, name: &str) -> std::net::SocketAddr {
    b.listeners().iter().find(|l| l.name == name).unwrap().addr
}

trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Stream for T {}

struct Client {
    s: Box<dyn Stream>,
    corr: i32,
}

impl Client {
    async fn tcp(a: std::net::SocketAddr) -> Client {
        Client {
            s: Box::new(TcpStream::connect(a).await.unwrap()),
            corr: 0,
        }
    }

    async fn tls(a: std::net::SocketAddr, pki: &Pki, with_cert: bool) -> std::io::Result<Client> {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(pki.ca.clone()).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let b = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots);
        let config = if with_cert {
            use rustls_pki_types::pem::PemObject;
            let chain = vec![rustls_pki_types::CertificateDer::from_pem_slice(
                pki.client_cert_pem.as_bytes(),
            )
            .unwrap()];
            let key =
                rustls_pki_types::PrivateKeyDer::from_pem_slice(pki.client_key_pem.as_bytes())
                    .unwrap();
            b.with_client_auth_cert(chain, key).unwrap()
        } else {
            b.with_no_client_auth()
        };
        let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
        let tcp = TcpStream::connect(a).await?;
        let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
        let mut s = connector.connect(name, tcp).await?;
        // TLS 1.3 reports a refused client certificate only on the first read after the handshake.
        s.flush().await?;
        Ok(Client {
            s: Box::new(s),
            corr: 0,
        })
    }

    async fn send(&mut self, version: i16, body: RequestBody) {
        self.corr += 1;
        let header = RequestHeader {
            request_api_key: body.api_key() as i16,
            request_api_version: version,
            correlation_id: self.corr,
            client_id: Some("josef-test".into()),
            ..Default::default()
        };
        let mut buf = BytesMut::new();
        encode_request_frame(&header, &body, &mut buf).unwrap();
        let _ = self.s.write_all(&buf).await;
    }

    async fn recv_raw(&mut self) -> Option<Vec<u8>> {
        let mut len = [0u8; 4];
        tokio::time::timeout(Duration::from_secs(10), self.s.read_exact(&mut len))
            .await
            .ok()?
            .ok()?;
        let mut body = vec![0u8; i32::from_be_bytes(len) as usize];
        self.s.read_exact(&mut body).await.ok()?;
        Some(body)
    }

    /// The response, or `None` when the broker closed the connection.
    async fn call(&mut self, version: i16, body: impl Into<RequestBody>) -> Option<ResponseBody> {
        let body = body.into();
        let key = body.api_key();
        self.send(version, body).await;
        let raw = self.recv_raw().await?;
        Some(
            decode_response_frame(key, version, Bytes::from(raw))
                .unwrap()
                .1,
        )
    }

    async fn handshake(&mut self, version: i16, mechanism: &str) -> (i16, Vec<String>) {
        let r = self
            .call(
                version,
                SaslHandshakeRequest {
                    mechanism: mechanism.into(),
                },
            )
            .await;
        match r {
            Some(ResponseBody::SaslHandshake(h)) => (
                h.error_code,
                h.mechanisms.iter().map(|m| m.to_string()).collect(),
            ),
            other => panic!("{other:?}"),
        }
    }

    async fn authenticate(&mut self, bytes: Vec<u8>) -> Option<(i16, Vec<u8>, i64)> {
        match self
            .call(
                2,
                SaslAuthenticateRequest {
                    auth_bytes: bytes.into(),
                    ..Default::default()
                },
            )
            .await?
        {
            ResponseBody::SaslAuthenticate(a) => {
                Some((a.error_code, a.auth_bytes.to_vec(), a.session_lifetime_ms))
            }
            other => panic!("{other:?}"),
        }
    }

    async fn metadata_ok(&mut self) -> bool {
        matches!(
            self.call(12, MetadataRequest::default()).await,
            Some(ResponseBody::Metadata(_))
        )
    }

    async fn plain_login(&mut self, user: &str, password: &str) -> i16 {
        assert_eq!(self.handshake(1, "PLAIN").await.0, 0);
        self.authenticate(plain_message("", user, password))
            .await
            .map_or(-1, |a| a.0)
    }

    async fn is_closed(&mut self) -> bool {
        let mut b = [0u8; 1];
        matches!(
            tokio::time::timeout(Duration::from_secs(5), self.s.read(&mut b)).await,
            Ok(Ok(0)) | Ok(Err(_))
        )
    }
}

#[tokio::test]
async fn sasl_plain_login_then_requests_are_served() {
    let dir = tempfile::tempdir().unwrap();
    let pki = pki();
    let b = start(dir.path(), &pki, &[]).await;
    let mut c = Client::tcp(addr(&b, "SASL_PLAINTEXT")).await;
    assert!(matches!(
        c.call(3, ApiVersionsRequest::default()).await,
        Some(ResponseBody::ApiVersions(_))
    ));
    let (code, mechanisms) = c.handshake(1, "PLAIN").await;
    assert_eq!(code, 0);
    assert_eq!(mechanisms, vec!["PLAIN", "SCRAM-SHA-512", "GSSAPI"]);
    let (code, _, _) = c
        .authenticate(plain_message("", "alice", "alice-secret"))
        .await
        .unwrap();
    assert_eq!(code, 0);
    assert!(c.metadata_ok().await);
    // After authentication, another SaslAuthenticate is ILLEGAL_SASL_STATE and the connection
    // stays up.
    let (code, _, _) = c.authenticate(b"x".to_vec()).await.unwrap();
    assert_eq!(code, ErrorCode::IllegalSaslState.code());
    assert!(c.metadata_ok().await);
    b.shutdown().await;
}

#[tokio::test]
async fn a_request_before_authentication_closes_the_connection_without_an_answer() {
    let dir = tempfile::tempdir().unwrap();
    let pki = pki();
    let b = start(dir.path(), &pki, &[]).await;
    let mut c = Client::tcp(addr(&b, "SASL_PLAINTEXT")).await;
    assert!(c.call(12, MetadataRequest::default()).await.is_none());
    // Between handshake and authentication too.
    let mut c = Client::tcp(addr(&b, "SASL_PLAINTEXT")).await;
    assert_eq!(c.handshake(1, "PLAIN").await.0, 0);
    assert!(c.call(12, MetadataRequest::default()).await.is_none());
    b.shutdown().await;
}

#[tokio::test]
async fn a_wrong_password_fails_and_closes_while_others_are_served() {
    let dir = tempfile::tempdir().unwrap();
    let pki = pki();
    let b = start(dir.path(), &pki, &[]).await;
    let mut good = Client::tcp(addr(&b, "SASL_PLAINTEXT")).await;
    assert_eq!(good.plain_login("alice", "alice-secret").await, 0);
    let mut bad = Client::tcp(addr(&b, "SASL_PLAINTEXT")).await;
    assert_eq!(
        bad.plain_login("alice", "wrong").await,
        ErrorCode::SaslAuthenticationFailed.code()
    );
    assert!(bad.is_closed().await);
    assert!(good.metadata_ok().await);
    b.shutdown().await;
}

#[tokio::test]
async fn mechanisms_not_enabled_or_not_implemented_are_unsupported() {
    let dir = tempfile::tempdir().unwrap();
    let pki = pki();
    let b = start(dir.path(), &pki, &[]).await;
    for m in ["GSSAPI", "SCRAM-SHA-256"] {
        let mut c = Client::tcp(addr(&b, "SASL_PLAINTEXT")).await;
        let (code, mechanisms) = c.handshake(1, m).await;
        assert_eq!(code, ErrorCode::UnsupportedSaslMechanism.code());
        assert_eq!(mechanisms.len(), 3);
        assert!(c.is_closed().await);
    }
    b.shutdown().await;
}

#[tokio::test]
async fn the_legacy_v0_handshake_takes_raw_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let pki = pki();
    let b = start(dir.path(), &pki, &[]).await;
    let mut c = Client::tcp(addr(&b, "SASL_PLAINTEXT")).await;
    assert_eq!(c.handshake(0, "PLAIN").await.0, 0);
    let token = plain_message("", "alice", "alice-secret");
    let mut framed = (token.len() as i32).to_be_bytes().to_vec();
    framed.extend_from_slice(&token);
    c.s.write_all(&framed).await.unwrap();
    assert_eq!(c.recv_raw().await.unwrap(), Vec::<u8>::new());
    assert!(c.metadata_ok().await);
    b.shutdown().await;
}

fn upsertion(user: &str, password: &str, iterations: i32) -> ScramCredentialUpsertion {
    let salt = b"0123456789abcdef".to_vec();
    ScramCredentialUpsertion {
        name: user.to_string().into(),
        mechanism: 2,
        iterations,
        salted_password: hi(
            ScramMechanism::Sha512,
            password.as_bytes(),
            &salt,
            iterations as u32,
        )
        .into(),
        salt: salt.into(),
        ..Default::default()
    }
}

async fn scram_login(c: &mut Client, user: &str, password: &str) -> i16 {
    assert_eq!(c.handshake(1, "SCRAM-SHA-512").await.0, 0);
    let mut client = ScramClient::new(ScramMechanism::Sha512, user, password, "fixed-client-nonce");
    let (code, server_first, _) = c.authenticate(client.client_first()).await.unwrap();
    if code != 0 {
        return code;
    }
    let Ok(final_msg) = client.client_final(&server_first) else {
        return -1;
    };
    let Some((code, server_final, _)) = c.authenticate(final_msg).await else {
        return -2;
    };
    if code == 0 {
        client.verify_server_final(&server_final).unwrap();
    }
    code
}

#[tokio::test]
async fn scram_credentials_altered_through_the_api_log_in_over_sasl_ssl() {
    let dir = tempfile::tempdir().unwrap();
    let pki = pki();
    let b = start(dir.path(), &pki, &[]).await;
    let mut admin = Client::tcp(addr(&b, "PLAINTEXT")).await;
    let r = admin
        .call(
            0,
            AlterUserScramCredentialsRequest {
                upsertions: vec![
                    upsertion("carol", "carol-secret", 4096),
                    upsertion("low", "x", 4095),
                ],
                ..Default::default()
            },
        )
        .await;
    let Some(ResponseBody::AlterUserScramCredentials(r)) = r else {
        panic!("{r:?}")
    };
    let codes: Vec<i16> = r.results.iter().map(|r| r.error_code).collect();
    assert_eq!(codes, vec![0, ErrorCode::UnacceptableCredential.code()]);
    let r = admin
        .call(0, DescribeUserScramCredentialsRequest::default())
        .await;
    let Some(ResponseBody::DescribeUserScramCredentials(d)) = r else {
        panic!("{r:?}")
    };
    assert_eq!(d.results.len(), 1);
    assert_eq!(d.results[0].user.as_str(), "carol");
    assert_eq!(
        (
            d.results[0].credential_infos[0].mechanism,
            d.results[0].credential_infos[0].iterations
        ),
        (2, 4096)
    );

    let mut c = Client::tls(addr(&b, "SASL_SSL"), &pki, false)
        .await
        .unwrap();
    assert_eq!(scram_login(&mut c, "carol", "carol-secret").await, 0);
    assert!(c.metadata_ok().await);
    let mut c = Client::tls(addr(&b, "SASL_SSL"), &pki, false)
        .await
        .unwrap();
    assert_eq!(
        scram_login(&mut c, "carol", "wrong").await,
        ErrorCode::SaslAuthenticationFailed.code()
    );
    b.shutdown().await;
}

#[tokio::test]
async fn ssl_listener_serves_requests_and_requires_client_certificates_when_told() {
    let dir = tempfile::tempdir().unwrap();
    let pki = pki();
    let b = start(
        dir.path(),
        &pki,
        &[
            ("listener.name.ssl.ssl.client.auth", "required".into()),
            ("listener.name.ssl.ssl.truststore.type", "PEM".into()),
            (
                "listener.name.ssl.ssl.truststore.certificates",
                pki.ca_pem.clone(),
            ),
            (
                "ssl.principal.mapping.rules",
                "RULE:^CN=([^,]+),.*$/$1/L,DEFAULT".into(),
            ),
        ],
    )
    .await;
    let mut c = Client::tls(addr(&b, "SSL"), &pki, true).await.unwrap();
    assert!(c.metadata_ok().await);
    // Without a certificate the handshake (or the first read after it, in TLS 1.3) fails.
    match Client::tls(addr(&b, "SSL"), &pki, false).await {
        Err(_) => {}
        Ok(mut c) => assert!(!c.metadata_ok().await),
    }
    b.shutdown().await;
}

#[tokio::test]
async fn bad_tls_handshakes_do_not_stall_other_connections() {
    let dir = tempfile::tempdir().unwrap();
    let pki = pki();
    let b = start(dir.path(), &pki, &[]).await;
    let ssl = addr(&b, "SSL");
    // Garbage instead of a client hello.
    let mut garbage = TcpStream::connect(ssl).await.unwrap();
    garbage.write_all(&[0x42; 64]).await.unwrap();
    // A client hello cut short, then silence (a slowloris handshake).
    let mut slow = TcpStream::connect(ssl).await.unwrap();
    slow.write_all(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00])
        .await
        .unwrap();
    let t0 = std::time::Instant::now();
    let mut c = Client::tls(ssl, &pki, false).await.unwrap();
    assert!(c.metadata_ok().await);
    assert!(t0.elapsed() < Duration::from_secs(5));
    // The garbage connection is closed by the broker.
    let mut buf = [0u8; 256];
    let r = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match garbage.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
    })
    .await;
    assert!(r.is_ok());
    drop(slow);
    b.shutdown().await;
}

#[tokio::test]
async fn oauthbearer_unsecured_tokens_and_the_kip_368_session_lifetime() {
    use josef_sasl::oauthbearer::message::client_initial_response;
    use josef_sasl::oauthbearer::unsecured_token;
    let dir = tempfile::tempdir().unwrap();
    let pki = pki();
    let b = start(
        dir.path(),
        &pki,
        &[
            (
                "listener.name.sasl_plaintext.sasl.enabled.mechanisms",
                "OAUTHBEARER,PLAIN".into(),
            ),
            ("connections.max.reauth.ms", "3600000".into()),
        ],
    )
    .await;
    let now_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let token = |exp: u64| {
        let t = unsecured_token(&serde_json::json!({"sub": "dave", "exp": exp, "iat": now_s - 10}));
        client_initial_response(&t, "", &Default::default())
    };
    // A token valid for 10 minutes: the session lasts until its exp (below connections.max.reauth.ms).
    let mut c = Client::tcp(addr(&b, "SASL_PLAINTEXT")).await;
    assert_eq!(c.handshake(1, "OAUTHBEARER").await.0, 0);
    let (code, _, lifetime) = c.authenticate(token(now_s + 600)).await.unwrap();
    assert_eq!(code, 0);
    assert!((590_000..=600_000).contains(&lifetime), "{lifetime}");
    assert!(c.metadata_ok().await);
    // PLAIN: bounded by connections.max.reauth.ms.
    let mut c = Client::tcp(addr(&b, "SASL_PLAINTEXT")).await;
    assert_eq!(c.handshake(1, "PLAIN").await.0, 0);
    let (code, _, lifetime) = c
        .authenticate(plain_message("", "alice", "alice-secret"))
        .await
        .unwrap();
    assert_eq!((code, lifetime), (0, 3_600_000));
    // An expired token: the JSON challenge, then SASL_AUTHENTICATION_FAILED after the client's %x01.
    let mut c = Client::tcp(addr(&b, "SASL_PLAINTEXT")).await;
    assert_eq!(c.handshake(1, "OAUTHBEARER").await.0, 0);
    let (code, challenge, _) = c.authenticate(token(now_s - 60)).await.unwrap();
    assert_eq!(code, 0);
    assert!(String::from_utf8_lossy(&challenge).contains("invalid_token"));
    let (code, _, _) = c.authenticate(vec![0x01]).await.unwrap();
    assert_eq!(code, ErrorCode::SaslAuthenticationFailed.code());
    assert!(c.is_closed().await);
    b.shutdown().await;
}

#[test]
fn the_example_security_configs_parse() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/security");
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let props = josef_server::config::read_properties_file(&e.path()).unwrap();
        let (c, warnings) = BrokerConfig::from_properties_with_warnings(props)
            .unwrap_or_else(|err| panic!("{}: {err}", e.path().display()));
        assert!(warnings.is_empty(), "{}: {warnings:?}", e.path().display());
        assert!(c
            .security
            .listeners
            .values()
            .any(|l| l.protocol != josef_server::security_config::SecurityProtocol::Plaintext));
        n += 1;
    }
    assert!(n >= 3);
}
