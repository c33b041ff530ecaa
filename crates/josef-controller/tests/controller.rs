//! One test per controller rule (C3–C8, C11, C12 of the cluster semantics), through the public
//! handlers and a driver that commits each batch at once.

mod common;

use common::{reassign, Harness, CLUSTER_ID};
use josef_controller::{
    Controller, ControllerConfig, MetadataRecord, WriteContext, NO_LEADER, TOPIC_RESOURCE,
};
use josef_protocol::messages::alter_partition_request::{BrokerState, PartitionData, TopicData};
use josef_protocol::messages::create_topics_request::{
    CreatableReplicaAssignment, CreatableTopic, CreatableTopicConfig,
};
use josef_protocol::messages::delete_topics_request::DeleteTopicState;
use josef_protocol::messages::elect_leaders_request::TopicPartitions;
use josef_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use josef_protocol::messages::*;
use josef_protocol::{ErrorCode, Uuid};

fn config() -> ControllerConfig {
    ControllerConfig {
        node_id: 100,
        broker_session_timeout_ms: 9000,
        seed: 7,
        ..Default::default()
    }
}

fn code(e: ErrorCode) -> i16 {
    e.code()
}

/// A new cluster starts with the configured features (Kafka 4.0: `transaction.version` 2) in its
/// bootstrap batch, after metadata.version and the cluster id; level 0 is not written.
#[test]
fn bootstrap_batch_finalizes_the_configured_features() {
    let h = Harness::new(ControllerConfig {
        bootstrap_features: vec![
            ("transaction.version".into(), 2),
            ("group.version".into(), 0),
        ],
        ..config()
    });
    assert_eq!(h.log[0].1.len(), 3);
    assert!(matches!(h.log[0].1[1], MetadataRecord::ClusterId(_)));
    assert_eq!(h.c.feature_level("transaction.version"), Some(2));
    assert_eq!(h.c.feature_level("group.version"), None);
    // A controller taking over an existing cluster writes nothing.
    let mut other = h.replayed();
    assert!(other
        .activate(h.ctx(), 2, "another".into())
        .records
        .is_empty());
    assert_eq!(other.feature_level("transaction.version"), Some(2));
}

#[test]
fn bootstrap_batch_once_and_standby_answers_not_controller() {
    let h = Harness::new(config());
    assert_eq!(h.log.len(), 1);
    assert!(matches!(h.log[0].1[0], MetadataRecord::FeatureLevel(_)));
    assert!(matches!(h.log[0].1[1], MetadataRecord::ClusterId(_)));
    assert_eq!(h.c.cluster_id(), Some(CLUSTER_ID));
    assert_eq!(h.c.image().cluster_id(), Some(CLUSTER_ID));
    // A controller that replayed the log activates without a bootstrap batch.
    let mut other = h.replayed();
    assert!(!other.is_active());
    let req = BrokerRegistrationRequest {
        broker_id: 1,
        cluster_id: CLUSTER_ID.into(),
        ..Default::default()
    };
    let r = other.register_broker(h.ctx(), &req);
    assert_eq!(r.response.error_code, code(ErrorCode::NotController));
    assert!(r.records.is_empty());
    let r = other.activate(h.ctx(), 2, "another".into());
    assert!(r.records.is_empty());
    assert_eq!((other.is_active(), other.epoch()), (true, 2));
    other.deactivate();
    assert!(!other.is_active());
}

#[test]
fn registration_epoch_is_the_batch_offset_and_starts_fenced() {
    let mut h = Harness::new(config());
    let next = h.ctx().next_offset as i64;
    let epoch = h.register_incarnation(1, 11, None);
    assert_eq!(epoch, next);
    assert!(h.c.broker(1).unwrap().fenced);
    // Behind its registration offset: stays fenced, not caught up.
    let req = BrokerHeartbeatRequest {
        broker_id: 1,
        broker_epoch: epoch,
        current_metadata_offset: epoch - 1,
        ..Default::default()
    };
    let r = h.c.broker_heartbeat(h.ctx(), &req);
    assert!(r.records.is_empty());
    assert!(r.response.is_fenced && !r.response.is_caught_up);
    // want_fence keeps it fenced.
    assert!(h.heartbeat(1, epoch, true, false).is_fenced);
    // Caught up: unfenced.
    let r = h.heartbeat(1, epoch, false, false);
    assert!(!r.is_fenced && r.is_caught_up);
    assert!(!h.c.broker(1).unwrap().fenced);
}

#[test]
fn registration_errors_and_incarnations() {
    let mut h = Harness::new(config());
    let e1 = h.add_broker(1, None);
    // Same incarnation (a retry): same epoch, flags kept.
    let again = h.register_incarnation(1, 1001, None);
    assert_eq!(again, e1);
    assert!(!h.c.broker(1).unwrap().fenced);
    // Another incarnation while the session is valid.
    let req = BrokerRegistrationRequest {
        broker_id: 1,
        cluster_id: CLUSTER_ID.into(),
        incarnation_id: Uuid::from_u128(99),
        ..Default::default()
    };
    let r = h.c.register_broker(h.ctx(), &req);
    assert_eq!(
        r.response.error_code,
        code(ErrorCode::DuplicateBrokerRegistration)
    );
    // Wrong cluster id.
    let bad = BrokerRegistrationRequest {
        cluster_id: "other".into(),
        ..req.clone()
    };
    let r = h.c.register_broker(h.ctx(), &bad);
    assert_eq!(
        r.response.error_code,
        code(ErrorCode::InconsistentClusterId)
    );
    // metadata.version outside the broker's range.
    let old = BrokerRegistrationRequest {
        broker_id: 2,
        features: vec![broker_registration_request::Feature {
            name: "metadata.version".into(),
            min_supported_version: 1,
            max_supported_version: 7,
            ..Default::default()
        }],
        ..req.clone()
    };
    let r = h.c.register_broker(h.ctx(), &old);
    assert_eq!(r.response.error_code, code(ErrorCode::UnsupportedVersion));
    // After the session expires, the new incarnation registers with a larger epoch.
    h.now += 9001;
    let e2 = h.register_incarnation(1, 99, None);
    assert!(e2 > e1);
    assert!(h.c.broker(1).unwrap().fenced);
    // The old epoch is stale now.
    let r = h.heartbeat(1, e1, false, false);
    assert_eq!(r.error_code, code(ErrorCode::StaleBrokerEpoch));
    let r = h.heartbeat(7, 1, false, false);
    assert_eq!(r.error_code, code(ErrorCode::StaleBrokerEpoch));
}

#[test]
fn new_incarnation_of_a_leader_leaves_its_isrs_first() {
    let mut h = Harness::new(config());
    h.add_brokers(3);
    assert_eq!(h.create_topic("t", 3, 3), 0);
    h.now += 9001; // every session expired, nothing fenced yet
    let led_by_1: Vec<i32> = (0..3)
        .filter(|&i| h.partition("t", i).leader == 1)
        .collect();
    assert!(!led_by_1.is_empty());
    h.register_incarnation(1, 555, None);
    for i in 0..3 {
        let p = h.partition("t", i);
        assert_ne!(p.leader, 1, "a fenced registration leads nothing");
        assert!(!p.isr.contains(&1));
    }
}

