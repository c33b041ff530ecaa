//! Where encoders write: a contiguous [`BytesMut`], or [`FrameChunks`], which keeps large `records`
//! fields as references to their own `Bytes` instead of copying them.
//!
//! A FetchResponse is mostly record data that already sits in `Bytes` read from the log; copying it
//! into one response buffer costs a memcpy of every byte served. Kafka avoids that copy by sending
//! the records of a response as their own pieces (its `MultiRecordsSend`); [`FrameChunks`] is the
//! same idea for a vectored write (`writev`): small fields are appended to a tail buffer, records of
//! at least [`FrameChunks::SHARE_MIN`] bytes become a chunk of their own, and the whole thing is a
//! [`bytes::Buf`] whose `chunks_vectored` feeds `write_vectored`.
//!
//! Records can also stay in their file: a [`FileSlice`] piece (a range of a segment file, which
//! this crate knows only through the trait) is sent by a writer on a plain socket with
//! `sendfile`, page cache to socket, never copied in user space (Kafka's `FileRecords.writeTo`);
//! a writer that needs bytes (TLS, an in-memory pipe) reads it once
//! ([`FrameChunks::load_file_slices`]).

use std::collections::VecDeque;
use std::fmt::Debug;
use std::io::{self, IoSlice};
use std::sync::{Arc, OnceLock};

use bytes::buf::UninitSlice;
use bytes::{Buf, BufMut, Bytes, BytesMut};

use crate::EncodeError;

/// A buffer the generated encoders write into.
///
/// Everything is written through [`BufMut`] except `records` fields, which go through
/// [`EncodeBuf::put_shared`] so that a buffer that can keep a reference (instead of a copy) does.
pub trait EncodeBuf: BufMut {
    /// Appends `bytes`; the default copies them.
    #[inline]
    fn put_shared(&mut self, bytes: &Bytes) {
        self.put_slice(bytes);
    }

    /// Appends the bytes of a `records` field held as a file slice; the default reads them
    /// (one copy), a [`FrameChunks`] keeps the slice as a piece for `sendfile`.
    fn put_records_file(&mut self, file: &RecordsFile) -> Result<(), EncodeError> {
        let mut bytes = vec![0u8; file.0.len()];
        file.0
            .read_at(0, &mut bytes)
            .map_err(|e| EncodeError::RecordsFileUnreadable { kind: e.kind() })?;
        self.put_slice(&bytes);
        Ok(())
    }
}

/// A `records` field's bytes left in a file (a range of a segment file): what a broker puts in a
/// response's `*_file` sibling of a `records` field so the bytes go from the file to the socket
/// (`sendfile`) instead of through memory. Never produced by decoding. Two are equal when they
/// are the same slice.
#[derive(Debug, Clone)]
pub struct RecordsFile(pub Arc<dyn FileSlice>);

impl RecordsFile {
    /// Bytes in the slice.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the slice holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl PartialEq for RecordsFile {
    fn eq(&self, other: &RecordsFile) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl EncodeBuf for BytesMut {}

impl EncodeBuf for Vec<u8> {}

/// Bytes that stay in a file until written: a range of a segment file that a plaintext socket
/// gets with `sendfile` and anything else reads once. Implemented by the storage layer (this
/// crate does not know about files); a piece of a [`FrameChunks`].
pub trait FileSlice: Debug + Send + Sync {
    /// Bytes in the slice (fixed when it was made: never more are sent).
    fn len(&self) -> usize;

    /// Whether the slice holds no bytes.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Fills `dst` with the slice's bytes from `offset`; bytes no longer there (a file truncated
    /// since) are an error, never other bytes.
    fn read_at(&self, offset: usize, dst: &mut [u8]) -> io::Result<()>;

    /// Sends up to `len` bytes from `offset` to the socket `fd` (one `sendfile`), returning how
    /// many went; a full non-blocking socket is `WouldBlock`.
    #[cfg(unix)]
    fn send_to(&self, offset: usize, len: usize, fd: std::os::fd::RawFd) -> io::Result<usize>;
}

/// One piece of a [`FrameChunks`].
#[derive(Debug, Clone)]
enum Piece {
    /// Bytes in memory.
    Mem(Bytes),
    /// `start..end` of a file slice not sent yet.
    File(FilePiece),
}

#[derive(Debug, Clone)]
struct FilePiece {
    slice: Arc<dyn FileSlice>,
    start: usize,
    end: usize,
    /// The bytes `start..end`, read on first use as a [`Buf`] (a consumer that is not a
    /// `sendfile` writer); a failed read leaves it empty.
    loaded: OnceLock<Bytes>,
}

impl FilePiece {
    fn read(&self) -> io::Result<Bytes> {
        let mut buf = vec![0u8; self.end - self.start];
        self.slice.read_at(self.start, &mut buf)?;
        Ok(Bytes::from(buf))
    }

