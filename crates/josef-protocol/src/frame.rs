//! Frames: a 4-byte big-endian length, then a header, then a body.
//!
//! These functions do no I/O. [`split_frame`] cuts a complete frame off the front of a read buffer
//! (checking the announced length against a maximum before waiting for the body); the decoders take
//! a frame without its length prefix; the encoders write the prefix, header and body into a buffer
//! reserved once at the exact size.

use crate::messages::api_versions_response::ApiVersion;
use crate::messages::ApiVersionsResponse;
use crate::{
    ApiKey, Decode, DecodeError, Encode, EncodeError, FrameChunks, FrameError, RequestBody,
    RequestHeader, ResponseBody, ResponseHeader,
};
use bytes::{Buf, BufMut, Bytes, BytesMut};

/// Cuts the next complete frame (without its length prefix) off the front of `buf`.
///
/// Returns `Ok(None)` when more bytes are needed. A length above `max_frame_size` or below zero is an
/// error as soon as the 4-byte prefix is there, before any of the body is buffered.
///
/// ```
/// use bytes::BytesMut;
/// use josef_protocol::{split_frame, FrameError};
/// let mut buf = BytesMut::from(&[0u8, 0, 0, 2, 7, 8, 9][..]);
/// assert_eq!(&split_frame(&mut buf, 1024).unwrap().unwrap()[..], &[7, 8]);
/// assert_eq!(&buf[..], &[9]);
/// let mut big = BytesMut::from(&[0x7fu8, 0, 0, 0][..]);
/// assert!(matches!(split_frame(&mut big, 1024), Err(FrameError::FrameTooLarge { .. })));
/// ```
pub fn split_frame(
    buf: &mut BytesMut,
    max_frame_size: usize,
) -> Result<Option<BytesMut>, FrameError> {
    let Some(size) = peek_frame_size(buf, max_frame_size)? else {
        return Ok(None);
    };
    if buf.len() < 4 + size {
        buf.reserve(4 + size - buf.len());
        return Ok(None);
    }
    buf.advance(4);
    Ok(Some(buf.split_to(size)))
}

/// Reads the length prefix at the front of `buf` without consuming it: `Ok(None)` if fewer than 4
/// bytes are there, an error if it is negative or above `max_frame_size`.
pub fn peek_frame_size(buf: &[u8], max_frame_size: usize) -> Result<Option<usize>, FrameError> {
    if buf.len() < 4 {
        return Ok(None);
    }
    let size = i32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
    if size < 0 {
        return Err(FrameError::NegativeLength(size));
    }
    let size = size as usize;
    if size > max_frame_size {
        return Err(FrameError::FrameTooLarge {
            size,
            max: max_frame_size,
        });
    }
    Ok(Some(size))
}

/// Reads the request header at the front of `frame`, choosing the header version from the api key
/// and version it starts with. Unknown api keys and unsupported versions are errors, but the header
/// of an unsupported version is still parsed (assuming flexible versions stay flexible) and returned
/// in [`FrameError::UnsupportedVersion`].
pub fn decode_request_header(frame: &mut Bytes) -> Result<(ApiKey, RequestHeader), FrameError> {
    if frame.len() < 8 {
        return Err(FrameError::MalformedHeader(DecodeError::Truncated {
            needed: 8,
            remaining: frame.len(),
        }));
    }
    let raw_key = i16::from_be_bytes([frame[0], frame[1]]);
    let version = i16::from_be_bytes([frame[2], frame[3]]);
    let Some(api_key) = ApiKey::from_i16(raw_key) else {
        let correlation_id = i32::from_be_bytes([frame[4], frame[5], frame[6], frame[7]]);
        return Err(FrameError::UnknownApiKey {
            api_key: raw_key,
            api_version: version,
            correlation_id,
        });
    };
    let header_version = api_key.request_header_version(version);
    let header =
        RequestHeader::decode(frame, header_version).map_err(FrameError::MalformedHeader)?;
    if !api_key.is_version_supported(version) {
        return Err(FrameError::UnsupportedVersion {
            api_key,
            header: Box::new(header),
        });
    }
    Ok((api_key, header))
}

