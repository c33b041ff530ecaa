//! The wire adapter and the Kafka-format record serde.

use std::collections::BTreeSet;

use bytes::{BufMut, Bytes, BytesMut};
use josef_coordinator::{RecordSerde, SerdeError};
use josef_protocol::messages::{self as m, add_partitions_to_txn_request as apreq};
use josef_protocol::{Decode, Encode, StrBytes};
use josef_txn::wire;
use josef_txn::*;

fn value(state: TxnState, parts: &[(&str, i32)]) -> TxnLogValue {
    TxnLogValue {
        producer_id: 4000,
        prev_producer_id: 3999,
        next_producer_id: -1,
        producer_epoch: 7,
        last_producer_epoch: 6,
        txn_timeout_ms: 60_000,
        state,
        partitions: parts
            .iter()
            .map(|(t, p)| TopicPartition::new(*t, *p))
            .collect(),
        txn_start_timestamp: 1_700_000_000_000,
        txn_last_update_timestamp: 1_700_000_000_123,
        client_transaction_version: TransactionVersion::V0,
    }
}

/// The bytes Kafka's `TransactionLog.valueToBytes` writes at value version 0, built by hand
/// from the schema (not from our codec).
#[test]
fn value_v0_bytes_match_kafka_layout() {
    let serde = TxnRecordSerde::new(TransactionVersion::V0);
    let rec = TxnLogRecord {
        transactional_id: "tx".into(),
        value: Some(value(TxnState::Ongoing, &[("a", 0), ("a", 2), ("b", 1)])),
    };
    let (key, val) = serde.serialize(&rec);
    let mut k = BytesMut::new();
    k.put_i16(0); // record type TRANSACTION_LOG
    k.put_i16(2);
    k.put_slice(b"tx");
    assert_eq!(key.unwrap(), k.freeze());
    let mut v = BytesMut::new();
    v.put_i16(0); // value version
    v.put_i64(4000);
    v.put_i16(7);
    v.put_i32(60_000);
    v.put_i8(1); // Ongoing
    v.put_i32(2); // two topics
    v.put_i16(1);
    v.put_slice(b"a");
    v.put_i32(2);
    v.put_i32(0);
    v.put_i32(2);
    v.put_i16(1);
    v.put_slice(b"b");
    v.put_i32(1);
    v.put_i32(1);
    v.put_i64(1_700_000_000_123); // last update
    v.put_i64(1_700_000_000_000); // start
    assert_eq!(val.unwrap(), v.freeze());
}

#[test]
fn empty_state_writes_null_partitions() {
    let serde = TxnRecordSerde::new(TransactionVersion::V0);
    let rec = TxnLogRecord {
        transactional_id: "tx".into(),
        value: Some(value(TxnState::Empty, &[])),
    };
    let (_, val) = serde.serialize(&rec);
    let val = val.unwrap();
    // version(2) pid(8) epoch(2) timeout(4) status(1) then the array length: -1 = null.
    assert_eq!(&val[17..21], &(-1i32).to_be_bytes());
}

#[test]
fn records_round_trip_at_both_value_versions_without_last_epoch() {
    for tv in [
        TransactionVersion::V0,
        TransactionVersion::V1,
        TransactionVersion::V2,
    ] {
        let serde = TxnRecordSerde::new(tv);
        assert_eq!(
            serde.value_version(),
            if tv == TransactionVersion::V0 { 0 } else { 1 }
        );
        for state in TxnState::ALL {
            if state == TxnState::Dead {
                continue;
            }
            let parts: &[(&str, i32)] = if state == TxnState::Empty {
                &[]
            } else {
                &[("x", 3), ("y", 0)]
            };
            let mut v = value(state, parts);
            v.next_producer_id = 5000;
            v.client_transaction_version = TransactionVersion::V2;
            let rec = TxnLogRecord {
                transactional_id: "id-é".into(),
                value: Some(v.clone()),
            };
            let (k, val) = serde.serialize(&rec);
            let back = serde.deserialize(&k.unwrap(), val.as_deref()).unwrap();
            let got = back.value.unwrap();
            assert_eq!(got.last_producer_epoch, -1, "not persisted, as in Kafka");
            let mut expected = v;
            expected.last_producer_epoch = -1;
            if tv == TransactionVersion::V0 {
                // v0 has no tagged fields: defaults come back.
                expected.prev_producer_id = -1;
                expected.next_producer_id = -1;
                expected.client_transaction_version = TransactionVersion::V0;
            }
            assert_eq!(got, expected, "{tv:?} {state:?}");
        }
    }
}

