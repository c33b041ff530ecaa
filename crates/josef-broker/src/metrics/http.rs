//! The `/metrics` HTTP endpoint: just enough HTTP/1.x for a scraper (`GET /metrics`, one
//! response per connection, then close). Everything else is answered 404 or 405; a request head
//! over 8 KiB, or not complete within 10 s, closes the connection.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use metrics_exporter_prometheus::PrometheusHandle;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

use crate::state::BrokerState;

/// The largest request head read.
const MAX_HEAD: usize = 8 * 1024;
/// How long a client has to send its request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);

/// The running endpoint.
pub struct MetricsServer {
    addr: SocketAddr,
    shutdown: CancellationToken,
    accept: tokio::task::JoinHandle<()>,
    upkeep: tokio::task::JoinHandle<()>,
}

/// Binds `host:port` (port 0: any free port).
pub async fn bind(host: &str, port: u16) -> std::io::Result<TcpListener> {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    TcpListener::bind((host, port)).await.map_err(|e| {
        std::io::Error::new(
            e.kind(),
            format!("cannot bind prometheus.listener {host}:{port}: {e}"),
        )
    })
}

impl MetricsServer {
    /// Serves `/metrics` on `listener` from `handle` and `state`.
    pub fn start(
        listener: TcpListener,
        handle: &'static PrometheusHandle,
        state: Arc<BrokerState>,
    ) -> std::io::Result<MetricsServer> {
        let addr = listener.local_addr()?;
        let shutdown = CancellationToken::new();
        let stop = shutdown.clone();
        let accept = tokio::spawn(async move {
            loop {
                let accepted = tokio::select! {
                    _ = stop.cancelled() => break,
                    a = listener.accept() => a,
                };
                match accepted {
                    Ok((stream, _)) => {
                        let state = state.clone();
                        tokio::spawn(async move {
                            if let Err(e) = serve(stream, handle, state).await {
                                tracing::debug!(error = %e, "metrics request failed");
                            }
                        });
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "metrics accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                }
            }
        });
        tracing::info!(%addr, "serving /metrics");
        Ok(MetricsServer {
            addr,
            shutdown,
            accept,
            upkeep: super::spawn_upkeep(handle),
        })
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting.
    pub async fn stop(self) {
        self.shutdown.cancel();
        self.upkeep.abort();
        let _ = self.accept.await;
    }
}

/// What a request head asks for.
#[derive(Debug, PartialEq, Eq)]
enum Route {
    Metrics,
    NotFound,
    MethodNotAllowed,
    Bad,
}

/// Reads the request line of `head` (the bytes before the blank line).
fn route(head: &[u8]) -> Route {
    let line = head
        .split(|&b| b == b'\r' || b == b'\n')
        .next()
        .unwrap_or(&[]);
    let mut parts = line.split(|&b| b == b' ').filter(|p| !p.is_empty());
    let (Some(method), Some(target), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        return Route::Bad;
    };
    if !version.starts_with(b"HTTP/1.") {
        return Route::Bad;
    }
    if method != b"GET" {
        return Route::MethodNotAllowed;
    }
    let path = target.split(|&b| b == b'?').next().unwrap_or(&[]);
    if path == b"/metrics" {
        Route::Metrics
    } else {
        Route::NotFound
    }
}

async fn read_head(stream: &mut TcpStream) -> std::io::Result<Option<Vec<u8>>> {
    let mut head = Vec::with_capacity(512);
    let mut chunk = [0u8; 1024];
    loop {
        if head.windows(4).any(|w| w == b"\r\n\r\n") || head.windows(2).any(|w| w == b"\n\n") {
            return Ok(Some(head));
        }
        if head.len() > MAX_HEAD {
            return Ok(None);
        }
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        head.extend_from_slice(&chunk[..n]);
    }
}

async fn serve(
    mut stream: TcpStream,
    handle: &'static PrometheusHandle,
    state: Arc<BrokerState>,
) -> std::io::Result<()> {
    let head = match tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut stream)).await {
        Ok(Ok(Some(h))) => h,
        Ok(Err(e)) => return Err(e),
        _ => return Ok(()),
    };
    let (status, content_type, body) = match route(&head) {
        Route::Metrics => {
            // Walking the partitions takes their locks: off the async workers.
            let body = tokio::task::spawn_blocking(move || super::render(handle, &state))
                .await
                .map_err(std::io::Error::other)?;
            ("200 OK", "text/plain; version=0.0.4; charset=utf-8", body)
        }
        Route::NotFound => ("404 Not Found", "text/plain", "try /metrics\n".to_string()),
        Route::MethodNotAllowed => (
            "405 Method Not Allowed",
            "text/plain",
            "GET only\n".to_string(),
        ),
        Route::Bad => ("400 Bad Request", "text/plain", String::new()),
    };
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(response.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    stream.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::{route, Route};
    use proptest::prelude::*;

    proptest! {
        // The request line parser takes any bytes from the network: it never panics, and only
        // a GET of /metrics is served.
        #[test]
        fn any_head_is_routed_without_panicking(head in proptest::collection::vec(any::<u8>(), 0..256)) {
            let r = route(&head);
            if r == Route::Metrics {
                let first = head
                    .split(|&b| b == b' ' || b == b'\r' || b == b'\n')
                    .find(|t| !t.is_empty());
                prop_assert_eq!(first, Some(&b"GET"[..]));
            }
        }

        #[test]
        fn a_get_line_with_any_target_is_routed_by_its_path(target in "/[a-z?=/]{0,20}") {
            let line = format!("GET {target} HTTP/1.1\r\n");
            let want = if target.split('?').next() == Some("/metrics") { Route::Metrics } else { Route::NotFound };
            prop_assert_eq!(route(line.as_bytes()), want);
        }
    }

    #[test]
    fn only_get_of_the_metrics_path_is_served() {
        assert_eq!(
            route(b"GET /metrics HTTP/1.1\r\nHost: x\r\n"),
            Route::Metrics
        );
        assert_eq!(route(b"GET /metrics?x=1 HTTP/1.0"), Route::Metrics);
        assert_eq!(route(b"GET / HTTP/1.1"), Route::NotFound);
        assert_eq!(route(b"POST /metrics HTTP/1.1"), Route::MethodNotAllowed);
        assert_eq!(route(b"GET /metrics SPDY/3"), Route::Bad);
        assert_eq!(route(b"\x00\xff"), Route::Bad);
        assert_eq!(route(b""), Route::Bad);
    }
}
