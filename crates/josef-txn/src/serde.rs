//! `__transaction_state` records in Kafka's format: key = `i16` record type 0 +
//! `TransactionLogKey` v0; value = `i16` version + `TransactionLogValue` (v0 at
//! `transaction.version` 0, v1 from 1, as Kafka's `TransactionLog.valueToBytes`); a tombstone
//! has no value.

use std::collections::BTreeSet;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use josef_coordinator::{RecordSerde, SerdeError};
use josef_protocol::coordinator_records::transaction_log_value::PartitionsSchema;
use josef_protocol::coordinator_records::{TransactionLogKey, TransactionLogValue};
use josef_protocol::{Decode, Encode, StrBytes};

use crate::{
    TopicPartition, TransactionVersion, TxnLogRecord, TxnLogValue, TxnState, NO_PRODUCER_EPOCH,
};

/// Record type id of transaction log keys (Kafka's `CoordinatorRecordType.TRANSACTION_LOG`).
pub const TRANSACTION_LOG_KEY_TYPE: i16 = 0;

/// Serialises [`TxnLogRecord`]s as Kafka does, so a `__transaction_state` partition written by
/// Josef reads like one written by Kafka, and the other way round.
///
/// Kafka does not persist `last_producer_epoch`; it reads back as −1.
///
/// ```
/// use josef_coordinator::RecordSerde;
/// use josef_txn::{TransactionVersion, TxnLogRecord, TxnRecordSerde};
///
/// let serde = TxnRecordSerde::new(TransactionVersion::V0);
/// let tombstone = TxnLogRecord { transactional_id: "t".into(), value: None };
/// let (key, value) = serde.serialize(&tombstone);
/// assert_eq!(value, None);
/// assert_eq!(serde.deserialize(&key.unwrap(), None).unwrap(), tombstone);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxnRecordSerde {
    value_version: i16,
}

impl TxnRecordSerde {
    /// A serde writing values the way a cluster at `transaction_version` does.
    pub fn new(transaction_version: TransactionVersion) -> Self {
        Self {
            value_version: transaction_version.transaction_log_value_version(),
        }
    }

    /// The value schema version written.
    pub fn value_version(&self) -> i16 {
        self.value_version
    }
}

fn to_wire(v: &TxnLogValue) -> TransactionLogValue {
    // Kafka writes no partition list (null) for Empty, else the partitions grouped by topic.
    let partitions = if v.state == TxnState::Empty {
        None
    } else {
        let mut out: Vec<PartitionsSchema> = Vec::new();
        for tp in &v.partitions {
            match out.last_mut() {
                Some(s) if s.topic.as_str() == tp.topic => s.partition_ids.push(tp.partition),
                _ => out.push(PartitionsSchema {
                    topic: StrBytes::from(tp.topic.as_str()),
                    partition_ids: josef_protocol::smallvec![tp.partition],
                    ..Default::default()
                }),
            }
        }
        Some(out)
    };
    TransactionLogValue {
        producer_id: v.producer_id,
        previous_producer_id: v.prev_producer_id,
        next_producer_id: v.next_producer_id,
        producer_epoch: v.producer_epoch,
        transaction_timeout_ms: v.txn_timeout_ms,
        transaction_status: v.state.id(),
        transaction_partitions: partitions,
        transaction_last_update_timestamp_ms: v.txn_last_update_timestamp,
        transaction_start_timestamp_ms: v.txn_start_timestamp,
        client_transaction_version: v.client_transaction_version.feature_level(),
        ..Default::default()
    }
}

fn from_wire(w: TransactionLogValue) -> Result<TxnLogValue, SerdeError> {
    let state = TxnState::from_id(w.transaction_status).ok_or_else(|| {
        SerdeError::Invalid(format!(
            "unknown transaction status {}",
            w.transaction_status
        ))
    })?;
    let mut partitions = BTreeSet::new();
    if state != TxnState::Empty {
        for s in w.transaction_partitions.unwrap_or_default() {
            for p in s.partition_ids {
                partitions.insert(TopicPartition::new(s.topic.to_string(), p));
            }
        }
    }
    Ok(TxnLogValue {
        producer_id: w.producer_id,
        prev_producer_id: w.previous_producer_id,
        next_producer_id: w.next_producer_id,
        producer_epoch: w.producer_epoch,
        last_producer_epoch: NO_PRODUCER_EPOCH,
        txn_timeout_ms: w.transaction_timeout_ms,
        state,
        partitions,
        txn_start_timestamp: w.transaction_start_timestamp_ms,
        txn_last_update_timestamp: w.transaction_last_update_timestamp_ms,
        client_transaction_version: TransactionVersion::from_feature_level(
            w.client_transaction_version,
        ),
    })
}

impl RecordSerde<TxnLogRecord> for TxnRecordSerde {
    fn serialize(&self, record: &TxnLogRecord) -> (Option<Bytes>, Option<Bytes>) {
        let mut key = BytesMut::new();
        key.put_i16(TRANSACTION_LOG_KEY_TYPE);
        let k = TransactionLogKey {
            transactional_id: StrBytes::from(record.transactional_id.as_str()),
        };
        // A key or value that cannot be encoded (a transactional id longer than i16::MAX bytes)
        // is written as what encoded; such ids are refused long before (client string limits).
        let _ = k.encode(&mut key, 0);
        let value = record.value.as_ref().map(|v| {
            let mut wire = to_wire(v);
            if self.value_version == 0 {
                // Version 0 has no tagged fields: Kafka only sets them from version 1 on.
                wire.previous_producer_id = -1;
                wire.next_producer_id = -1;
                wire.client_transaction_version = 0;
            }
            let mut buf = BytesMut::new();
            buf.put_i16(self.value_version);
            let _ = wire.encode(&mut buf, self.value_version);
            buf.freeze()
        });
        (Some(key.freeze()), value)
    }

    fn deserialize(&self, key: &[u8], value: Option<&[u8]>) -> Result<TxnLogRecord, SerdeError> {
        let mut k = Bytes::copy_from_slice(key);
        if k.remaining() < 2 {
            return Err(SerdeError::Truncated);
        }
        let key_version = k.get_i16();
        if key_version != TRANSACTION_LOG_KEY_TYPE {
            return Err(SerdeError::UnknownVersion {
                what: "key",
                version: key_version,
            });
        }
        let k =
            TransactionLogKey::decode(&mut k, 0).map_err(|e| SerdeError::Invalid(e.to_string()))?;
        let transactional_id = k.transactional_id.to_string();
        let Some(value) = value else {
            return Ok(TxnLogRecord {
                transactional_id,
                value: None,
            });
        };
        let mut v = Bytes::copy_from_slice(value);
        if v.remaining() < 2 {
            return Err(SerdeError::Truncated);
        }
        let version = v.get_i16();
        if !(0..=1).contains(&version) {
            return Err(SerdeError::UnknownVersion {
                what: "value",
                version,
            });
        }
        let w = TransactionLogValue::decode(&mut v, version)
            .map_err(|e| SerdeError::Invalid(e.to_string()))?;
        Ok(TxnLogRecord {
            transactional_id,
            value: Some(from_wire(w)?),
        })
    }
}
