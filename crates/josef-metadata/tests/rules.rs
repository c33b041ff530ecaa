//! One test per rule of the image: partition merges, broker fencing, topics, configs, features,
//! producer ids and local replica changes.

use josef_metadata::*;
use josef_protocol::metadata_records::*;
use josef_protocol::Uuid;

const T: Uuid = Uuid::from_u128(0x10);
const U: Uuid = Uuid::from_u128(0x20);

fn partition(replicas: &[i32], isr: &[i32], leader: i32) -> PartitionRegistration {
    PartitionRegistration {
        replicas: replicas.to_vec(),
        isr: isr.to_vec(),
        leader,
        ..Default::default()
    }
}

fn change() -> PartitionChangeRecord {
    PartitionChangeRecord {
        topic_id: T,
        partition_id: 0,
        ..Default::default()
    }
}

fn topic_record(name: &str, id: Uuid) -> MetadataRecord {
    TopicRecord {
        name: name.into(),
        topic_id: id,
        ..Default::default()
    }
    .into()
}

fn partition_record(id: Uuid, index: i32, replicas: &[i32], leader: i32) -> MetadataRecord {
    PartitionRecord {
        topic_id: id,
        partition_id: index,
        replicas: replicas.into(),
        isr: replicas.into(),
        leader,
        leader_epoch: 0,
        partition_epoch: 0,
        ..Default::default()
    }
    .into()
}

fn fence(id: i32, epoch: i64) -> MetadataRecord {
    FenceBrokerRecord {
        id,
        epoch,
        ..Default::default()
    }
    .into()
}

fn unfence(id: i32, epoch: i64) -> MetadataRecord {
    UnfenceBrokerRecord {
        id,
        epoch,
        ..Default::default()
    }
    .into()
}

fn register(id: i32, epoch: i64) -> MetadataRecord {
    RegisterBrokerRecord {
        broker_id: id,
        broker_epoch: epoch,
        ..Default::default()
    }
    .into()
}

fn config(resource_type: i8, resource: &str, name: &str, value: Option<&str>) -> MetadataRecord {
    ConfigRecord {
        resource_type,
        resource_name: resource.into(),
        name: name.into(),
        value: value.map(Into::into),
        ..Default::default()
    }
    .into()
}

fn replay_all(image: &MetadataImage, records: &[MetadataRecord]) -> MetadataDelta {
    let mut delta = MetadataDelta::new(image);
    for r in records {
        delta.replay(r).unwrap();
    }
    delta
}

fn image_of(records: &[MetadataRecord]) -> MetadataImage {
    replay_all(&MetadataImage::empty(), records).apply(MetadataProvenance::default())
}

// --- PartitionRegistration ---------------------------------------------------------------------

#[test]
fn leader_minus_two_keeps_the_leader_and_its_epoch_but_bumps_the_partition_epoch() {
    let p = partition(&[1, 2, 3], &[1, 2, 3], 1);
    let next = p
        .merge(&PartitionChangeRecord {
            isr: Some(vec![1, 2].into()),
            ..change()
        })
        .unwrap();
    assert_eq!(
        (next.leader, next.leader_epoch, next.partition_epoch),
        (1, 0, 1)
    );
    assert_eq!(next.isr, vec![1, 2]);
}

#[test]
fn setting_the_leader_bumps_the_leader_epoch_once() {
    let p = partition(&[1, 2, 3], &[1, 2, 3], 1);
    let next = p
        .merge(&PartitionChangeRecord {
            leader: 2,
            ..change()
        })
        .unwrap();
    assert_eq!(
        (next.leader, next.leader_epoch, next.partition_epoch),
        (2, 1, 1)
    );
}

#[test]
fn leader_minus_one_means_no_leader_and_bumps_the_leader_epoch() {
    let p = partition(&[1], &[1], 1);
    let next = p
        .merge(&PartitionChangeRecord {
            leader: NO_LEADER,
            ..change()
        })
        .unwrap();
    assert!(!next.has_leader());
    assert_eq!((next.leader_epoch, next.partition_epoch), (1, 1));
}