    fn bytes(&self) -> &[u8] {
        self.loaded.get_or_init(|| self.read().unwrap_or_default())
    }
}

impl Piece {
    fn len(&self) -> usize {
        match self {
            Piece::Mem(b) => b.len(),
            Piece::File(f) => f.end - f.start,
        }
    }

    fn bytes(&self) -> &[u8] {
        match self {
            Piece::Mem(b) => b,
            Piece::File(f) => f.bytes(),
        }
    }
}

/// What a writer finds at the front of a [`FrameChunks`] ([`FrameChunks::front_file_slice`]).
#[derive(Debug, Clone, Copy)]
pub struct FrontFileSlice<'a> {
    /// The slice.
    pub slice: &'a dyn FileSlice,
    /// Where in it the unsent bytes start.
    pub offset: usize,
    /// How many are unsent.
    pub len: usize,
}

/// An encoded byte sequence made of shared pieces: small fields copied into a tail buffer, large
/// `records` kept as the `Bytes` they came in, with no copy. It is a [`Buf`] (reading takes bytes
/// off the front), so it can be written with `write_vectored`, or appended to another one.
///
/// ```
/// use bytes::{Buf, Bytes};
/// use josef_protocol::{Encode, FrameChunks};
/// use josef_protocol::messages::{fetch_response, FetchResponse};
///
/// let records = Bytes::from(vec![7u8; 10_000]);
/// let response = FetchResponse {
///     responses: vec![fetch_response::FetchableTopicResponse {
///         topic: "t".into(),
///         partitions: vec![fetch_response::PartitionData {
///             records: Some(records.clone()),
///             ..Default::default()
///         }],
///         ..Default::default()
///     }],
///     ..Default::default()
/// };
/// let mut out = FrameChunks::new();
/// response.encode(&mut out, 4).unwrap();
/// assert_eq!(out.remaining(), response.encoded_len(4).unwrap());
/// // The records are a chunk of their own, pointing at the same memory.
/// assert!(out.chunks().any(|c| c.as_ptr() == records.as_ptr()));
/// // Flattened, it is byte for byte the contiguous encoding.
/// let mut flat = bytes::BytesMut::new();
/// response.encode(&mut flat, 4).unwrap();
/// assert_eq!(out.copy_to_bytes(flat.len()), flat.freeze());
/// ```
#[derive(Debug, Default, Clone)]
pub struct FrameChunks {
    /// Finished pieces, in order, before `tail`.
    done: VecDeque<Piece>,
    /// The piece being written into.
    tail: BytesMut,
    /// Bytes in `done`.
    done_len: usize,
}

impl FrameChunks {
    /// Records shorter than this are copied into the tail: a separate iovec costs more than a copy
    /// of a few hundred bytes.
    pub const SHARE_MIN: usize = 2048;

    /// An empty sequence.
    pub fn new() -> FrameChunks {
        FrameChunks::default()
    }

    /// An empty sequence whose tail has room for `capacity` bytes of small fields.
    pub fn with_capacity(capacity: usize) -> FrameChunks {
        FrameChunks {
            tail: BytesMut::with_capacity(capacity),
            ..FrameChunks::default()
        }
    }

    /// Bytes in the sequence.
    pub fn len(&self) -> usize {
        self.done_len + self.tail.len()
    }

    /// Whether the sequence holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The pieces, in order (the tail last, if it holds anything); a file slice is read into
    /// memory here on first use (a read failure yields an empty piece: check with
    /// [`FrameChunks::load_file_slices`] first where that matters).
    pub fn chunks(&self) -> impl Iterator<Item = &[u8]> {
        self.done
            .iter()
            .map(Piece::bytes)
            .chain((!self.tail.is_empty()).then_some(&self.tail[..]))
    }

    /// Appends a file slice as a piece of its own: a `sendfile` writer sends it from the file.
    pub fn put_file_slice(&mut self, slice: Arc<dyn FileSlice>) {
        let len = slice.len();
        if len == 0 {
            return;
        }
        self.seal_tail();
        self.done_len += len;
        self.done.push_back(Piece::File(FilePiece {
            slice,
            start: 0,
            end: len,
            loaded: OnceLock::new(),
        }));
    }

    /// File slices not sent nor read yet.
    pub fn file_slice_count(&self) -> usize {
        self.done
            .iter()
            .filter(|p| matches!(p, Piece::File(f) if f.loaded.get().is_none()))
            .count()
    }

