//! Turning coordinator records into the key/value pairs stored in a Kafka log, and back.

use bytes::Bytes;

use crate::SerdeError;

/// Converts coordinator records to and from Kafka-format record key/value bytes, so a broker can
/// keep them in a real log (`__consumer_offsets`, `__transaction_state`) readable by Kafka tools.
///
/// A `None` value is a tombstone (the key's state is deleted).
///
/// ```
/// use bytes::Bytes;
/// use josef_coordinator::{RecordSerde, SerdeError};
///
/// struct Utf8;
/// impl RecordSerde<(String, Option<String>)> for Utf8 {
///     fn serialize(&self, r: &(String, Option<String>)) -> (Option<Bytes>, Option<Bytes>) {
///         (Some(Bytes::from(r.0.clone())), r.1.clone().map(Bytes::from))
///     }
///     fn deserialize(&self, key: &[u8], value: Option<&[u8]>) -> Result<(String, Option<String>), SerdeError> {
///         let s = |b: &[u8]| String::from_utf8(b.to_vec()).map_err(|e| SerdeError::Invalid(e.to_string()));
///         Ok((s(key)?, value.map(s).transpose()?))
///     }
/// }
///
/// let rec = ("k".to_string(), None);
/// let (k, v) = Utf8.serialize(&rec);
/// assert_eq!(Utf8.deserialize(&k.unwrap(), v.as_deref()).unwrap(), rec);
/// ```
pub trait RecordSerde<R> {
    /// Key and value bytes of `record`; a `None` value is a tombstone.
    fn serialize(&self, record: &R) -> (Option<Bytes>, Option<Bytes>);
    /// Rebuilds a record from a stored key and value (`None` = tombstone).
    fn deserialize(&self, key: &[u8], value: Option<&[u8]>) -> Result<R, SerdeError>;
}