#[test]
fn tombstone_round_trips() {
    let serde = TxnRecordSerde::new(TransactionVersion::V2);
    let rec = TxnLogRecord {
        transactional_id: "gone".into(),
        value: None,
    };
    let (k, v) = serde.serialize(&rec);
    assert!(v.is_none());
    assert_eq!(serde.deserialize(&k.unwrap(), None).unwrap(), rec);
}

#[test]
fn bad_records_are_errors_not_panics() {
    let serde = TxnRecordSerde::new(TransactionVersion::V0);
    assert_eq!(serde.deserialize(&[0], None), Err(SerdeError::Truncated));
    assert!(matches!(
        serde.deserialize(&[0, 3, 0, 0], None),
        Err(SerdeError::UnknownVersion {
            what: "key",
            version: 3
        })
    ));
    let (k, _) = serde.serialize(&TxnLogRecord {
        transactional_id: "t".into(),
        value: None,
    });
    let k = k.unwrap();
    assert!(matches!(
        serde.deserialize(&k, Some(&[0, 9, 1, 2])),
        Err(SerdeError::UnknownVersion {
            what: "value",
            version: 9
        })
    ));
    assert!(serde.deserialize(&k, Some(&[0, 0, 1])).is_err());
    assert!(serde.deserialize(&k, Some(&[0])).is_err());
    // A key claiming a huge string length.
    assert!(serde.deserialize(&[0, 0, 0x7f, 0xff, b'a'], None).is_err());
    // Unknown state id.
    let mut v = BytesMut::new();
    v.put_i16(0);
    v.put_i64(1);
    v.put_i16(0);
    v.put_i32(1000);
    v.put_i8(9);
    v.put_i32(-1);
    v.put_i64(0);
    v.put_i64(0);
    assert!(matches!(
        serde.deserialize(&k, Some(&v)),
        Err(SerdeError::Invalid(_))
    ));
}

#[test]
fn loading_kafka_format_records_rebuilds_the_shard() {
    // A partition serialised and read back loads to the same state (minus last epoch).
    let serde = TxnRecordSerde::new(TransactionVersion::V1);
    let mut d: josef_coordinator::CoordinatorDriver<_, _, ()> =
        josef_coordinator::CoordinatorDriver::new(
            TxnShard::new(TxnConfig::default(), 0),
            josef_coordinator::InMemoryPartitionWriter::new(),
        );
    let mut pids = SequentialProducerIdGenerator::new(10);
    let init = InitProducerIdRequest {
        transactional_id: Some("t".into()),
        transaction_timeout_ms: 1000,
        producer_id: -1,
        producer_epoch: -1,
    };
    d.write(|s| s.init_producer_id(&init, 5, &mut pids).map_response(|_| ()))
        .unwrap();
    let add = AddPartitionsToTxnRequest {
        transactional_id: "t".into(),
        producer_id: 10,
        producer_epoch: 0,
        partitions: BTreeSet::from([TopicPartition::new("a", 1)]),
        verify_only: false,
    };
    d.write(|s| {
        s.add_partitions_to_txn(&add, 6, TransactionVersion::V0)
            .map_response(|_| ())
    })
    .unwrap();
    let mut shard = TxnShard::new(TxnConfig::default(), 1);
    for e in d.writer().entries() {
        if let josef_coordinator::LogEntry::Record(r) = e {
            let (k, v) = serde.serialize(&r.record);
            let back = serde.deserialize(&k.unwrap(), v.as_deref()).unwrap();
            josef_coordinator::CoordinatorShard::replay(&mut shard, r.offset, -1, -1, &back)
                .unwrap();
        }
    }
    let live = d.shard().get("t").unwrap();
    let loaded = shard.get("t").unwrap();
    assert_eq!(
        (
            loaded.state,
            loaded.producer_id,
            loaded.producer_epoch,
            &loaded.partitions,
            loaded.txn_start_timestamp
        ),
        (
            live.state,
            live.producer_id,
            live.producer_epoch,
            &live.partitions,
            live.txn_start_timestamp
        )
    );
}

