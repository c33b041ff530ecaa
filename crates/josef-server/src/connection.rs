//! One client connection: length-prefixed frames in, responses out, one request handled at a time
//! (Kafka mutes a channel while its request is in flight, so responses leave in request order).
//!
//! The loop is built for a small per-request cost, since one request costs little more than its
//! syscalls otherwise:
//! - one connection-owned read buffer (`read_buf`, no zeroing, no second copy through a
//!   `BufReader`); every complete frame already buffered is handled before the next read, so a
//!   client that pipelines requests costs one `recv` for several of them; a connection waiting
//!   with nothing buffered keeps only a small buffer (`connection/input.rs`);
//! - the handler's future is boxed, so a connection's task is small whatever the handler;
//! - responses of requests that complete at once are coalesced and written with one `send` when
//!   the buffered input runs out; a request that has to wait (a parked fetch, a join) first
//!   flushes the responses before it, so it never delays an earlier answer;
//! - responses are [`FrameChunks`]: small frames are copied together into one piece, record data
//!   (Fetch) stays in the `Bytes` it was read into, and everything goes out with vectored writes,
//!   so the records of a fetch are never copied in user space;
//! - the idle timeout is one timer per connection, re-armed lazily from the time of the last
//!   read, and the shutdown future is created once: no timer or waiter registration per request.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use josef_protocol::FrameChunks;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

mod input;

/// What the connection knows about itself; handlers read it (e.g. the listener name for the
/// advertised address in Metadata).
#[derive(Debug, Clone)]
pub struct ConnectionInfo {
    /// Listener name the connection came in on.
    pub listener: String,
    /// The port that listener is bound to (its configured port may be 0).
    pub bound_port: u16,
    /// The client's address.
    pub peer: SocketAddr,
    /// Who the connection is authenticated as: `User:ANONYMOUS` on PLAINTEXT, the mapped
    /// certificate name on SSL with a client certificate, the SASL identity once authenticated.
    pub principal: josef_authorizer::KafkaPrincipal,
}

impl ConnectionInfo {
    /// A connection on `listener` (bound to `bound_port`) from `peer`, not authenticated yet
    /// (`User:ANONYMOUS` until TLS or SASL says otherwise).
    pub fn new(listener: impl Into<String>, bound_port: u16, peer: SocketAddr) -> Self {
        ConnectionInfo {
            listener: listener.into(),
            bound_port,
            peer,
            principal: josef_authorizer::KafkaPrincipal::anonymous(),
        }
    }
}

/// What to do after a request.
#[derive(Debug)]
pub enum Outcome {
    /// Send these bytes (a complete frame, length prefix included).
    Respond(FrameChunks),
    /// Send these bytes, then close the connection after `delay` (a failed SASL
    /// authentication: Kafka answers, then closes after `connection.failed.authentication.delay.ms`).
    RespondAndClose {
        /// The last response.
        frame: FrameChunks,
        /// Why the connection closes.
        reason: String,
        /// How long to wait between the answer and the close.
        delay: Duration,
    },
    /// The request has no response (Produce with acks=0).
    NoResponse,
    /// Close the connection without answering (malformed input, unknown API, acks=0 failure).
    Close(String),
    /// A client over its quota (KIP-219): nothing more is read from the connection for
    /// `throttle`. With `client_backs_off` the response (if any) goes out at once; else it is
    /// held for the throttle (clients older than KIP-219 do not back off themselves).
    Throttled {
        /// The response; `None` for Produce with acks=0.
        response: Option<FrameChunks>,
        /// How long the connection stays muted.
        throttle: Duration,
        /// Whether the response is sent before the mute (else after).
        client_backs_off: bool,
    },
}

/// Turns one request frame (without its length prefix) into an [`Outcome`].
pub trait FrameHandler: Send + Sync + 'static {
    /// Handles one request; the connection handles nothing more until this completes.
    fn handle(&self, conn: &ConnectionInfo, frame: Bytes) -> impl Future<Output = Outcome> + Send;
}

/// What a connection can be served over: a TCP stream, a TLS stream, an in-memory pipe.
///
/// A plain [`TcpStream`] is recognised (the transport is `'static` for that) and gets fetched
/// records with `sendfile`; every other transport gets them as bytes.
pub trait Transport: AsyncRead + AsyncWrite + Unpin + Send + 'static {}

