//! Kafka's metadata record serde: every record type round-trips at every version, and bad bytes fail
//! with a typed error (never a panic).

use bytes::{BufMut, Bytes, BytesMut};
use josef_metadata::{ClusterIdRecord, MetadataRecord, RecordDecodeError, FRAME_VERSION};
use josef_protocol::metadata_records::{PartitionRecord, TopicRecord};
use josef_protocol::{wire, DecodeError, Message, Uuid};
use proptest::prelude::*;

// Random values of every generated struct at every version, shared with josef-protocol's tests.
#[path = "../../josef-protocol/tests/generated/values.rs"]
mod values;

use values::Gen;

macro_rules! every_record {
    ($g:expr, $check:expr, $($variant:ident($ty:ident, $random:ident)),* $(,)?) => {{
        $(
            let v = <josef_protocol::metadata_records::$ty as Message>::VALID_VERSIONS;
            for version in v.min..=v.max {
                $check(MetadataRecord::$variant(values::$random($g, version)), version);
            }
        )*
    }};
}

fn round_trip(record: MetadataRecord, version: i16) {
    let mut buf = BytesMut::new();
    record.encode_at(version, &mut buf).unwrap();
    let (back, v) = MetadataRecord::decode_bytes(buf.freeze()).unwrap();
    assert_eq!(v, version);
    assert_eq!(back, record);
    if version == record.latest_version() {
        assert_eq!(
            MetadataRecord::decode(&record.encode().unwrap()).unwrap(),
            record
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn every_record_round_trips_at_every_version(seed in any::<u64>()) {
        let g = &mut Gen::new(seed);
        every_record!(g, round_trip,
            RegisterBroker(RegisterBrokerRecord, register_broker_record_register_broker_record),
            UnregisterBroker(UnregisterBrokerRecord, unregister_broker_record_unregister_broker_record),
            Topic(TopicRecord, topic_record_topic_record),
            Partition(PartitionRecord, partition_record_partition_record),
            Config(ConfigRecord, config_record_config_record),
            PartitionChange(PartitionChangeRecord, partition_change_record_partition_change_record),
            FenceBroker(FenceBrokerRecord, fence_broker_record_fence_broker_record),
            UnfenceBroker(UnfenceBrokerRecord, unfence_broker_record_unfence_broker_record),
            RemoveTopic(RemoveTopicRecord, remove_topic_record_remove_topic_record),
            DelegationToken(DelegationTokenRecord, delegation_token_record_delegation_token_record),
            UserScramCredential(UserScramCredentialRecord, user_scram_credential_record_user_scram_credential_record),
            FeatureLevel(FeatureLevelRecord, feature_level_record_feature_level_record),
            ClientQuota(ClientQuotaRecord, client_quota_record_client_quota_record),
            ProducerIds(ProducerIdsRecord, producer_ids_record_producer_ids_record),
            BrokerRegistrationChange(BrokerRegistrationChangeRecord, broker_registration_change_record_broker_registration_change_record),
            AccessControlEntry(AccessControlEntryRecord, access_control_entry_record_access_control_entry_record),
            RemoveAccessControlEntry(RemoveAccessControlEntryRecord, remove_access_control_entry_record_remove_access_control_entry_record),
            NoOp(NoOpRecord, no_op_record_no_op_record),
            ZkMigrationState(ZkMigrationStateRecord, zk_migration_state_record_zk_migration_state_record),
            RemoveUserScramCredential(RemoveUserScramCredentialRecord, remove_user_scram_credential_record_remove_user_scram_credential_record),
            BeginTransaction(BeginTransactionRecord, begin_transaction_record_begin_transaction_record),
            EndTransaction(EndTransactionRecord, end_transaction_record_end_transaction_record),
            AbortTransaction(AbortTransactionRecord, abort_transaction_record_abort_transaction_record),
            RemoveDelegationToken(RemoveDelegationTokenRecord, remove_delegation_token_record_remove_delegation_token_record),
            RegisterController(RegisterControllerRecord, register_controller_record_register_controller_record),
        );
    }

    #[test]
    fn the_cluster_id_record_round_trips(id in "[a-zA-Z0-9_-]{0,40}") {
        round_trip(ClusterIdRecord { cluster_id: id }.into(), 0);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let _ = MetadataRecord::decode(&bytes);
    }

    #[test]
    fn a_frame_header_before_arbitrary_bytes_never_panics(
        record_type in 0u8..30,
        version in 0u8..4,
        body in proptest::collection::vec(any::<u8>(), 0..128),
    ) {
        let mut bytes = vec![1, record_type, version];
        bytes.extend(body);
        let _ = MetadataRecord::decode(&bytes);
    }

    #[test]
    fn every_truncation_fails(seed in any::<u64>()) {
        let g = &mut Gen::new(seed);
        let record = MetadataRecord::Partition(values::partition_record_partition_record(g, 2));
        let bytes = record.encode().unwrap();
        for n in 0..bytes.len() {
            prop_assert!(MetadataRecord::decode(&bytes[..n]).is_err());
        }
    }
}

fn topic() -> MetadataRecord {
    TopicRecord {
        name: "t".into(),
        topic_id: Uuid::from_u128(3),
        ..Default::default()
    }
    .into()
}

#[test]
fn the_newest_version_is_written_by_default() {
    let p = MetadataRecord::Partition(PartitionRecord {
        partition_id: 0,
        ..Default::default()
    });
    assert_eq!(p.latest_version(), 2);
    assert_eq!(&p.encode().unwrap()[..3], &[FRAME_VERSION as u8, 3, 2]);
    let c = MetadataRecord::from(ClusterIdRecord {
        cluster_id: "abc".into(),
    });
    // 10000 as an unsigned varint is 0x90 0x4e.
    assert_eq!(&c.encode().unwrap()[..4], &[1, 0x90, 0x4e, 0]);
    assert_eq!(c.api_key(), 10000);
}

#[test]
fn frame_version_zero_is_refused() {
    let mut bytes = topic().encode().unwrap().to_vec();
    bytes[0] = 0;
    assert_eq!(
        MetadataRecord::decode(&bytes),
        Err(RecordDecodeError::UnsupportedFrameVersion(0))
    );
}

#[test]
fn an_unknown_record_type_is_refused() {
    assert_eq!(
        MetadataRecord::decode(&[1, 6, 0]),
        Err(RecordDecodeError::UnknownRecordType(6))
    );
}

#[test]
fn an_unknown_version_is_refused() {
    let mut bytes = topic().encode().unwrap().to_vec();
    bytes[2] = 1;
    assert_eq!(
        MetadataRecord::decode(&bytes),
        Err(RecordDecodeError::UnsupportedVersion {
            record_type: 2,
            version: 1
        })
    );
}

#[test]
fn a_header_value_above_i16_is_refused() {
    let mut buf = BytesMut::new();
    wire::put_uvarint(&mut buf, 1);
    wire::put_uvarint(&mut buf, 70_000);
    assert_eq!(
        MetadataRecord::decode(&buf),
        Err(RecordDecodeError::HeaderTooLarge {
            what: "record type",
            value: 70_000
        })
    );
}

#[test]
fn trailing_bytes_are_refused() {
    let mut bytes = topic().encode().unwrap().to_vec();
    bytes.push(0);
    assert_eq!(
        MetadataRecord::decode(&bytes),
        Err(RecordDecodeError::TrailingBytes(1))
    );
}

#[test]
fn a_huge_array_count_fails_without_allocating_it() {
    // PartitionRecord v0: partition id, topic id, then the replicas' compact array length.
    let mut buf = BytesMut::new();
    buf.put_slice(&[1, 3, 0]);
    buf.put_i32(0);
    buf.put_slice(&[0; 16]);
    wire::put_uvarint(&mut buf, u32::MAX >> 4);
    let err = MetadataRecord::decode_bytes(Bytes::from(buf)).unwrap_err();
    assert!(matches!(
        err,
        RecordDecodeError::Body {
            record_type: 3,
            version: 0,
            source: DecodeError::InvalidLength { .. }
        }
    ));
}

#[test]
fn encoding_at_a_missing_version_fails() {
    let mut buf = BytesMut::new();
    assert!(topic().encode_at(1, &mut buf).is_err());
    assert!(MetadataRecord::from(ClusterIdRecord::default())
        .encode_at(1, &mut buf)
        .is_err());
}

#[test]
fn the_bytes_are_kafkas_metadata_record_serde() {
    // TopicRecord v0: frame 1, type 2, version 0, compact string "ab", 16-byte uuid, no tagged fields.
    let mut want = vec![1, 2, 0, 3, b'a', b'b'];
    want.extend_from_slice(&[0; 15]);
    want.push(7);
    want.push(0);
    let t = MetadataRecord::from(TopicRecord {
        name: "ab".into(),
        topic_id: Uuid::from_u128(7),
        ..Default::default()
    });
    assert_eq!(t.encode().unwrap().to_vec(), want);

    // PartitionChangeRecord v2 with only Leader (tag 1) set: partition id, topic id, then one tagged
    // field (tag 1, size 4, int32).
    let c = MetadataRecord::from(josef_protocol::metadata_records::PartitionChangeRecord {
        partition_id: 1,
        topic_id: Uuid::from_u128(7),
        leader: 3,
        ..Default::default()
    });
    let mut want = vec![1, 5, 2, 0, 0, 0, 1];
    want.extend_from_slice(&[0; 15]);
    want.extend_from_slice(&[7, 1, 1, 4, 0, 0, 0, 3]);
    assert_eq!(c.encode().unwrap().to_vec(), want);
}
