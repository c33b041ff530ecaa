//! Compressing and decompressing record payloads with Kafka's four codecs, bounded in memory.
//!
//! What the clients write and what Kafka reads:
//! - **gzip**: RFC 1952 members; Java's `GZIPInputStream` reads concatenated members, so do we.
//! - **snappy**: the Java producer writes snappy-java's *xerial* framing (`\x82SNAPPY\0`, two
//!   big-endian version ints, then `[int32 length][raw snappy block]`…); librdkafka writes one raw
//!   snappy block. Kafka reads with `SnappyInputStream`, which falls back to raw snappy when the
//!   xerial magic is absent, and librdkafka, kafka-python and kafkajs read both as well. We read
//!   both and write raw by default ([`SnappyFraming`]), like librdkafka.
//! - **lz4**: the LZ4 *frame* format with independent 64 KiB blocks and no checksums, as Kafka's
//!   `Lz4BlockOutputStream` writes (Kafka cannot read linked blocks). Reading accepts any frame.
//!   Legacy magic-0 messages carry a header checksum Kafka computed over the wrong bytes; the
//!   legacy reader repairs it before decoding ([`decompress_lz4_legacy_v0`]).
//! - **zstd**: standard zstd frames, decoded as a stream.
//!
//! Decompression never holds more than [`DecompressLimits::max_decompressed_bytes`] of output
//! (plus the codec's own fixed-size block buffers): a batch that inflates past the limit is
//! [`RecordsError::DecompressedTooLarge`].

use std::io::{Read, Write};

use crate::{Compression, RecordsError};

/// Bounds on decompression, so that a small compressed batch cannot make us allocate without limit.
///
/// ```
/// use josef_records::DecompressLimits;
/// let limits = DecompressLimits::new(16 << 20);
/// assert_eq!(limits.max_decompressed_bytes, 16 << 20);
/// assert_eq!(DecompressLimits::default().max_decompressed_bytes, 64 << 20);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecompressLimits {
    /// Largest decompressed size accepted for one batch (or one legacy wrapper message).
    pub max_decompressed_bytes: usize,
}

impl DecompressLimits {
    /// Limits with this many decompressed bytes at most.
    pub const fn new(max_decompressed_bytes: usize) -> Self {
        DecompressLimits {
            max_decompressed_bytes,
        }
    }
}

impl Default for DecompressLimits {
    /// 64 MiB: far above Kafka's default `message.max.bytes` (1 MiB) times any realistic ratio.
    fn default() -> Self {
        DecompressLimits::new(64 << 20)
    }
}

/// How snappy output is framed when compressing. Both are always accepted when reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SnappyFraming {
    /// One raw snappy block, as librdkafka writes.
    #[default]
    Raw,
    /// snappy-java's xerial stream framing, as the Java producer writes.
    Xerial,
}

/// Codec settings used when compressing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CompressionOptions {
    /// Codec level (gzip 0–9, lz4 ignored, zstd 1–22); `None` is the codec's default
    /// (gzip 6, zstd 3, like Kafka's defaults).
    pub level: Option<i32>,
    /// Framing of snappy output.
    pub snappy_framing: SnappyFraming,
}

const XERIAL_MAGIC: [u8; 8] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];
const XERIAL_HEADER_LEN: usize = 16;
const XERIAL_BLOCK: usize = 32 * 1024;

fn codec_err(codec: Compression, e: impl std::fmt::Display) -> RecordsError {
    RecordsError::Compression {
        codec,
        reason: e.to_string(),
    }
}