#[test]
fn session_expiry_fences_one_broker_per_tick_and_keeps_last_isr_member() {
    let mut h = Harness::new(config());
    let epochs = h.add_brokers(2);
    assert_eq!(h.create_topic("t", 2, 2), 0);
    assert_eq!(h.create_topic("one", 1, 1), 0);
    let lone = h.partition("one", 0).leader;
    // Nobody heartbeats: both sessions expire.
    h.now += 9001;
    let r = h.c.tick(h.ctx());
    assert!(!r.records.is_empty());
    h.commit(r);
    let fenced: Vec<i32> = h.c.brokers().filter(|b| b.fenced).map(|b| b.id).collect();
    assert_eq!(fenced.len(), 1, "one broker per tick");
    let first = fenced[0];
    for i in 0..2 {
        let p = h.partition("t", i);
        assert!(!p.isr.contains(&first));
        assert_ne!(p.leader, first);
        assert!(p.isr.contains(&p.leader));
    }
    let r = h.c.tick(h.ctx());
    h.commit(r);
    assert!(h.c.brokers().all(|b| b.fenced));
    // Both fenced: every partition keeps its last ISR member, without a leader.
    for (t, i) in [("t", 0), ("t", 1), ("one", 0)] {
        let p = h.partition(t, i);
        assert_eq!(p.leader, NO_LEADER);
        assert_eq!(p.isr.len(), 1);
    }
    assert_eq!(h.partition("one", 0).isr, vec![lone]);
    assert!(h.c.tick(h.ctx()).records.is_empty());
    // The lone member comes back: it is re-elected cleanly where it is the last ISR member.
    let epoch = epochs[(lone - 1) as usize];
    let before = h.partition("one", 0).leader_epoch;
    assert!(!h.heartbeat(lone, epoch, false, false).is_fenced);
    let p = h.partition("one", 0);
    assert_eq!(p.leader, lone);
    assert_eq!(p.leader_epoch, before + 1);
}

#[test]
fn heartbeats_keep_sessions_and_expired_unfenced_brokers_are_fenced() {
    let mut h = Harness::new(config());
    h.add_brokers(3);
    for _ in 0..5 {
        h.now += 5000;
        h.heartbeat_all();
        assert_eq!(h.tick_all(), 0);
    }
    assert_eq!(h.c.next_deadline_ms(), Some(h.now + 9001));
    // Broker 3 goes silent.
    let e: Vec<(i32, i64)> = h.c.brokers().map(|b| (b.id, b.epoch)).collect();
    h.now += 5000;
    h.heartbeat(1, e[0].1, false, false);
    h.heartbeat(2, e[1].1, false, false);
    h.now += 5000;
    h.heartbeat(1, e[0].1, false, false);
    h.heartbeat(2, e[1].1, false, false);
    assert_eq!(h.tick_all(), 1);
    assert!(h.c.broker(3).unwrap().fenced);
    assert!(!h.c.broker(1).unwrap().fenced);
}

#[test]
fn controlled_shutdown_moves_leaderships_then_shutdown_now() {
    let mut h = Harness::new(config());
    let epochs = h.add_brokers(3);
    assert_eq!(h.create_topic("t", 6, 3), 0);
    assert_eq!(h.create_topic("solo", 1, 1), 0);
    let solo_leader = h.partition("solo", 0).leader;
    let b = solo_leader;
    let e = epochs[(b - 1) as usize];
    assert!((0..6).any(|i| h.partition("t", i).leader == b));
    let r = h.heartbeat(b, e, false, true);
    assert!(!r.should_shut_down && !r.is_fenced);
    let info = h.c.broker(b).unwrap();
    assert!(info.in_controlled_shutdown);
    for i in 0..6 {
        let p = h.partition("t", i);
        assert_ne!(p.leader, b);
        assert!(!p.isr.contains(&b));
    }
    // RF 1: offline for the duration, the ISR keeps the broker.
    let s = h.partition("solo", 0);
    assert_eq!((s.leader, s.isr.clone()), (NO_LEADER, vec![b]));
    // Not every active broker has seen the shutdown offset yet: keep waiting.
    let r = h.heartbeat(b, e, false, true);
    assert!(!r.should_shut_down);
    // The others report an offset past it: SHUTDOWN_NOW, fenced.
    for id in (1..=3).filter(|&i| i != b) {
        h.heartbeat(id, epochs[(id - 1) as usize], false, false);
    }
    let r = h.heartbeat(b, e, false, true);
    assert!(r.should_shut_down && r.is_fenced);
    assert!(h.c.broker(b).unwrap().fenced);
    // Shut down means gone: the same registration is not unfenced again, a restart registers.
    let r = h.heartbeat(b, e, false, false);
    assert!(r.is_fenced);
    let again = h.register_incarnation(b, 4242, None);
    assert!(again > e);
    assert!(!h.heartbeat(b, again, false, false).is_fenced);
    assert!(h.c.image().is_active(b));
}

#[test]
fn shutdown_of_a_broker_leading_nothing_is_immediate() {
    let mut h = Harness::new(config());
    let epochs = h.add_brokers(2);
    let r = h.heartbeat(2, epochs[1], false, true);
    assert!(r.should_shut_down && r.is_fenced);
    // A fenced broker wanting to shut down: SHUTDOWN_NOW without records.
    let req = BrokerHeartbeatRequest {
        broker_id: 2,
        broker_epoch: epochs[1],
        want_shut_down: true,
        current_metadata_offset: h.offset as i64,
        ..Default::default()
    };
    let r = h.c.broker_heartbeat(h.ctx(), &req);
    assert!(r.records.is_empty() && r.response.should_shut_down);
}

#[test]
fn controlled_shutdown_api_7() {
    let mut h = Harness::new(config());
    let epochs = h.add_brokers(3);
    assert_eq!(h.create_topic("t", 3, 3), 0);
    let stale = ControlledShutdownRequest {
        broker_id: 1,
        broker_epoch: epochs[0] - 1,
        ..Default::default()
    };
    let r = h.c.controlled_shutdown(h.ctx(), &stale);
    assert_eq!(r.response.error_code, code(ErrorCode::StaleBrokerEpoch));
    let unknown = ControlledShutdownRequest {
        broker_id: 9,
        broker_epoch: -1,
        ..Default::default()
    };
    let r = h.c.controlled_shutdown(h.ctx(), &unknown);
    assert_eq!(r.response.error_code, code(ErrorCode::BrokerNotAvailable));
    let req = ControlledShutdownRequest {
        broker_id: 1,
        broker_epoch: epochs[0],
        ..Default::default()
    };
    let r = h.c.controlled_shutdown(h.ctx(), &req);
    let resp = h.commit(r);
    assert_eq!(resp.error_code, 0);
    assert!(resp.remaining_partitions.is_empty());
    assert!((0..3).all(|i| h.partition("t", i).leader != 1));
}

#[test]
fn unregister_broker() {
    let mut h = Harness::new(config());
    h.add_brokers(2);
    assert_eq!(h.create_topic("t", 2, 2), 0);
    let r = h.c.unregister_broker(
        h.ctx(),
        &UnregisterBrokerRequest {
            broker_id: 5,
            ..Default::default()
        },
    );
    assert_eq!(
        r.response.error_code,
        code(ErrorCode::BrokerIdNotRegistered)
    );
    let r = h.c.unregister_broker(
        h.ctx(),
        &UnregisterBrokerRequest {
            broker_id: 2,
            ..Default::default()
        },
    );
    assert_eq!(h.commit(r).error_code, 0);
    assert!(h.c.broker(2).is_none());
    for i in 0..2 {
        assert_eq!(h.partition("t", i).isr, vec![1]);
        assert_eq!(h.partition("t", i).leader, 1);
    }
}

