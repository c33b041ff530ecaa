//! Errors of decoding, encoding and framing.

use crate::messages::RequestHeader;
use crate::ApiKey;

/// Why bytes could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The buffer ended before the value did.
    #[error("unexpected end of input: {needed} more bytes needed, {remaining} remaining")]
    Truncated {
        /// Bytes the value needs.
        needed: usize,
        /// Bytes left in the buffer.
        remaining: usize,
    },
    /// A length or count that is negative (other than -1 for null) or larger than what is left.
    #[error("invalid length or count {length} with {remaining} bytes remaining")]
    InvalidLength {
        /// The length read.
        length: i64,
        /// Bytes left in the buffer.
        remaining: usize,
    },
    /// A null in a field or version that does not allow one.
    #[error("null value for a non-nullable field")]
    UnexpectedNull,
    /// A string that is not valid UTF-8.
    #[error("string is not valid UTF-8")]
    InvalidUtf8,
    /// A varint longer than its type allows.
    #[error("varint is too long")]
    VarintTooLong,
    /// Tagged fields not in strictly increasing tag order.
    #[error("tagged field {tag} follows tagged field {previous}")]
    TaggedFieldOrder {
        /// The tag read.
        tag: u32,
        /// The tag before it.
        previous: u32,
    },
    /// A known tagged field whose value did not fill its declared size exactly.
    #[error("tagged field {field} has {remaining} unread bytes")]
    TaggedFieldSize {
        /// `Struct.Field` in the spec's spelling.
        field: &'static str,
        /// Bytes left over.
        remaining: usize,
    },
    /// The message does not exist in this version.
    #[error("{message} does not support version {version}")]
    UnsupportedVersion {
        /// The message's name.
        message: &'static str,
        /// The version asked for.
        version: i16,
    },
}

/// Why a value could not be encoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    /// The message does not exist in this version.
    #[error("{message} does not support version {version}")]
    UnsupportedVersion {
        /// The message's name.
        message: &'static str,
        /// The version asked for.
        version: i16,
    },
    /// A non-default value in a field that the version lacks and that is not ignorable.
    #[error(
        "{field} is not in version {version} and is not ignorable, but holds a non-default value"
    )]
    FieldNotInVersion {
        /// `Struct.Field` in the spec's spelling.
        field: &'static str,
        /// The version asked for.
        version: i16,
    },
    /// `None` in a field that is not nullable in this version.
    #[error("{field} is not nullable in version {version}")]
    NullValue {
        /// `Struct.Field` in the spec's spelling.
        field: &'static str,
        /// The version asked for.
        version: i16,
    },
    /// A string, byte string or array longer than its length prefix can express.
    #[error("{what} of length {len} is too long to encode")]
    TooLong {
        /// "string", "bytes", "array", "tagged field".
        what: &'static str,
        /// Its length.
        len: usize,
    },
    /// A `records` field given as a file slice could not be read (the file lost those bytes)
    /// by a buffer that copies it.
    #[error("records file slice unreadable: {kind}")]
    RecordsFileUnreadable {
        /// The read error's kind.
        kind: std::io::ErrorKind,
    },
    /// The body passed to a frame encoder does not belong to the api key passed with it.
    #[error("body of {actual:?} passed for api key {expected:?}")]
    ApiKeyMismatch {
        /// The api key given.
        expected: ApiKey,
        /// The body's api key.
        actual: ApiKey,
    },
}

/// Why a request or response frame could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FrameError {
    /// The length prefix announces more than the configured maximum (checked before reading the body).
    #[error("frame of {size} bytes exceeds the maximum of {max} bytes")]
    FrameTooLarge {
        /// Announced size.
        size: usize,
        /// Configured maximum.
        max: usize,
    },
    /// The length prefix is negative.
    #[error("negative frame length {0}")]
    NegativeLength(i32),
    /// The request header itself could not be read.
    #[error("malformed request header: {0}")]
    MalformedHeader(DecodeError),
    /// The api key is not one this crate knows; the connection should be closed.
    #[error("unknown api key {api_key} (version {api_version}, correlation id {correlation_id})")]
    UnknownApiKey {
        /// Api key read.
        api_key: i16,
        /// Api version read.
        api_version: i16,
        /// Correlation id read.
        correlation_id: i32,
    },
    /// The version is outside the API's supported range. The header was parsed (with the header version
    /// the request would have if it were supported), so a broker can answer, e.g. an ApiVersions v0
    /// response with UNSUPPORTED_VERSION.
    #[error("{api_key:?} does not support version {}", header.request_api_version)]
    UnsupportedVersion {
        /// The API.
        api_key: ApiKey,
        /// The parsed request header.
        header: Box<RequestHeader>,
    },
    /// The header was read but the body was malformed.
    #[error("malformed {api_key:?} v{} body: {source}", header.request_api_version)]
    MalformedBody {
        /// The API.
        api_key: ApiKey,
        /// The parsed request header.
        header: Box<RequestHeader>,
        /// What was wrong.
        source: DecodeError,
    },
}