#[test]
fn setting_the_same_leader_is_a_forced_leader_epoch_bump() {
    let p = partition(&[1, 2], &[1, 2], 1);
    let next = p
        .merge(&PartitionChangeRecord {
            leader: 1,
            ..change()
        })
        .unwrap();
    assert_eq!((next.leader, next.leader_epoch), (1, 1));
}

#[test]
fn null_lists_are_kept_and_given_lists_replace() {
    let mut p = partition(&[1, 2, 3], &[1, 2, 3], 1);
    p.adding_replicas = vec![3];
    p.removing_replicas = vec![4];
    p.elr = vec![2];
    let kept = p.merge(&change()).unwrap();
    assert_eq!(
        kept,
        PartitionRegistration {
            partition_epoch: 1,
            ..p.clone()
        }
    );
    let replaced = p
        .merge(&PartitionChangeRecord {
            replicas: Some(vec![2, 3].into()),
            adding_replicas: Some(vec![].into()),
            removing_replicas: Some(vec![].into()),
            eligible_leader_replicas: Some(vec![].into()),
            last_known_elr: Some(vec![1].into()),
            ..change()
        })
        .unwrap();
    assert_eq!(replaced.replicas, vec![2, 3]);
    assert!(replaced.adding_replicas.is_empty() && replaced.removing_replicas.is_empty());
    assert!(replaced.elr.is_empty());
    assert_eq!(replaced.last_known_elr, vec![1]);
    assert_eq!(replaced.isr, vec![1, 2, 3]);
}

#[test]
fn leader_recovery_state_minus_one_is_kept_and_other_values_set_or_fail() {
    let p = partition(&[1], &[1], 1);
    let kept = p.merge(&change()).unwrap();
    assert_eq!(kept.leader_recovery_state, LeaderRecoveryState::Recovered);
    let set = p
        .merge(&PartitionChangeRecord {
            leader_recovery_state: 1,
            ..change()
        })
        .unwrap();
    assert_eq!(set.leader_recovery_state, LeaderRecoveryState::Recovering);
    assert_eq!(
        p.merge(&PartitionChangeRecord {
            leader_recovery_state: 7,
            ..change()
        }),
        Err(MetadataError::InvalidLeaderRecoveryState(7))
    );
}

#[test]
fn directories_follow_their_replicas_when_replicas_change() {
    let (d1, d2, d3) = (
        Uuid::from_u128(101),
        Uuid::from_u128(102),
        Uuid::from_u128(103),
    );
    let p = PartitionRegistration {
        directories: vec![d1, d2],
        ..partition(&[1, 2], &[1, 2], 1)
    };
    let next = p
        .merge(&PartitionChangeRecord {
            replicas: Some(vec![2, 3].into()),
            ..change()
        })
        .unwrap();
    assert_eq!(next.directories, vec![d2, DIRECTORY_UNASSIGNED]);
    let explicit = PartitionChangeRecord {
        replicas: Some(vec![2, 3].into()),
        directories: Some(vec![d2, d3]),
        ..change()
    };
    assert_eq!(p.merge(&explicit).unwrap().directories, vec![d2, d3]);
    let wrong = PartitionChangeRecord {
        directories: Some(vec![d1]),
        ..change()
    };
    assert_eq!(
        p.merge(&wrong),
        Err(MetadataError::DirectoriesMismatch {
            replicas: 2,
            directories: 1
        })
    );
}

#[test]
fn a_partition_record_becomes_a_registration() {
    let r = PartitionRecord {
        partition_id: 0,
        replicas: vec![1, 2].into(),
        isr: vec![2].into(),
        leader: 2,
        leader_epoch: 4,
        partition_epoch: 9,
        ..Default::default()
    };
    let p = PartitionRegistration::try_from(&r).unwrap();
    assert_eq!((p.leader, p.leader_epoch, p.partition_epoch), (2, 4, 9));
    assert!(p.elr.is_empty() && p.last_known_elr.is_empty());
    assert_eq!(
        p.to_record(T, 0),
        PartitionRecord {
            topic_id: T,
            ..r.clone()
        }
    );
    let bad = PartitionRecord {
        leader_recovery_state: 3,
        ..r.clone()
    };
    assert_eq!(
        PartitionRegistration::from_record(&bad),
        Err(MetadataError::InvalidLeaderRecoveryState(3))
    );
    let bad = PartitionRecord {
        directories: vec![Uuid::from_u128(1)],
        ..r
    };
    assert!(matches!(
        PartitionRegistration::from_record(&bad),
        Err(MetadataError::DirectoriesMismatch { .. })
    ));
}