/// Compresses `input` with `codec`, appending to `out`.
pub fn compress_into(
    codec: Compression,
    input: &[u8],
    opts: &CompressionOptions,
    out: &mut Vec<u8>,
) -> Result<(), RecordsError> {
    match codec {
        Compression::None => out.extend_from_slice(input),
        Compression::Gzip => {
            let level = opts.level.unwrap_or(6).clamp(0, 9) as u32;
            let mut enc =
                flate2::write::GzEncoder::new(std::mem::take(out), flate2::Compression::new(level));
            enc.write_all(input).map_err(|e| codec_err(codec, e))?;
            *out = enc.finish().map_err(|e| codec_err(codec, e))?;
        }
        Compression::Snappy => match opts.snappy_framing {
            SnappyFraming::Raw => snappy_raw_into(input, out)?,
            SnappyFraming::Xerial => {
                out.extend_from_slice(&XERIAL_MAGIC);
                out.extend_from_slice(&1i32.to_be_bytes());
                out.extend_from_slice(&1i32.to_be_bytes());
                for chunk in input.chunks(XERIAL_BLOCK) {
                    let len_at = out.len();
                    out.extend_from_slice(&[0; 4]);
                    snappy_raw_into(chunk, out)?;
                    let n = (out.len() - len_at - 4) as i32;
                    out[len_at..len_at + 4].copy_from_slice(&n.to_be_bytes());
                }
            }
        },
        Compression::Lz4 => {
            let info = lz4_flex::frame::FrameInfo::new()
                .block_size(lz4_flex::frame::BlockSize::Max64KB)
                .block_mode(lz4_flex::frame::BlockMode::Independent);
            let mut enc = lz4_flex::frame::FrameEncoder::with_frame_info(info, std::mem::take(out));
            enc.write_all(input).map_err(|e| codec_err(codec, e))?;
            *out = enc.finish().map_err(|e| codec_err(codec, e))?;
        }
        Compression::Zstd => {
            let level = opts.level.unwrap_or(3);
            let mut enc = zstd::stream::write::Encoder::new(std::mem::take(out), level)
                .map_err(|e| codec_err(codec, e))?;
            enc.write_all(input).map_err(|e| codec_err(codec, e))?;
            *out = enc.finish().map_err(|e| codec_err(codec, e))?;
        }
    }
    Ok(())
}

fn snappy_raw_into(input: &[u8], out: &mut Vec<u8>) -> Result<(), RecordsError> {
    let start = out.len();
    out.resize(start + snap::raw::max_compress_len(input.len()), 0);
    let n = snap::raw::Encoder::new()
        .compress(input, &mut out[start..])
        .map_err(|e| codec_err(Compression::Snappy, e))?;
    out.truncate(start + n);
    Ok(())
}

/// Compresses `input` with `codec` into a new buffer.
pub fn compress(
    codec: Compression,
    input: &[u8],
    opts: &CompressionOptions,
) -> Result<Vec<u8>, RecordsError> {
    let mut out = Vec::with_capacity(input.len() / 2 + 64);
    compress_into(codec, input, opts, &mut out)?;
    Ok(out)
}

/// Decompresses `input` with `codec`, failing with [`RecordsError::DecompressedTooLarge`] instead
/// of producing more than `limits.max_decompressed_bytes`.
///
/// ```
/// use josef_records::{compress, decompress, Compression, CompressionOptions, DecompressLimits};
/// let data = vec![7u8; 10_000];
/// for codec in Compression::ALL {
///     let z = compress(codec, &data, &CompressionOptions::default()).unwrap();
///     assert_eq!(decompress(codec, &z, &DecompressLimits::default()).unwrap(), data);
///     assert!(decompress(codec, &z, &DecompressLimits::new(9_999)).is_err());
/// }
/// ```
pub fn decompress(
    codec: Compression,
    input: &[u8],
    limits: &DecompressLimits,
) -> Result<Vec<u8>, RecordsError> {
    let limit = limits.max_decompressed_bytes;
    match codec {
        Compression::None => {
            if input.len() > limit {
                return Err(RecordsError::DecompressedTooLarge { limit });
            }
            Ok(input.to_vec())
        }
        Compression::Gzip => read_bounded(
            flate2::read::MultiGzDecoder::new(input),
            input.len(),
            limit,
            codec,
        ),
        Compression::Snappy => decompress_snappy(input, limit),
        Compression::Lz4 => read_bounded(
            lz4_flex::frame::FrameDecoder::new(input),
            input.len(),
            limit,
            codec,
        ),
        Compression::Zstd => {
            let dec =
                zstd::stream::read::Decoder::with_buffer(input).map_err(|e| codec_err(codec, e))?;
            read_bounded(dec, input.len(), limit, codec)
        }
    }
}