fn topic(name: &str, partitions: i32, rf: i16) -> CreatableTopic {
    CreatableTopic {
        name: name.into(),
        num_partitions: partitions,
        replication_factor: rf,
        ..Default::default()
    }
}

fn create(
    h: &mut Harness,
    topics: Vec<CreatableTopic>,
    validate_only: bool,
) -> Vec<(i16, i32, i16)> {
    let req = CreateTopicsRequest {
        topics,
        validate_only,
        ..Default::default()
    };
    let r = h.c.create_topics(h.ctx(), &req, 7);
    h.commit(r)
        .topics
        .iter()
        .map(|t| (t.error_code, t.num_partitions, t.replication_factor))
        .collect()
}

#[test]
fn create_topics_errors() {
    let mut h = Harness::new(config());
    h.add_brokers(3);
    let with_config = |name: &str, k: &str, v: Option<&str>| CreatableTopic {
        configs: vec![CreatableTopicConfig {
            name: k.into(),
            value: v.map(Into::into),
            ..Default::default()
        }],
        ..topic(name, 1, 1)
    };
    let manual = |name: &str, lists: &[&[i32]], n: i32, rf: i16| CreatableTopic {
        assignments: lists
            .iter()
            .enumerate()
            .map(|(i, b)| CreatableReplicaAssignment {
                partition_index: i as i32,
                broker_ids: b.to_vec().into(),
                ..Default::default()
            })
            .collect(),
        ..topic(name, n, rf)
    };
    let cases: Vec<(CreatableTopic, ErrorCode)> = vec![
        (topic("bad name", 1, 1), ErrorCode::InvalidTopicException),
        (topic("__cluster_metadata", 1, 1), ErrorCode::InvalidRequest),
        (topic("zero-rf", 1, 0), ErrorCode::InvalidReplicationFactor),
        (topic("neg-rf", 1, -2), ErrorCode::InvalidReplicationFactor),
        (topic("zero-parts", 0, 1), ErrorCode::InvalidPartitions),
        (topic("rf4", 1, 4), ErrorCode::InvalidReplicationFactor),
        (
            with_config("cfg1", "no.such.config", Some("1")),
            ErrorCode::InvalidConfig,
        ),
        (
            with_config("cfg2", "retention.ms", None),
            ErrorCode::InvalidConfig,
        ),
        (
            with_config("cfg3", "retention.ms", Some("soon")),
            ErrorCode::InvalidConfig,
        ),
        (manual("m1", &[&[1, 2]], 1, -1), ErrorCode::InvalidRequest),
        (manual("m2", &[&[1, 2]], -1, 2), ErrorCode::InvalidRequest),
        (
            manual("m3", &[&[1, 1]], -1, -1),
            ErrorCode::InvalidReplicaAssignment,
        ),
        (
            manual("m4", &[&[1, 9]], -1, -1),
            ErrorCode::InvalidReplicaAssignment,
        ),
        (
            manual("m5", &[&[1, 2], &[3]], -1, -1),
            ErrorCode::InvalidReplicaAssignment,
        ),
        (
            manual("m6", &[&[]], -1, -1),
            ErrorCode::InvalidReplicaAssignment,
        ),
    ];
    for (t, expected) in cases {
        let name = t.name.to_string();
        let got = create(&mut h, vec![t], false)[0].0;
        assert_eq!(got, code(expected), "{name}");
    }
    assert_eq!(h.c.topics().count(), 0);
    // Duplicates in one request: both refused.
    let r = create(&mut h, vec![topic("dup", 1, 1), topic("dup", 1, 1)], false);
    assert!(r.iter().all(|x| x.0 == code(ErrorCode::InvalidRequest)));
    // validate_only: checked, nothing written.
    let r = create(&mut h, vec![topic("v", 3, 2)], true);
    assert_eq!(r, vec![(0, 3, 2)]);
    assert!(h.c.topic("v").is_none());
    // -1 = the defaults.
    let r = create(&mut h, vec![topic("defaults", -1, -1)], false);
    assert_eq!(r, vec![(0, 1, 1)]);
    assert_eq!(h.create_topic("a.b", 1, 1), 0);
    assert_eq!(
        h.create_topic("a.b", 1, 1),
        code(ErrorCode::TopicAlreadyExists)
    );
    assert_eq!(
        h.create_topic("a_b", 1, 1),
        code(ErrorCode::InvalidTopicException)
    );
    // A manual assignment.
    let r = create(
        &mut h,
        vec![manual("m", &[&[3, 1], &[2, 3]], -1, -1)],
        false,
    );
    assert_eq!(r[0].0, 0);
    assert_eq!(h.partition("m", 0).replicas, vec![3, 1]);
    assert_eq!(h.partition("m", 0).leader, 3);
    assert_eq!(h.partition("m", 1).isr, vec![2, 3]);
    // Configs are kept as ConfigRecords.
    let r = create(
        &mut h,
        vec![with_config("c", "cleanup.policy", Some("compact"))],
        false,
    );
    assert_eq!(r[0].0, 0);
    assert_eq!(
        h.c.config_value(TOPIC_RESOURCE, "c", "cleanup.policy"),
        Some("compact")
    );
    assert_eq!(
        h.c.image().topic_config("c").unwrap()["cleanup.policy"],
        "compact"
    );
}

#[test]
fn new_partitions_skip_fenced_replicas_in_isr_and_leadership() {
    let mut h = Harness::new(config());
    h.add_brokers(2);
    h.register_incarnation(3, 3, None); // fenced
    assert_eq!(h.create_topic("t", 6, 3), 0);
    for i in 0..6 {
        let p = h.partition("t", i);
        assert_eq!(p.replicas.len(), 3);
        assert!(!p.isr.contains(&3));
        assert_ne!(p.leader, 3);
        assert_eq!(p.leader, p.isr[0]);
        assert_eq!((p.leader_epoch, p.partition_epoch), (0, 0));
    }
}