    /// Reads every file slice into memory (the one copy of a writer that cannot `sendfile`: TLS,
    /// an in-memory pipe). A slice whose bytes are gone is an error: the frame cannot be sent
    /// whole.
    pub fn load_file_slices(&mut self) -> io::Result<()> {
        for piece in &mut self.done {
            if let Piece::File(f) = piece {
                let bytes = match f.loaded.take() {
                    Some(b) if b.len() == f.end - f.start => b,
                    _ => f.read()?,
                };
                *piece = Piece::Mem(bytes);
            }
        }
        Ok(())
    }

    /// The file slice at the front, if the next bytes to write are one not read into memory.
    pub fn front_file_slice(&self) -> Option<FrontFileSlice<'_>> {
        match self.done.front() {
            Some(Piece::File(f)) if f.loaded.get().is_none() => Some(FrontFileSlice {
                slice: &*f.slice,
                offset: f.start,
                len: f.end - f.start,
            }),
            _ => None,
        }
    }

    /// Like [`Buf::chunks_vectored`] but stops before the first file slice not in memory: the
    /// bytes a `writev` can take before a writer must `sendfile`.
    pub fn memory_chunks_vectored<'a>(&'a self, dst: &mut [IoSlice<'a>]) -> usize {
        let mut n = 0;
        for piece in &self.done {
            if n == dst.len() {
                return n;
            }
            match piece {
                Piece::Mem(b) => dst[n] = IoSlice::new(b),
                Piece::File(f) => match f.loaded.get() {
                    Some(b) => dst[n] = IoSlice::new(b),
                    None => return n,
                },
            }
            n += 1;
        }
        if n < dst.len() && !self.tail.is_empty() {
            dst[n] = IoSlice::new(&self.tail);
            n += 1;
        }
        n
    }

    /// Number of pieces (an upper bound of the iovecs a vectored write of it needs).
    pub fn chunk_count(&self) -> usize {
        self.done.len() + usize::from(!self.tail.is_empty())
    }

    /// Moves all of `other` to the end of `self`: its shared pieces are moved, not copied; a
    /// sequence that is only a small tail is copied into `self`'s tail, so that many small frames
    /// coalesce into one piece.
    pub fn append(&mut self, mut other: FrameChunks) {
        if other.done.is_empty() {
            if self.is_empty() {
                *self = other;
            } else {
                self.tail.extend_from_slice(&other.tail);
            }
            return;
        }
        // The other's leading small pieces (its header fields) join our tail.
        while let Some(Piece::Mem(front)) = other.done.front() {
            if front.len() >= Self::SHARE_MIN {
                break;
            }
            self.tail.extend_from_slice(front);
            other.done_len -= front.len();
            other.done.pop_front();
        }
        self.seal_tail();
        self.done_len += other.done_len;
        self.done.append(&mut other.done);
        if !other.tail.is_empty() {
            self.tail = other.tail;
        }
    }

    /// Drops every byte and shared piece, keeping the tail's allocation only if it is at most
    /// `keep_capacity` bytes.
    pub fn clear(&mut self, keep_capacity: usize) {
        self.done.clear();
        self.done_len = 0;
        if self.tail.capacity() > keep_capacity {
            self.tail = BytesMut::new();
        } else {
            self.tail.clear();
        }
    }

    /// Flattens into one contiguous buffer (copies the shared pieces).
    pub fn to_bytes(&self) -> Bytes {
        let mut out = BytesMut::with_capacity(self.len());
        for c in self.chunks() {
            out.extend_from_slice(c);
        }
        out.freeze()
    }

    fn seal_tail(&mut self) {
        if !self.tail.is_empty() {
            let piece = self.tail.split().freeze();
            self.done_len += piece.len();
            self.done.push_back(Piece::Mem(piece));
        }
    }
}

// SAFETY: every method delegates to the tail `BytesMut`, whose implementation upholds the
// contract; `done` is never written through this interface.
unsafe impl BufMut for FrameChunks {
    #[inline]
    fn remaining_mut(&self) -> usize {
        self.tail.remaining_mut()
    }

    #[inline]
    unsafe fn advance_mut(&mut self, cnt: usize) {
        // SAFETY: forwarded under the caller's guarantee.
        unsafe { self.tail.advance_mut(cnt) }
    }

    #[inline]
    fn chunk_mut(&mut self) -> &mut UninitSlice {
        self.tail.chunk_mut()
    }

    #[inline]
    fn put_slice(&mut self, src: &[u8]) {
        self.tail.extend_from_slice(src);
    }

