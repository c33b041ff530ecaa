//! The server side of a TLS connection: what [`crate::TlsListener::accept`] hands a connection to
//! read requests from and write responses to.
//!
//! The handshake runs on rustls's unbuffered API; then the record layer is Josef's
//! ([`crate::records`], with rustls's keys and ring's AEAD). [`ServerStream::read_into`] (what the
//! connection uses) reads records into the reader's own buffer and decrypts each one right behind
//! the plaintext before it, so the plaintext is never copied; a read through [`AsyncRead`]
//! decrypts records in place in the stream's ciphertext buffer and copies each record's plaintext
//! once, into the reader's buffer (rustls 0.23 would copy it into a fresh `Vec` per record first).
//!
//! Why not tokio-rustls's stream: rustls's buffered connection reads the socket 4 KiB at a time
//! into a buffer it shrinks back to 4 KiB (and re-zeroes as it grows) whenever it empties. Here
//! the stream owns the ciphertext buffer: one `recv` takes as much as the reader asked for (the
//! rest of a large produce request) and at most [`READ_MAX`], and nothing is zeroed.
//!
//! Writes are encrypted into one reused output buffer (small pieces of a vectored write are
//! gathered first, so a response is not split into tiny records) and written from there. A
//! KeyUpdate answer goes out with the next write, or from the read side as soon as the socket
//! takes it.

use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use bytes::{Buf, BytesMut};
use rustls::pki_types::CertificateDer;
use rustls::server::UnbufferedServerConnection;
use rustls::unbuffered::{ConnectionState, EncodeError, UnbufferedStatus};
use rustls::{ContentType, ProtocolVersion, SupportedCipherSuite};

use crate::records::{record_len, Opened, RecordLayer, MAX_FRAGMENT};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The most ciphertext one read asks the socket for.
pub(crate) const READ_MAX: usize = 512 * 1024;
/// The least ciphertext buffer a read uses (a waiting connection holds this much).
const READ_MIN: usize = 4 * 1024;
/// The largest TLS record on the wire: header and a TLS 1.2 ciphertext fragment (2^14 + 2048).
const RECORD_MAX: usize = 5 + 16 * 1024 + 2048;
/// The most a record adds to its plaintext: the header, and TLS 1.3's content type, padding and
/// tag (at most 256 bytes together; TLS 1.2's explicit nonce and tag are 24).
const RECORD_EXPANSION: usize = 5 + 256;
/// Output bytes reserved for a handshake flight or an alert before rustls says how much it needs.
const ENCODE_MIN: usize = 512;
/// Plaintext encrypted per write call: bounds the output buffer.
const WRITE_CHUNK: usize = 64 * 1024;
/// Pieces of a vectored write smaller than this are gathered into one record.
const GATHER_BELOW: usize = 4 * 1024;
/// Output buffer kept by a connection that waits with nothing to send.
const OUT_KEEP: usize = 16 * 1024;
/// Below this many expected bytes the socket wakes the reader for any byte (SO_RCVLOWAT 1).
const LOW_WATER_MIN: usize = 32 * 1024;
/// The most ciphertext the reader asks the kernel to gather before it wakes it: the rest of a
/// 1 MiB produce request (librdkafka's default `message.max.bytes`), which then comes in one
/// `recv`, as on PLAINTEXT, where the client's single large write is usually all there when the
/// broker wakes. At 256 KiB an OpenSSL client's 16 KiB writes woke the broker 4 times per
/// request (twentieth session: SSL `recv` calls 619-694 against PLAINTEXT's 403-461 for 311
/// requests, and ~6 % of the SSL run's CPU).
const LOW_WATER_MAX: usize = 1024 * 1024;

