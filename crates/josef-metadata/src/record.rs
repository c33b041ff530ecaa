//! [`MetadataRecord`]: every record of the metadata log, and Kafka's metadata record serde.

use bytes::{Buf, Bytes, BytesMut};
use josef_protocol::metadata_records::*;
use josef_protocol::{wire, Decode, DecodeError, Encode, EncodeError, Message};

use crate::error::RecordDecodeError;

/// The frame version Kafka's metadata record serde writes and the only one it reads (version 0 was
/// KRaft's 2.8 preview and is refused).
pub const FRAME_VERSION: i16 = 1;

/// Josef's own record holding the cluster id (Kafka keeps it in `meta.properties` only).
///
/// Written once, in the bootstrap batch, with record type [`ClusterIdRecord::API_KEY`] (10000). Its body
/// (version 0) is laid out like a flexible metadata record: a compact string, then tagged fields.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ClusterIdRecord {
    /// The cluster id.
    pub cluster_id: String,
}

impl ClusterIdRecord {
    /// The record type of the cluster id record (not a Kafka record type).
    pub const API_KEY: i16 = 10000;
    /// Its only version.
    pub const VERSION: i16 = 0;

    fn encode_body(&self, buf: &mut BytesMut) -> Result<(), EncodeError> {
        wire::put_string(buf, &self.cluster_id, true)?;
        wire::put_uvarint(buf, 0);
        Ok(())
    }

    fn decode_body(buf: &mut Bytes) -> Result<Self, DecodeError> {
        let cluster_id = wire::get_string(buf, true)?.as_str().to_string();
        let count = wire::get_uvarint(buf)?;
        let mut last_tag = None;
        for _ in 0..count {
            wire::get_tagged_field(buf, &mut last_tag)?;
        }
        Ok(ClusterIdRecord { cluster_id })
    }
}

macro_rules! metadata_records {
    ($($variant:ident($ty:ident)),* $(,)?) => {
        /// One record of the metadata log: every Kafka metadata record type, plus Josef's
        /// [`ClusterIdRecord`].
        ///
        /// [`MetadataRecord::encode`] writes Kafka's metadata record serde (unsigned varints: frame
        /// version [`FRAME_VERSION`], record type, record version; then the body at that version), at
        /// the newest version of the record; [`MetadataRecord::decode`] reads it.
        ///
        /// ```
        /// use josef_metadata::MetadataRecord;
        /// use josef_protocol::metadata_records::TopicRecord;
        /// use josef_protocol::Uuid;
        ///
        /// let record = MetadataRecord::Topic(TopicRecord {
        ///     name: "orders".into(),
        ///     topic_id: Uuid::from_u128(7),
        ///     ..Default::default()
        /// });
        /// let bytes = record.encode().unwrap();
        /// assert_eq!(&bytes[..3], &[1, 2, 0]); // frame version 1, record type 2, version 0
        /// assert_eq!(MetadataRecord::decode(&bytes).unwrap(), record);
        /// assert!(MetadataRecord::decode(&bytes[..5]).is_err());
        /// ```
        #[derive(Debug, Clone, PartialEq)]
        pub enum MetadataRecord {
            $(
                #[doc = concat!("A `", stringify!($ty), "`.")]
                $variant($ty),
            )*
            /// Josef's cluster id record.
            ClusterId(ClusterIdRecord),
        }

        $(
            impl From<$ty> for MetadataRecord {
                fn from(r: $ty) -> Self {
                    MetadataRecord::$variant(r)
                }
            }
        )*

        impl From<ClusterIdRecord> for MetadataRecord {
            fn from(r: ClusterIdRecord) -> Self {
                MetadataRecord::ClusterId(r)
            }
        }

        impl MetadataRecord {
            /// The record type (api key) written in the frame.
            pub fn api_key(&self) -> i16 {
                match self {
                    $(MetadataRecord::$variant(_) => $ty::API_KEY,)*
                    MetadataRecord::ClusterId(_) => ClusterIdRecord::API_KEY,
                }
            }

            /// The newest version of this record type, the one [`MetadataRecord::encode`] writes.
            pub fn latest_version(&self) -> i16 {
                match self {
                    $(MetadataRecord::$variant(_) => <$ty as Message>::VALID_VERSIONS.max,)*
                    MetadataRecord::ClusterId(_) => ClusterIdRecord::VERSION,
                }
            }

            /// The versions of record type `api_key`, if it is one.
            pub fn versions_of(api_key: i16) -> Option<(i16, i16)> {
                match api_key {
                    $(k if k == $ty::API_KEY => {
                        let v = <$ty as Message>::VALID_VERSIONS;
                        Some((v.min, v.max))
                    })*
                    ClusterIdRecord::API_KEY => Some((ClusterIdRecord::VERSION, ClusterIdRecord::VERSION)),
                    _ => None,
                }
            }

            /// Appends the framed record at `version` to `buf`. Fails on a version the record type
            /// lacks or a value that version cannot hold.
            pub fn encode_at(&self, version: i16, buf: &mut BytesMut) -> Result<(), EncodeError> {
                let (lo, hi) = Self::versions_of(self.api_key()).unwrap_or((0, -1));
                if !(lo..=hi).contains(&version) {
                    return Err(EncodeError::UnsupportedVersion { message: self.type_name(), version });
                }
                wire::put_uvarint(buf, FRAME_VERSION as u32);
                wire::put_uvarint(buf, self.api_key() as u32);
                wire::put_uvarint(buf, version as u32);
                match self {
                    $(MetadataRecord::$variant(r) => r.encode(buf, version),)*
                    MetadataRecord::ClusterId(r) => r.encode_body(buf),
                }
            }

            /// The name of the record type (`TopicRecord`).
            pub fn type_name(&self) -> &'static str {
                match self {
                    $(MetadataRecord::$variant(_) => stringify!($ty),)*
                    MetadataRecord::ClusterId(_) => "ClusterIdRecord",
                }
            }

            fn decode_body(api_key: i16, version: i16, buf: &mut Bytes) -> Result<Self, DecodeError> {
                Ok(match api_key {
                    $(k if k == $ty::API_KEY => MetadataRecord::$variant($ty::decode(buf, version)?),)*
                    ClusterIdRecord::API_KEY => MetadataRecord::ClusterId(ClusterIdRecord::decode_body(buf)?),
                    // Unknown types are refused by the caller before the body is read.
                    _ => return Err(DecodeError::UnsupportedVersion { message: "MetadataRecord", version }),
                })
            }
        }
    };
}