impl<T: AsyncRead + AsyncWrite + Unpin + Send + 'static> Transport for T {}

/// Connection limits.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    /// `socket.request.max.bytes`: a larger (or negative) size prefix closes the connection.
    pub max_request_bytes: i32,
    /// `connections.max.idle.ms`: no request for this long closes the connection (None = never).
    pub idle_timeout: Option<Duration>,
}

impl Default for ConnectionLimits {
    /// Kafka's defaults: `socket.request.max.bytes` 100 MiB, `connections.max.idle.ms` 10 minutes.
    fn default() -> Self {
        ConnectionLimits {
            max_request_bytes: 104_857_600,
            idle_timeout: Some(Duration::from_millis(600_000)),
        }
    }
}

/// How much the read buffer grows by when no frame size is known yet. Frames up to this size are
/// copied out of the buffer into their own allocation (cheap at this size), so a handler that
/// keeps a slice of a small request never pins a whole read chunk.
const READ_CHUNK: usize = 16 * 1024;
/// Responses are coalesced into one write up to this many bytes (records are counted though not
/// copied); beyond it what is pending is written first.
const COALESCE_MAX: usize = 1024 * 1024;
/// An idle connection keeps at most this much of its coalescing buffer's memory.
const PENDING_KEEP: usize = 64 * 1024;

/// Why the connection loop stopped.
enum Stop {
    /// Peer closed, read/write failed, idle, shutdown: just drop the socket.
    Quiet,
    /// Close as asked by the handler (after flushing earlier responses), after a delay.
    Close(String, Duration),
}

/// The next complete frame in `buf`, split off (length prefix dropped). `Err` on a size prefix
/// that is negative or above the limit: checked before anything is sized by it.
fn next_frame(buf: &mut BytesMut, max_request_bytes: i32) -> Result<Option<Bytes>, i32> {
    if buf.len() < 4 {
        return Ok(None);
    }
    let size = i32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
    if size < 0 || size > max_request_bytes {
        return Err(size);
    }
    let size = size as usize;
    if buf.len() < 4 + size {
        return Ok(None);
    }
    buf.advance(4);
    if size <= READ_CHUNK {
        let frame = Bytes::copy_from_slice(&buf[..size]);
        buf.advance(size);
        Ok(Some(frame))
    } else {
        // A large frame got its own reservation (see `reserve_for_next`): hand it over as is.
        Ok(Some(buf.split_to(size).freeze()))
    }
}

/// Makes room for the next read: the rest of a known large frame, else a chunk. `room` gives the
/// buffer room a read of so many bytes of the stream's data needs (more than the bytes on TLS,
/// whose records are read into the buffer and decrypted there).
fn reserve_for_next(buf: &mut BytesMut, room: fn(usize) -> usize) {
    let want = if buf.len() >= 4 {
        // The size was validated by `next_frame` before we got here.
        let size = i32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]).max(0) as usize;
        (4 + size).saturating_sub(buf.len()).min(usize::MAX / 2)
    } else {
        0
    };
    if want > READ_CHUNK {
        buf.reserve(room(want));
    } else if buf.capacity() - buf.len() < READ_CHUNK / 4 {
        buf.reserve(room(READ_CHUNK));
    }
}

/// Responses waiting to be written.
struct Pending {
    buf: FrameChunks,
    /// The timings of the requests whose responses are in `buf` (recorded once written).
    timers: Vec<crate::metrics::requests::RequestTimer>,
}

impl Pending {
    /// Queues `resp`; true when enough is pending that it should be written now.
    fn push(&mut self, resp: FrameChunks) -> bool {
        self.buf.append(resp);
        self.buf.len() >= COALESCE_MAX
    }

    async fn flush<S: Transport>(&mut self, stream: &mut S) -> std::io::Result<()> {
        if !self.timers.is_empty() {
            let at = std::time::Instant::now();
            self.timers.iter_mut().for_each(|t| t.sending(at));
        }
        if !self.buf.is_empty() {
            write_frames(stream, &mut self.buf).await?;
        }
        self.timers.clear();
        self.buf.clear(PENDING_KEEP);
        Ok(())
    }
}

