//! A SASL_PLAINTEXT controller listener in the process: the accept loop of the CONTROLLER
//! listener with PLAIN, a stand-in quorum that records the connections handed to it (and answers
//! on them), and a stand-in controller API handler that answers ApiVersions. A connection reaches
//! the quorum or the controller APIs only after the SASL exchange; the quorum's preamble before
//! it closes the connection, and a wrong password never gets that far. The client side is the
//! node's own: `PeerConnector` with the controller login.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use josef_protocol::messages::{ApiVersionsRequest, ApiVersionsResponse, MetadataRequest};
use josef_protocol::{
    decode_request_frame, decode_response_frame, encode_request_frame,
    encode_response_frame_chunks, ApiKey, RequestBody, RequestHeader, ResponseBody, StrBytes,
};
use josef_quorum::{QuorumStream, OBSERVER_PREAMBLE, RAFT_PREAMBLE};
use josef_sasl::settings::ClientCredentials;
use josef_sasl::SaslMechanism;
use josef_server::cluster::listener::{spawn_accept_loop, ControllerSocket, RaftAcceptor};
use josef_server::connection::{ConnectionInfo, ConnectionLimits, FrameHandler, Outcome};
use josef_server::peer_connection::{PeerConnectError, PeerConnector};
use josef_server::security_config::{PeerClientSettings, SaslSettings, SecurityProtocol};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

const WAIT: Duration = Duration::from_secs(5);

/// The quorum's side: counts the connections it is given and writes `raft` / `observer` on each,
/// so a client can tell it reached the quorum.
#[derive(Default)]
struct Quorum {
    raft: AtomicUsize,
    observer: AtomicUsize,
}

impl RaftAcceptor for Quorum {
    fn serve_raft(&self, mut stream: QuorumStream, _peer: String) {
        self.raft.fetch_add(1, Ordering::SeqCst);
        tokio::spawn(async move {
            let _ = stream.write_all(b"raft").await;
        });
    }

    fn serve_observer(&self, mut stream: QuorumStream, _peer: String) {
        self.observer.fetch_add(1, Ordering::SeqCst);
        tokio::spawn(async move {
            let _ = stream.write_all(b"observer").await;
        });
    }
}

/// The controller APIs' side: answers ApiVersions (any other request closes), counting them and
/// noting the principal of the last one.
#[derive(Default)]
struct Apis {
    handled: AtomicUsize,
    principal: parking_lot::Mutex<String>,
}

impl FrameHandler for Apis {
    async fn handle(&self, conn: &ConnectionInfo, frame: Bytes) -> Outcome {
        self.handled.fetch_add(1, Ordering::SeqCst);
        *self.principal.lock() = conn.principal.to_string();
        let Ok((header, RequestBody::ApiVersions(_))) = decode_request_frame(frame) else {
            return Outcome::Close("not ApiVersions".into());
        };
        let body = ResponseBody::ApiVersions(ApiVersionsResponse::default());
        match encode_response_frame_chunks(
            header.correlation_id,
            ApiKey::ApiVersions,
            header.request_api_version,
            &body,
        ) {
            Ok(f) => Outcome::Respond(f),
            Err(e) => Outcome::Close(e.to_string()),
        }
    }
}

const JAAS: &str = r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="controller" password="ctl-secret" user_controller="ctl-secret";"#;

