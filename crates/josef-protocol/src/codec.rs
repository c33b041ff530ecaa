//! A length-prefixed frame codec for `tokio_util::codec` (feature `tokio-codec`).
//!
//! [`FrameCodec`] yields each frame without its 4-byte length prefix (ready for
//! [`decode_request_frame`](crate::decode_request_frame)), refusing a frame whose announced length is
//! above the configured maximum as soon as the prefix arrives, before buffering its body. As an
//! encoder it writes a payload with its length prefix.

use crate::frame::split_frame;
use crate::FrameError;
use bytes::{BufMut, Bytes, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

/// Default maximum frame size: 100 MiB, Kafka's `socket.request.max.bytes` default.
pub const DEFAULT_MAX_FRAME_SIZE: usize = 100 * 1024 * 1024;

/// Errors of [`FrameCodec`].
#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    /// The socket failed.
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
    /// The length prefix was negative or too large.
    #[error(transparent)]
    Frame(#[from] FrameError),
}

/// Splits a byte stream into Kafka frames and writes frames with their length prefix.
///
/// ```
/// use bytes::BytesMut;
/// use josef_protocol::codec::FrameCodec;
/// use tokio_util::codec::Decoder;
/// let mut codec = FrameCodec::new(1024);
/// let mut buf = BytesMut::from(&[0u8, 0, 0, 3, 1, 2][..]);
/// assert!(codec.decode(&mut buf).unwrap().is_none()); // body incomplete
/// buf.extend_from_slice(&[3]);
/// assert_eq!(&codec.decode(&mut buf).unwrap().unwrap()[..], &[1, 2, 3]);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct FrameCodec {
    max_frame_size: usize,
}

impl FrameCodec {
    /// A codec refusing frames above `max_frame_size` bytes (prefix excluded).
    pub fn new(max_frame_size: usize) -> FrameCodec {
        FrameCodec { max_frame_size }
    }

    /// The configured maximum.
    pub fn max_frame_size(&self) -> usize {
        self.max_frame_size
    }
}

impl Default for FrameCodec {
    fn default() -> FrameCodec {
        FrameCodec::new(DEFAULT_MAX_FRAME_SIZE)
    }
}

impl Decoder for FrameCodec {
    type Item = Bytes;
    type Error = CodecError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Bytes>, CodecError> {
        Ok(split_frame(src, self.max_frame_size)?.map(BytesMut::freeze))
    }
}

impl Encoder<Bytes> for FrameCodec {
    type Error = CodecError;

    /// Writes `payload` (a header and body, without prefix) after its 4-byte length.
    fn encode(&mut self, payload: Bytes, dst: &mut BytesMut) -> Result<(), CodecError> {
        if payload.len() > self.max_frame_size {
            return Err(FrameError::FrameTooLarge {
                size: payload.len(),
                max: self.max_frame_size,
            }
            .into());
        }
        dst.reserve(4 + payload.len());
        dst.put_u32(payload.len() as u32);
        dst.put_slice(&payload);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oversized_frame_is_refused_before_its_body_arrives() {
        let mut codec = FrameCodec::new(10);
        let mut buf = BytesMut::from(&[0u8, 0, 0, 11][..]);
        assert!(matches!(
            codec.decode(&mut buf),
            Err(CodecError::Frame(FrameError::FrameTooLarge {
                size: 11,
                max: 10
            }))
        ));
    }

    #[test]
    fn negative_length_is_refused() {
        let mut codec = FrameCodec::new(10);
        let mut buf = BytesMut::from(&[0xffu8, 0xff, 0xff, 0xff][..]);
        assert!(matches!(
            codec.decode(&mut buf),
            Err(CodecError::Frame(FrameError::NegativeLength(-1)))
        ));
    }

    #[test]
    fn encoder_and_decoder_agree() {
        let mut codec = FrameCodec::default();
        let mut buf = BytesMut::new();
        codec.encode(Bytes::from_static(b"abc"), &mut buf).unwrap();
        codec.encode(Bytes::from_static(b"de"), &mut buf).unwrap();
        assert_eq!(
            codec.decode(&mut buf).unwrap().unwrap(),
            Bytes::from_static(b"abc")
        );
        assert_eq!(
            codec.decode(&mut buf).unwrap().unwrap(),
            Bytes::from_static(b"de")
        );
        assert!(codec.decode(&mut buf).unwrap().is_none());
    }
}