#[test]
fn delete_topics_and_create_partitions() {
    let mut h = Harness::new(config());
    h.add_brokers(3);
    assert_eq!(h.create_topic("t", 2, 2), 0);
    assert_eq!(h.create_topic("u", 1, 1), 0);
    let id = h.topic_id("u");
    // CreatePartitions.
    let cp = |name: &str, count: i32, assignments: Option<Vec<Vec<i32>>>| CreatePartitionsRequest {
        topics: vec![create_partitions_request::CreatePartitionsTopic {
            name: name.into(),
            count,
            assignments: assignments.map(|a| {
                a.into_iter()
                    .map(|b| create_partitions_request::CreatePartitionsAssignment {
                        broker_ids: b.into(),
                        ..Default::default()
                    })
                    .collect()
            }),
            ..Default::default()
        }],
        ..Default::default()
    };
    let run = |h: &mut Harness, req: CreatePartitionsRequest| {
        let r = h.c.create_partitions(h.ctx(), &req);
        h.commit(r).results[0].error_code
    };
    assert_eq!(
        run(&mut h, cp("nope", 3, None)),
        code(ErrorCode::UnknownTopicOrPartition)
    );
    assert_eq!(
        run(&mut h, cp("t", 2, None)),
        code(ErrorCode::InvalidPartitions)
    );
    assert_eq!(
        run(&mut h, cp("t", 1, None)),
        code(ErrorCode::InvalidPartitions)
    );
    assert_eq!(
        run(&mut h, cp("t", 4, Some(vec![vec![1, 2]]))),
        code(ErrorCode::InvalidReplicaAssignment)
    );
    assert_eq!(
        run(&mut h, cp("t", 3, Some(vec![vec![1]]))),
        code(ErrorCode::InvalidReplicaAssignment)
    );
    assert_eq!(run(&mut h, cp("t", 3, Some(vec![vec![3, 1]]))), 0);
    assert_eq!(h.partition("t", 2).replicas, vec![3, 1]);
    assert_eq!(run(&mut h, cp("t", 5, None)), 0);
    assert_eq!(h.c.topic("t").unwrap().partitions.len(), 5);
    assert!(h
        .c
        .topic("t")
        .unwrap()
        .partitions
        .values()
        .all(|p| p.replicas.len() == 2));
    // DeleteTopics by name (v0-5) and by id (v6+).
    let req = DeleteTopicsRequest {
        topic_names: vec!["t".into(), "nope".into()],
        ..Default::default()
    };
    let r = h.c.delete_topics(h.ctx(), &req, 5);
    let resp = h.commit(r);
    assert_eq!(resp.responses[0].error_code, 0);
    assert_eq!(
        resp.responses[1].error_code,
        code(ErrorCode::UnknownTopicOrPartition)
    );
    assert!(h.c.topic("t").is_none());
    let req = DeleteTopicsRequest {
        topics: vec![
            DeleteTopicState {
                name: None,
                topic_id: Uuid::from_u128(12345),
                ..Default::default()
            },
            DeleteTopicState {
                name: Some("u".into()),
                topic_id: id,
                ..Default::default()
            },
        ],
        ..Default::default()
    };
    let r = h.c.delete_topics(h.ctx(), &req, 6);
    let codes: Vec<i16> = r.response.responses.iter().map(|r| r.error_code).collect();
    assert_eq!(
        codes,
        vec![
            code(ErrorCode::UnknownTopicId),
            code(ErrorCode::InvalidRequest)
        ]
    );
    let req = DeleteTopicsRequest {
        topics: vec![DeleteTopicState {
            name: None,
            topic_id: id,
            ..Default::default()
        }],
        ..Default::default()
    };
    let r = h.c.delete_topics(h.ctx(), &req, 6);
    let resp = h.commit(r);
    assert_eq!(resp.responses[0].error_code, 0);
    assert_eq!(resp.responses[0].name.as_deref(), Some("u"));
    assert_eq!(h.c.topics().count(), 0);
    assert!(h.c.image().topics().next().is_none());
}

#[allow(clippy::too_many_arguments)]
fn alter(
    h: &mut Harness,
    broker: i32,
    epoch: i64,
    topic: &str,
    partition: i32,
    leader_epoch: i32,
    partition_epoch: i32,
    isr: &[(i32, i64)],
) -> (i16, alter_partition_response::PartitionData) {
    let topic_id = h.c.topic(topic).map_or(Uuid::ZERO, |t| t.id);
    let req = common::alter_partition_request(
        broker,
        epoch,
        topic_id,
        partition,
        leader_epoch,
        partition_epoch,
        isr,
        0,
    );
    let r = h.c.alter_partition(h.ctx(), &req, 3);
    let resp = h.commit(r);
    let p = resp
        .topics
        .first()
        .map(|t| t.partitions[0].clone())
        .unwrap_or_default();
    (resp.error_code, p)
}

#[test]
fn alter_partition_fencing_and_validation() {
    let mut h = Harness::new(config());
    let ep = h.add_brokers(3);
    let e = |b: i32| ep[(b - 1) as usize];
    assert_eq!(h.create_topic("t", 1, 3), 0);
    let p = h.partition("t", 0);
    let l = p.leader;
    let others: Vec<i32> = p.isr.iter().copied().filter(|&b| b != l).collect();
    // Stale sender epoch: the whole request.
    let (top, _) = alter(&mut h, l, e(l) - 1, "t", 0, 0, 0, &[(l, e(l))]);
    assert_eq!(top, code(ErrorCode::StaleBrokerEpoch));
    let ok = |code: i16| code;
    // Shrink to the leader only.
    let (top, r) = alter(&mut h, l, e(l), "t", 0, 0, 0, &[(l, e(l))]);
    assert_eq!((top, ok(r.error_code)), (0, 0));
    assert_eq!((r.leader_id, r.leader_epoch, r.partition_epoch), (l, 0, 1));
    assert_eq!(r.isr.to_vec(), vec![l]);
    // Old partition epoch: INVALID_UPDATE_VERSION; newer: NOT_CONTROLLER.
    let (_, r) = alter(&mut h, l, e(l), "t", 0, 0, 0, &[(l, e(l))]);
    assert_eq!(r.error_code, code(ErrorCode::InvalidUpdateVersion));
    let (_, r) = alter(&mut h, l, e(l), "t", 0, 0, 5, &[(l, e(l))]);
    assert_eq!(r.error_code, code(ErrorCode::NotController));
    let (_, r) = alter(&mut h, l, e(l), "t", 0, 3, 1, &[(l, e(l))]);
    assert_eq!(r.error_code, code(ErrorCode::NotController));
    // Not the leader.
    let f = others[0];
    let (_, r) = alter(&mut h, f, e(f), "t", 0, 0, 1, &[(f, e(f))]);
    assert_eq!(r.error_code, code(ErrorCode::InvalidRequest));
    // ISR without the leader, with a duplicate, or with a non-replica.
    for isr in [
        vec![(f, e(f))],
        vec![(l, e(l)), (l, e(l))],
        vec![(l, e(l)), (9, 1)],
    ] {
        let (_, r) = alter(&mut h, l, e(l), "t", 0, 0, 1, &isr);
        assert_eq!(r.error_code, code(ErrorCode::InvalidRequest), "{isr:?}");
    }
    // A member with the wrong broker epoch, or fenced: INELIGIBLE_REPLICA.
    let (_, r) = alter(&mut h, l, e(l), "t", 0, 0, 1, &[(l, e(l)), (f, e(f) + 1)]);
    assert_eq!(r.error_code, code(ErrorCode::IneligibleReplica));
    h.heartbeat(f, e(f), true, false); // f asks to be fenced
    let (_, r) = alter(&mut h, l, e(l), "t", 0, 0, 1, &[(l, e(l)), (f, e(f))]);
    assert_eq!(r.error_code, code(ErrorCode::IneligibleReplica));
    // Expand with the other follower: the leader epoch stays.
    let g = others[1];
    let (_, r) = alter(&mut h, l, e(l), "t", 0, 0, 1, &[(l, e(l)), (g, -1)]);
    assert_eq!(r.error_code, 0);
    assert_eq!((r.leader_epoch, r.partition_epoch), (0, 2));
    // Unknown topic id.
    let (_, r) = alter(&mut h, l, e(l), "gone", 0, 0, 2, &[(l, e(l))]);
    assert_eq!(r.error_code, code(ErrorCode::UnknownTopicId));
    // A leader epoch behind: FENCED_LEADER_EPOCH (after a leader change).
    h.heartbeat(l, e(l), true, false);
    let now = h.partition("t", 0);
    assert_eq!(now.leader, g);
    assert_eq!(now.leader_epoch, 1);
    let (_, r) = alter(
        &mut h,
        g,
        e(g),
        "t",
        0,
        0,
        now.partition_epoch,
        &[(g, e(g))],
    );
    assert_eq!(r.error_code, code(ErrorCode::FencedLeaderEpoch));
}