// ----- wire adapter ----------------------------------------------------------------------------

#[test]
fn init_producer_id_maps_fields_and_nullable_id() {
    let req = m::InitProducerIdRequest {
        transactional_id: None,
        transaction_timeout_ms: 5,
        producer_id: -1,
        producer_epoch: -1,
        ..Default::default()
    };
    assert_eq!(wire::init_producer_id_request(&req).transactional_id, None);
    let req = m::InitProducerIdRequest {
        transactional_id: Some(StrBytes::from("t")),
        ..req
    };
    let core = wire::init_producer_id_request(&req);
    assert_eq!(core.transactional_id.as_deref(), Some("t"));
    assert_eq!(core.transaction_timeout_ms, 5);
}

#[test]
fn producer_fenced_is_invalid_producer_epoch_for_old_clients() {
    let fenced = InitProducerIdResponse::error(TxnError::ProducerFenced);
    assert_eq!(wire::init_producer_id_response(&fenced, 3).error_code, 47);
    assert_eq!(wire::init_producer_id_response(&fenced, 4).error_code, 90);
    let end = EndTxnResponse::error(TxnError::ProducerFenced);
    assert_eq!(wire::end_txn_response(&end, 1).error_code, 47);
    assert_eq!(wire::end_txn_response(&end, 2).error_code, 90);
    assert_eq!(
        wire::add_offsets_to_txn_response(Some(TxnError::ProducerFenced), 1).error_code,
        47
    );
    assert_eq!(
        wire::add_offsets_to_txn_response(Some(TxnError::ProducerFenced), 2).error_code,
        90
    );
    let r = AddPartitionsToTxnResult {
        transactional_id: "t".into(),
        partitions: vec![(TopicPartition::new("a", 0), Some(TxnError::ProducerFenced))],
    };
    let w = wire::add_partitions_to_txn_response(std::slice::from_ref(&r), 1);
    assert_eq!(
        w.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code,
        47
    );
    let w = wire::add_partitions_to_txn_response(std::slice::from_ref(&r), 2);
    assert_eq!(
        w.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code,
        90
    );
}

#[test]
fn end_txn_v5_is_transactions_v2() {
    let req = m::EndTxnRequest {
        transactional_id: StrBytes::from("t"),
        producer_id: 1,
        producer_epoch: 2,
        committed: true,
        ..Default::default()
    };
    assert_eq!(
        wire::end_txn_request(&req, 4).client_transaction_version,
        TransactionVersion::V0
    );
    assert_eq!(
        wire::end_txn_request(&req, 5).client_transaction_version,
        TransactionVersion::V2
    );
    let resp = EndTxnResponse {
        error: None,
        producer_id: 1,
        producer_epoch: 3,
    };
    let w = wire::end_txn_response(&resp, 5);
    assert_eq!((w.error_code, w.producer_id, w.producer_epoch), (0, 1, 3));
    // Encodes at every version.
    for v in 0..=5 {
        let mut b = BytesMut::new();
        wire::end_txn_response(&resp, v).encode(&mut b, v).unwrap();
        let back = m::EndTxnResponse::decode(&mut b.freeze(), v).unwrap();
        assert_eq!(back.error_code, 0);
    }
}