/// A TLS server connection over `S`, after the handshake (see [`crate::TlsListener::accept`]).
pub struct ServerStream<S> {
    io: S,
    tls: Tls,
    /// The client's certificate chain, kept from the handshake.
    peer_certificates: Option<Vec<CertificateDer<'static>>>,
    /// Ciphertext read from `io`, not yet processed. A record being read is decrypted in place
    /// at its front.
    incoming: BytesMut,
    /// The decrypted record at the front of `incoming`: its plaintext not yet read
    /// (`plain.0..plain.1`) and the record's length.
    plain: (usize, usize),
    record: usize,
    /// Application data that came with the handshake (decrypted by rustls).
    leftover: BytesMut,
    /// TLS bytes to write: `outgoing[out_start..]`.
    outgoing: Vec<u8>,
    out_start: usize,
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
    /// Plaintext and ciphertext bytes copied after the socket read (see
    /// [`ServerStream::bytes_copied`]).
    copied: u64,
    /// Socket reads that returned bytes (see [`ServerStream::socket_reads`]).
    reads: u64,
}

impl<S> std::fmt::Debug for ServerStream<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerStream")
            .field("incoming", &self.incoming.len())
            .field("outgoing", &(self.outgoing.len() - self.out_start))
            .field("read_done", &self.read_done)
            .finish_non_exhaustive()
    }
}

/// Where [`ServerStream::handshake_step`] stopped.
#[derive(Debug, PartialEq)]
enum Done {
    /// Nothing more can happen without bytes from the peer.
    NeedInput,
    /// The handshake is complete.
    Handshaken,
}