    #[inline]
    fn put_u8(&mut self, n: u8) {
        self.tail.put_u8(n);
    }
}

impl EncodeBuf for FrameChunks {
    fn put_records_file(&mut self, file: &RecordsFile) -> Result<(), EncodeError> {
        self.put_file_slice(file.0.clone());
        Ok(())
    }

    #[inline]
    fn put_shared(&mut self, bytes: &Bytes) {
        if bytes.len() < Self::SHARE_MIN {
            self.tail.extend_from_slice(bytes);
        } else {
            self.seal_tail();
            self.done_len += bytes.len();
            self.done.push_back(Piece::Mem(bytes.clone()));
        }
    }
}

impl Buf for FrameChunks {
    fn remaining(&self) -> usize {
        self.len()
    }

    fn chunk(&self) -> &[u8] {
        match self.done.front() {
            Some(p) => p.bytes(),
            None => &self.tail,
        }
    }

    fn advance(&mut self, mut cnt: usize) {
        while cnt > 0 {
            let Some(front) = self.done.front_mut() else {
                self.tail.advance(cnt);
                return;
            };
            if cnt < front.len() {
                match front {
                    Piece::Mem(b) => b.advance(cnt),
                    Piece::File(f) => {
                        f.start += cnt;
                        if let Some(b) = f.loaded.get_mut() {
                            b.advance(cnt.min(b.len()));
                        }
                    }
                }
                self.done_len -= cnt;
                return;
            }
            cnt -= front.len();
            self.done_len -= front.len();
            self.done.pop_front();
        }
    }

    fn chunks_vectored<'a>(&'a self, dst: &mut [IoSlice<'a>]) -> usize {
        let mut n = 0;
        for c in self.chunks() {
            if n == dst.len() {
                break;
            }
            dst[n] = IoSlice::new(c);
            n += 1;
        }
        n
    }
}