/// Writes all of `buf`. Memory pieces go with vectored writes (`writev`); file slices (fetched
/// records left in their segment file) go with `sendfile` on a plain TCP socket, and are read
/// into memory once on any other transport (TLS encrypts in user space; an in-memory pipe has
/// no descriptor), the only copy they get.
async fn write_frames<S: Transport>(stream: &mut S, buf: &mut FrameChunks) -> std::io::Result<()> {
    if buf.file_slice_count() > 0 {
        if let Some(tcp) = (stream as &mut dyn std::any::Any).downcast_mut::<TcpStream>() {
            return write_with_sendfile(tcp, buf).await;
        }
        buf.load_file_slices()?;
    }
    // Vectored (`writev`) writes of the pieces, as many per call as tokio passes.
    stream.write_all_buf(buf).await?;
    // A TLS stream may hold the tail of what it accepted (the socket was full): out it goes
    // before the connection waits for the client. A no-op on TCP.
    stream.flush().await
}

/// Iovecs per `writev` of the sendfile writer (Linux allows 1024; a frame has a few pieces).
const WRITEV_MAX: usize = 64;

/// Writes `buf` to a TCP socket: runs of memory pieces with `writev`, file slices with
/// `sendfile` from where the last call stopped, waiting on the socket's readiness when it is
/// full (`WouldBlock`).
async fn write_with_sendfile(tcp: &TcpStream, buf: &mut FrameChunks) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let fd = tcp.as_raw_fd();
    while !buf.is_empty() {
        let written = match buf.front_file_slice() {
            Some(f) => tcp.try_io(tokio::io::Interest::WRITABLE, || {
                f.slice.send_to(f.offset, f.len, fd)
            }),
            None => {
                let mut slots = [std::io::IoSlice::new(&[]); WRITEV_MAX];
                let n = buf.memory_chunks_vectored(&mut slots);
                tcp.try_write_vectored(&slots[..n])
            }
        };
        match written {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => buf.advance(n),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => tcp.writable().await?,
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Serves one connection until the peer closes it, a frame is bad, it idles out, or `shutdown`
/// fires between requests (an in-flight request is always finished and answered first).
///
/// The stream is any [`Transport`]: the caller sets TCP options (`TCP_NODELAY`) and does the TLS
/// handshake before handing it over.
pub async fn serve_connection<S: Transport, H: FrameHandler>(
    stream: S,
    info: ConnectionInfo,
    handler: Arc<H>,
    limits: ConnectionLimits,
    shutdown: CancellationToken,
) {
    serve_authenticated(stream, info, handler, limits, shutdown, None).await
}

/// [`serve_connection`] on a SASL listener: every frame goes through `sasl` first, which
/// answers the SASL exchange itself and lets only what it admits reach the handler.
pub async fn serve_authenticated<S: Transport, H: FrameHandler>(
    mut stream: S,
    mut info: ConnectionInfo,
    handler: Arc<H>,
    limits: ConnectionLimits,
    shutdown: CancellationToken,
    mut sasl: Option<crate::sasl_session::SaslConnection>,
) {
    let _open = crate::metrics::ConnectionGauge::open(&info.listener);
    match run(
        &mut stream,
        &mut info,
        &handler,
        limits,
        &shutdown,
        &mut sasl,
    )
    .await
    {
        Stop::Quiet => {}
        Stop::Close(reason, delay) => {
            tracing::info!(peer = %info.peer, %reason, "closing connection");
            if !delay.is_zero() {
                tokio::select! {
                    _ = tokio::time::sleep(delay) => {}
                    _ = shutdown.cancelled() => {}
                }
            }
            let _ = stream.shutdown().await;
        }
    }
}

async fn run<S: Transport, H: FrameHandler>(
    stream: &mut S,
    info: &mut ConnectionInfo,
    handler: &Arc<H>,
    limits: ConnectionLimits,
    shutdown: &CancellationToken,
    sasl: &mut Option<crate::sasl_session::SaslConnection>,
) -> Stop {
    let peer = info.peer;
    let mut input = input::Input::default();
    let mut pending = Pending {
        buf: FrameChunks::new(),
        timers: Vec::new(),
    };
    let mut cancelled = pin!(shutdown.cancelled());
    // Without an idle timeout the timer is never polled (so never registered).
    let idle = limits
        .idle_timeout
        .unwrap_or(Duration::from_secs(100 * 365 * 24 * 3600));
    let mut last_activity = Instant::now();
    let mut idle_timer = pin!(tokio::time::sleep_until(last_activity + idle));
    loop {
        // Every complete frame already buffered, in order.
        loop {
            // Before authentication a frame is bounded by `sasl.server.max.receive.size`.
            let max = match sasl.as_ref().and_then(|a| a.max_receive_size()) {
                Some(m) => limits
                    .max_request_bytes
                    .min(i32::try_from(m).unwrap_or(i32::MAX)),
                None => limits.max_request_bytes,
            };
            let frame = match next_frame(&mut input.buf, max) {
                Ok(Some(f)) => {
                    input.request_seen(4 + f.len());
                    f
                }
                Ok(None) => break,
                Err(size) => {
                    tracing::warn!(peer = %peer, size, max = limits.max_request_bytes,
                        "invalid request size, closing connection");
                    let _ = pending.flush(stream).await;
                    return Stop::Quiet;
                }
            };
            let mut timer =
                crate::metrics::requests::RequestTimer::start(&frame, last_activity.into_std());
            let gate = match sasl.as_mut() {
                Some(a) => a.on_frame(info, &frame),
                None => crate::sasl_session::Gate::Handle,
            };
            let outcome = match gate {
                crate::sasl_session::Gate::Answer(o) => o,
                crate::sasl_session::Gate::Handle => {
                    // Boxed: the broker's handler future (its dispatch of every API) is many
                    // KiB, and inline it would size every connection's task, idle ones too. One
                    // allocation and a copy of the future per request are the price.
                    let mut fut = Box::pin(handler.handle(info, frame));
                    // Poll once: most requests complete at once and their responses are
                    // coalesced; one that has to wait must not hold back the responses before it.
                    match futures::poll!(fut.as_mut()) {
                        Poll::Ready(o) => o,
                        Poll::Pending => {
                            timer.parked();
                            if let Err(e) = pending.flush(stream).await {
                                tracing::debug!(peer = %peer, error = %e, "response write failed");
                                return Stop::Quiet;
                            }
                            fut.await
                        }
                    }
                }
            };
            timer.ready();
            match outcome {
                Outcome::Respond(frame) => {
                    if timer.is_active() {
                        pending.timers.push(timer);
                    }
                    if pending.push(frame) {
                        if let Err(e) = pending.flush(stream).await {
                            tracing::debug!(peer = %peer, error = %e, "response write failed");
                            return Stop::Quiet;
                        }
                    }
                }
                Outcome::NoResponse => {}
                Outcome::Throttled {
                    mut response,
                    throttle,
                    client_backs_off,
                } => {
                    if client_backs_off {
                        if let Some(frame) = response.take() {
                            pending.push(frame);
                        }
                    }
                    if let Err(e) = pending.flush(stream).await {
                        tracing::debug!(peer = %info.peer, error = %e, "response write failed");
                        return Stop::Quiet;
                    }
                    // Muted: the next request (even one already buffered) waits.
                    tokio::select! {
                        biased;
                        _ = &mut cancelled => return Stop::Quiet,
                        _ = tokio::time::sleep(throttle) => {}
                    }
                    if let Some(frame) = response {
                        pending.push(frame);
                    }
                    last_activity = Instant::now();
                }
                Outcome::Close(reason) => {
                    let _ = pending.flush(stream).await;
                    return Stop::Close(reason, Duration::ZERO);
                }
                Outcome::RespondAndClose {
                    frame,
                    reason,
                    delay,
                } => {
                    pending.push(frame);
                    let _ = pending.flush(stream).await;
                    return Stop::Close(reason, delay);
                }
            }
        }
        // Out of complete frames: answer what is pending before waiting for the client.
        if let Err(e) = pending.flush(stream).await {
            tracing::debug!(peer = %peer, error = %e, "response write failed");
            return Stop::Quiet;
        }
        if input.buf.is_empty() && input.buf.capacity() > 4 * READ_CHUNK {
            // A large request went through: a busy connection keeps only a chunk.
            input.buf = BytesMut::new();
        }
        let read = tokio::select! {
            biased;
            _ = &mut cancelled => return Stop::Quiet,
            r = input.read_from(stream) => r,
            _ = &mut idle_timer, if limits.idle_timeout.is_some() => {
                let deadline = last_activity + idle;
                if Instant::now() >= deadline {
                    tracing::debug!(peer = %peer, "closing idle connection");
                    return Stop::Quiet;
                }
                idle_timer.as_mut().reset(deadline);
                continue;
            }
        };
        match read {
            Ok(0) => {
                if !input.buf.is_empty() {
                    tracing::debug!(peer = %peer, "connection closed mid-request");
                }
                return Stop::Quiet;
            }
            Ok(_) => last_activity = Instant::now(),
            Err(e) => {
                tracing::debug!(peer = %peer, error = %e, "connection read failed");
                return Stop::Quiet;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BufMut;
    use josef_protocol::EncodeBuf;
    use tokio::io::AsyncReadExt;
    use tokio::net::{TcpListener, TcpStream};

    /// Echoes the frame back, framed; a frame starting with `w` waits 50 ms first, `c` closes,
    /// `n` gets no response.
    struct Echo;

    impl FrameHandler for Echo {
        async fn handle(&self, _conn: &ConnectionInfo, frame: Bytes) -> Outcome {
            match frame.first() {
                Some(b'w') => tokio::time::sleep(Duration::from_millis(50)).await,
                Some(b'c') => return Outcome::Close("asked".into()),
                Some(b'n') => return Outcome::NoResponse,
                _ => {}
            }
            let mut out = FrameChunks::new();
            out.put_slice(&(frame.len() as i32).to_be_bytes());
            // Large echoes go out as a shared piece, like fetched records.
            out.put_shared(&frame);
            Outcome::Respond(out)
        }
    }

    async fn start(limits: ConnectionLimits) -> (SocketAddr, CancellationToken) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let token = CancellationToken::new();
        let t = token.clone();
        tokio::spawn(async move {
            loop {
                let (s, peer) = listener.accept().await.unwrap();
                s.set_nodelay(true).unwrap();
                let info = ConnectionInfo::new("PLAINTEXT", addr.port(), peer);
                tokio::spawn(serve_connection(s, info, Arc::new(Echo), limits, t.clone()));
            }
        });
        (addr, token)
    }

    fn limits() -> ConnectionLimits {
        ConnectionLimits {
            max_request_bytes: 1 << 20,
            idle_timeout: Some(Duration::from_secs(10)),
        }
    }

    fn framed(body: &[u8]) -> Vec<u8> {
        let mut v = (body.len() as i32).to_be_bytes().to_vec();
        v.extend_from_slice(body);
        v
    }

    async fn read_frame<S: Transport>(s: &mut S) -> Option<Vec<u8>> {
        let mut len = [0u8; 4];
        s.read_exact(&mut len).await.ok()?;
        let mut body = vec![0u8; i32::from_be_bytes(len) as usize];
        s.read_exact(&mut body).await.ok()?;
        Some(body)
    }

    async fn is_closed(s: &mut TcpStream) -> bool {
        let mut b = [0u8; 1];
        matches!(
            tokio::time::timeout(Duration::from_secs(5), s.read(&mut b)).await,
            Ok(Ok(0)) | Ok(Err(_))
        )
    }

    #[tokio::test]
    async fn pipelined_requests_are_answered_in_order_even_when_one_waits() {
        let (addr, _t) = start(limits()).await;
        let mut s = TcpStream::connect(addr).await.unwrap();
        let mut all = Vec::new();
        for body in [&b"a1"[..], b"w2", b"n3", b"a4"] {
            all.extend(framed(body));
        }
        let big = vec![b'b'; 200_000];
        all.extend(framed(&big));
        s.write_all(&all).await.unwrap();
        assert_eq!(read_frame(&mut s).await.unwrap(), b"a1");
        assert_eq!(read_frame(&mut s).await.unwrap(), b"w2");
        assert_eq!(read_frame(&mut s).await.unwrap(), b"a4");
        assert_eq!(read_frame(&mut s).await.unwrap(), big);
    }

    #[tokio::test]
    async fn a_byte_at_a_time_sender_is_served() {
        let (addr, _t) = start(limits()).await;
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.set_nodelay(true).unwrap();
        for b in framed(b"slowly") {
            s.write_all(&[b]).await.unwrap();
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        assert_eq!(read_frame(&mut s).await.unwrap(), b"slowly");
    }

    #[tokio::test]
    async fn a_size_prefix_above_the_limit_closes_the_connection_without_allocating() {
        let (addr, _t) = start(limits()).await;
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(&0x7fff_ffffi32.to_be_bytes()).await.unwrap();
        assert!(is_closed(&mut s).await);
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(&(-1i32).to_be_bytes()).await.unwrap();
        assert!(is_closed(&mut s).await);
    }

    #[tokio::test]
    async fn responses_before_a_close_are_sent_then_the_connection_closes() {
        let (addr, _t) = start(limits()).await;
        let mut s = TcpStream::connect(addr).await.unwrap();
        let mut all = framed(b"a1");
        all.extend(framed(b"c2"));
        all.extend(framed(b"a3"));
        s.write_all(&all).await.unwrap();
        assert_eq!(read_frame(&mut s).await.unwrap(), b"a1");
        assert!(is_closed(&mut s).await);
    }

    #[tokio::test]
    async fn an_idle_connection_is_closed_after_the_idle_timeout_and_activity_extends_it() {
        let (addr, _t) = start(ConnectionLimits {
            max_request_bytes: 1024,
            idle_timeout: Some(Duration::from_millis(300)),
        })
        .await;
        let mut s = TcpStream::connect(addr).await.unwrap();
        for _ in 0..4 {
            tokio::time::sleep(Duration::from_millis(150)).await;
            s.write_all(&framed(b"ping")).await.unwrap();
            assert_eq!(read_frame(&mut s).await.unwrap(), b"ping");
        }
        let t0 = std::time::Instant::now();
        assert!(is_closed(&mut s).await);
        assert!(t0.elapsed() >= Duration::from_millis(250));
    }

    #[tokio::test]
    async fn a_truncated_request_is_dropped_when_the_peer_goes_away() {
        let (addr, _t) = start(limits()).await;
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(&100i32.to_be_bytes()).await.unwrap();
        s.write_all(b"short").await.unwrap();
        s.shutdown().await.unwrap();
        assert!(is_closed(&mut s).await);
        // The server still serves others.
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(&framed(b"ok")).await.unwrap();
        assert_eq!(read_frame(&mut s).await.unwrap(), b"ok");
    }

    #[tokio::test]
    async fn shutdown_between_requests_closes_the_connection() {
        let (addr, token) = start(limits()).await;
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(&framed(b"a")).await.unwrap();
        assert_eq!(read_frame(&mut s).await.unwrap(), b"a");
        token.cancel();
        assert!(is_closed(&mut s).await);
    }

    #[tokio::test]
    async fn a_request_is_served_over_an_in_memory_pipe() {
        let (mut client, server) = tokio::io::duplex(64 * 1024);
        let info = ConnectionInfo::new("PLAINTEXT", 0, "127.0.0.1:1".parse().unwrap());
        let token = CancellationToken::new();
        let task = tokio::spawn(serve_connection(
            server,
            info,
            Arc::new(Echo),
            limits(),
            token.clone(),
        ));
        let mut all = framed(b"one");
        all.extend(framed(&vec![b'b'; 100_000]));
        client.write_all(&all).await.unwrap();
        assert_eq!(read_frame(&mut client).await.unwrap(), b"one");
        assert_eq!(read_frame(&mut client).await.unwrap().len(), 100_000);
        client.write_all(&framed(b"c-close")).await.unwrap();
        let mut b = [0u8; 1];
        assert_eq!(client.read(&mut b).await.unwrap(), 0);
        task.await.unwrap();
    }

    /// A file slice that counts the bytes copied out of it into memory and those sent from it
    /// with `sendfile` (and the `sendfile` calls).
    #[derive(Debug)]
    struct CountedRegion {
        inner: crate::file_slice::RegionSlice,
        copied: std::sync::atomic::AtomicUsize,
        sent: std::sync::atomic::AtomicUsize,
        sends: std::sync::atomic::AtomicUsize,
    }

    impl josef_protocol::FileSlice for CountedRegion {
        fn len(&self) -> usize {
            self.inner.len()
        }

        fn read_at(&self, offset: usize, dst: &mut [u8]) -> std::io::Result<()> {
            self.copied.fetch_add(dst.len(), Ordering::Relaxed);
            self.inner.read_at(offset, dst)
        }

        fn send_to(
            &self,
            offset: usize,
            len: usize,
            fd: std::os::fd::RawFd,
        ) -> std::io::Result<usize> {
            self.sends.fetch_add(1, Ordering::Relaxed);
            let n = self.inner.send_to(offset, len, fd)?;
            self.sent.fetch_add(n, Ordering::Relaxed);
            Ok(n)
        }
    }

    use std::sync::atomic::Ordering;

    /// Answers every frame with a small header then the whole file as a file slice, like a
    /// fetch of its batches; a frame `t` truncates the file to half after the slice is made.
    struct Files {
        path: std::path::PathBuf,
        last: parking_lot::Mutex<Option<Arc<CountedRegion>>>,
    }

    /// A connection over an in-memory pipe (no socket, so no `sendfile`) served with `files`;
    /// the client's end.
    fn serve_in_memory(files: &Arc<Files>) -> tokio::io::DuplexStream {
        let (client, server) = tokio::io::duplex(64 * 1024);
        let info = ConnectionInfo::new("PLAINTEXT", 0, "127.0.0.1:1".parse().unwrap());
        tokio::spawn(serve_connection(
            server,
            info,
            files.clone(),
            limits(),
            CancellationToken::new(),
        ));
        client
    }

    impl Files {
        fn new(bytes: &[u8]) -> (tempfile::TempDir, Arc<Files>) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("00000000000000000000.log");
            std::fs::write(&path, bytes).unwrap();
            let files = Arc::new(Files {
                path,
                last: parking_lot::Mutex::new(None),
            });
            (dir, files)
        }

        fn last(&self) -> Arc<CountedRegion> {
            self.last.lock().clone().unwrap()
        }
    }

    impl FrameHandler for Files {
        async fn handle(&self, _conn: &ConnectionInfo, frame: Bytes) -> Outcome {
            let file = std::fs::File::open(&self.path).unwrap();
            let len = file.metadata().unwrap().len() as usize;
            let region = josef_log::storage::FileRegion::new(Arc::new(file), 0, len);
            let counted = Arc::new(CountedRegion {
                inner: crate::file_slice::RegionSlice(region),
                copied: Default::default(),
                sent: Default::default(),
                sends: Default::default(),
            });
            if frame.first() == Some(&b't') {
                let f = std::fs::OpenOptions::new()
                    .write(true)
                    .open(&self.path)
                    .unwrap();
                f.set_len(len as u64 / 2).unwrap();
            }
            *self.last.lock() = Some(counted.clone());
            let mut out = FrameChunks::new();
            out.put_slice(&(3 + len as i32).to_be_bytes());
            out.put_slice(b"hdr");
            out.put_file_slice(counted);
            Outcome::Respond(out)
        }
    }

    fn pattern(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 7 % 251) as u8).collect()
    }

    /// Serves `files` on a TCP port whose accepted sockets get `send_buffer` bytes of send
    /// buffer (small: `sendfile` must stop part way and resume).
    async fn start_files(files: Arc<Files>, send_buffer: Option<u32>) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            loop {
                let (s, peer) = listener.accept().await.unwrap();
                if let Some(size) = send_buffer {
                    set_send_buffer(&s, size);
                }
                let info = ConnectionInfo::new("PLAINTEXT", addr.port(), peer);
                let token = CancellationToken::new();
                tokio::spawn(serve_connection(s, info, files.clone(), limits(), token));
            }
        });
        addr
    }

    fn set_send_buffer(s: &TcpStream, size: u32) {
        use std::os::fd::AsRawFd;
        let fd = s.as_raw_fd();
        let v = size as libc::c_int;
        // SAFETY: a valid socket descriptor and a pointer to an int of the given size.
        let r = unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_SNDBUF,
                (&v as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        assert_eq!(r, 0);
    }

    #[tokio::test]
    async fn a_file_slice_goes_to_a_tcp_socket_with_sendfile_and_no_copy_in_user_space() {
        let data = pattern(300_000);
        let (_dir, files) = Files::new(&data);
        let addr = start_files(files.clone(), None).await;
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(&framed(b"f")).await.unwrap();
        let body = read_frame(&mut s).await.unwrap();
        assert_eq!(&body[..3], b"hdr");
        assert_eq!(&body[3..], &data[..]);
        let counted = files.last();
        assert_eq!(
            counted.copied.load(Ordering::Relaxed),
            0,
            "no user-space copy"
        );
        assert_eq!(counted.sent.load(Ordering::Relaxed), data.len());
    }

    #[tokio::test]
    async fn a_partial_sendfile_resumes_where_it_stopped() {
        let data = pattern(4 << 20);
        let (_dir, files) = Files::new(&data);
        let addr = start_files(files.clone(), Some(16 * 1024)).await;
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.set_recv_buffer_size(16 * 1024).unwrap();
        let mut s = socket.connect(addr).await.unwrap();
        s.write_all(&framed(b"f")).await.unwrap();
        let body = read_frame(&mut s).await.unwrap();
        assert!(body[3..] == data[..], "the bytes arrive whole and in order");
        let counted = files.last();
        assert!(
            counted.sends.load(Ordering::Relaxed) > 1,
            "sendfile stopped part way"
        );
        assert_eq!(counted.sent.load(Ordering::Relaxed), data.len());
        assert_eq!(counted.copied.load(Ordering::Relaxed), 0);
    }

    #[tokio::test]
    async fn an_in_memory_transport_gets_the_same_bytes_with_one_copy() {
        let data = pattern(300_000);
        let (_dir, files) = Files::new(&data);
        let mut client = serve_in_memory(&files);
        client.write_all(&framed(b"f")).await.unwrap();
        let body = read_frame(&mut client).await.unwrap();
        assert_eq!(&body[3..], &data[..]);
        let counted = files.last();
        assert_eq!(
            counted.copied.load(Ordering::Relaxed),
            data.len(),
            "read once"
        );
        assert_eq!(counted.sent.load(Ordering::Relaxed), 0);
    }

    #[tokio::test]
    async fn a_file_truncated_under_a_slice_closes_the_connection_without_other_bytes() {
        let data = pattern(300_000);
        let (_dir, files) = Files::new(&data);
        let addr = start_files(files.clone(), None).await;
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(&framed(b"t")).await.unwrap();
        let mut got = Vec::new();
        s.read_to_end(&mut got).await.unwrap();
        // The size prefix and header promised the whole file; what came is a prefix of the file's
        // bytes (never more, never others), then the connection closed, as Kafka closes it.
        assert!(got.len() < 4 + 3 + data.len());
        assert_eq!(&got[4..7], b"hdr");
        assert_eq!(&got[7..], &data[..got.len() - 7]);

        // Over an in-memory pipe the slice cannot be read whole: nothing of that frame is sent.
        std::fs::write(&files.path, &data).unwrap();
        let mut client = serve_in_memory(&files);
        client.write_all(&framed(b"t")).await.unwrap();
        let mut got = Vec::new();
        client.read_to_end(&mut got).await.unwrap();
        assert!(got.is_empty());
    }

    #[test]
    fn next_frame_splits_whole_frames_and_checks_the_size_first() {
        let mut buf = BytesMut::new();
        buf.extend_from_slice(&framed(b"abc"));
        buf.extend_from_slice(&[0, 0]);
        assert_eq!(next_frame(&mut buf, 10).unwrap().unwrap(), &b"abc"[..]);
        assert_eq!(next_frame(&mut buf, 10).unwrap(), None);
        buf.extend_from_slice(&[0, 11]);
        assert_eq!(next_frame(&mut buf, 10), Err(11));
    }
}