#[test]
fn helpers_name_the_preferred_leader_and_reassignments() {
    let mut p = partition(&[3, 1, 2], &[1, 2, 3], 1);
    assert_eq!(p.preferred_leader(), Some(3));
    assert!(!p.has_preferred_leader());
    assert!(p.has_leader() && p.is_replica(2) && p.is_in_isr(3) && !p.is_replica(4));
    assert!(!p.is_reassigning());
    p.adding_replicas = vec![4];
    assert!(p.is_reassigning());
    assert_eq!(PartitionRegistration::default().preferred_leader(), None);
}

// --- Brokers -----------------------------------------------------------------------------------

#[test]
fn a_registered_broker_starts_fenced_and_is_active_once_unfenced() {
    let image = image_of(&[register(1, 5)]);
    let b = image.broker(1).unwrap();
    assert!(b.fenced && !image.is_active(1));
    assert_eq!(image.alive_brokers().count(), 0);
    let image = image_of(&[register(1, 5), unfence(1, 5)]);
    assert!(image.is_active(1));
    assert_eq!(
        image.alive_brokers().map(|b| b.id).collect::<Vec<_>>(),
        vec![1]
    );
    let image = image_of(&[register(1, 5), unfence(1, 5), fence(1, 5)]);
    assert!(image.broker(1).unwrap().fenced);
}

#[test]
fn registration_keeps_endpoints_rack_and_features() {
    let r = RegisterBrokerRecord {
        broker_id: 2,
        broker_epoch: 7,
        incarnation_id: Uuid::from_u128(77),
        end_points: vec![register_broker_record::BrokerEndpoint {
            name: "PLAINTEXT".into(),
            host: "h".into(),
            port: 9092,
            security_protocol: 0,
            ..Default::default()
        }],
        features: vec![register_broker_record::BrokerFeature {
            name: "metadata.version".into(),
            min_supported_version: 1,
            max_supported_version: 20,
            ..Default::default()
        }],
        rack: Some("r1".into()),
        fenced: false,
        ..Default::default()
    };
    let b = BrokerRegistration::from_record(&r);
    assert_eq!(b.listener("PLAINTEXT").unwrap().port, 9092);
    assert_eq!(b.rack.as_deref(), Some("r1"));
    assert_eq!(
        b.supported_features["metadata.version"],
        FeatureRange { min: 1, max: 20 }
    );
    assert_eq!(BrokerRegistration::from_record(&b.to_record()), b);
}

#[test]
fn fencing_a_broker_needs_its_registered_epoch() {
    let image = image_of(&[register(1, 5)]);
    let mut delta = MetadataDelta::new(&image);
    let stale: MetadataRecord = unfence(1, 4);
    assert_eq!(
        delta.replay(&stale),
        Err(MetadataError::BrokerEpochMismatch {
            action: "unfence",
            broker_id: 1,
            epoch: 4,
            registered: 5
        })
    );
    let unknown: MetadataRecord = fence(9, 5);
    assert_eq!(
        delta.replay(&unknown),
        Err(MetadataError::UnknownBroker {
            action: "fence",
            broker_id: 9
        })
    );
    assert_eq!(delta.apply(image.provenance()), image);
}

#[test]
fn registration_change_records_fence_unfence_and_start_controlled_shutdown() {
    let ch = |fenced: i8, shutdown: i8| -> MetadataRecord {
        BrokerRegistrationChangeRecord {
            broker_id: 1,
            broker_epoch: 5,
            fenced,
            in_controlled_shutdown: shutdown,
            ..Default::default()
        }
        .into()
    };
    let image = image_of(&[register(1, 5), ch(-1, 0)]);
    assert!(image.is_active(1));
    let image = image_of(&[register(1, 5), ch(-1, 0), ch(0, 1)]);
    let b = image.broker(1).unwrap();
    assert!(!b.fenced && b.in_controlled_shutdown);
    assert!(!image.is_active(1));
    assert_eq!(image.alive_brokers().count(), 1);
    let image = image_of(&[register(1, 5), ch(-1, 0), ch(1, 0)]);
    assert!(image.broker(1).unwrap().fenced);

    let mut delta = MetadataDelta::new(&image_of(&[register(1, 5)]));
    assert_eq!(
        delta.replay(&ch(2, 0)),
        Err(MetadataError::InvalidFencingChange(2))
    );
    assert_eq!(
        delta.replay(&ch(0, 2)),
        Err(MetadataError::InvalidControlledShutdownChange(2))
    );
    let stale = BrokerRegistrationChangeRecord {
        broker_id: 1,
        broker_epoch: 6,
        ..Default::default()
    };
    assert!(matches!(
        delta.replay(&stale.into()),
        Err(MetadataError::BrokerEpochMismatch { .. })
    ));
}