/// AlterPartition at the partition's current epochs.
fn alter_current(
    h: &mut Harness,
    broker: i32,
    epoch: i64,
    topic: &str,
    partition: i32,
    isr: &[(i32, i64)],
) -> (i16, alter_partition_response::PartitionData) {
    let p = h.partition(topic, partition);
    alter(
        h,
        broker,
        epoch,
        topic,
        partition,
        p.leader_epoch,
        p.partition_epoch,
        isr,
    )
}

#[test]
fn elect_leaders_preferred_and_unclean() {
    let mut h = Harness::new(config());
    let ep = h.add_brokers(2);
    assert_eq!(h.create_topic("t", 1, 2), 0);
    let p = h.partition("t", 0);
    let preferred = p.replicas[0];
    let other = p.replicas[1];
    let elect = |h: &mut Harness, t: i8, parts: Option<Vec<(&str, i32)>>| {
        let req = ElectLeadersRequest {
            election_type: t,
            topic_partitions: parts.map(|ps| {
                ps.into_iter()
                    .map(|(t, p)| TopicPartitions {
                        topic: t.into(),
                        partitions: vec![p].into(),
                        ..Default::default()
                    })
                    .collect()
            }),
            ..Default::default()
        };
        let r = h.c.elect_leaders(h.ctx(), &req, 2);
        h.commit(r)
    };
    let codes = |r: &ElectLeadersResponse| -> Vec<i16> {
        r.replica_election_results
            .iter()
            .flat_map(|t| t.partition_result.iter().map(|p| p.error_code))
            .collect()
    };
    let r = elect(&mut h, 0, Some(vec![("t", 0), ("nope", 0), ("t", 9)]));
    assert_eq!(
        codes(&r),
        vec![
            code(ErrorCode::ElectionNotNeeded),
            code(ErrorCode::UnknownTopicOrPartition),
            code(ErrorCode::UnknownTopicOrPartition)
        ]
    );
    assert_eq!(
        elect(&mut h, 5, None).error_code,
        code(ErrorCode::InvalidRequest)
    );
    // The preferred replica is fenced: leadership moves; it cannot come back while fenced.
    h.heartbeat(preferred, ep[(preferred - 1) as usize], true, false);
    assert_eq!(h.partition("t", 0).leader, other);
    let r = elect(&mut h, 0, Some(vec![("t", 0)]));
    assert_eq!(
        codes(&r),
        vec![code(ErrorCode::PreferredLeaderNotAvailable)]
    );
    // Null partitions = all; ELECTION_NOT_NEEDED is left out, others kept.
    let r = elect(&mut h, 0, None);
    assert_eq!(
        codes(&r),
        vec![code(ErrorCode::PreferredLeaderNotAvailable)]
    );
    // Back and caught up (the ISR regains it through AlterPartition), then preferred election.
    h.heartbeat(preferred, ep[(preferred - 1) as usize], false, false);
    let (_, r) = alter_current(
        &mut h,
        other,
        ep[(other - 1) as usize],
        "t",
        0,
        &[(other, -1), (preferred, -1)],
    );
    assert_eq!(r.error_code, 0);
    let r = elect(&mut h, 0, Some(vec![("t", 0)]));
    assert_eq!(codes(&r), vec![0]);
    assert_eq!(h.partition("t", 0).leader, preferred);
    // Unclean: only without a leader; ISR := [new leader], RECOVERING.
    assert_eq!(
        codes(&elect(&mut h, 1, Some(vec![("t", 0)]))),
        vec![code(ErrorCode::ElectionNotNeeded)]
    );
    let (_, r) = alter_current(
        &mut h,
        preferred,
        ep[(preferred - 1) as usize],
        "t",
        0,
        &[(preferred, -1)],
    );
    assert_eq!(r.error_code, 0);
    h.heartbeat(preferred, ep[(preferred - 1) as usize], true, false);
    let p = h.partition("t", 0);
    assert_eq!((p.leader, p.isr.clone()), (NO_LEADER, vec![preferred]));
    let r = elect(&mut h, 1, Some(vec![("t", 0)]));
    assert_eq!(codes(&r), vec![0]);
    let p = h.partition("t", 0);
    assert_eq!((p.leader, p.isr.clone()), (other, vec![other]));
    assert_eq!(
        p.leader_recovery_state,
        josef_controller::LeaderRecoveryState::Recovering
    );
}

