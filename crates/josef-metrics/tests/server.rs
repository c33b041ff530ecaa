//! The `/metrics` endpoint over a real socket, serving a plain closure (no broker): a GET of
//! `/metrics` gets what the source renders, everything else its error status, and a connection
//! sending an oversized head is closed unanswered.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use josef_metrics::{MetricsServer, Recorder};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

async fn exchange(addr: SocketAddr, request: &[u8]) -> String {
    let mut s = TcpStream::connect(addr).await.unwrap();
    // The server may close before reading an oversized head whole: a failed write is fine.
    let _ = s.write_all(request).await;
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out).await;
    String::from_utf8(out).unwrap()
}

#[tokio::test]
async fn a_closure_source_is_served_on_get_metrics_only() {
    let recorder = Recorder::install();
    let scrapes = Arc::new(AtomicUsize::new(0));
    let counted = scrapes.clone();
    let listener = josef_metrics::bind("127.0.0.1", 0).await.unwrap();
    let server = MetricsServer::start(listener, recorder, move || {
        let n = counted.fetch_add(1, Ordering::SeqCst) + 1;
        format!("scrapes {n}\n")
    })
    .unwrap();
    let addr = server.addr();
    assert_ne!(addr.port(), 0);

    let ok = exchange(addr, b"GET /metrics?x=1 HTTP/1.1\r\nHost: x\r\n\r\n").await;
    assert_eq!(
        ok,
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n\
         Content-Length: 10\r\nConnection: close\r\n\r\nscrapes 1\n"
    );
    let ok = exchange(addr, b"GET /metrics HTTP/1.0\n\n").await;
    assert!(ok.ends_with("\r\n\r\nscrapes 2\n"), "{ok}");

    let not_found = exchange(addr, b"GET / HTTP/1.1\r\n\r\n").await;
    assert!(
        not_found.starts_with("HTTP/1.1 404 Not Found\r\n"),
        "{not_found}"
    );
    let post = exchange(addr, b"POST /metrics HTTP/1.1\r\n\r\n").await;
    assert!(
        post.starts_with("HTTP/1.1 405 Method Not Allowed\r\n"),
        "{post}"
    );
    let bad = exchange(addr, b"hello\r\n\r\n").await;
    assert!(bad.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{bad}");
    let huge = exchange(addr, &vec![b'a'; 20 * 1024]).await;
    assert_eq!(huge, "", "an oversized head is closed unanswered");
    assert_eq!(
        scrapes.load(Ordering::SeqCst),
        2,
        "only the GETs of /metrics render"
    );

    server.stop().await;
    assert!(
        TcpStream::connect(addr).await.is_err(),
        "stopped: not accepting"
    );
}
