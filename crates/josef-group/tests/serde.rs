//! `__consumer_offsets` key/value bytes: byte-exact against hand-built Kafka layouts, old value
//! versions readable, round trips, and no panic on garbage.

use bytes::{BufMut, Bytes, BytesMut};
use josef_coordinator::{RecordSerde, SerdeError};
use josef_group::record::*;
use josef_group::serde::GroupRecordSerde;
use proptest::prelude::*;

fn put_str(b: &mut BytesMut, s: &str) {
    b.put_i16(s.len() as i16);
    b.put_slice(s.as_bytes());
}

fn put_bytes(b: &mut BytesMut, s: &[u8]) {
    b.put_i32(s.len() as i32);
    b.put_slice(s);
}

fn offset_record(expire: Option<i64>) -> GroupRecord {
    GroupRecord::OffsetCommit {
        key: OffsetKey {
            group: "grp".into(),
            topic: "tp".into(),
            partition: 7,
        },
        value: Some(OffsetValue {
            offset: 1234,
            leader_epoch: 5,
            metadata: "md".into(),
            commit_timestamp: 99,
            expire_timestamp: expire,
        }),
    }
}

fn group_record() -> GroupRecord {
    GroupRecord::GroupMetadata {
        group: "grp".into(),
        value: Some(GroupMetadata {
            protocol_type: "consumer".into(),
            generation: 3,
            protocol: Some("range".into()),
            leader: Some("m1".into()),
            current_state_timestamp: 42,
            members: vec![MemberMetadata {
                member_id: "m1".into(),
                group_instance_id: Some("i1".into()),
                client_id: "c".into(),
                client_host: "/h".into(),
                rebalance_timeout_ms: 30_000,
                session_timeout_ms: 10_000,
                subscription: Bytes::from_static(b"sub"),
                assignment: Bytes::from_static(b"as"),
            }],
        }),
    }
}

#[test]
fn offset_commit_key_v1_and_value_v3_are_kafkas_bytes() {
    let (k, v) = GroupRecordSerde::default().serialize(&offset_record(None));
    let mut key = BytesMut::new();
    key.put_i16(1);
    put_str(&mut key, "grp");
    put_str(&mut key, "tp");
    key.put_i32(7);
    assert_eq!(k.unwrap(), key.freeze());
    let mut val = BytesMut::new();
    val.put_i16(3);
    val.put_i64(1234);
    val.put_i32(5);
    put_str(&mut val, "md");
    val.put_i64(99);
    assert_eq!(v.unwrap(), val.freeze());
}

#[test]
fn offset_commit_with_expire_timestamp_is_value_v1() {
    let (_, v) = GroupRecordSerde::default().serialize(&offset_record(Some(500)));
    let mut val = BytesMut::new();
    val.put_i16(1);
    val.put_i64(1234);
    put_str(&mut val, "md");
    val.put_i64(99);
    val.put_i64(500);
    assert_eq!(v.unwrap(), val.freeze());
}

#[test]
fn group_metadata_key_v2_and_value_v3_are_kafkas_bytes() {
    let (k, v) = GroupRecordSerde::default().serialize(&group_record());
    let mut key = BytesMut::new();
    key.put_i16(2);
    put_str(&mut key, "grp");
    assert_eq!(k.unwrap(), key.freeze());
    let mut val = BytesMut::new();
    val.put_i16(3);
    put_str(&mut val, "consumer");
    val.put_i32(3);
    put_str(&mut val, "range");
    put_str(&mut val, "m1");
    val.put_i64(42);
    val.put_i32(1);
    put_str(&mut val, "m1");
    put_str(&mut val, "i1");
    put_str(&mut val, "c");
    put_str(&mut val, "/h");
    val.put_i32(30_000);
    val.put_i32(10_000);
    put_bytes(&mut val, b"sub");
    put_bytes(&mut val, b"as");
    assert_eq!(v.unwrap(), val.freeze());
}

#[test]
fn tombstones_have_null_values() {
    let serde = GroupRecordSerde::default();
    for r in [
        GroupRecord::GroupMetadata {
            group: "g".into(),
            value: None,
        },
        GroupRecord::OffsetCommit {
            key: OffsetKey {
                group: "g".into(),
                topic: "t".into(),
                partition: 0,
            },
            value: None,
        },
    ] {
        let (k, v) = serde.serialize(&r);
        assert!(v.is_none());
        assert_eq!(serde.deserialize(&k.unwrap(), None).unwrap(), r);
    }
}

