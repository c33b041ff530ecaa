//! The Apache Kafka wire protocol: every API key and version, generated from Kafka's message specs.
//!
//! * [`messages`]: one module per request, response, header and data message
//!   (`messages::produce_request::{ProduceRequest, TopicProduceData, PartitionProduceData}`), each
//!   top-level message also re-exported (`messages::ProduceRequest`).
//! * [`coordinator_records`]: keys and values of the coordinators' log records.
//! * [`metadata_records`]: the records of the KRaft metadata log (`TopicRecord`, `PartitionRecord`, ...),
//!   each with its record type as `API_KEY`.
//! * [`ApiKey`], [`RequestBody`], [`ResponseBody`]: dispatch over all APIs.
//! * [`frame`]: request and response frames (length prefix, header, body), [`api_versions_response`].
//! * [`ErrorCode`]: every Kafka error code; [`error_response`]: a request's response with one error
//!   code everywhere.
//! * [`wire`]: the primitive encodings; [`constants`]: Kafka's sentinel values (`NO_PRODUCER_ID`, ...).
//! * [`view`]: borrowed views (`ProduceRequestView<'a>`, [`RequestBodyView`], ...) that decode from a
//!   `&[u8]` with the same checks as the owned decoders but without allocating.
//!
//! Every struct is `Debug + Clone + PartialEq + Default` with public fields named after the spec's
//! fields in snake_case (a Rust keyword gets a trailing underscore: `type_`). Strings are [`StrBytes`],
//! `bytes` are [`bytes::Bytes`], `records` are `Option<Bytes>`, nullable fields are `Option<T>`, arrays
//! of structs and strings (also those with a map key, whose order is kept) are `Vec<T>`, arrays of
//! fixed-size numbers are [`SmallVec`]s holding up to 16 bytes inline (`SmallVec<[i32; 4]>`,
//! `SmallVec<[i64; 2]>`: a replica list does not allocate; build one with [`smallvec!`] or
//! `.into()` from a `Vec`), uuids are [`Uuid`]. Structs with flexible versions keep tagged fields
//! they do not know in [`UnknownTaggedFields`] and write them back. Decoding slices the input
//! (`Bytes`) instead of copying strings, bytes and records.
//!
//! ```
//! use bytes::{Bytes, BytesMut};
//! use josef_protocol::messages::{produce_request::*, ProduceRequest};
//! use josef_protocol::{Decode, Encode};
//!
//! let request = ProduceRequest {
//!     acks: -1,
//!     timeout_ms: 30_000,
//!     topic_data: vec![TopicProduceData {
//!         name: "events".into(),
//!         partition_data: vec![PartitionProduceData {
//!             index: 0,
//!             records: Some(Bytes::from_static(b"...record batch...")),
//!             ..Default::default()
//!         }],
//!         ..Default::default()
//!     }],
//!     ..Default::default()
//! };
//! let mut buf = BytesMut::new();
//! request.encode(&mut buf, 9).unwrap();
//! assert_eq!(buf.len(), request.encoded_len(9).unwrap());
//! let decoded = ProduceRequest::decode(&mut buf.freeze(), 9).unwrap();
//! assert_eq!(decoded, request);
//! ```
#![deny(missing_docs)]

pub mod constants;
mod encode_buf;
mod error;
mod error_code;
pub mod error_response;
pub mod frame;
mod generated;
mod str_bytes;
mod unknown_tagged_fields;
mod uuid;
pub mod view;
pub mod wire;

#[cfg(feature = "tokio-codec")]
pub mod codec;

pub use encode_buf::{EncodeBuf, FileSlice, FrameChunks, FrontFileSlice, RecordsFile};
pub use error::{DecodeError, EncodeError, FrameError};
pub use error_code::ErrorCode;
pub use frame::{
    api_versions_response, decode_request_frame, decode_request_header, decode_response_frame,
    encode_request_frame, encode_response_frame, encode_response_frame_chunks, split_frame,
};
pub use generated::{
    coordinator_records, messages, metadata_records, ApiKey, RequestBody, RequestBodyView,
    ResponseBody, ResponseBodyView,
};
pub use messages::{RequestHeader, RequestHeaderView, ResponseHeader, ResponseHeaderView};
pub use smallvec::{smallvec, SmallVec};
pub use str_bytes::StrBytes;
pub use unknown_tagged_fields::UnknownTaggedFields;
pub use uuid::{ParseUuidError, Uuid};
pub use view::{ArrayView, DecodeView, MessageView, TaggedFieldsView};