#[test]
fn add_partitions_v3_single_and_v4_batched_forms() {
    let topics = vec![apreq::AddPartitionsToTxnTopic {
        name: StrBytes::from("a"),
        partitions: josef_protocol::smallvec![1, 0],
        ..Default::default()
    }];
    let v3 = m::AddPartitionsToTxnRequest {
        v3_and_below_transactional_id: StrBytes::from("t"),
        v3_and_below_producer_id: 9,
        v3_and_below_producer_epoch: 1,
        v3_and_below_topics: topics.clone(),
        ..Default::default()
    };
    let reqs = wire::add_partitions_to_txn_requests(&v3, 3);
    assert_eq!(reqs.len(), 1);
    assert_eq!(
        reqs[0].partitions,
        BTreeSet::from([TopicPartition::new("a", 0), TopicPartition::new("a", 1)])
    );
    assert!(!reqs[0].verify_only);
    let v4 = m::AddPartitionsToTxnRequest {
        transactions: vec![
            apreq::AddPartitionsToTxnTransaction {
                transactional_id: StrBytes::from("t1"),
                producer_id: 1,
                producer_epoch: 0,
                verify_only: true,
                topics: topics.clone(),
                ..Default::default()
            },
            apreq::AddPartitionsToTxnTransaction {
                transactional_id: StrBytes::from("t2"),
                producer_id: 2,
                producer_epoch: 0,
                verify_only: false,
                topics,
                ..Default::default()
            },
        ],
        ..Default::default()
    };
    let reqs = wire::add_partitions_to_txn_requests(&v4, 4);
    assert_eq!(reqs.len(), 2);
    assert!(reqs[0].verify_only && !reqs[1].verify_only);
    let results: Vec<_> = reqs
        .iter()
        .map(|r| AddPartitionsToTxnResult::uniform(r, None))
        .collect();
    let w = wire::add_partitions_to_txn_response(&results, 4);
    assert_eq!(w.results_by_transaction.len(), 2);
    assert_eq!(w.results_by_transaction[1].transactional_id, "t2");
    assert_eq!(
        w.results_by_transaction[1].topic_results[0]
            .results_by_partition
            .len(),
        2
    );
    let mut b = BytesMut::new();
    w.encode(&mut b, 4).unwrap();
    let back = m::AddPartitionsToTxnResponse::decode(&mut b.freeze(), 4).unwrap();
    assert_eq!(back, w);
    assert_eq!(
        wire::add_partitions_client_version(5),
        TransactionVersion::V2
    );
}

#[test]
fn unknown_partitions_fail_the_request_before_the_coordinator() {
    let req = AddPartitionsToTxnRequest {
        transactional_id: "t".into(),
        producer_id: 1,
        producer_epoch: 0,
        partitions: BTreeSet::from([
            TopicPartition::new("known", 0),
            TopicPartition::new("nope", 0),
        ]),
        verify_only: false,
    };
    let r = wire::check_partitions_exist(&req, |tp| tp.topic == "known").unwrap();
    assert_eq!(
        r.partitions,
        vec![
            (
                TopicPartition::new("known", 0),
                Some(TxnError::OperationNotAttempted)
            ),
            (
                TopicPartition::new("nope", 0),
                Some(TxnError::UnknownTopicOrPartition)
            ),
        ]
    );
    assert!(wire::check_partitions_exist(&req, |_| true).is_none());
}

#[test]
fn add_offsets_maps_fields() {
    let req = m::AddOffsetsToTxnRequest {
        transactional_id: StrBytes::from("t"),
        producer_id: 3,
        producer_epoch: 4,
        group_id: StrBytes::from("g"),
        ..Default::default()
    };
    let core = wire::add_offsets_to_txn_request(&req);
    assert_eq!(
        (
            core.transactional_id.as_str(),
            core.producer_id,
            core.producer_epoch,
            core.group_id.as_str()
        ),
        ("t", 3, 4, "g")
    );
    let _ = Bytes::new();
}