struct Listener {
    addr: SocketAddr,
    quorum: Arc<Quorum>,
    apis: Arc<Apis>,
    shutdown: CancellationToken,
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// A CONTROLLER listener mapped to SASL_PLAINTEXT with PLAIN, as `ClusterNode` builds it.
async fn listener() -> Listener {
    let mut props = josef_config::settings::Props::new(
        [
            ("sasl.enabled.mechanisms", "PLAIN"),
            ("listener.name.controller.plain.sasl.jaas.config", JAAS),
            ("connection.failed.authentication.delay.ms", "0"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect(),
    );
    let settings = SaslSettings::from_props(&mut props, "CONTROLLER").unwrap();
    let image: josef_server::sasl_session::ImageSource =
        Arc::new(|| Arc::new(josef_metadata::MetadataImage::empty()));
    let sasl = josef_server::sasl_session::listener(&settings, image).unwrap();
    let tcp = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = tcp.local_addr().unwrap();
    let quorum = Arc::new(Quorum::default());
    let apis = Arc::new(Apis::default());
    let shutdown = CancellationToken::new();
    spawn_accept_loop(
        ControllerSocket {
            name: "CONTROLLER".into(),
            listener: tcp,
            tls: None,
            sasl: Some(sasl),
        },
        apis.clone(),
        quorum.clone(),
        ConnectionLimits::default(),
        shutdown.clone(),
        TaskTracker::new(),
    );
    Listener {
        addr,
        quorum,
        apis,
        shutdown,
    }
}

/// The node's own client side with `password`.
fn connector(password: &str) -> PeerConnector {
    PeerConnector::new(&PeerClientSettings {
        listener: "CONTROLLER".into(),
        protocol: SecurityProtocol::SaslPlaintext,
        ssl: None,
        sasl: Some(ClientCredentials {
            mechanism: SaslMechanism::Plain,
            username: "controller".into(),
            password: password.into(),
        }),
    })
    .unwrap()
}

/// Reads until the peer closes (true) or `WAIT` passes (false); what was read is dropped.
async fn closed<S: AsyncRead + Unpin>(s: &mut S) -> bool {
    let mut buf = [0u8; 256];
    let read_to_end = async {
        loop {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    };
    tokio::time::timeout(WAIT, read_to_end).await.is_ok()
}

/// Reads exactly `n` bytes within `WAIT`.
async fn read_n<S: AsyncRead + Unpin>(s: &mut S, n: usize) -> Vec<u8> {
    let mut buf = vec![0u8; n];
    tokio::time::timeout(WAIT, s.read_exact(&mut buf))
        .await
        .expect("an answer in time")
        .expect("the connection stays open");
    buf
}

fn request(body: RequestBody, version: i16, correlation_id: i32) -> BytesMut {
    let header = RequestHeader {
        request_api_key: body.api_key() as i16,
        request_api_version: version,
        correlation_id,
        client_id: Some(StrBytes::from_static_str("test")),
        ..Default::default()
    };
    let mut buf = BytesMut::new();
    encode_request_frame(&header, &body, &mut buf).unwrap();
    buf
}

/// Sends ApiVersions v0 and reads its answer.
async fn api_versions<S: AsyncRead + AsyncWrite + Unpin>(s: &mut S, correlation_id: i32) {
    let req = request(ApiVersionsRequest::default().into(), 0, correlation_id);
    s.write_all(&req).await.unwrap();
    let size = i32::from_be_bytes(read_n(s, 4).await.try_into().unwrap());
    let frame = read_n(s, size as usize).await;
    let (h, body) = decode_response_frame(ApiKey::ApiVersions, 0, frame.into()).unwrap();
    assert_eq!(h.correlation_id, correlation_id);
    assert!(matches!(body, ResponseBody::ApiVersions(_)));
}

/// Logs in with the right password, sends `preamble` and reads the quorum's `answer` to it.
async fn logged_in_preamble(l: &Listener, preamble: &[u8], answer: &[u8]) {
    let mut s = connector("ctl-secret")
        .connect(&l.addr.to_string(), "test")
        .await
        .unwrap();
    s.write_all(preamble).await.unwrap();
    assert_eq!(read_n(&mut s, answer.len()).await, answer);
}

#[tokio::test]
async fn the_quorum_preamble_before_authentication_closes_the_connection() {
    let l = listener().await;
    for preamble in [RAFT_PREAMBLE, OBSERVER_PREAMBLE] {
        let mut s = TcpStream::connect(l.addr).await.unwrap();
        // A Raft peer without a login: its preamble and the start of a message.
        s.write_all(&preamble).await.unwrap();
        s.write_all(&[0, 0, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8])
            .await
            .unwrap();
        assert!(closed(&mut s).await, "the listener closes it");
    }
    assert_eq!(l.quorum.raft.load(Ordering::SeqCst), 0);
    assert_eq!(l.quorum.observer.load(Ordering::SeqCst), 0);
    assert_eq!(l.apis.handled.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn an_authenticated_connection_reaches_the_quorum() {
    let l = listener().await;
    logged_in_preamble(&l, &RAFT_PREAMBLE, b"raft").await;
    logged_in_preamble(&l, &OBSERVER_PREAMBLE, b"observer").await;
    assert_eq!(l.quorum.raft.load(Ordering::SeqCst), 1);
    assert_eq!(l.quorum.observer.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_wrong_password_never_reaches_the_quorum() {
    let l = listener().await;
    let e = connector("wrong")
        .connect(&l.addr.to_string(), "test")
        .await
        .err()
        .expect("the login fails");
    assert!(matches!(e, PeerConnectError::Sasl(_)), "{e}");
    assert!(
        e.to_string().contains("Invalid username or password"),
        "{e}"
    );
    // The listener serves the others on.
    logged_in_preamble(&l, &RAFT_PREAMBLE, b"raft").await;
    assert_eq!(l.quorum.raft.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn controller_apis_only_after_authentication_apiversions_before() {
    let l = listener().await;
    // Before the login: ApiVersions is answered, any other request closes without an answer.
    let mut s = TcpStream::connect(l.addr).await.unwrap();
    api_versions(&mut s, 1).await;
    let metadata = request(MetadataRequest::default().into(), 1, 2);
    s.write_all(&metadata).await.unwrap();
    assert!(closed(&mut s).await, "a request before the login closes it");
    assert_eq!(
        l.apis.handled.load(Ordering::SeqCst),
        1,
        "only ApiVersions reached the APIs"
    );
    // After it, requests reach the controller APIs as the authenticated principal.
    let mut s = connector("ctl-secret")
        .connect(&l.addr.to_string(), "test")
        .await
        .unwrap();
    api_versions(&mut s, 7).await;
    api_versions(&mut s, 8).await;
    assert_eq!(l.apis.handled.load(Ordering::SeqCst), 3);
    assert_eq!(*l.apis.principal.lock(), "User:controller");
    assert_eq!(l.quorum.raft.load(Ordering::SeqCst), 0);
}