metadata_records!(
    RegisterBroker(RegisterBrokerRecord),
    UnregisterBroker(UnregisterBrokerRecord),
    Topic(TopicRecord),
    Partition(PartitionRecord),
    Config(ConfigRecord),
    PartitionChange(PartitionChangeRecord),
    FenceBroker(FenceBrokerRecord),
    UnfenceBroker(UnfenceBrokerRecord),
    RemoveTopic(RemoveTopicRecord),
    DelegationToken(DelegationTokenRecord),
    UserScramCredential(UserScramCredentialRecord),
    FeatureLevel(FeatureLevelRecord),
    ClientQuota(ClientQuotaRecord),
    ProducerIds(ProducerIdsRecord),
    BrokerRegistrationChange(BrokerRegistrationChangeRecord),
    AccessControlEntry(AccessControlEntryRecord),
    RemoveAccessControlEntry(RemoveAccessControlEntryRecord),
    NoOp(NoOpRecord),
    ZkMigrationState(ZkMigrationStateRecord),
    RemoveUserScramCredential(RemoveUserScramCredentialRecord),
    BeginTransaction(BeginTransactionRecord),
    EndTransaction(EndTransactionRecord),
    AbortTransaction(AbortTransactionRecord),
    RemoveDelegationToken(RemoveDelegationTokenRecord),
    RegisterController(RegisterControllerRecord),
);

fn read_header(buf: &mut Bytes, what: &'static str) -> Result<i16, RecordDecodeError> {
    let value =
        wire::get_uvarint(buf).map_err(|source| RecordDecodeError::Header { what, source })?;
    i16::try_from(value).map_err(|_| RecordDecodeError::HeaderTooLarge { what, value })
}

impl MetadataRecord {
    /// The framed record at its newest version.
    pub fn encode(&self) -> Result<Bytes, EncodeError> {
        let mut buf = BytesMut::new();
        self.encode_at(self.latest_version(), &mut buf)?;
        Ok(buf.freeze())
    }

    /// Decodes one framed record that fills `bytes` (copied once into a shared buffer).
    pub fn decode(bytes: &[u8]) -> Result<Self, RecordDecodeError> {
        Self::decode_bytes(Bytes::copy_from_slice(bytes)).map(|(r, _)| r)
    }

    /// Decodes one framed record that fills `buf`, and the version it was written at. Strings and
    /// byte fields share `buf`'s storage. Lengths and counts are checked against what is left, so bad
    /// input fails with an error and never makes a large allocation.
    pub fn decode_bytes(mut buf: Bytes) -> Result<(Self, i16), RecordDecodeError> {
        let frame = read_header(&mut buf, "frame version")?;
        if frame != FRAME_VERSION {
            return Err(RecordDecodeError::UnsupportedFrameVersion(frame));
        }
        let record_type = read_header(&mut buf, "record type")?;
        let version = read_header(&mut buf, "record version")?;
        let (lo, hi) = Self::versions_of(record_type)
            .ok_or(RecordDecodeError::UnknownRecordType(record_type))?;
        if !(lo..=hi).contains(&version) {
            return Err(RecordDecodeError::UnsupportedVersion {
                record_type,
                version,
            });
        }
        let record = Self::decode_body(record_type, version, &mut buf).map_err(|source| {
            RecordDecodeError::Body {
                record_type,
                version,
                source,
            }
        })?;
        if buf.has_remaining() {
            return Err(RecordDecodeError::TrailingBytes(buf.remaining()));
        }
        Ok((record, version))
    }
}