/// Reads a decoder to its end, holding at most `limit + 1` bytes of output.
fn read_bounded<R: Read>(
    reader: R,
    input_len: usize,
    limit: usize,
    codec: Compression,
) -> Result<Vec<u8>, RecordsError> {
    // A first guess of 4x the input, never more than the limit; `read_to_end` grows from there.
    let mut out = Vec::with_capacity(input_len.saturating_mul(4).min(limit).max(64));
    let cap = (limit as u64).saturating_add(1);
    reader
        .take(cap)
        .read_to_end(&mut out)
        .map_err(|e| codec_err(codec, e))?;
    if out.len() > limit {
        return Err(RecordsError::DecompressedTooLarge { limit });
    }
    Ok(out)
}

fn decompress_snappy(input: &[u8], limit: usize) -> Result<Vec<u8>, RecordsError> {
    let codec = Compression::Snappy;
    if input.len() >= XERIAL_HEADER_LEN && input[..8] == XERIAL_MAGIC {
        let mut out = Vec::new();
        let mut pos = XERIAL_HEADER_LEN;
        while pos < input.len() {
            let Some(len_bytes) = input.get(pos..pos + 4) else {
                return Err(codec_err(codec, "xerial block length cut short"));
            };
            let n = i32::from_be_bytes([len_bytes[0], len_bytes[1], len_bytes[2], len_bytes[3]]);
            pos += 4;
            if n < 0 || n as usize > input.len() - pos {
                return Err(codec_err(codec, "xerial block length out of range"));
            }
            let block = &input[pos..pos + n as usize];
            pos += n as usize;
            snappy_raw_block(block, limit, &mut out)?;
        }
        Ok(out)
    } else {
        let mut out = Vec::new();
        snappy_raw_block(input, limit, &mut out)?;
        Ok(out)
    }
}

/// Decodes one raw snappy block onto `out`, checking its declared length against the limit
/// before allocating for it.
fn snappy_raw_block(block: &[u8], limit: usize, out: &mut Vec<u8>) -> Result<(), RecordsError> {
    let codec = Compression::Snappy;
    let n = snap::raw::decompress_len(block).map_err(|e| codec_err(codec, e))?;
    if n > limit - out.len() {
        return Err(RecordsError::DecompressedTooLarge { limit });
    }
    let start = out.len();
    out.resize(start + n, 0);
    let written = snap::raw::Decoder::new()
        .decompress(block, &mut out[start..])
        .map_err(|e| codec_err(codec, e))?;
    out.truncate(start + written);
    Ok(())
}

/// Decompresses LZ4 from a legacy magic-0 message: Kafka before 0.10 computed the frame header
/// checksum over the magic number too (`KafkaLZ4BlockOutputStream`, "broken" flag descriptor
/// checksum), so the checksum byte is recomputed before decoding, as Kafka ignores it for magic 0.
pub fn decompress_lz4_legacy_v0(
    input: &[u8],
    limits: &DecompressLimits,
) -> Result<Vec<u8>, RecordsError> {
    const LZ4_MAGIC: [u8; 4] = [0x04, 0x22, 0x4d, 0x18];
    if input.len() < 7 || input[..4] != LZ4_MAGIC {
        return decompress(Compression::Lz4, input, limits);
    }
    let flg = input[4];
    let mut desc_len = 2;
    if flg & 0x08 != 0 {
        desc_len += 8;
    }
    if flg & 0x01 != 0 {
        desc_len += 4;
    }
    let hc_at = 4 + desc_len;
    if input.len() <= hc_at {
        return decompress(Compression::Lz4, input, limits);
    }
    let mut fixed = input.to_vec();
    fixed[hc_at] = (crate::xxh32::xxh32(&input[4..hc_at], 0) >> 8) as u8;
    decompress(Compression::Lz4, &fixed, limits)
}

