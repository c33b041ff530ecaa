//! The server side of a TLS connection on rustls's unbuffered API: what
//! [`crate::TlsListener::accept`] hands a connection to read requests from and write responses to.
//!
//! Why not tokio-rustls's stream: rustls's buffered connection reads the socket 4 KiB at a time
//! into a buffer it shrinks back to 4 KiB (and re-zeroes as it grows) whenever it empties, and
//! moves the rest of a partial record to the front after every record. Here the stream owns the
//! ciphertext buffer: one `recv` takes as much as the reader asked for (the rest of a large
//! produce request) and at most [`READ_MAX`], nothing is zeroed, and records are decrypted in
//! place in it. What rustls 0.23 still does is copy each decrypted record into a `Vec` of its own
//! (`ReadTraffic::next_record`); from there it is copied once, into the reader's buffer.
//!
//! Writes are encrypted straight into one reused output buffer (small pieces of a vectored write
//! are gathered first, so a response is not split into tiny records) and written from there.
//! Post-handshake messages (KeyUpdate) are answered by rustls; what it queues goes out with the
//! next write, or from the read side as soon as the socket takes it.

use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use bytes::{Buf, BytesMut};
use rustls::server::UnbufferedServerConnection;
use rustls::unbuffered::{ConnectionState, EncodeError, EncryptError, UnbufferedStatus};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The most ciphertext one read asks the socket for.
pub(crate) const READ_MAX: usize = 512 * 1024;
/// The least ciphertext buffer a read uses (a waiting connection holds this much).
const READ_MIN: usize = 4 * 1024;
/// The largest TLS record on the wire: header and a TLS 1.2 ciphertext fragment (2^14 + 2048).
const RECORD_MAX: usize = 5 + 16 * 1024 + 2048;
/// Plaintext encrypted per write call: bounds the output buffer.
const WRITE_CHUNK: usize = 64 * 1024;
/// Pieces of a vectored write smaller than this are gathered into one record.
const GATHER_BELOW: usize = 4 * 1024;
/// Output buffer kept by a connection that waits with nothing to send.
const OUT_KEEP: usize = 16 * 1024;
/// Below this many expected bytes the socket wakes the reader for any byte (SO_RCVLOWAT 1).
const LOW_WATER_MIN: usize = 32 * 1024;
/// The most ciphertext the reader asks the kernel to gather before it wakes it.
const LOW_WATER_MAX: usize = 256 * 1024;

/// A TLS server connection over `S`, after the handshake (see [`crate::TlsListener::accept`]).
pub struct ServerStream<S> {
    io: S,
    conn: UnbufferedServerConnection,
    /// Ciphertext read from `io`, not yet processed.
    incoming: BytesMut,
    /// Decrypted bytes the reader had no room for.
    leftover: BytesMut,
    /// TLS bytes to write: `outgoing[out_start..out_end]`.
    outgoing: Vec<u8>,
    out_start: usize,
    out_end: usize,
    /// Pieces of a vectored write being gathered into one record.
    gather: Vec<u8>,
    /// The peer sent close_notify or closed the stream.
    read_done: bool,
    /// close_notify is queued.
    close_sent: bool,
    /// Plaintext bytes the reader is sure to get next (the rest of a request): see
    /// [`ServerStream::expect`].
    expected: usize,
    /// The TCP socket under the stream, if it is one, and the SO_RCVLOWAT last set on it.
    low_water: Option<(std::os::fd::RawFd, usize)>,
}

impl<S> std::fmt::Debug for ServerStream<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerStream")
            .field("incoming", &self.incoming.len())
            .field("outgoing", &(self.out_end - self.out_start))
            .field("read_done", &self.read_done)
            .finish_non_exhaustive()
    }
}

