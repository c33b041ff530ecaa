//! The v2 batch attributes word: codec, timestamp type, transactional, control, delete horizon.

use crate::RecordsError;

const COMPRESSION_MASK: i16 = 0x07;
const TIMESTAMP_TYPE_BIT: i16 = 0x08;
const TRANSACTIONAL_BIT: i16 = 0x10;
const CONTROL_BIT: i16 = 0x20;
const DELETE_HORIZON_BIT: i16 = 0x40;

/// Compression codec of a batch (attribute bits 0–2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum Compression {
    /// Records are stored as they are.
    #[default]
    None = 0,
    /// gzip (RFC 1952).
    Gzip = 1,
    /// Snappy, raw or in the xerial framing the Java client writes.
    Snappy = 2,
    /// LZ4 frame format.
    Lz4 = 3,
    /// Zstandard.
    Zstd = 4,
}

impl Compression {
    /// All codecs, in id order.
    pub const ALL: [Compression; 5] = [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ];

    /// The codec with this id (0–4), or [`RecordsError::UnknownCompression`].
    pub fn from_id(id: u8) -> Result<Compression, RecordsError> {
        Ok(match id {
            0 => Compression::None,
            1 => Compression::Gzip,
            2 => Compression::Snappy,
            3 => Compression::Lz4,
            4 => Compression::Zstd,
            other => return Err(RecordsError::UnknownCompression(other)),
        })
    }

    /// The id stored in the attribute bits.
    pub fn id(self) -> u8 {
        self as u8
    }

    /// Kafka's name for the codec (`none`, `gzip`, `snappy`, `lz4`, `zstd`), as used in
    /// `compression.type`.
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Snappy => "snappy",
            Compression::Lz4 => "lz4",
            Compression::Zstd => "zstd",
        }
    }
}

/// Where record timestamps come from (attribute bit 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum TimestampType {
    /// The producer's timestamps (bit clear).
    #[default]
    CreateTime,
    /// The broker's append time, stored as the batch max timestamp (bit set).
    LogAppendTime,
}

/// The attributes word of a v2 batch header.
///
/// ```
/// use josef_records::{Attributes, Compression, TimestampType};
/// let a = Attributes::default()
///     .with_compression(Compression::Zstd)
///     .with_transactional(true);
/// assert_eq!(a.compression().unwrap(), Compression::Zstd);
/// assert!(a.is_transactional());
/// assert!(!a.is_control());
/// assert_eq!(a.timestamp_type(), TimestampType::CreateTime);
/// assert_eq!(a.0, 0x14);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Attributes(pub i16);

impl Attributes {
    /// The codec; an error for the unused ids 5–7.
    pub fn compression(self) -> Result<Compression, RecordsError> {
        Compression::from_id((self.0 & COMPRESSION_MASK) as u8)
    }

    /// The raw codec id (0–7), without checking it names a codec.
    pub fn compression_id(self) -> u8 {
        (self.0 & COMPRESSION_MASK) as u8
    }

    /// The timestamp type.
    pub fn timestamp_type(self) -> TimestampType {
        if self.0 & TIMESTAMP_TYPE_BIT != 0 {
            TimestampType::LogAppendTime
        } else {
            TimestampType::CreateTime
        }
    }

    /// Whether the batch belongs to a transaction.
    pub fn is_transactional(self) -> bool {
        self.0 & TRANSACTIONAL_BIT != 0
    }

    /// Whether the batch holds control records (transaction markers).
    pub fn is_control(self) -> bool {
        self.0 & CONTROL_BIT != 0
    }

    /// Whether the base timestamp holds the delete horizon set by compaction (KIP-534).
    pub fn has_delete_horizon(self) -> bool {
        self.0 & DELETE_HORIZON_BIT != 0
    }

    fn with_bit(self, bit: i16, on: bool) -> Attributes {
        if on {
            Attributes(self.0 | bit)
        } else {
            Attributes(self.0 & !bit)
        }
    }

    /// A copy with the codec set.
    pub fn with_compression(self, c: Compression) -> Attributes {
        Attributes((self.0 & !COMPRESSION_MASK) | c.id() as i16)
    }

    /// A copy with the timestamp type set.
    pub fn with_timestamp_type(self, t: TimestampType) -> Attributes {
        self.with_bit(TIMESTAMP_TYPE_BIT, t == TimestampType::LogAppendTime)
    }

    /// A copy with the transactional bit set or cleared.
    pub fn with_transactional(self, on: bool) -> Attributes {
        self.with_bit(TRANSACTIONAL_BIT, on)
    }

    /// A copy with the control bit set or cleared.
    pub fn with_control(self, on: bool) -> Attributes {
        self.with_bit(CONTROL_BIT, on)
    }

    /// A copy with the delete-horizon bit set or cleared.
    pub fn with_delete_horizon(self, on: bool) -> Attributes {
        self.with_bit(DELETE_HORIZON_BIT, on)
    }

    /// Sets the codec in place.
    pub fn set_compression(&mut self, c: Compression) {
        *self = self.with_compression(c);
    }

    /// Sets the timestamp type in place.
    pub fn set_timestamp_type(&mut self, t: TimestampType) {
        *self = self.with_timestamp_type(t);
    }

    /// Sets the transactional bit in place.
    pub fn set_transactional(&mut self, on: bool) {
        *self = self.with_transactional(on);
    }

    /// Sets the control bit in place.
    pub fn set_control(&mut self, on: bool) {
        *self = self.with_control(on);
    }

    /// Sets the delete-horizon bit in place.
    pub fn set_delete_horizon(&mut self, on: bool) {
        *self = self.with_delete_horizon(on);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attribute_bits_match_kafka_layout() {
        let a = Attributes(0x7f);
        assert_eq!(a.compression_id(), 7);
        assert!(a.compression().is_err());
        assert_eq!(a.timestamp_type(), TimestampType::LogAppendTime);
        assert!(a.is_transactional() && a.is_control() && a.has_delete_horizon());
        let b = Attributes::default()
            .with_compression(Compression::Lz4)
            .with_timestamp_type(TimestampType::LogAppendTime)
            .with_control(true)
            .with_delete_horizon(true);
        assert_eq!(b.0, 3 | 0x08 | 0x20 | 0x40);
        assert_eq!(b.with_control(false).with_delete_horizon(false).0, 3 | 0x08);
    }

    #[test]
    fn compression_ids_round_trip() {
        for c in Compression::ALL {
            assert_eq!(Compression::from_id(c.id()).unwrap(), c);
        }
        assert_eq!(
            Compression::from_id(5),
            Err(RecordsError::UnknownCompression(5))
        );
    }
}
