//! A snapshot (`MetadataImage::to_records`) replayed into an empty delta rebuilds the same image, for
//! random sequences of records over a small universe of brokers, topics and partitions (so that many
//! of them apply; records that cannot apply are refused and skipped).

use josef_metadata::*;
use josef_protocol::metadata_records::{client_quota_record::EntityData, *};
use josef_protocol::{SmallVec, Uuid};
use proptest::prelude::*;

fn ids() -> impl Strategy<Value = i32> {
    0..4i32
}

fn topic_id() -> impl Strategy<Value = Uuid> {
    (1..4u128).prop_map(Uuid::from_u128)
}

fn replica_list() -> impl Strategy<Value = SmallVec<[i32; 4]>> {
    proptest::collection::vec(ids(), 0..4).prop_map(SmallVec::from_vec)
}

fn opt_list() -> impl Strategy<Value = Option<SmallVec<[i32; 4]>>> {
    proptest::option::of(replica_list())
}

fn name() -> impl Strategy<Value = String> {
    "[ab]{1,2}"
}

fn record() -> impl Strategy<Value = MetadataRecord> {
    prop_oneof![
        3 => (ids(), 0..3i64, any::<bool>(), any::<bool>(), proptest::option::of("r[12]")).prop_map(
            |(id, epoch, fenced, shutdown, rack)| RegisterBrokerRecord {
                broker_id: id,
                broker_epoch: epoch,
                incarnation_id: Uuid::from_u128(id as u128 + 100),
                end_points: vec![register_broker_record::BrokerEndpoint {
                    name: "PLAINTEXT".into(),
                    host: "localhost".into(),
                    port: 9000 + id as u16,
                    ..Default::default()
                }],
                rack: rack.map(Into::into),
                fenced,
                in_controlled_shutdown: shutdown,
                ..Default::default()
            }
            .into()
        ),
        1 => (ids(), 0..3i64).prop_map(|(id, epoch)| UnregisterBrokerRecord { broker_id: id, broker_epoch: epoch, ..Default::default() }.into()),
        1 => (ids(), 0..3i64).prop_map(|(id, epoch)| FenceBrokerRecord { id, epoch, ..Default::default() }.into()),
        2 => (ids(), 0..3i64).prop_map(|(id, epoch)| UnfenceBrokerRecord { id, epoch, ..Default::default() }.into()),
        1 => (ids(), 0..3i64, -1..2i8, 0..2i8).prop_map(|(id, epoch, fenced, shutdown)| BrokerRegistrationChangeRecord {
            broker_id: id,
            broker_epoch: epoch,
            fenced,
            in_controlled_shutdown: shutdown,
            ..Default::default()
        }
        .into()),
        3 => (name(), topic_id()).prop_map(|(n, id)| TopicRecord { name: n.as_str().into(), topic_id: id, ..Default::default() }.into()),
        1 => topic_id().prop_map(|id| RemoveTopicRecord { topic_id: id, ..Default::default() }.into()),
        5 => (topic_id(), 0..3i32, replica_list(), replica_list(), -1..4i32, 0..2i8, 0..5i32, 0..5i32, opt_list()).prop_map(
            |(id, p, replicas, isr, leader, lrs, le, pe, elr)| PartitionRecord {
                topic_id: id,
                partition_id: p,
                replicas,
                isr,
                leader,
                leader_recovery_state: lrs,
                leader_epoch: le,
                partition_epoch: pe,
                eligible_leader_replicas: elr,
                ..Default::default()
            }
            .into()
        ),
        5 => (topic_id(), 0..3i32, opt_list(), -2..4i32, opt_list(), opt_list(), opt_list(), -1..2i8, opt_list()).prop_map(
            |(id, p, isr, leader, replicas, adding, removing, lrs, last_known_elr)| PartitionChangeRecord {
                topic_id: id,
                partition_id: p,
                isr,
                leader,
                replicas,
                adding_replicas: adding,
                removing_replicas: removing,
                leader_recovery_state: lrs,
                last_known_elr,
                ..Default::default()
            }
            .into()
        ),
        1 => (prop_oneof![Just(TOPIC_RESOURCE), Just(BROKER_RESOURCE)], name(), "[xy]", proptest::option::of("[0-9]{1,2}")).prop_map(
            |(t, res, key, value)| ConfigRecord {
                resource_type: t,
                resource_name: res.as_str().into(),
                name: key.as_str().into(),
                value: value.map(Into::into),
                ..Default::default()
            }
            .into()
        ),
        1 => (prop_oneof![Just("metadata.version"), Just("kraft.version")], 0..3i16)
            .prop_map(|(n, level)| FeatureLevelRecord { name: n.into(), feature_level: level, ..Default::default() }.into()),
        1 => (-1..5000i64).prop_map(|next| ProducerIdsRecord { broker_id: 1, broker_epoch: 1, next_producer_id: next, ..Default::default() }.into()),
        1 => "[a-z]{4}".prop_map(|c| ClusterIdRecord { cluster_id: c }.into()),
        1 => ids().prop_map(|id| RegisterControllerRecord { controller_id: id, incarnation_id: Uuid::from_u128(7), ..Default::default() }.into()),
        1 => topic_id().prop_map(|id| AccessControlEntryRecord { id, resource_name: "t".into(), ..Default::default() }.into()),
        1 => topic_id().prop_map(|id| RemoveAccessControlEntryRecord { id, ..Default::default() }.into()),
        1 => (name(), "[ab]", 0..3i32, any::<bool>()).prop_map(|(user, key, v, remove)| ClientQuotaRecord {
            entity: vec![EntityData { entity_type: "user".into(), entity_name: Some(user.as_str().into()), ..Default::default() }],
            key: key.as_str().into(),
            value: f64::from(v),
            remove,
            ..Default::default()
        }
        .into()),
        1 => (name(), 1..3i8).prop_map(|(n, m)| UserScramCredentialRecord { name: n.as_str().into(), mechanism: m, iterations: 4096, ..Default::default() }.into()),
        1 => (name(), 1..3i8).prop_map(|(n, m)| RemoveUserScramCredentialRecord { name: n.as_str().into(), mechanism: m, ..Default::default() }.into()),
        1 => name().prop_map(|t| DelegationTokenRecord { token_id: t.as_str().into(), ..Default::default() }.into()),
        1 => name().prop_map(|t| RemoveDelegationTokenRecord { token_id: t.as_str().into(), ..Default::default() }.into()),
        1 => Just(NoOpRecord::default().into()),
    ]
}

