//! The `/metrics` HTTP endpoint: just enough HTTP/1.x for a scraper (`GET /metrics`, one
//! response per connection, then close). Everything else is answered 404 or 405; a request head
//! over 8 KiB, or not complete within 10 s, closes the connection.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

use crate::route::{route, Route};
use crate::Recorder;

/// The largest request head read.
const MAX_HEAD: usize = 8 * 1024;
/// How long a client has to send its request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);

/// What `/metrics` answers: the whole text of one scrape, typically [`Recorder::render`]
/// followed by gauges computed from the broker's state (see [`crate::text`]). It runs on a
/// blocking thread, so it may take locks.
pub trait MetricsSource: Send + Sync + 'static {
    /// The text format body of one scrape.
    fn render(&self) -> String;
}

impl<F: Fn() -> String + Send + Sync + 'static> MetricsSource for F {
    fn render(&self) -> String {
        self()
    }
}

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
    /// Serves `/metrics` on `listener` from `source`, and meanwhile drains `recorder`'s
    /// histograms every few seconds ([`Recorder::spawn_upkeep`]). Call it inside a tokio runtime.
    pub fn start(
        listener: TcpListener,
        recorder: &'static Recorder,
        source: impl MetricsSource,
    ) -> std::io::Result<MetricsServer> {
        let source: Arc<dyn MetricsSource> = Arc::new(source);
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
                        let source = source.clone();
                        tokio::spawn(async move {
                            if let Err(e) = serve(stream, source).await {
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
            upkeep: recorder.spawn_upkeep(),
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

async fn serve(mut stream: TcpStream, source: Arc<dyn MetricsSource>) -> std::io::Result<()> {
    let head = match tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut stream)).await {
        Ok(Ok(Some(h))) => h,
        Ok(Err(e)) => return Err(e),
        _ => return Ok(()),
    };
    let (status, content_type, body) = match route(&head) {
        Route::Metrics => {
            // A broker's source walks its partitions under their locks: off the async workers.
            let body = tokio::task::spawn_blocking(move || source.render())
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