/// Overwrites the header checksum of an lz4 frame with the one Kafka's magic-0 writer computed
/// (over the magic number and the descriptor instead of the descriptor alone), so that a magic-0
/// wrapper is byte-for-byte what Kafka sends old clients. Readers repair it
/// ([`decompress_lz4_legacy_v0`]; librdkafka and kafka-python do the same for magic 0).
pub(crate) fn break_lz4_header_checksum_v0(frame: &mut [u8]) {
    const LZ4_MAGIC: [u8; 4] = [0x04, 0x22, 0x4d, 0x18];
    if frame.len() < 7 || frame[..4] != LZ4_MAGIC {
        return;
    }
    let mut desc_len = 2;
    if frame[4] & 0x08 != 0 {
        desc_len += 8;
    }
    if frame[4] & 0x01 != 0 {
        desc_len += 4;
    }
    let hc_at = 4 + desc_len;
    if frame.len() > hc_at {
        frame[hc_at] = (crate::xxh32::xxh32(&frame[..hc_at], 0) >> 8) as u8;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snappy_reads_raw_and_xerial() {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        for framing in [SnappyFraming::Raw, SnappyFraming::Xerial] {
            let opts = CompressionOptions {
                snappy_framing: framing,
                ..Default::default()
            };
            let z = compress(Compression::Snappy, &data, &opts).unwrap();
            assert_eq!(
                z.starts_with(&XERIAL_MAGIC),
                framing == SnappyFraming::Xerial
            );
            let back = decompress(Compression::Snappy, &z, &DecompressLimits::default()).unwrap();
            assert_eq!(back, data);
        }
    }

    #[test]
    fn decompression_past_limit_is_decompressed_too_large() {
        let data = vec![0u8; 1 << 20];
        for codec in Compression::ALL {
            let z = compress(codec, &data, &CompressionOptions::default()).unwrap();
            let err = decompress(codec, &z, &DecompressLimits::new(1000)).unwrap_err();
            assert_eq!(
                err,
                RecordsError::DecompressedTooLarge { limit: 1000 },
                "{codec:?}"
            );
            assert_eq!(
                decompress(codec, &z, &DecompressLimits::new(1 << 20))
                    .unwrap()
                    .len(),
                1 << 20
            );
        }
    }

    #[test]
    fn lz4_writes_independent_64k_blocks_without_checksums() {
        let z = compress(Compression::Lz4, b"hello", &CompressionOptions::default()).unwrap();
        assert_eq!(&z[..4], &[0x04, 0x22, 0x4d, 0x18]);
        // FLG: version 01, block independence, no block/content checksum, no content size.
        assert_eq!(z[4], 0x60);
        // BD: 64 KiB blocks.
        assert_eq!(z[5], 0x40);
    }

    #[test]
    fn lz4_broken_v0_header_checksum_is_repaired() {
        let data = b"legacy lz4 payload legacy lz4 payload".to_vec();
        let mut z = compress(Compression::Lz4, &data, &CompressionOptions::default()).unwrap();
        // Kafka's old writer hashed magic + descriptor.
        z[6] = (crate::xxh32::xxh32(&z[0..6], 0) >> 8) as u8;
        assert!(decompress(Compression::Lz4, &z, &DecompressLimits::default()).is_err());
        let back = decompress_lz4_legacy_v0(&z, &DecompressLimits::default()).unwrap();
        assert_eq!(back, data);
    }

    #[test]
    fn garbage_is_a_compression_error_for_every_codec() {
        for codec in [
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            let err = decompress(
                codec,
                &[1, 2, 3, 4, 5, 6, 7, 8, 9],
                &DecompressLimits::default(),
            )
            .unwrap_err();
            assert!(
                matches!(err, RecordsError::Compression { .. }),
                "{codec:?}: {err:?}"
            );
        }
    }
}