fn tls_err(e: rustls::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

/// The connection's TLS state.
enum Tls {
    /// rustls runs the handshake.
    Handshake(Box<UnbufferedServerConnection>),
    /// Established: the record layer is ours.
    Records(Box<RecordLayer>),
    /// The handshake failed or its keys could not be taken over.
    Failed,
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
            tls: Tls::Handshake(Box::new(conn)),
            peer_certificates: None,
            incoming: BytesMut::new(),
            plain: (0, 0),
            record: 0,
            leftover: BytesMut::new(),
            outgoing: Vec::new(),
            out_start: 0,
            gather: Vec::new(),
            read_done: false,
            close_sent: false,
            copied: 0,
            reads: 0,
        }
    }

    /// Tells the stream that the reader is sure to get at least `bytes` more plaintext bytes
    /// (the rest of a request whose size it has read). On TCP, while the stream waits for them
    /// it asks the kernel not to wake it before that much (at most 1 MiB) is queued: a client
    /// that writes one TLS record per `write` (OpenSSL) otherwise wakes the broker, and costs it
    /// an `epoll_wait` and a `recv`, for every 16 KiB record of a megabyte request. Set it before
    /// each read (0 when nothing is certain); too large a value would stall the read.
    pub fn expect(&mut self, bytes: usize) {
        self.expected = bytes;
    }

    /// Bytes the read side copied in user space after the socket read: plaintext moved into the
    /// reader's buffer by [`AsyncRead`] (every byte read), and by [`ServerStream::read_into`]
    /// only the pieces of records a read cut in two (kept until the rest arrives). A diagnostic,
    /// what tests count.
    pub fn bytes_copied(&self) -> u64 {
        self.copied
    }

    /// Socket reads that returned bytes, since the stream was made. A diagnostic, what tests
    /// count.
    pub fn socket_reads(&self) -> u64 {
        self.reads
    }

    /// Room a buffer needs for [`ServerStream::read_into`] to read `plain` bytes of plaintext in
    /// one go: the ciphertext's record headers and tags, and the record a read cuts in two.
    pub fn room_for(plain: usize) -> usize {
        plain.saturating_add(plain / 512).saturating_add(RECORD_MAX)
    }

    /// Room a buffer needs for [`ServerStream::read_into`] to take `plain` bytes of plaintext
    /// that arrive as whole records, without the allowance for a cut record that
    /// [`ServerStream::room_for`] adds: what a connection waits with. Below it, the first record
    /// of a request larger than the buffer is cut by the read that ends the wait, copied out and
    /// back, and needs a second read (and a larger buffer) before anything is delivered.
    pub fn wait_room(plain: usize) -> usize {
        let records = plain.div_ceil(MAX_FRAGMENT).max(1);
        plain.saturating_add(records.saturating_mul(RECORD_EXPANSION))
    }

    /// The underlying stream.
    pub fn get_ref(&self) -> &S {
        &self.io
    }

    /// The client's certificate chain (its own first), if it sent one.
    pub fn peer_certificates(&self) -> Option<&[CertificateDer<'static>]> {
        self.peer_certificates.as_deref()
    }

    /// The negotiated cipher suite, once the handshake is done.
    pub fn negotiated_cipher_suite(&self) -> Option<SupportedCipherSuite> {
        match &self.tls {
            Tls::Records(r) => Some(r.suite()),
            Tls::Handshake(c) => c.negotiated_cipher_suite(),
            Tls::Failed => None,
        }
    }

    /// The negotiated protocol version, once the handshake is done.
    pub fn protocol_version(&self) -> Option<ProtocolVersion> {
        match &self.tls {
            Tls::Records(r) => Some(r.protocol_version()),
            Tls::Handshake(c) => c.protocol_version(),
            Tls::Failed => None,
        }
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

    /// Encodes a queued handshake or alert message at the end of the output buffer.
    fn encode(
        enc: &mut rustls::unbuffered::EncodeTlsData<'_, rustls::server::ServerConnectionData>,
        out: &mut Vec<u8>,
    ) -> io::Result<()> {
        let end = out.len();
        let mut need = ENCODE_MIN;
        loop {
            out.resize(end + need, 0);
            match enc.encode(&mut out[end..]) {
                Ok(n) => {
                    out.truncate(end + n);
                    return Ok(());
                }
                Err(EncodeError::InsufficientSize(s)) => need = s.required_size,
                Err(e) => {
                    out.truncate(end);
                    return Err(io::Error::other(e.to_string()));
                }
            }
        }
    }

    /// Runs the handshake on what is buffered until it is complete or bytes from the peer are
    /// needed; the flights rustls queues (and an alert after an error) land in the output buffer.
    fn handshake_step(&mut self) -> io::Result<Done> {
        let Tls::Handshake(conn) = &mut self.tls else {
            return Err(io::Error::other("TLS handshake already over"));
        };
        loop {
            let UnbufferedStatus { discard, state } =
                conn.process_tls_records(&mut self.incoming[..]);
            let state = match state {
                Ok(s) => s,
                Err(e) => {
                    self.incoming.advance(discard);
                    // rustls queued a fatal alert: encode it so the caller can send it.
                    let again = conn.process_tls_records(&mut self.incoming[..]);
                    if let Ok(ConnectionState::EncodeTlsData(mut enc)) = again.state {
                        let _ = Self::encode(&mut enc, &mut self.outgoing);
                    }
                    return Err(tls_err(e));
                }
            };
            let done = match state {
                // Application data right behind the client's Finished: kept for the reader.
                ConnectionState::ReadTraffic(mut records) => {
                    while let Some(record) = records.next_record() {
                        match record {
                            Ok(r) => self.leftover.extend_from_slice(r.payload),
                            Err(e) => {
                                self.incoming.advance(discard);
                                return Err(tls_err(e));
                            }
                        }
                        if self.leftover.len() > READ_MAX {
                            self.incoming.advance(discard);
                            return Err(io::Error::other("too much data with the handshake"));
                        }
                    }
                    None
                }
                ConnectionState::EncodeTlsData(mut enc) => {
                    Self::encode(&mut enc, &mut self.outgoing)?;
                    None
                }
                // The encoded bytes are in the output buffer; the caller writes it out before
                // it waits for input.
                ConnectionState::TransmitTlsData(t) => {
                    t.done();
                    None
                }
                ConnectionState::BlockedHandshake => Some(Done::NeedInput),
                // TLS 1.3 lets the server send data before the client's Finished.
                ConnectionState::WriteTraffic(_) => Some(if conn.is_handshaking() {
                    Done::NeedInput
                } else {
                    Done::Handshaken
                }),
                ConnectionState::PeerClosed | ConnectionState::Closed => {
                    self.incoming.advance(discard);
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "peer closed during the TLS handshake",
                    ));
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

    /// After the handshake: the record layer takes over rustls's keys.
    fn establish(&mut self) -> io::Result<()> {
        let Tls::Handshake(conn) = std::mem::replace(&mut self.tls, Tls::Failed) else {
            return Err(io::Error::other("TLS handshake not running"));
        };
        self.peer_certificates = conn
            .peer_certificates()
            .map(|c| c.iter().map(|c| c.clone().into_owned()).collect());
        self.tls = Tls::Records(Box::new(RecordLayer::new(*conn).map_err(tls_err)?));
        Ok(())
    }

    /// Copies plaintext into `out`: the rest of the record at the front, then records opened in
    /// place one after another while `out` has room. `Ok(true)` once something was delivered or
    /// the peer closed; `Ok(false)` when a whole record more is needed first.
    fn read_records(&mut self, out: &mut ReadBuf<'_>) -> io::Result<bool> {
        let Tls::Records(layer) = &mut self.tls else {
            return Err(io::Error::other("TLS connection not established"));
        };
        let mut delivered = false;
        loop {
            if self.plain.0 < self.plain.1 {
                let n = out.remaining().min(self.plain.1 - self.plain.0);
                out.put_slice(&self.incoming[self.plain.0..self.plain.0 + n]);
                self.plain.0 += n;
                self.copied += n as u64;
                delivered |= n > 0;
                if self.plain.0 < self.plain.1 {
                    return Ok(true);
                }
            }
            if self.record > 0 {
                self.incoming.advance(self.record);
                self.record = 0;
                self.plain = (0, 0);
            }
            if out.remaining() == 0 || self.read_done {
                return Ok(true);
            }
            let len = match record_len(&self.incoming) {
                Ok(Some(len)) => len,
                Ok(None) => return Ok(delivered),
                Err(e) => {
                    layer.alert(&e, &mut self.outgoing);
                    return Err(tls_err(e));
                }
            };
            let opened = match layer.open(&mut self.incoming[..len], &mut self.outgoing) {
                Ok(o) => o,
                Err(e) => {
                    layer.alert(&e, &mut self.outgoing);
                    return Err(tls_err(e));
                }
            };
            match opened {
                Opened::Data(range) => {
                    self.plain = (range.start, range.end);
                    self.record = len;
                }
                Opened::Control => self.incoming.advance(len),
                Opened::Closed => {
                    self.incoming.advance(len);
                    self.read_done = true;
                    return Ok(true);
                }
            }
        }
    }

    /// Opens the records at `buf[start..]` (ciphertext just read, behind the plaintext `buf`
    /// holds) one after another, each one's plaintext written right behind the one before, so
    /// that `buf` ends with the new plaintext. A record cut off at the end is kept in `incoming`
    /// until the rest arrives. Gives the plaintext bytes added.
    fn open_appended(&mut self, buf: &mut BytesMut, start: usize) -> io::Result<usize> {
        let Tls::Records(layer) = &mut self.tls else {
            buf.truncate(start);
            return Err(io::Error::other("TLS connection not established"));
        };
        let (mut pos, mut end) = (start, start);
        let failed = loop {
            let len = match record_len(&buf[pos..]) {
                Ok(Some(len)) => len,
                Ok(None) => break None,
                Err(e) => break Some(e),
            };
            match layer.open_at(&mut buf[..], end, pos..pos + len, &mut self.outgoing) {
                Ok(Opened::Data(range)) => end = range.end,
                Ok(Opened::Control) => {}
                Ok(Opened::Closed) => {
                    // Nothing after close_notify is read.
                    self.read_done = true;
                    pos = buf.len();
                    break None;
                }
                Err(e) => break Some(e),
            }
            pos += len;
        };
        if let Some(e) = failed {
            layer.alert(&e, &mut self.outgoing);
            buf.truncate(start);
            return Err(tls_err(e));
        }
        self.incoming.extend_from_slice(&buf[pos..]);
        self.copied += (buf.len() - pos) as u64;
        buf.truncate(end);
        Ok(end - start)
    }

    /// Encrypts `data` at the end of the output buffer.
    fn seal(&mut self, typ: ContentType, data: &[u8]) -> io::Result<()> {
        let Tls::Records(layer) = &mut self.tls else {
            return Err(io::Error::other("TLS connection not established"));
        };
        self.outgoing.reserve(layer.sealed_len(data.len()));
        layer.seal(typ, data, &mut self.outgoing).map_err(tls_err)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin + 'static> ServerStream<S> {
    /// Writes the output buffer out; `Ready(Ok)` once it is empty.
    fn poll_send(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.out_start < self.outgoing.len() {
            let n =
                ready!(Pin::new(&mut self.io).poll_write(cx, &self.outgoing[self.out_start..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.out_start += n;
        }
        self.out_start = 0;
        self.outgoing.clear();
        Poll::Ready(Ok(()))
    }

    /// Sets SO_RCVLOWAT on a TCP socket for what the reader expects (see [`ServerStream::expect`]).
    fn set_low_water(&mut self) -> io::Result<()> {
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
        Ok(())
    }

    /// Lets go of a large output buffer while the connection waits with nothing to send.
    fn shrink_idle_output(&mut self) {
        if self.out_start == self.outgoing.len() && self.outgoing.capacity() > OUT_KEEP {
            self.outgoing = Vec::new();
            self.out_start = 0;
        }
    }

    /// Reads ciphertext from the socket into the buffer: `Ready(Ok(0))` at the end of the stream.
    fn poll_fill(&mut self, cx: &mut Context<'_>, plain: usize) -> Poll<io::Result<usize>> {
        let target = self.read_target(plain);
        self.set_low_water()?;
        if self.incoming.is_empty() && self.incoming.capacity() > 2 * target {
            // A large request went through: a waiting connection keeps a small buffer.
            self.incoming = BytesMut::new();
        }
        // At least 1 KiB more even when the front record is complete: rustls keeps the records
        // of a handshake message larger than one record until all of them are in.
        self.incoming
            .reserve(target.saturating_sub(self.incoming.len()).max(1024));
        let read = tokio_util::io::poll_read_buf(Pin::new(&mut self.io), cx, &mut self.incoming);
        if matches!(read, Poll::Ready(Ok(n)) if n > 0) {
            self.reads += 1;
        }
        read
    }

    /// Reads from the socket into `buf`'s spare room, after a gap as long as `incoming` (the front
    /// of a record the last read cut off), then moves `incoming` into the gap: the record comes
    /// together in `buf` with one copy of its front, and a read that finds nothing (`Pending`)
    /// copies nothing. `buf` must have room for more than `incoming`.
    fn poll_read_after(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut BytesMut,
    ) -> Poll<io::Result<usize>> {
        let gap = self.incoming.len();
        let spare = buf.spare_capacity_mut();
        let mut read = ReadBuf::uninit(&mut spare[gap..]);
        ready!(Pin::new(&mut self.io).poll_read(cx, &mut read))?;
        let n = read.filled().len();
        if n > 0 {
            self.reads += 1;
            // SAFETY: `spare` has room for `gap` bytes before what the read filled, and
            // `incoming` holds `gap` bytes; the two do not overlap (different allocations). Then
            // the `gap + n` bytes after the buffer's end are initialized: `gap` by this copy, `n`
            // by the read.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    self.incoming.as_ptr(),
                    spare.as_mut_ptr().cast::<u8>(),
                    gap,
                );
                buf.set_len(buf.len() + gap + n);
            }
            self.copied += gap as u64;
            self.incoming.clear();
            if self.incoming.capacity() > 2 * RECORD_MAX {
                // Left from reads through `AsyncRead`: only a cut-off record is kept here now.
                self.incoming = BytesMut::new();
            }
        }
        Poll::Ready(Ok(n))
    }

    /// Reads plaintext onto the end of `buf`; gives the bytes added, 0 at the end of the stream.
    /// Cancel safe.
    ///
    /// Unlike a read through [`AsyncRead`], the ciphertext is read straight into `buf` and each
    /// record is decrypted right behind the plaintext before it, so the plaintext is never
    /// copied; only a record cut in two by a read is copied (its front, kept here until the rest
    /// arrives). `buf` is given more room when it has too little for the next record; give it
    /// [`ServerStream::room_for`] the plaintext expected so that it need not grow.
    pub async fn read_into(&mut self, buf: &mut BytesMut) -> io::Result<usize> {
        poll_fn(|cx| self.poll_read_into(cx, buf)).await
    }

    fn poll_read_into(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut BytesMut,
    ) -> Poll<io::Result<usize>> {
        let start = buf.len();
        // What the handshake or a read through `AsyncRead` left decrypted: handed over first.
        if !self.leftover.is_empty() {
            buf.extend_from_slice(&self.leftover);
            self.copied += self.leftover.len() as u64;
            self.leftover.clear();
        }
        if self.plain.0 < self.plain.1 {
            buf.extend_from_slice(&self.incoming[self.plain.0..self.plain.1]);
            self.copied += (self.plain.1 - self.plain.0) as u64;
        }
        if self.record > 0 {
            self.incoming.advance(self.record);
            self.record = 0;
            self.plain = (0, 0);
        }
        if buf.len() > start {
            return Poll::Ready(Ok(buf.len() - start));
        }
        loop {
            if self.read_done {
                return Poll::Ready(if self.incoming.is_empty() {
                    Ok(0)
                } else {
                    Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "peer closed the stream in the middle of a TLS record",
                    ))
                });
            }
            if matches!(record_len(&self.incoming), Ok(None)) {
                // A KeyUpdate answer goes out without waiting for the next response.
                if let Poll::Ready(Err(e)) = self.poll_send(cx) {
                    return Poll::Ready(Err(e));
                }
                self.set_low_water()?;
                // Room for the whole record at the front (so more than what is kept of it).
                let least = self.read_target(0);
                if buf.capacity() - buf.len() < least {
                    buf.reserve(self.read_target(self.expected).max(least));
                }
                match self.poll_read_after(cx, buf) {
                    Poll::Ready(Ok(0)) => {
                        self.read_done = true;
                        continue;
                    }
                    Poll::Ready(Ok(_)) => {}
                    Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                    Poll::Pending => {
                        self.shrink_idle_output();
                        return Poll::Pending;
                    }
                }
            } else {
                // A whole record (or a bad header) is buffered already (left by reads through
                // `AsyncRead`): no read first.
                buf.extend_from_slice(&self.incoming);
                self.copied += self.incoming.len() as u64;
                self.incoming.clear();
            }
            match self.open_appended(buf, start) {
                Ok(0) => {}
                Ok(n) => return Poll::Ready(Ok(n)),
                Err(e) => {
                    let _ = self.poll_send(cx);
                    return Poll::Ready(Err(e));
                }
            }
        }
    }

    /// Runs the handshake to its end (the caller bounds it in time).
    pub(crate) async fn handshake(&mut self) -> io::Result<()> {
        loop {
            match self.handshake_step() {
                Ok(Done::Handshaken) => {
                    poll_fn(|cx| self.poll_send(cx)).await?;
                    return self.establish();
                }
                Ok(Done::NeedInput) => {
                    poll_fn(|cx| self.poll_send(cx)).await?;
                    if poll_fn(|cx| self.poll_fill(cx, 0)).await? == 0 {
                        return Err(io::Error::new(
                            io::ErrorKind::UnexpectedEof,
                            "peer closed during the TLS handshake",
                        ));
                    }
                }
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
        if self.outgoing.len() - self.out_start >= WRITE_CHUNK {
            ready!(self.poll_send(cx))?;
        }
        let take = data.len().min(WRITE_CHUNK);
        self.seal(ContentType::ApplicationData, &data[..take])?;
        // Accepted either way; what the socket does not take now goes with the next call.
        if let Poll::Ready(Err(e)) = self.poll_send(cx) {
            return Poll::Ready(Err(e));
        }
        Poll::Ready(Ok(take))
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
            this.copied += n as u64;
            this.leftover.advance(n);
            return Poll::Ready(Ok(()));
        }
        if out.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        loop {
            match this.read_records(out) {
                Ok(true) => return Poll::Ready(Ok(())),
                Ok(false) => {}
                Err(e) => {
                    let _ = this.poll_send(cx);
                    return Poll::Ready(Err(e));
                }
            }
            // A KeyUpdate answer goes out without waiting for the next response; if the socket
            // is full, its readiness wakes this task too.
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
                    this.shrink_idle_output();
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
            let _ = this.seal(ContentType::Alert, &[1, 0]);
        }
        ready!(this.poll_send(cx))?;
        Pin::new(&mut this.io).poll_shutdown(cx)
    }
}
