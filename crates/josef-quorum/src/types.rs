//! The openraft type config of the metadata log and the entry payload.

use base64::Engine as _;
use bytes::Bytes;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

openraft::declare_raft_types!(
    /// openraft's types for the metadata log: node ids are Kafka node ids, nodes carry the
    /// voter's `host:port`, a snapshot is its bytes in memory.
    pub(crate) TypeConfig:
        D = Batch,
        R = (),
        NodeId = u64,
        Node = openraft::BasicNode,
        Entry = openraft::Entry<TypeConfig>,
        SnapshotData = Vec<u8>,
        AsyncRuntime = openraft::TokioRuntime,
);

pub(crate) type Entry = openraft::Entry<TypeConfig>;
pub(crate) type LogId = openraft::LogId<u64>;
pub(crate) type Vote = openraft::Vote<u64>;
pub(crate) type StoredMembership = openraft::StoredMembership<u64, openraft::BasicNode>;
pub(crate) type SnapshotMeta = openraft::SnapshotMeta<u64, openraft::BasicNode>;
pub(crate) type Snapshot = openraft::Snapshot<TypeConfig>;
pub(crate) type StorageError = openraft::StorageError<u64>;

/// One entry's payload: the records of one controller write, opaque to this crate.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Batch(pub Vec<Bytes>);

impl Serialize for Batch {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let b64: Vec<String> = self
            .0
            .iter()
            .map(|b| base64::engine::general_purpose::STANDARD.encode(b))
            .collect();
        b64.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Batch {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let b64 = Vec::<String>::deserialize(d)?;
        let mut out = Vec::with_capacity(b64.len());
        for s in b64 {
            let v = base64::engine::general_purpose::STANDARD
                .decode(s.as_bytes())
                .map_err(serde::de::Error::custom)?;
            out.push(Bytes::from(v));
        }
        Ok(Batch(out))
    }
}

/// Bytes carried in JSON as one base64 string (snapshot data on the wire).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct B64(pub Vec<u8>);

impl Serialize for B64 {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(&self.0))
    }
}

impl<'de> Deserialize<'de> for B64 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        base64::engine::general_purpose::STANDARD
            .decode(s.as_bytes())
            .map(B64)
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_json_round_trip() {
        let b = Batch(vec![Bytes::from_static(b"\x00\x01abc"), Bytes::new()]);
        let j = serde_json::to_string(&b).unwrap();
        assert_eq!(serde_json::from_str::<Batch>(&j).unwrap(), b);
        assert!(serde_json::from_str::<Batch>("[\"!!\"]").is_err());
    }
}