/// What [`ServerStream::step`] is asked to get to.
enum Want<'a, 'b> {
    /// Decrypted application data into this buffer.
    Read(&'a mut ReadBuf<'b>),
    /// These bytes encrypted into the output buffer.
    Encrypt(&'a [u8]),
    /// close_notify queued.
    Close,
    /// The end of the handshake.
    Handshake,
}

/// Where [`ServerStream::step`] stopped.
#[derive(Debug, PartialEq)]
enum Done {
    /// Plaintext is in the reader's buffer (which is full, or the next record does not fit).
    Delivered,
    /// Nothing more can happen without bytes from the peer.
    NeedInput,
    /// This many bytes of the write were encrypted.
    Encrypted(usize),
    /// close_notify is queued.
    Closing,
    /// The peer closed its side (close_notify).
    PeerClosed,
    /// The handshake is complete.
    Handshaken,
}

fn tls_err(e: rustls::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

/// Room for at least `need` more bytes at the end of `buf` (zeroed once when it grows, then
/// reused), moving the unsent bytes to the front first when that makes room.
fn out_room(buf: &mut Vec<u8>, start: &mut usize, end: &mut usize, need: usize) {
    if buf.len() - *end >= need {
        return;
    }
    if *start > 0 {
        buf.copy_within(*start..*end, 0);
        *end -= *start;
        *start = 0;
    }
    if buf.len() - *end < need {
        buf.resize(*end + need, 0);
    }
}

/// Sets SO_RCVLOWAT: epoll reports the socket readable once `bytes` are queued (or at the end of
/// the stream, or when the receive window closes, so a wait never outlasts what the peer sends).
fn set_rcvlowat(fd: std::os::fd::RawFd, bytes: usize) -> io::Result<()> {
    let v = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    // SAFETY: `fd` is the open socket the stream owns; the option value is a valid c_int.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVLOWAT,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// What a write into the output buffer that did not fit asks for.
enum Grow {
    /// Room for this many bytes.
    To(usize),
    /// It failed.
    Fail(String),
}

/// Writes with `f` at the end of the output buffer, giving it more room while it asks for it.
fn put_grown(
    buf: &mut Vec<u8>,
    start: &mut usize,
    end: &mut usize,
    mut need: usize,
    mut f: impl FnMut(&mut [u8]) -> Result<usize, Grow>,
) -> io::Result<()> {
    loop {
        out_room(buf, start, end, need);
        match f(&mut buf[*end..]) {
            Ok(n) => {
                *end += n;
                return Ok(());
            }
            Err(Grow::To(n)) => need = n,
            Err(Grow::Fail(e)) => return Err(io::Error::other(e)),
        }
    }
}

/// An encryption error as a [`Grow`].
fn grow(e: EncryptError) -> Grow {
    match e {
        EncryptError::InsufficientSize(s) => Grow::To(s.required_size),
        e => Grow::Fail(e.to_string()),
    }
}

impl<S: 'static> ServerStream<S> {
    pub(crate) fn new(io: S, conn: UnbufferedServerConnection) -> Self {
        use std::os::fd::AsRawFd;
        let low_water = (&io as &dyn std::any::Any)
            .downcast_ref::<tokio::net::TcpStream>()
            .map(|t| (t.as_raw_fd(), 1));
        ServerStream {
            expected: 0,
            low_water,
            io,
            conn,
            incoming: BytesMut::new(),
            leftover: BytesMut::new(),
            outgoing: Vec::new(),
            out_start: 0,
            out_end: 0,
            gather: Vec::new(),
            read_done: false,
            close_sent: false,
        }
    }

    /// Tells the stream that the reader is sure to get at least `bytes` more plaintext bytes
    /// (the rest of a request whose size it has read). On TCP, while the stream waits for them
    /// it asks the kernel not to wake it before that much (at most 256 KiB) is queued: a client
    /// that writes one TLS record per `write` (OpenSSL) otherwise wakes the broker, and costs it
    /// an `epoll_wait` and a `recv`, for every 16 KiB record of a megabyte request. Set it before
    /// each read (0 when nothing is certain); too large a value would stall the read.
    pub fn expect(&mut self, bytes: usize) {
        self.expected = bytes;
    }

    /// The underlying stream and the rustls connection (negotiated suite, peer certificates).
    pub fn get_ref(&self) -> (&S, &UnbufferedServerConnection) {
        (&self.io, &self.conn)
    }

    /// Ciphertext bytes wanted in the buffer before the next read from the socket: enough for
    /// `plain` bytes of plaintext (records add their headers and tags) or for the whole partial
    /// record at the front, within [`READ_MIN`]..[`READ_MAX`].
    fn read_target(&self, plain: usize) -> usize {
        let record = match self.incoming.get(..5) {
            Some(h) => (5 + u16::from_be_bytes([h[3], h[4]]) as usize).min(RECORD_MAX),
            None => 0,
        };
        let wanted = plain
            .saturating_add(plain / 128 + 1024)
            .clamp(READ_MIN, READ_MAX);
        wanted.max(record)
    }

    /// Encodes a queued handshake or alert message into the output buffer.
    fn encode(
        enc: &mut rustls::unbuffered::EncodeTlsData<'_, rustls::server::ServerConnectionData>,
        out: &mut Vec<u8>,
        start: &mut usize,
        end: &mut usize,
    ) -> io::Result<()> {
        put_grown(out, start, end, 512, |b| match enc.encode(b) {
            Ok(n) => Ok(n),
            Err(EncodeError::InsufficientSize(s)) => Err(Grow::To(s.required_size)),
            Err(e) => Err(Grow::Fail(e.to_string())),
        })
    }

    /// Processes what is buffered until `want` is reached or bytes from the peer are needed.
    /// Handshake messages rustls queues (the handshake's flights, a KeyUpdate answer, an alert
    /// after an error) land in the output buffer.
    fn step(&mut self, mut want: Want<'_, '_>) -> io::Result<Done> {
        loop {
            let UnbufferedStatus { mut discard, state } =
                self.conn.process_tls_records(&mut self.incoming[..]);
            let state = match state {
                Ok(s) => s,
                Err(e) => {
                    self.incoming.advance(discard);
                    // rustls queued a fatal alert: encode it so the caller can send it.
                    let again = self.conn.process_tls_records(&mut self.incoming[..]);
                    if let Ok(ConnectionState::EncodeTlsData(mut enc)) = again.state {
                        let _ = Self::encode(
                            &mut enc,
                            &mut self.outgoing,
                            &mut self.out_start,
                            &mut self.out_end,
                        );
                    }
                    return Err(tls_err(e));
                }
            };
            let done = match state {
                ConnectionState::ReadTraffic(mut records) => {
                    let mut delivered = false;
                    let mut full = false;
                    while let Some(len) = records.peek_len() {
                        let room = match &want {
                            Want::Read(out) => out.remaining(),
                            _ => 0,
                        };
                        if delivered && len.get() > room {
                            full = true;
                            break;
                        }
                        let record = match records.next_record() {
                            Some(Ok(r)) => r,
                            Some(Err(e)) => {
                                self.incoming.advance(discard);
                                return Err(tls_err(e));
                            }
                            None => break,
                        };
                        discard += record.discard;
                        let n = room.min(record.payload.len());
                        if let Want::Read(out) = &mut want {
                            out.put_slice(&record.payload[..n]);
                            delivered |= n > 0;
                        }
                        // Not asked for now (a write, or no room): kept for the next read.
                        self.leftover.extend_from_slice(&record.payload[n..]);
                        if !self.leftover.is_empty() {
                            full = true;
                            break;
                        }
                    }
                    match &want {
                        Want::Read(out) if full || (delivered && out.remaining() == 0) => {
                            Some(Done::Delivered)
                        }
                        _ => None,
                    }
                }
                ConnectionState::EncodeTlsData(mut enc) => {
                    Self::encode(
                        &mut enc,
                        &mut self.outgoing,
                        &mut self.out_start,
                        &mut self.out_end,
                    )?;
                    None
                }
                // The encoded bytes are in the output buffer; callers write it out before they
                // wait for input, and before any later record.
                ConnectionState::TransmitTlsData(t) => {
                    t.done();
                    None
                }
                ConnectionState::BlockedHandshake => Some(Done::NeedInput),
                ConnectionState::WriteTraffic(mut w) => match &want {
                    Want::Encrypt(data) => {
                        let need = data.len() + (data.len() / 16384 + 1) * 64;
                        let r = put_grown(
                            &mut self.outgoing,
                            &mut self.out_start,
                            &mut self.out_end,
                            need,
                            |b| w.encrypt(data, b).map_err(grow),
                        );
                        match r {
                            Ok(()) => Some(Done::Encrypted(data.len())),
                            Err(e) => {
                                self.incoming.advance(discard);
                                return Err(e);
                            }
                        }
                    }
                    Want::Close => {
                        let r = put_grown(
                            &mut self.outgoing,
                            &mut self.out_start,
                            &mut self.out_end,
                            64,
                            |b| w.queue_close_notify(b).map_err(grow),
                        );
                        match r {
                            Ok(()) => Some(Done::Closing),
                            Err(e) => {
                                self.incoming.advance(discard);
                                return Err(e);
                            }
                        }
                    }
                    Want::Read(_) => Some(Done::NeedInput),
                    Want::Handshake => {
                        // TLS 1.3 lets the server send data before the client's Finished.
                        Some(if self.conn.is_handshaking() {
                            Done::NeedInput
                        } else {
                            Done::Handshaken
                        })
                    }
                },
                ConnectionState::PeerClosed | ConnectionState::Closed => {
                    self.read_done = true;
                    match &want {
                        Want::Read(_) => Some(Done::PeerClosed),
                        Want::Handshake => {
                            self.incoming.advance(discard);
                            return Err(io::Error::new(
                                io::ErrorKind::UnexpectedEof,
                                "peer closed during the TLS handshake",
                            ));
                        }
                        // A write after the peer's close_notify: TLS allows it (half close).
                        Want::Encrypt(_) | Want::Close => None,
                    }
                }
                other => {
                    let e = io::Error::other(format!("unexpected TLS state {other:?}"));
                    self.incoming.advance(discard);
                    return Err(e);
                }
            };
            self.incoming.advance(discard);
            if let Some(done) = done {
                return Ok(done);
            }
        }
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin + 'static> ServerStream<S> {
    /// Writes the output buffer out; `Ready(Ok)` once it is empty.
    fn poll_send(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.out_start < self.out_end {
            let n =
                ready!(Pin::new(&mut self.io)
                    .poll_write(cx, &self.outgoing[self.out_start..self.out_end]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.out_start += n;
        }
        self.out_start = 0;
        self.out_end = 0;
        Poll::Ready(Ok(()))
    }

    /// Reads ciphertext from the socket into the buffer: `Ready(Ok(0))` at the end of the stream.
    fn poll_fill(&mut self, cx: &mut Context<'_>, plain: usize) -> Poll<io::Result<usize>> {
        let target = self.read_target(plain);
        if let Some((fd, set)) = &mut self.low_water {
            // Ciphertext is never shorter than its plaintext, and what is buffered is part of it.
            let sure = self.expected.saturating_sub(self.incoming.len());
            let want = if sure >= LOW_WATER_MIN {
                sure.min(LOW_WATER_MAX)
            } else {
                1
            };
            if want != *set {
                set_rcvlowat(*fd, want)?;
                *set = want;
            }
        }
        if self.incoming.is_empty() && self.incoming.capacity() > 2 * target {
            // A large request went through: a waiting connection keeps a small buffer.
            self.incoming = BytesMut::new();
        }
        // At least 1 KiB more even when the front record is complete: rustls keeps the records
        // of a handshake message larger than one record until all of them are in.
        self.incoming
            .reserve(target.saturating_sub(self.incoming.len()).max(1024));
        tokio_util::io::poll_read_buf(Pin::new(&mut self.io), cx, &mut self.incoming)
    }

    /// Runs the handshake to its end (the caller bounds it in time).
    pub(crate) async fn handshake(&mut self) -> io::Result<()> {
        loop {
            match self.step(Want::Handshake) {
                Ok(Done::Handshaken) => return poll_fn(|cx| self.poll_send(cx)).await,
                Ok(Done::NeedInput) => {
                    poll_fn(|cx| self.poll_send(cx)).await?;
                    if poll_fn(|cx| self.poll_fill(cx, 0)).await? == 0 {
                        return Err(io::Error::new(
                            io::ErrorKind::UnexpectedEof,
                            "peer closed during the TLS handshake",
                        ));
                    }
                }
                Ok(other) => return Err(io::Error::other(format!("handshake stopped: {other:?}"))),
                Err(e) => {
                    // Best effort: the alert rustls queued tells the client why.
                    let _ = poll_fn(|cx| self.poll_send(cx)).await;
                    return Err(e);
                }
            }
        }
    }

    /// Encrypts up to [`WRITE_CHUNK`] bytes of `data` after what is queued, and starts sending.
    fn poll_encrypt(&mut self, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        if self.out_end - self.out_start >= WRITE_CHUNK {
            ready!(self.poll_send(cx))?;
        }
        let take = data.len().min(WRITE_CHUNK);
        let n = match self.step(Want::Encrypt(&data[..take]))? {
            Done::Encrypted(n) => n,
            other => return Poll::Ready(Err(io::Error::other(format!("write: {other:?}")))),
        };
        // Accepted either way; what the socket does not take now goes with the next call.
        if let Poll::Ready(Err(e)) = self.poll_send(cx) {
            return Poll::Ready(Err(e));
        }
        Poll::Ready(Ok(n))
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin + 'static> AsyncRead for ServerStream<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if !this.leftover.is_empty() {
            let n = this.leftover.len().min(out.remaining());
            out.put_slice(&this.leftover[..n]);
            this.leftover.advance(n);
            return Poll::Ready(Ok(()));
        }
        if this.read_done || out.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        let before = out.filled().len();
        loop {
            let done = match this.step(Want::Read(out)) {
                Ok(d) => d,
                Err(e) => {
                    let _ = this.poll_send(cx);
                    return Poll::Ready(Err(e));
                }
            };
            match done {
                Done::NeedInput if out.filled().len() == before => {}
                _ => return Poll::Ready(Ok(())),
            }
            // A KeyUpdate answer (or anything else rustls queued) goes out without waiting for
            // the next response; if the socket is full, its readiness wakes this task too.
            if let Poll::Ready(Err(e)) = this.poll_send(cx) {
                return Poll::Ready(Err(e));
            }
            match this.poll_fill(cx, out.remaining()) {
                Poll::Ready(Ok(0)) => {
                    this.read_done = true;
                    return Poll::Ready(if this.incoming.is_empty() {
                        Ok(())
                    } else {
                        Err(io::Error::new(
                            io::ErrorKind::UnexpectedEof,
                            "peer closed the stream in the middle of a TLS record",
                        ))
                    });
                }
                Poll::Ready(Ok(_)) => {}
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => {
                    if this.out_start == this.out_end && this.outgoing.len() > OUT_KEEP {
                        this.outgoing = Vec::new();
                    }
                    return Poll::Pending;
                }
            }
        }
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin + 'static> AsyncWrite for ServerStream<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().poll_encrypt(cx, data)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        // A large first piece goes as it is; small ones are gathered (up to a chunk) so that a
        // response's header and body share records.
        let Some(first) = bufs.iter().find(|b| !b.is_empty()) else {
            return Poll::Ready(Ok(0));
        };
        if first.len() >= GATHER_BELOW {
            return this.poll_encrypt(cx, first);
        }
        let mut gather = std::mem::take(&mut this.gather);
        gather.clear();
        for b in bufs.iter().skip_while(|b| b.is_empty()) {
            if gather.len() + b.len() > WRITE_CHUNK
                || (!gather.is_empty() && b.len() >= GATHER_BELOW)
            {
                break;
            }
            gather.extend_from_slice(b);
        }
        let r = this.poll_encrypt(cx, &gather);
        // Kept for the next response unless a large one grew it.
        if gather.capacity() <= OUT_KEEP {
            this.gather = gather;
        }
        r
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_send(cx))?;
        Pin::new(&mut this.io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if !this.close_sent {
            this.close_sent = true;
            // A connection that failed has no close_notify to send; it is closed all the same.
            let _ = this.step(Want::Close);
        }
        ready!(this.poll_send(cx))?;
        Pin::new(&mut this.io).poll_shutdown(cx)
    }
}