/// Value version 1 (flexible), built by hand: compact arrays/strings and the tagged fields
/// PreviousProducerId (0), NextProducerId (1, default omitted) and ClientTransactionVersion (2).
#[test]
fn value_v1_bytes_match_kafka_layout() {
    let serde = TxnRecordSerde::new(TransactionVersion::V2);
    let mut v = value(TxnState::PrepareCommit, &[("a", 5)]);
    v.client_transaction_version = TransactionVersion::V2;
    let (_, val) = serde.serialize(&TxnLogRecord {
        transactional_id: "tx".into(),
        value: Some(v),
    });
    let mut e = BytesMut::new();
    e.put_i16(1);
    e.put_i64(4000);
    e.put_i16(7);
    e.put_i32(60_000);
    e.put_i8(2); // PrepareCommit
    e.put_u8(2); // one topic (n + 1)
    e.put_u8(2); // "a" (len + 1)
    e.put_slice(b"a");
    e.put_u8(2); // one partition
    e.put_i32(5);
    e.put_u8(0); // topic tagged fields
    e.put_i64(1_700_000_000_123);
    e.put_i64(1_700_000_000_000);
    e.put_u8(2); // two tagged fields: prev producer id, client transaction version
    e.put_u8(0);
    e.put_u8(8);
    e.put_i64(3999);
    e.put_u8(2);
    e.put_u8(2);
    e.put_i16(2);
    assert_eq!(val.unwrap(), e.freeze());
}

#[test]
fn marker_effects_become_write_txn_markers() {
    let m = TxnMarkerRequest {
        transactional_id: "t".into(),
        producer_id: 5,
        producer_epoch: 2,
        coordinator_epoch: 9,
        result: TransactionResult::Commit,
        partitions: BTreeSet::from([
            TopicPartition::new("a", 1),
            TopicPartition::new("a", 0),
            TopicPartition::new("b", 4),
        ]),
        transaction_version: TransactionVersion::V0,
    };
    let w = wire::write_txn_markers_request(&[m]);
    let mk = &w.markers[0];
    assert_eq!(
        (
            mk.producer_id,
            mk.producer_epoch,
            mk.transaction_result,
            mk.coordinator_epoch
        ),
        (5, 2, true, 9)
    );
    assert_eq!(mk.topics.len(), 2);
    assert_eq!(mk.topics[0].partition_indexes[..], [0, 1]);
    let mut b = BytesMut::new();
    w.encode(&mut b, 1).unwrap();
    assert_eq!(
        m::WriteTxnMarkersRequest::decode(&mut b.freeze(), 1).unwrap(),
        w
    );
}

#[test]
fn write_txn_markers_round_trip_through_the_leader_side() {
    let m = TxnMarkerRequest {
        transactional_id: String::new(),
        producer_id: 5,
        producer_epoch: 2,
        coordinator_epoch: 9,
        result: TransactionResult::Abort,
        partitions: BTreeSet::from([TopicPartition::new("a", 0), TopicPartition::new("b", 4)]),
        transaction_version: TransactionVersion::V0,
    };
    let read = wire::write_txn_markers_from_request(&wire::write_txn_markers_request(
        std::slice::from_ref(&m),
    ));
    assert_eq!(read, vec![m]);
    let results = vec![
        (
            5,
            TopicPartition::new("a", 0),
            josef_protocol::ErrorCode::None,
        ),
        (
            5,
            TopicPartition::new("b", 4),
            josef_protocol::ErrorCode::TransactionCoordinatorFenced,
        ),
        (
            6,
            TopicPartition::new("a", 0),
            josef_protocol::ErrorCode::NotLeaderOrFollower,
        ),
    ];
    let resp = wire::write_txn_markers_response(&results);
    assert_eq!(resp.markers.len(), 2);
    let mut b = BytesMut::new();
    resp.encode(&mut b, 1).unwrap();
    let back = m::WriteTxnMarkersResponse::decode(&mut b.freeze(), 1).unwrap();
    assert_eq!(wire::write_txn_markers_results(&back), results);
}