#[test]
fn old_value_versions_written_by_older_brokers_are_read() {
    let serde = GroupRecordSerde::default();
    let (k, _) = serde.serialize(&offset_record(None));
    // OffsetCommitValue v0: offset, metadata, commit timestamp.
    let mut v0 = BytesMut::new();
    v0.put_i16(0);
    v0.put_i64(77);
    put_str(&mut v0, "x");
    v0.put_i64(5);
    let GroupRecord::OffsetCommit { value: Some(v), .. } =
        serde.deserialize(&k.unwrap(), Some(&v0)).unwrap()
    else {
        panic!()
    };
    assert_eq!(
        (
            v.offset,
            v.leader_epoch,
            v.metadata.as_str(),
            v.expire_timestamp
        ),
        (77, -1, "x", None)
    );
    // GroupMetadataValue v0: no rebalance timeout, state timestamp or instance ids.
    let (k, _) = serde.serialize(&group_record());
    let mut g0 = BytesMut::new();
    g0.put_i16(0);
    put_str(&mut g0, "consumer");
    g0.put_i32(1);
    put_str(&mut g0, "range");
    put_str(&mut g0, "m");
    g0.put_i32(1);
    put_str(&mut g0, "m");
    put_str(&mut g0, "c");
    put_str(&mut g0, "/h");
    g0.put_i32(6000);
    put_bytes(&mut g0, b"s");
    put_bytes(&mut g0, b"a");
    let GroupRecord::GroupMetadata { value: Some(g), .. } =
        serde.deserialize(&k.unwrap(), Some(&g0)).unwrap()
    else {
        panic!()
    };
    assert_eq!(g.members[0].rebalance_timeout_ms, -1);
    assert_eq!(g.members[0].session_timeout_ms, 6000);
    assert_eq!(g.current_state_timestamp, -1);
    // The key version 0 of offset commits is read too.
    let mut k0 = BytesMut::new();
    k0.put_i16(0);
    put_str(&mut k0, "g");
    put_str(&mut k0, "t");
    k0.put_i32(1);
    assert!(matches!(
        serde.deserialize(&k0, None).unwrap(),
        GroupRecord::OffsetCommit { .. }
    ));
}

#[test]
fn unknown_key_versions_and_garbage_are_errors() {
    let serde = GroupRecordSerde::default();
    let mut k = BytesMut::new();
    k.put_i16(16); // ConsumerGroupRegularExpressionKey: not hosted here
    put_str(&mut k, "g");
    assert!(matches!(
        serde.deserialize(&k, None),
        Err(SerdeError::UnknownVersion {
            what: "key",
            version: 16
        })
    ));
    // A consumer group record with a value version this crate does not know.
    let mut k3 = BytesMut::new();
    k3.put_i16(3);
    put_str(&mut k3, "g");
    assert!(matches!(
        serde.deserialize(&k3, Some(&[0, 1, 0, 0, 0, 1, 0])),
        Err(SerdeError::UnknownVersion {
            what: "value",
            version: 1
        })
    ));
    assert!(matches!(
        serde.deserialize(&[0], None),
        Err(SerdeError::Truncated)
    ));
    assert!(serde.deserialize(&[0, 1, 0, 9], None).is_err());
}

fn record_strategy() -> impl Strategy<Value = GroupRecord> {
    let offset = (
        "[a-z]{1,8}",
        "[a-z]{1,8}",
        any::<i32>(),
        prop::option::of((
            any::<i64>(),
            any::<i32>(),
            "[ -~]{0,20}",
            any::<i64>(),
            prop::option::of(0i64..i64::MAX),
        )),
    )
        .prop_map(|(group, topic, partition, v)| GroupRecord::OffsetCommit {
            key: OffsetKey {
                group,
                topic,
                partition,
            },
            value: v.map(|(offset, le, metadata, ts, expire)| OffsetValue {
                offset,
                // value v1 has no leader epoch
                leader_epoch: if expire.is_some() { -1 } else { le },
                metadata,
                commit_timestamp: ts,
                expire_timestamp: expire,
            }),
        });
    let member = (
        "[a-z0-9-]{1,12}",
        prop::option::of("[a-z]{1,5}"),
        any::<i32>(),
        any::<i32>(),
        prop::collection::vec(any::<u8>(), 0..12),
    )
        .prop_map(|(id, iid, rt, st, bytes)| MemberMetadata {
            member_id: id,
            group_instance_id: iid,
            client_id: "c".into(),
            client_host: "/h".into(),
            rebalance_timeout_ms: rt,
            session_timeout_ms: st,
            subscription: Bytes::from(bytes.clone()),
            assignment: Bytes::from(bytes),
        });
    let group = (
        "[a-z]{1,8}",
        prop::option::of((
            any::<i32>(),
            prop::option::of("[a-z]{1,6}"),
            any::<i64>(),
            prop::collection::vec(member, 0..3),
        )),
    )
        .prop_map(|(group, v)| GroupRecord::GroupMetadata {
            group,
            value: v.map(|(generation, protocol, ts, members)| GroupMetadata {
                protocol_type: "consumer".into(),
                generation,
                leader: members
                    .first()
                    .map(|m: &MemberMetadata| m.member_id.clone()),
                protocol,
                current_state_timestamp: ts,
                members,
            }),
        });
    prop_oneof![offset, group]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn records_round_trip(r in record_strategy()) {
        let serde = GroupRecordSerde::default();
        let (k, v) = serde.serialize(&r);
        prop_assert_eq!(serde.deserialize(&k.unwrap(), v.as_deref()).unwrap(), r);
    }

    #[test]
    fn deserialize_never_panics(key in prop::collection::vec(any::<u8>(), 0..40), value in prop::option::of(prop::collection::vec(any::<u8>(), 0..60))) {
        let _ = GroupRecordSerde::default().deserialize(&key, value.as_deref());
    }
}