use bytes::Bytes;

/// An inclusive range of versions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct VersionRange {
    /// Lowest version.
    pub min: i16,
    /// Highest version.
    pub max: i16,
}

impl VersionRange {
    /// Whether `version` lies in the range.
    pub const fn contains(&self, version: i16) -> bool {
        self.min <= version && version <= self.max
    }
}

/// A value that can be read from the wire at a given version.
pub trait Decode: Sized {
    /// Reads `Self` from the front of `buf`, advancing it. Strings, bytes and records come out as
    /// slices of `buf`'s storage.
    fn decode(buf: &mut Bytes, version: i16) -> Result<Self, DecodeError>;
}

/// A value that can be written to the wire at a given version.
pub trait Encode {
    /// Appends `self` at `version` to `buf` (a `BytesMut`, or a [`FrameChunks`] that keeps large
    /// `records` fields by reference). Fails on a version the message lacks, on a non-default value
    /// in a non-ignorable field the version lacks, and on a null in a non-nullable version.
    fn encode<B: EncodeBuf>(&self, buf: &mut B, version: i16) -> Result<(), EncodeError>;
    /// The exact number of bytes [`Encode::encode`] writes at `version` (fails only on a version the
    /// message lacks; the field checks happen in `encode`).
    fn encoded_len(&self, version: i16) -> Result<usize, EncodeError>;
}

/// A top-level message (request, response, header or data) with its versions.
pub trait Message: Decode + Encode + Default + Clone + PartialEq + std::fmt::Debug {
    /// The versions the message exists in.
    const VALID_VERSIONS: VersionRange;
    /// The first flexible version (flexible versions are open-ended), if any.
    const FLEXIBLE_VERSIONS: Option<i16>;
    /// The versions Kafka marks deprecated, if any.
    const DEPRECATED_VERSIONS: Option<VersionRange>;
    /// Its borrowed view (see [`view`]).
    type View<'a>: DecodeView<'a> + MessageView<Owned = Self> + Copy + std::fmt::Debug;

    /// Whether `version` is flexible (compact strings and arrays, tagged fields).
    fn is_flexible(version: i16) -> bool {
        matches!(Self::FLEXIBLE_VERSIONS, Some(v) if version >= v)
    }
}

/// A request message.
pub trait Request: Message {
    /// Its API.
    const API_KEY: ApiKey;
    /// The matching response message.
    type Response: Response;
}

/// A response message.
pub trait Response: Message {
    /// Its API.
    const API_KEY: ApiKey;
    /// The matching request message.
    type Request: Request;
}

impl ApiKey {
    /// Whether this code supports `version` of the API.
    pub const fn is_version_supported(self, version: i16) -> bool {
        let (min, max) = self.valid_versions();
        min <= version && version <= max
    }

    /// Whether `version` of the API is flexible.
    pub const fn is_flexible(self, version: i16) -> bool {
        match self.first_flexible_version() {
            Some(v) => version >= v,
            None => false,
        }
    }

    /// The request header version for `version` of the API: 2 when flexible, 0 for ControlledShutdown
    /// v0, else 1.
    pub const fn request_header_version(self, version: i16) -> i16 {
        if self.is_flexible(version) {
            2
        } else if matches!(self, ApiKey::ControlledShutdown) && version == 0 {
            0
        } else {
            1
        }
    }

    /// The response header version for `version` of the API: 1 when flexible, except ApiVersions,
    /// which always uses 0 (a client must be able to read it before it knows the broker's versions).
    pub const fn response_header_version(self, version: i16) -> i16 {
        if self.is_flexible(version) && !matches!(self, ApiKey::ApiVersions) {
            1
        } else {
            0
        }
    }
}

impl TryFrom<i16> for ApiKey {
    type Error = i16;
    fn try_from(key: i16) -> Result<ApiKey, i16> {
        ApiKey::from_i16(key).ok_or(key)
    }
}

impl From<ApiKey> for i16 {
    fn from(key: ApiKey) -> i16 {
        key as i16
    }
}
