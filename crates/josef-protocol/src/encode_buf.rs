//! Where encoders write: a contiguous [`BytesMut`], or [`FrameChunks`], which keeps large `records`
//! fields as references to their own `Bytes` instead of copying them.
//!
//! A FetchResponse is mostly record data that already sits in `Bytes` read from the log; copying it
//! into one response buffer costs a memcpy of every byte served. Kafka avoids that copy by sending
//! the records of a response as their own pieces (its `MultiRecordsSend`); [`FrameChunks`] is the
//! same idea for a vectored write (`writev`): small fields are appended to a tail buffer, records of
//! at least [`FrameChunks::SHARE_MIN`] bytes become a chunk of their own, and the whole thing is a
//! [`bytes::Buf`] whose `chunks_vectored` feeds `write_vectored`.

use std::collections::VecDeque;
use std::io::IoSlice;

use bytes::buf::UninitSlice;
use bytes::{Buf, BufMut, Bytes, BytesMut};

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
}

impl EncodeBuf for BytesMut {}

impl EncodeBuf for Vec<u8> {}

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
    done: VecDeque<Bytes>,
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

    /// The pieces, in order (the tail last, if it holds anything).
    pub fn chunks(&self) -> impl Iterator<Item = &[u8]> {
        self.done
            .iter()
            .map(|b| &b[..])
            .chain((!self.tail.is_empty()).then_some(&self.tail[..]))
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
        while let Some(front) = other.done.front() {
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
            self.done.push_back(piece);
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
    #[inline]
    fn put_shared(&mut self, bytes: &Bytes) {
        if bytes.len() < Self::SHARE_MIN {
            self.tail.extend_from_slice(bytes);
        } else {
            self.seal_tail();
            self.done_len += bytes.len();
            self.done.push_back(bytes.clone());
        }
    }
}

impl Buf for FrameChunks {
    fn remaining(&self) -> usize {
        self.len()
    }

    fn chunk(&self) -> &[u8] {
        match self.done.front() {
            Some(b) => b,
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
                front.advance(cnt);
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
}