/// Decodes a request frame (without its 4-byte length prefix) into its header and body.
///
/// Bytes after the body are ignored, as Kafka does. Strings, bytes and records in the result are
/// slices of `frame`.
///
/// ```
/// use bytes::{Bytes, BytesMut};
/// use josef_protocol::messages::MetadataRequest;
/// use josef_protocol::*;
/// let header = RequestHeader {
///     request_api_key: ApiKey::Metadata as i16,
///     request_api_version: 12,
///     correlation_id: 7,
///     client_id: Some("me".into()),
///     ..Default::default()
/// };
/// let body = RequestBody::Metadata(MetadataRequest { topics: None, ..Default::default() });
/// let mut buf = BytesMut::new();
/// encode_request_frame(&header, &body, &mut buf).unwrap();
/// let frame = buf.freeze().slice(4..); // drop the length prefix
/// let (h, b) = decode_request_frame(frame).unwrap();
/// assert_eq!((h, b), (header, body));
/// ```
pub fn decode_request_frame(mut frame: Bytes) -> Result<(RequestHeader, RequestBody), FrameError> {
    let (api_key, header) = decode_request_header(&mut frame)?;
    match RequestBody::decode(api_key, header.request_api_version, &mut frame) {
        Ok(body) => Ok((header, body)),
        Err(source) => Err(FrameError::MalformedBody {
            api_key,
            header: Box::new(header),
            source,
        }),
    }
}

/// Decodes a response frame (without its length prefix) of the request `api_key`/`version` that the
/// caller sent (responses do not name their API).
pub fn decode_response_frame(
    api_key: ApiKey,
    version: i16,
    mut frame: Bytes,
) -> Result<(ResponseHeader, ResponseBody), DecodeError> {
    let header = ResponseHeader::decode(&mut frame, api_key.response_header_version(version))?;
    let body = ResponseBody::decode(api_key, version, &mut frame)?;
    Ok((header, body))
}

fn write_frame(
    buf: &mut BytesMut,
    header_len: usize,
    body_len: usize,
    write: impl FnOnce(&mut BytesMut) -> Result<(), EncodeError>,
) -> Result<(), EncodeError> {
    let size = header_len + body_len;
    let size_i32 = i32::try_from(size).map_err(|_| EncodeError::TooLong {
        what: "frame",
        len: size,
    })?;
    let start = buf.len();
    buf.reserve(4 + size);
    buf.put_i32(size_i32);
    if let Err(e) = write(buf) {
        buf.truncate(start);
        return Err(e);
    }
    debug_assert_eq!(
        buf.len() - start,
        4 + size,
        "encoded_len disagrees with encode"
    );
    Ok(())
}

/// Writes a complete request frame: length prefix, request header (its version chosen from the api
/// key and version in `header`) and body.
pub fn encode_request_frame(
    header: &RequestHeader,
    body: &RequestBody,
    buf: &mut BytesMut,
) -> Result<(), EncodeError> {
    let api_key = body.api_key();
    if header.request_api_key != api_key as i16 {
        return Err(EncodeError::ApiKeyMismatch {
            expected: ApiKey::from_i16(header.request_api_key).unwrap_or(api_key),
            actual: api_key,
        });
    }
    let version = header.request_api_version;
    let header_version = api_key.request_header_version(version);
    let header_len = header.encoded_len(header_version)?;
    let body_len = body.encoded_len(version)?;
    write_frame(buf, header_len, body_len, |buf| {
        header.encode(buf, header_version)?;
        body.encode(buf, version)
    })
}