/// A topic with its partitions, or a broker registered and unfenced, or one record.
fn records() -> impl Strategy<Value = Vec<MetadataRecord>> {
    let partitions = proptest::collection::vec((replica_list(), -1..4i32), 1..4);
    prop_oneof![
        2 => (name(), topic_id(), partitions).prop_map(|(n, id, parts)| {
            let mut out: Vec<MetadataRecord> =
                vec![TopicRecord { name: n.as_str().into(), topic_id: id, ..Default::default() }.into()];
            for (i, (replicas, leader)) in parts.into_iter().enumerate() {
                let p = PartitionRecord {
                    topic_id: id,
                    partition_id: i as i32,
                    isr: replicas.clone(),
                    replicas,
                    leader,
                    leader_epoch: 0,
                    partition_epoch: 0,
                    ..Default::default()
                };
                out.push(p.into());
            }
            out
        }),
        1 => (ids(), 0..3i64).prop_map(|(id, epoch)| vec![
            RegisterBrokerRecord { broker_id: id, broker_epoch: epoch, ..Default::default() }.into(),
            UnfenceBrokerRecord { id, epoch, ..Default::default() }.into(),
        ]),
        6 => record().prop_map(|r| vec![r]),
    ]
}

fn rebuild(image: &MetadataImage) -> MetadataImage {
    let mut delta = MetadataDelta::new(&MetadataImage::empty());
    for r in image.to_records() {
        // Each snapshot record also survives the serde.
        let r = MetadataRecord::decode(&r.encode().unwrap()).unwrap();
        delta.replay(&r).unwrap();
    }
    delta.apply(image.provenance())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn a_snapshot_rebuilds_the_image(
        batches in proptest::collection::vec(
            proptest::collection::vec(records(), 0..10).prop_map(|v| v.concat()),
            1..5,
        ),
    ) {
        let mut image = MetadataImage::empty();
        for (i, batch) in batches.iter().enumerate() {
            let mut delta = MetadataDelta::new(&image);
            for r in batch {
                let before = delta.apply(image.provenance());
                if delta.replay(r).is_err() {
                    // A refused record changes nothing.
                    prop_assert_eq!(delta.apply(image.provenance()), before);
                }
            }
            let next = delta.apply(MetadataProvenance { last_offset: i as u64 + 1, last_epoch: 1 });
            // Local changes from a delta are those found by comparing the two images.
            for broker in 0..4 {
                prop_assert_eq!(delta.local_changes(broker), LocalReplicaChanges::between(&image, &next, broker));
            }
            image = next;
            prop_assert_eq!(rebuild(&image), image.clone());
        }
    }
}