#[test]
fn re_registration_replaces_and_unregistration_removes() {
    let image = image_of(&[register(1, 5), unfence(1, 5), register(1, 9)]);
    assert_eq!(image.broker(1).unwrap().epoch, 9);
    assert!(image.broker(1).unwrap().fenced);
    let image = image_of(&[
        register(1, 5),
        UnregisterBrokerRecord {
            broker_id: 1,
            broker_epoch: 5,
            ..Default::default()
        }
        .into(),
    ]);
    assert!(image.broker(1).is_none() && !image.is_active(1));
}

#[test]
fn controllers_are_registered() {
    let r = RegisterControllerRecord {
        controller_id: 3,
        incarnation_id: Uuid::from_u128(3),
        ..Default::default()
    };
    let image = image_of(&[r.into()]);
    assert_eq!(image.controllers()[&3].incarnation_id, Uuid::from_u128(3));
}

// --- Topics ------------------------------------------------------------------------------------

#[test]
fn topics_are_found_by_name_and_id() {
    let image = image_of(&[
        topic_record("a", T),
        partition_record(T, 0, &[1], 1),
        partition_record(T, 1, &[2], 2),
    ]);
    assert_eq!(image.topic_by_name("a").unwrap().id, T);
    assert_eq!(image.topic_by_id(T).unwrap().name, "a");
    assert_eq!(image.partition(T, 1).unwrap().leader, 2);
    assert!(image.partition(T, 2).is_none() && image.topic_by_name("b").is_none());
    assert_eq!(image.topics().count(), 1);
}

#[test]
fn a_partition_record_of_an_unknown_topic_is_refused() {
    let mut delta = MetadataDelta::new(&MetadataImage::empty());
    assert_eq!(
        delta.replay(&partition_record(T, 0, &[1], 1)),
        Err(MetadataError::UnknownTopic(T))
    );
    delta.replay(&topic_record("a", T)).unwrap();
    assert_eq!(
        delta.replay(&partition_record(T, -1, &[1], 1)),
        Err(MetadataError::InvalidPartitionIndex {
            topic_id: T,
            partition: -1
        })
    );
    assert_eq!(
        delta.replay(&change().into()),
        Err(MetadataError::UnknownPartition {
            topic_id: T,
            partition: 0
        })
    );
}

#[test]
fn a_topic_id_or_name_cannot_be_taken_twice() {
    let mut delta = replay_all(&MetadataImage::empty(), &[topic_record("a", T)]);
    assert_eq!(
        delta.replay(&topic_record("b", T)),
        Err(MetadataError::TopicIdExists(T))
    );
    assert_eq!(
        delta.replay(&topic_record("a", U)),
        Err(MetadataError::TopicNameExists {
            name: "a".into(),
            existing: T
        })
    );
}