/// Writes a complete response frame: length prefix, response header of the right version (v0 for
/// ApiVersions) and body.
///
/// ```
/// use bytes::BytesMut;
/// use josef_protocol::*;
/// let body = ResponseBody::ApiVersions(api_versions_response());
/// let mut buf = BytesMut::new();
/// encode_response_frame(42, ApiKey::ApiVersions, 3, &body, &mut buf).unwrap();
/// assert_eq!(&buf[4..8], &42i32.to_be_bytes()); // header v0: just the correlation id
/// let (h, b) = decode_response_frame(ApiKey::ApiVersions, 3, buf.freeze().slice(4..)).unwrap();
/// assert_eq!(h.correlation_id, 42);
/// assert_eq!(b, body);
/// ```
pub fn encode_response_frame(
    correlation_id: i32,
    api_key: ApiKey,
    version: i16,
    body: &ResponseBody,
    buf: &mut BytesMut,
) -> Result<(), EncodeError> {
    let (header, header_version) = response_header(correlation_id, api_key, version, body)?;
    let header_len = header.encoded_len(header_version)?;
    let body_len = body.encoded_len(version)?;
    write_frame(buf, header_len, body_len, |buf| {
        header.encode(buf, header_version)?;
        body.encode(buf, version)
    })
}

/// The response header for `body` and its version (v0 for ApiVersions); an error if `body` is not
/// a response of `api_key`.
fn response_header(
    correlation_id: i32,
    api_key: ApiKey,
    version: i16,
    body: &ResponseBody,
) -> Result<(ResponseHeader, i16), EncodeError> {
    if body.api_key() != api_key {
        return Err(EncodeError::ApiKeyMismatch {
            expected: api_key,
            actual: body.api_key(),
        });
    }
    let header = ResponseHeader {
        correlation_id,
        ..Default::default()
    };
    Ok((header, api_key.response_header_version(version)))
}

/// Like [`encode_response_frame`], but into a new [`FrameChunks`]: `records` fields of at least
/// [`FrameChunks::SHARE_MIN`] bytes are referenced, not copied, so a FetchResponse of record data
/// read from the log can go out with one vectored write and no memcpy of its records.
///
/// ```
/// use bytes::Buf;
/// use josef_protocol::*;
/// let body = ResponseBody::ApiVersions(api_versions_response());
/// let mut flat = bytes::BytesMut::new();
/// encode_response_frame(7, ApiKey::ApiVersions, 3, &body, &mut flat).unwrap();
/// let mut chunks = encode_response_frame_chunks(7, ApiKey::ApiVersions, 3, &body).unwrap();
/// assert_eq!(chunks.copy_to_bytes(chunks.remaining()), flat.freeze());
/// ```
pub fn encode_response_frame_chunks(
    correlation_id: i32,
    api_key: ApiKey,
    version: i16,
    body: &ResponseBody,
) -> Result<FrameChunks, EncodeError> {
    let (header, header_version) = response_header(correlation_id, api_key, version, body)?;
    let size = header.encoded_len(header_version)? + body.encoded_len(version)?;
    let size_i32 = i32::try_from(size).map_err(|_| EncodeError::TooLong {
        what: "frame",
        len: size,
    })?;
    // The tail holds everything but shared records; a response that is mostly records needs
    // little of it, and one that is not grows it as it goes.
    let mut out = FrameChunks::with_capacity((4 + size).min(CHUNKS_TAIL_START));
    out.put_i32(size_i32);
    header.encode(&mut out, header_version)?;
    body.encode(&mut out, version)?;
    debug_assert_eq!(out.len(), 4 + size, "encoded_len disagrees with encode");
    Ok(out)
}

/// First reservation of a [`FrameChunks`] tail in [`encode_response_frame_chunks`].
const CHUNKS_TAIL_START: usize = 16 * 1024;

/// An ApiVersions response (error code 0) listing every API with the version range this crate
/// supports. A broker that implements fewer APIs filters `api_keys`; for a request whose version it
/// does not support it sets `error_code` to UNSUPPORTED_VERSION and answers at version 0.
pub fn api_versions_response() -> ApiVersionsResponse {
    ApiVersionsResponse {
        api_keys: ApiKey::ALL
            .iter()
            .map(|k| {
                let (min, max) = k.valid_versions();
                ApiVersion {
                    api_key: *k as i16,
                    min_version: min,
                    max_version: max,
                    ..Default::default()
                }
            })
            .collect(),
        ..Default::default()
    }
}