fn inc_request(
    rt: i8,
    name: &str,
    ops: Vec<(&str, i8, Option<&str>)>,
) -> IncrementalAlterConfigsRequest {
    IncrementalAlterConfigsRequest {
        resources: vec![AlterConfigsResource {
            resource_type: rt,
            resource_name: name.into(),
            configs: ops
                .into_iter()
                .map(|(k, op, v)| AlterableConfig {
                    name: k.into(),
                    config_operation: op,
                    value: v.map(Into::into),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }],
        ..Default::default()
    }
}

#[test]
fn unclean_leader_election_topic_config_on_fencing() {
    let mut h = Harness::new(config());
    let ep = h.add_brokers(2);
    let manual = |name: &str, unclean: bool| CreatableTopic {
        assignments: vec![CreatableReplicaAssignment {
            partition_index: 0,
            broker_ids: vec![1, 2].into(),
            ..Default::default()
        }],
        configs: if unclean {
            vec![CreatableTopicConfig {
                name: "unclean.leader.election.enable".into(),
                value: Some("true".into()),
                ..Default::default()
            }]
        } else {
            Vec::new()
        },
        ..topic(name, -1, -1)
    };
    let r = create(
        &mut h,
        vec![manual("dirty", true), manual("clean", false)],
        false,
    );
    assert!(r.iter().all(|x| x.0 == 0));
    // Both ISRs shrink to the leader (1), then 1 is fenced.
    for t in ["dirty", "clean"] {
        let (_, r) = alter(&mut h, 1, ep[0], t, 0, 0, 0, &[(1, -1)]);
        assert_eq!(r.error_code, 0);
    }
    h.heartbeat(1, ep[0], true, false);
    let dirty = h.partition("dirty", 0);
    assert_eq!(
        (dirty.leader, dirty.isr.clone()),
        (2, vec![2]),
        "unclean election"
    );
    assert_eq!(
        dirty.leader_recovery_state,
        josef_controller::LeaderRecoveryState::Recovering
    );
    let clean = h.partition("clean", 0);
    assert_eq!(
        (clean.leader, clean.isr.clone()),
        (NO_LEADER, vec![1]),
        "clean: offline"
    );
    // The cluster-wide broker default turns it on for every topic without an override.
    let req = inc_request(
        4,
        "",
        vec![("unclean.leader.election.enable", 0, Some("true"))],
    );
    let r = h.c.incremental_alter_configs(h.ctx(), &req);
    assert_eq!(h.commit(r).responses[0].error_code, 0);
    // Broker 2 restarts (fenced, then unfenced): the leaderless partition gets it uncleanly.
    h.heartbeat(2, ep[1], true, false);
    h.heartbeat(2, ep[1], false, false);
    let clean = h.partition("clean", 0);
    assert_eq!((clean.leader, clean.isr.clone()), (2, vec![2]));
}

#[test]
fn reassignment_start_complete_cancel() {
    let mut h = Harness::new(config());
    let ep = h.add_brokers(4);
    let e = |b: i32| ep[(b - 1) as usize];
    let req = CreateTopicsRequest {
        topics: vec![CreatableTopic {
            assignments: vec![CreatableReplicaAssignment {
                partition_index: 0,
                broker_ids: vec![1, 2].into(),
                ..Default::default()
            }],
            ..topic("r", -1, -1)
        }],
        ..Default::default()
    };
    let r = h.c.create_topics(h.ctx(), &req, 7);
    assert_eq!(h.commit(r).topics[0].error_code, 0);
    assert_eq!(
        reassign(&mut h, "r", 0, None),
        code(ErrorCode::NoReassignmentInProgress)
    );
    assert_eq!(
        reassign(&mut h, "r", 0, Some(&[])),
        code(ErrorCode::InvalidReplicaAssignment)
    );
    assert_eq!(
        reassign(&mut h, "r", 0, Some(&[3, 3])),
        code(ErrorCode::InvalidReplicaAssignment)
    );
    assert_eq!(
        reassign(&mut h, "r", 0, Some(&[3, 9])),
        code(ErrorCode::InvalidReplicaAssignment)
    );
    assert_eq!(
        reassign(&mut h, "nope", 0, Some(&[3])),
        code(ErrorCode::UnknownTopicOrPartition)
    );
    // Start [1,2] -> [3,4].
    assert_eq!(reassign(&mut h, "r", 0, Some(&[3, 4])), 0);
    let p = h.partition("r", 0);
    assert_eq!(p.replicas, vec![3, 4, 1, 2]);
    assert_eq!(p.adding_replicas, vec![3, 4]);
    assert_eq!(p.removing_replicas, vec![1, 2]);
    assert_eq!(
        (p.leader, p.isr.clone(), p.leader_epoch),
        (1, vec![1, 2], 0)
    );
    let listed =
        h.c.list_partition_reassignments(&ListPartitionReassignmentsRequest::default());
    assert_eq!(listed.topics.len(), 1);
    assert_eq!(
        listed.topics[0].partitions[0].adding_replicas.to_vec(),
        vec![3, 4]
    );
    // Cancel: back to [1,2].
    assert_eq!(reassign(&mut h, "r", 0, None), 0);
    let p = h.partition("r", 0);
    assert_eq!(
        (p.replicas.clone(), p.is_reassigning()),
        (vec![1, 2], false)
    );
    // Start again, and let 3 and 4 join the ISR: the last join completes it.
    assert_eq!(reassign(&mut h, "r", 0, Some(&[3, 4])), 0);
    let (_, r) = alter_current(&mut h, 1, e(1), "r", 0, &[(1, -1), (2, -1), (3, -1)]);
    assert_eq!(r.error_code, 0);
    assert!(h.partition("r", 0).is_reassigning());
    let p = h.partition("r", 0);
    let (_, r) = alter_current(
        &mut h,
        1,
        e(1),
        "r",
        0,
        &[(1, -1), (2, -1), (3, -1), (4, -1)],
    );
    assert_eq!(
        r.error_code,
        code(ErrorCode::NewLeaderElected),
        "the leader was reassigned away"
    );
    let q = h.partition("r", 0);
    assert_eq!(q.replicas, vec![3, 4]);
    assert_eq!(q.isr, vec![3, 4]);
    assert_eq!(q.leader, 3);
    assert_eq!(q.leader_epoch, p.leader_epoch + 1);
    assert!(h
        .c
        .list_partition_reassignments(&ListPartitionReassignmentsRequest::default())
        .topics
        .is_empty());
    // Cancel that would need an unclean election: refused.
    assert_eq!(reassign(&mut h, "r", 0, Some(&[1, 2])), 0);
    let (_, r) = alter_current(&mut h, 3, e(3), "r", 0, &[(3, -1), (1, -1)]);
    assert_eq!(r.error_code, 0);
    let (_, r) = alter_current(&mut h, 3, e(3), "r", 0, &[(3, -1)]);
    assert_eq!(r.error_code, 0);
    // ISR = [3], 3 is being removed and 1, 2 are being added: the revert keeps 3.
    assert_eq!(reassign(&mut h, "r", 0, None), 0);
    assert_eq!(h.partition("r", 0).replicas, vec![3, 4]);
}

#[test]
fn producer_id_blocks_are_disjoint_and_survive_failover() {
    let mut h = Harness::new(config());
    let ep = h.add_brokers(2);
    let alloc = |h: &mut Harness, b: i32, e: i64| {
        let r = h.c.allocate_producer_ids(
            h.ctx(),
            &AllocateProducerIdsRequest {
                broker_id: b,
                broker_epoch: e,
                ..Default::default()
            },
        );
        h.commit(r)
    };
    let a = alloc(&mut h, 1, ep[0]);
    let b = alloc(&mut h, 2, ep[1]);
    assert_eq!(
        (a.error_code, a.producer_id_start, a.producer_id_len),
        (0, 0, 1000)
    );
    assert_eq!((b.producer_id_start, b.producer_id_len), (1000, 1000));
    let stale = alloc(&mut h, 1, ep[0] + 1);
    assert_eq!(stale.error_code, code(ErrorCode::StaleBrokerEpoch));
    // A new controller from the log continues after the last block.
    let mut c = h.replayed();
    c.activate(h.ctx(), 2, String::new());
    let r = c.allocate_producer_ids(
        h.ctx(),
        &AllocateProducerIdsRequest {
            broker_id: 1,
            broker_epoch: ep[0],
            ..Default::default()
        },
    );
    assert_eq!(r.response.producer_id_start, 2000);
    assert_eq!(c.image().next_producer_id(), 2000);
}

#[test]
fn auto_rebalance_returns_preferred_leaders_after_the_interval() {
    let mut h = Harness::new(ControllerConfig {
        leader_imbalance_check_interval_ms: 60_000,
        ..config()
    });
    let ep = h.add_brokers(3);
    assert_eq!(h.create_topic("t", 6, 3), 0);
    // Broker 1 restarts: fenced (leaderships move), then back and in the ISRs again.
    h.heartbeat(1, ep[0], true, false);
    h.heartbeat(1, ep[0], false, false);
    for i in 0..6 {
        let p = h.partition("t", i);
        if !p.isr.contains(&1) {
            let mut isr: Vec<(i32, i64)> = p.isr.iter().map(|&b| (b, -1)).collect();
            isr.push((1, ep[0]));
            let l = p.leader;
            let (_, r) = alter_current(&mut h, l, ep[(l - 1) as usize], "t", i, &isr);
            assert_eq!(r.error_code, 0);
        }
    }
    let imbalanced = |h: &Harness| {
        (0..6)
            .filter(|&i| !h.partition("t", i).has_preferred_leader())
            .count()
    };
    assert!(imbalanced(&h) > 0);
    assert_eq!(h.tick_all(), 0, "the first tick schedules the run");
    h.now += 59_999;
    h.heartbeat_all();
    assert_eq!(h.tick_all(), 0);
    h.now += 1;
    assert_eq!(h.tick_all(), 1);
    assert_eq!(imbalanced(&h), 0);
}

#[test]
fn configs_incremental_and_legacy() {
    let mut h = Harness::new(config());
    h.add_brokers(1);
    assert_eq!(h.create_topic("t", 1, 1), 0);
    let inc = |h: &mut Harness, rt: i8, name: &str, ops: Vec<(&str, i8, Option<&str>)>| {
        let req = inc_request(rt, name, ops);
        let r = h.c.incremental_alter_configs(h.ctx(), &req);
        h.commit(r).responses[0].error_code
    };
    assert_eq!(inc(&mut h, 2, "t", vec![("retention.ms", 0, Some("5"))]), 0);
    assert_eq!(h.c.config_value(2, "t", "retention.ms"), Some("5"));
    assert_eq!(
        inc(&mut h, 2, "t", vec![("cleanup.policy", 2, Some("compact"))]),
        0
    );
    assert_eq!(
        h.c.config_value(2, "t", "cleanup.policy"),
        Some("delete,compact")
    );
    assert_eq!(
        inc(&mut h, 2, "t", vec![("cleanup.policy", 3, Some("delete"))]),
        0
    );
    assert_eq!(h.c.config_value(2, "t", "cleanup.policy"), Some("compact"));
    assert_eq!(
        inc(&mut h, 2, "t", vec![("retention.ms", 2, Some("1"))]),
        code(ErrorCode::InvalidConfig)
    );
    assert_eq!(
        inc(&mut h, 2, "t", vec![("nope", 0, Some("1"))]),
        code(ErrorCode::InvalidConfig)
    );
    assert_eq!(
        inc(&mut h, 2, "t", vec![("retention.ms", 0, None)]),
        code(ErrorCode::InvalidRequest)
    );
    assert_eq!(
        inc(
            &mut h,
            2,
            "t",
            vec![("retention.ms", 0, Some("1")), ("retention.ms", 1, None)]
        ),
        code(ErrorCode::InvalidRequest)
    );
    assert_eq!(
        inc(&mut h, 2, "nope", vec![("retention.ms", 0, Some("1"))]),
        code(ErrorCode::UnknownTopicOrPartition)
    );
    assert_eq!(inc(&mut h, 9, "x", vec![]), code(ErrorCode::InvalidRequest));
    assert_eq!(
        inc(
            &mut h,
            4,
            "",
            vec![("unclean.leader.election.enable", 0, Some("true"))]
        ),
        0
    );
    assert_eq!(inc(&mut h, 2, "t", vec![("retention.ms", 1, None)]), 0);
    assert_eq!(h.c.config_value(2, "t", "retention.ms"), None);
    // Legacy AlterConfigs replaces the set.
    let req = AlterConfigsRequest {
        resources: vec![alter_configs_request::AlterConfigsResource {
            resource_type: 2,
            resource_name: "t".into(),
            configs: vec![alter_configs_request::AlterableConfig {
                name: "segment.ms".into(),
                value: Some("100".into()),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let r = h.c.alter_configs(h.ctx(), &req);
    assert_eq!(h.commit(r).responses[0].error_code, 0);
    assert_eq!(h.c.config_value(2, "t", "segment.ms"), Some("100"));
    assert_eq!(h.c.config_value(2, "t", "cleanup.policy"), None);
    assert_eq!(h.c.image().topic_config("t").unwrap().len(), 1);
}

#[test]
fn replaying_the_log_gives_the_same_state_and_image() {
    let mut h = Harness::new(config());
    let ep = h.add_brokers(3);
    assert_eq!(h.create_topic("t", 4, 3), 0);
    h.heartbeat(2, ep[1], true, false);
    assert_eq!(reassign(&mut h, "t", 0, Some(&[1, 3])), 0);
    let c = h.replayed();
    assert_eq!(c.image(), h.c.image());
    assert_eq!(
        c.topics().collect::<Vec<_>>(),
        h.c.topics().collect::<Vec<_>>()
    );
    assert_eq!(
        c.brokers().collect::<Vec<_>>(),
        h.c.brokers().collect::<Vec<_>>()
    );
    // The controller's own partitions are the image's.
    let image = h.c.image();
    for t in h.c.topics() {
        for (i, p) in &t.partitions {
            assert_eq!(image.partition(t.id, *i), Some(p));
        }
    }
}

#[test]
fn replay_refuses_bad_records_without_panicking() {
    let mut c = Controller::new(config());
    let bad = josef_protocol::metadata_records::PartitionChangeRecord {
        topic_id: Uuid::from_u128(5),
        ..Default::default()
    };
    assert!(c.replay(1, &MetadataRecord::PartitionChange(bad)).is_err());
    let ok = josef_protocol::metadata_records::NoOpRecord::default();
    c.replay(5, &MetadataRecord::NoOp(ok.clone())).unwrap();
    assert!(
        c.replay(4, &MetadataRecord::NoOp(ok)).is_err(),
        "offsets only go forward"
    );
    let _ = WriteContext::default();
}

#[test]
fn rebalance_runs_at_most_1000_elections_per_batch() {
    let mut h = Harness::new(ControllerConfig {
        leader_imbalance_check_interval_ms: 1000,
        ..config()
    });
    let ep = h.add_brokers(2);
    let manual = CreatableTopic {
        assignments: (0..1200)
            .map(|i| CreatableReplicaAssignment {
                partition_index: i,
                broker_ids: vec![1, 2].into(),
                ..Default::default()
            })
            .collect(),
        ..topic("big", -1, -1)
    };
    assert_eq!(create(&mut h, vec![manual], false)[0].0, 0);
    // Broker 1 bounces: every partition moves to 2, then 1 rejoins every ISR.
    h.heartbeat(1, ep[0], true, false);
    h.heartbeat(1, ep[0], false, false);
    let t = h.topic_id("big");
    let mut topics = Vec::new();
    for i in 0..1200 {
        let p = h.partition("big", i);
        topics.push(PartitionData {
            partition_index: i,
            leader_epoch: p.leader_epoch,
            partition_epoch: p.partition_epoch,
            new_isr_with_epochs: vec![
                BrokerState {
                    broker_id: 2,
                    broker_epoch: ep[1],
                    ..Default::default()
                },
                BrokerState {
                    broker_id: 1,
                    broker_epoch: ep[0],
                    ..Default::default()
                },
            ],
            ..Default::default()
        });
    }
    let req = AlterPartitionRequest {
        broker_id: 2,
        broker_epoch: ep[1],
        topics: vec![TopicData {
            topic_id: t,
            partitions: topics,
            ..Default::default()
        }],
        ..Default::default()
    };
    let r = h.c.alter_partition(h.ctx(), &req, 3);
    assert_eq!(r.records.len(), 1200);
    h.commit(r);
    assert!(h.c.tick(h.ctx()).records.is_empty(), "scheduled, not due");
    h.now += 1000;
    h.heartbeat_all();
    let r = h.c.tick(h.ctx());
    assert_eq!(r.records.len(), 1000);
    h.commit(r);
    let r = h.c.tick(h.ctx());
    assert_eq!(r.records.len(), 200, "capped: the rest runs at once");
    h.commit(r);
    assert!((0..1200).all(|i| h.partition("big", i).leader == 1));
    assert!(h.c.tick(h.ctx()).records.is_empty());
}

#[test]
fn a_controller_loaded_from_a_snapshot_has_the_same_image_and_carries_on() {
    let mut h = Harness::new(config());
    let ep = h.add_brokers(3);
    assert_eq!(h.create_topic("t", 3, 3), 0);
    h.heartbeat(3, ep[2], true, false);
    let r = h.c.allocate_producer_ids(
        h.ctx(),
        &AllocateProducerIdsRequest {
            broker_id: 1,
            broker_epoch: ep[0],
            ..Default::default()
        },
    );
    h.commit(r);
    let image = h.c.image();
    let mut c = Controller::new(config());
    for r in image.to_records() {
        c.replay(h.offset, &r).unwrap();
    }
    assert_eq!(c.image(), image);
    assert_eq!(c.next_producer_id(), 1000);
    c.activate(h.ctx(), 2, String::new());
    h.c = c;
    // Business as usual: heartbeats, unfencing, topic creation.
    assert!(!h.heartbeat(1, ep[0], false, false).is_fenced);
    assert!(!h.heartbeat(3, ep[2], false, false).is_fenced);
    assert_eq!(h.create_topic("u", 2, 3), 0);
}

#[test]
fn update_features() {
    let mut h = Harness::new(config());
    let feature = |name: &str, min: i16, max: i16| broker_registration_request::Feature {
        name: name.into(),
        min_supported_version: min,
        max_supported_version: max,
        ..Default::default()
    };
    for id in 1..=2 {
        let req = BrokerRegistrationRequest {
            broker_id: id,
            cluster_id: CLUSTER_ID.into(),
            incarnation_id: Uuid::from_u128(id as u128),
            features: vec![
                feature("metadata.version", 7, 21),
                feature("transaction.version", 0, if id == 1 { 2 } else { 1 }),
            ],
            ..Default::default()
        };
        let r = h.c.register_broker(h.ctx(), &req);
        assert_eq!(h.commit(r).error_code, 0);
    }
    let update = |h: &mut Harness, name: &str, level: i16, t: i8, validate_only: bool| {
        let req = UpdateFeaturesRequest {
            feature_updates: vec![update_features_request::FeatureUpdateKey {
                feature: name.into(),
                max_version_level: level,
                upgrade_type: t,
                ..Default::default()
            }],
            validate_only,
            ..Default::default()
        };
        let r = h.c.update_features(h.ctx(), &req, 1);
        let resp = h.commit(r);
        assert_eq!(resp.results[0].error_code, resp.error_code);
        resp.error_code
    };
    let invalid = code(ErrorCode::InvalidUpdateVersion);
    assert_eq!(
        update(&mut h, "transaction.version", 2, 1, false),
        invalid,
        "broker 2 supports 1"
    );
    assert_eq!(update(&mut h, "transaction.version", 1, 1, true), 0);
    assert_eq!(
        h.c.feature_level("transaction.version"),
        None,
        "validate only"
    );
    assert_eq!(update(&mut h, "transaction.version", 1, 1, false), 0);
    assert_eq!(h.c.feature_level("transaction.version"), Some(1));
    assert_eq!(
        update(&mut h, "transaction.version", 0, 1, false),
        invalid,
        "downgrade as upgrade"
    );
    assert_eq!(update(&mut h, "transaction.version", 0, 2, false), 0);
    assert_eq!(
        h.c.feature_level("transaction.version"),
        None,
        "level 0 removes it"
    );
    assert_eq!(
        update(&mut h, "transaction.version", 1, 9, false),
        invalid,
        "unknown type"
    );
    // metadata.version (bootstrapped at 21): Kafka's safe downgrade crosses no level that
    // changed the metadata records (18..=21 changed none, 17 did).
    assert_eq!(update(&mut h, "metadata.version", 20, 2, false), 0);
    assert_eq!(h.c.feature_level("metadata.version"), Some(20));
    assert_eq!(
        update(&mut h, "metadata.version", 21, 2, false),
        invalid,
        "an upgrade asked as a downgrade"
    );
    assert_eq!(update(&mut h, "metadata.version", 21, 1, false), 0);
    assert_eq!(update(&mut h, "metadata.version", 17, 2, false), 0);
    assert_eq!(
        update(&mut h, "metadata.version", 16, 2, false),
        invalid,
        "across 17, which changed the records"
    );
    assert_eq!(
        update(&mut h, "metadata.version", 16, 3, false),
        invalid,
        "no unsafe downgrade"
    );
    assert_eq!(h.c.feature_level("metadata.version"), Some(17));
    assert_eq!(update(&mut h, "metadata.version", 21, 1, false), 0);
    assert_eq!(
        update(&mut h, "metadata.version", 22, 1, false),
        invalid,
        "beyond this controller"
    );
    assert_eq!(update(&mut h, "no.such.feature", 1, 1, false), invalid);
    // A broker whose range excludes a finalized level cannot register.
    assert_eq!(update(&mut h, "transaction.version", 1, 1, false), 0);
    let req = BrokerRegistrationRequest {
        broker_id: 3,
        cluster_id: CLUSTER_ID.into(),
        incarnation_id: Uuid::from_u128(3),
        features: vec![feature("transaction.version", 2, 2)],
        ..Default::default()
    };
    let r = h.c.register_broker(h.ctx(), &req);
    assert_eq!(r.response.error_code, code(ErrorCode::UnsupportedVersion));
}

#[test]
fn periodic_unclean_election_once_the_topic_allows_it() {
    let mut h = Harness::new(ControllerConfig {
        unclean_leader_election_interval_ms: 5000,
        auto_leader_rebalance_enable: false,
        ..config()
    });
    let ep = h.add_brokers(2);
    let manual = CreatableTopic {
        assignments: vec![CreatableReplicaAssignment {
            partition_index: 0,
            broker_ids: vec![1, 2].into(),
            ..Default::default()
        }],
        ..topic("t", -1, -1)
    };
    assert_eq!(create(&mut h, vec![manual], false)[0].0, 0);
    let (_, r) = alter(&mut h, 1, ep[0], "t", 0, 0, 0, &[(1, -1)]);
    assert_eq!(r.error_code, 0);
    h.heartbeat(1, ep[0], true, false);
    assert_eq!(h.partition("t", 0).leader, NO_LEADER);
    assert_eq!(h.tick_all(), 0, "clean topic: nothing to do");
    let req = inc_request(
        2,
        "t",
        vec![("unclean.leader.election.enable", 0, Some("true"))],
    );
    let r = h.c.incremental_alter_configs(h.ctx(), &req);
    assert_eq!(h.commit(r).responses[0].error_code, 0);
    assert_eq!(h.tick_all(), 0, "scheduled");
    h.now += 4999;
    h.heartbeat_all();
    assert_eq!(h.tick_all(), 0);
    h.now += 1;
    assert_eq!(h.tick_all(), 1);
    let p = h.partition("t", 0);
    assert_eq!((p.leader, p.isr.clone()), (2, vec![2]));
    // Nothing scheduled but broker 2's session (heartbeat 1 ms ago).
    assert_eq!(h.c.next_deadline_ms(), Some(h.now + 9000));
}

#[test]
fn a_refused_record_changes_neither_state_nor_image() {
    let mut h = Harness::new(config());
    let ep = h.add_brokers(1);
    let before = (h.c.image(), h.c.broker(1).cloned());
    let bad: Vec<MetadataRecord> = vec![
        MetadataRecord::UnregisterBroker(
            josef_protocol::metadata_records::UnregisterBrokerRecord {
                broker_id: 1,
                broker_epoch: ep[0] + 1,
                ..Default::default()
            },
        ),
        MetadataRecord::ProducerIds(josef_protocol::metadata_records::ProducerIdsRecord {
            next_producer_id: -5,
            ..Default::default()
        }),
        MetadataRecord::RemoveTopic(josef_protocol::metadata_records::RemoveTopicRecord {
            topic_id: Uuid::from_u128(77),
            ..Default::default()
        }),
    ];
    for r in &bad {
        assert!(h.c.replay(h.offset + 1, r).is_err(), "{r:?}");
    }
    assert_eq!((h.c.image(), h.c.broker(1).cloned()), before);
}