#[test]
fn removing_a_topic_removes_its_partitions_and_configs() {
    let image = image_of(&[
        topic_record("a", T),
        partition_record(T, 0, &[1], 1),
        config(TOPIC_RESOURCE, "a", "retention.ms", Some("5")),
        config(BROKER_RESOURCE, "1", "log.retention.ms", Some("6")),
        topic_record("b", U),
    ]);
    let mut delta = MetadataDelta::new(&image);
    delta
        .replay(
            &RemoveTopicRecord {
                topic_id: T,
                ..Default::default()
            }
            .into(),
        )
        .unwrap();
    let next = delta.apply(MetadataProvenance::default());
    assert!(next.topic_by_id(T).is_none() && next.topic_by_name("a").is_none());
    assert!(next.partition(T, 0).is_none());
    assert!(next.topic_config("a").is_none());
    assert!(next.config(BROKER_RESOURCE, "1").is_some());
    assert!(next.topic_by_name("b").is_some());
    assert_eq!(
        delta.replay(
            &RemoveTopicRecord {
                topic_id: T,
                ..Default::default()
            }
            .into()
        ),
        Err(MetadataError::UnknownTopic(T))
    );
    // The name is free again.
    delta
        .replay(&topic_record("a", Uuid::from_u128(0x30)))
        .unwrap();
}

// --- Configs, features, producer ids, cluster id ------------------------------------------------

#[test]
fn a_config_record_sets_and_a_null_value_deletes() {
    let image = image_of(&[
        config(TOPIC_RESOURCE, "a", "x", Some("1")),
        config(TOPIC_RESOURCE, "a", "y", Some("2")),
        config(TOPIC_RESOURCE, "a", "x", Some("3")),
        config(TOPIC_RESOURCE, "a", "y", None),
        config(TOPIC_RESOURCE, "a", "never-set", None),
    ]);
    let c = image.topic_config("a").unwrap();
    assert_eq!(c.len(), 1);
    assert_eq!(c["x"], "3");
    let image = image_of(&[
        config(TOPIC_RESOURCE, "a", "x", Some("1")),
        config(TOPIC_RESOURCE, "a", "x", None),
    ]);
    assert!(image.configs().is_empty());
}

#[test]
fn feature_level_zero_removes_a_feature_but_not_metadata_version() {
    let f = |name: &str, level: i16| -> MetadataRecord {
        FeatureLevelRecord {
            name: name.into(),
            feature_level: level,
            ..Default::default()
        }
        .into()
    };
    let image = image_of(&[
        f("metadata.version", 20),
        f("kraft.version", 1),
        f("kraft.version", 0),
        f("metadata.version", 0),
    ]);
    assert_eq!(image.metadata_version(), Some(0));
    assert!(!image.features().contains_key("kraft.version"));
}

#[test]
fn producer_ids_and_the_cluster_id_are_kept() {
    let image = MetadataImage::empty();
    assert_eq!(image.next_producer_id(), -1);
    assert!(image.cluster_id().is_none() && image.is_empty());
    let image = image_of(&[
        ProducerIdsRecord {
            broker_id: 1,
            broker_epoch: 5,
            next_producer_id: 1000,
            ..Default::default()
        }
        .into(),
        ClusterIdRecord {
            cluster_id: "c-1".into(),
        }
        .into(),
    ]);
    assert_eq!(image.next_producer_id(), 1000);
    assert_eq!(image.cluster_id(), Some("c-1"));
}

#[test]
fn removing_an_unknown_acl_is_refused() {
    let mut delta = MetadataDelta::new(&MetadataImage::empty());
    let r = RemoveAccessControlEntryRecord {
        id: T,
        ..Default::default()
    };
    assert!(matches!(
        delta.replay(&r.into()),
        Err(MetadataError::UnknownEntry { what: "ACL", .. })
    ));
}

#[test]
fn an_image_clone_is_equal_and_apply_sets_the_provenance() {
    let delta = replay_all(&MetadataImage::empty(), &[topic_record("a", T)]);
    let p = MetadataProvenance {
        last_offset: 12,
        last_epoch: 3,
    };
    let image = delta.apply(p);
    assert_eq!(image.provenance(), p);
    assert_eq!(image.clone(), image);
    assert_ne!(delta.apply(MetadataProvenance::default()), image);
    assert!(delta.base().is_empty());
}

// --- Local replica changes ----------------------------------------------------------------------

fn names(list: &[LocalPartition]) -> Vec<(String, i32)> {
    list.iter()
        .map(|p| (p.topic_name.clone(), p.partition))
        .collect()
}