impl From<FrameChunks> for Bytes {
    fn from(chunks: FrameChunks) -> Bytes {
        if chunks.done.is_empty() {
            chunks.tail.freeze()
        } else {
            chunks.to_bytes()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn big(byte: u8) -> Bytes {
        Bytes::from(vec![byte; FrameChunks::SHARE_MIN])
    }

    #[test]
    fn small_shared_bytes_are_copied_and_large_ones_kept_by_reference() {
        let mut c = FrameChunks::new();
        c.put_slice(b"ab");
        c.put_shared(&Bytes::from_static(b"small"));
        let large = big(1);
        c.put_shared(&large);
        c.put_slice(b"z");
        let pieces: Vec<&[u8]> = c.chunks().collect();
        assert_eq!(pieces.len(), 3);
        assert_eq!(pieces[0], b"absmall");
        assert_eq!(pieces[1].as_ptr(), large.as_ptr());
        assert_eq!(pieces[2], b"z");
        assert_eq!(c.len(), 7 + large.len() + 1);
    }

    #[test]
    fn reading_as_buf_yields_the_bytes_in_order_across_pieces() {
        let mut c = FrameChunks::new();
        c.put_slice(b"head");
        c.put_shared(&big(2));
        c.put_slice(b"tail");
        let mut expected = b"head".to_vec();
        expected.extend_from_slice(&big(2));
        expected.extend_from_slice(b"tail");
        assert_eq!(c.to_bytes(), expected);
        // Advance across a piece boundary, then read the rest.
        c.advance(3);
        assert_eq!(c.remaining(), expected.len() - 3);
        c.advance(FrameChunks::SHARE_MIN);
        assert_eq!(
            c.copy_to_bytes(c.remaining()),
            &expected[3 + FrameChunks::SHARE_MIN..]
        );
        assert!(c.is_empty());
    }

    #[test]
    fn chunks_vectored_fills_at_most_the_slots_given() {
        let mut c = FrameChunks::new();
        for i in 0..4 {
            c.put_slice(&[i]);
            c.put_shared(&big(i));
        }
        assert_eq!(c.chunk_count(), 8);
        let mut slots = [IoSlice::new(&[]); 3];
        assert_eq!(c.chunks_vectored(&mut slots), 3);
        assert_eq!(&*slots[0], &[0]);
        assert_eq!(slots[1].len(), FrameChunks::SHARE_MIN);
    }

    #[test]
    fn append_coalesces_small_frames_and_moves_shared_pieces() {
        let mut out = FrameChunks::new();
        let mut small = FrameChunks::new();
        small.put_slice(b"one");
        out.append(small);
        let mut small = FrameChunks::new();
        small.put_slice(b"two");
        out.append(small);
        assert_eq!(out.chunk_count(), 1, "small frames share one piece");
        let mut large = FrameChunks::new();
        large.put_slice(b"h");
        let records = big(9);
        large.put_shared(&records);
        large.put_slice(b"t");
        out.append(large);
        let pieces: Vec<&[u8]> = out.chunks().collect();
        assert_eq!(pieces[0], b"onetwoh");
        assert_eq!(pieces[1].as_ptr(), records.as_ptr());
        assert_eq!(pieces[2], b"t");
        out.clear(1024);
        assert!(out.is_empty());
    }

    /// A file slice over bytes in memory that counts what is copied out of it.
    #[derive(Debug)]
    struct CountedSlice {
        bytes: Vec<u8>,
        copied: std::sync::atomic::AtomicUsize,
        gone: bool,
    }

    impl CountedSlice {
        fn new(bytes: Vec<u8>) -> Arc<CountedSlice> {
            Arc::new(CountedSlice {
                bytes,
                copied: Default::default(),
                gone: false,
            })
        }

        fn copied(&self) -> usize {
            self.copied.load(std::sync::atomic::Ordering::Relaxed)
        }
    }

    impl FileSlice for CountedSlice {
        fn len(&self) -> usize {
            self.bytes.len()
        }

        fn read_at(&self, offset: usize, dst: &mut [u8]) -> io::Result<()> {
            if self.gone {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            dst.copy_from_slice(&self.bytes[offset..offset + dst.len()]);
            self.copied
                .fetch_add(dst.len(), std::sync::atomic::Ordering::Relaxed);
            Ok(())
        }

        #[cfg(unix)]
        fn send_to(&self, _: usize, _: usize, _: std::os::fd::RawFd) -> io::Result<usize> {
            Err(io::ErrorKind::Unsupported.into())
        }
    }

    #[test]
    fn a_file_slice_is_a_piece_of_its_own_that_a_sendfile_writer_finds_at_the_front() {
        let slice = CountedSlice::new((0..100u8).collect());
        let mut c = FrameChunks::new();
        c.put_slice(b"head");
        c.put_shared(&big(3));
        c.put_file_slice(slice.clone());
        c.put_slice(b"tail");
        assert_eq!(c.len(), 4 + FrameChunks::SHARE_MIN + 100 + 4);
        assert_eq!(c.file_slice_count(), 1);
        // A writev takes the memory before the slice, then the slice is at the front.
        let memory_run = |c: &FrameChunks| c.memory_chunks_vectored(&mut [IoSlice::new(&[]); 8]);
        assert_eq!(memory_run(&c), 2);
        c.advance(4 + FrameChunks::SHARE_MIN);
        let front = c.front_file_slice().unwrap();
        assert_eq!((front.offset, front.len), (0, 100));
        // Part of it sent: the rest is where it resumes.
        c.advance(30);
        let front = c.front_file_slice().unwrap();
        assert_eq!((front.offset, front.len), (30, 70));
        c.advance(70);
        assert!(c.front_file_slice().is_none());
        assert_eq!(memory_run(&c), 1);
        assert_eq!(c.copy_to_bytes(4), &b"tail"[..]);
        assert_eq!(
            slice.copied(),
            0,
            "nothing was copied out of the file slice"
        );
    }

    #[test]
    fn a_file_slice_read_as_a_buf_is_copied_once_and_yields_its_bytes() {
        let slice = CountedSlice::new((0..100u8).collect());
        let mut c = FrameChunks::new();
        c.put_slice(b"h");
        c.put_file_slice(slice.clone());
        let mut expected = b"h".to_vec();
        expected.extend(0..100u8);
        assert_eq!(c.to_bytes(), expected);
        assert_eq!(c.copy_to_bytes(c.remaining()), expected);
        assert_eq!(slice.copied(), 100);
    }

    #[test]
    fn load_file_slices_reads_each_once_and_reports_bytes_that_are_gone() {
        let slice = CountedSlice::new(vec![5; 50]);
        let mut c = FrameChunks::new();
        c.put_file_slice(slice.clone());
        c.advance(10);
        c.load_file_slices().unwrap();
        assert_eq!(c.file_slice_count(), 0);
        assert_eq!(c.to_bytes(), vec![5u8; 40]);
        assert_eq!(slice.copied(), 40);

        let gone = Arc::new(CountedSlice {
            bytes: vec![1; 10],
            copied: Default::default(),
            gone: true,
        });
        let mut c = FrameChunks::new();
        c.put_file_slice(gone);
        assert!(c.load_file_slices().is_err());
    }
}