#[test]
fn new_partitions_are_leaders_elected_leaders_or_followers() {
    let delta = replay_all(
        &MetadataImage::empty(),
        &[
            topic_record("a", T),
            partition_record(T, 0, &[1, 2], 1),
            partition_record(T, 1, &[2, 1], 2),
            partition_record(T, 2, &[3], 3),
        ],
    );
    let c = delta.local_changes(1);
    assert_eq!(names(&c.leaders), vec![("a".into(), 0)]);
    assert_eq!(names(&c.elected_leaders), vec![("a".into(), 0)]);
    assert_eq!(names(&c.followers), vec![("a".into(), 1)]);
    assert!(c.deletes.is_empty());
    assert_eq!(c.leaders[0].topic_id, T);
    assert_eq!(c.leaders[0].registration.replicas, vec![1, 2]);
    assert!(delta.local_changes(4).is_empty());
}

#[test]
fn an_isr_change_is_a_leader_change_but_not_an_election() {
    let image = image_of(&[topic_record("a", T), partition_record(T, 0, &[1, 2], 1)]);
    let delta = replay_all(
        &image,
        &[PartitionChangeRecord {
            isr: Some(vec![1].into()),
            ..change()
        }
        .into()],
    );
    let leader = delta.local_changes(1);
    assert_eq!(leader.leaders.len(), 1);
    assert!(leader.elected_leaders.is_empty());
    let follower = delta.local_changes(2);
    assert_eq!(names(&follower.followers), vec![("a".into(), 0)]);
    assert_eq!(follower.followers[0].registration.partition_epoch, 1);
}

#[test]
fn an_election_moves_leadership() {
    let image = image_of(&[topic_record("a", T), partition_record(T, 0, &[1, 2], 1)]);
    let delta = replay_all(
        &image,
        &[PartitionChangeRecord {
            leader: 2,
            ..change()
        }
        .into()],
    );
    let new_leader = delta.local_changes(2);
    assert_eq!(new_leader.elected_leaders.len(), 1);
    assert_eq!(new_leader.elected_leaders[0].registration.leader_epoch, 1);
    let old_leader = delta.local_changes(1);
    assert_eq!(names(&old_leader.followers), vec![("a".into(), 0)]);
    assert!(old_leader.leaders.is_empty());
}

#[test]
fn dropping_a_replica_or_removing_the_topic_is_a_delete() {
    let image = image_of(&[
        topic_record("a", T),
        partition_record(T, 0, &[1, 2], 1),
        partition_record(T, 1, &[2], 2),
    ]);
    let delta = replay_all(
        &image,
        &[PartitionChangeRecord {
            replicas: Some(vec![1].into()),
            isr: Some(vec![1].into()),
            ..change()
        }
        .into()],
    );
    let c = delta.local_changes(2);
    assert_eq!(c.deletes.len(), 1);
    assert_eq!(
        (c.deletes[0].partition, c.deletes[0].topic_deleted),
        (0, false)
    );
    assert_eq!(c.deletes[0].previous.replicas, vec![1, 2]);

    let delta = replay_all(
        &image,
        &[RemoveTopicRecord {
            topic_id: T,
            ..Default::default()
        }
        .into()],
    );
    let c = delta.local_changes(2);
    assert_eq!(
        c.deletes
            .iter()
            .map(|d| (d.partition, d.topic_deleted))
            .collect::<Vec<_>>(),
        vec![(0, true), (1, true)]
    );
    assert_eq!(delta.local_changes(1).deletes.len(), 1);
    assert!(delta.local_changes(3).is_empty());
    let next = delta.apply(MetadataProvenance::default());
    assert_eq!(LocalReplicaChanges::between(&image, &next, 2), c);
}

#[test]
fn an_unchanged_partition_is_not_reported_between_images() {
    let image = image_of(&[
        topic_record("a", T),
        partition_record(T, 0, &[1, 2], 1),
        topic_record("b", U),
        partition_record(U, 0, &[1], 1),
    ]);
    let delta = replay_all(
        &image,
        &[PartitionChangeRecord {
            leader: 2,
            ..change()
        }
        .into()],
    );
    let next = delta.apply(MetadataProvenance::default());
    assert_eq!(
        LocalReplicaChanges::between(&image, &next, 1),
        delta.local_changes(1)
    );
    assert_eq!(
        LocalReplicaChanges::between(&image, &next, 2),
        delta.local_changes(2)
    );
    assert!(LocalReplicaChanges::between(&next, &next, 1).is_empty());
}
