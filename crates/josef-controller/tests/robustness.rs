//! Arbitrary (mostly invalid) requests never panic the controller, never produce a batch that
//! fails to replay, and never break the partition invariants.

mod common;

use common::Harness;
use josef_controller::{ControllerConfig, NO_LEADER};
use josef_protocol::messages::alter_partition_reassignments_request::{
    ReassignablePartition, ReassignableTopic,
};
use josef_protocol::messages::create_topics_request::{CreatableReplicaAssignment, CreatableTopic};
use josef_protocol::messages::*;
use josef_protocol::Uuid;
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Register(i32, u8),
    Heartbeat(i32, i64, bool, bool),
    Create(u8, i32, i16, Vec<Vec<i32>>),
    Delete(u8),
    Partitions(u8, i32),
    Alter(i32, i64, u8, i32, i32, i32, Vec<(i32, i64)>, i8),
    Elect(i8),
    Reassign(u8, i32, Option<Vec<i32>>),
    Shutdown(i32, i64),
    Unregister(i32),
    Producer(i32, i64),
    Tick(i64),
}

fn op() -> impl Strategy<Value = Op> {
    let id = -1..7i32;
    let epoch = -2..40i64;
    prop_oneof![
        (id.clone(), any::<u8>()).prop_map(|(a, b)| Op::Register(a, b % 3)),
        (id.clone(), epoch.clone(), any::<bool>(), any::<bool>())
            .prop_map(|(a, b, c, d)| Op::Heartbeat(a, b, c, d)),
        (
            any::<u8>(),
            -2..5i32,
            -2..5i16,
            prop::collection::vec(prop::collection::vec(-1..7i32, 0..4), 0..3)
        )
            .prop_map(|(a, b, c, d)| Op::Create(a % 4, b, c, d)),
        any::<u8>().prop_map(|a| Op::Delete(a % 4)),
        (any::<u8>(), -1..8i32).prop_map(|(a, b)| Op::Partitions(a % 4, b)),
        (
            id.clone(),
            epoch.clone(),
            any::<u8>(),
            -1..4i32,
            -1..4i32,
            -1..6i32,
            prop::collection::vec((-1..7i32, epoch.clone()), 0..4),
            -1..3i8
        )
            .prop_map(|(a, b, c, d, e, f, g, h)| Op::Alter(a, b, c % 4, d, e, f, g, h)),
        (-1..3i8).prop_map(Op::Elect),
        (
            any::<u8>(),
            -1..4i32,
            prop::option::of(prop::collection::vec(-1..7i32, 0..4))
        )
            .prop_map(|(a, b, c)| Op::Reassign(a % 4, b, c)),
        (id.clone(), epoch.clone()).prop_map(|(a, b)| Op::Shutdown(a, b)),
        id.clone().prop_map(Op::Unregister),
        (id.clone(), epoch.clone()).prop_map(|(a, b)| Op::Producer(a, b)),
        (0..5000i64).prop_map(Op::Tick),
    ]
}

const NAMES: [&str; 4] = ["t0", "t1", "t.2", "t_2"];

fn apply(h: &mut Harness, op: Op) {
    let ctx = h.ctx();
    match op {
        Op::Register(id, inc) => {
            let req = BrokerRegistrationRequest {
                broker_id: id,
                cluster_id: common::CLUSTER_ID.into(),
                incarnation_id: Uuid::from_u128(inc as u128),
                ..Default::default()
            };
            let r = h.c.register_broker(ctx, &req);
            h.commit(r);
        }
        Op::Heartbeat(id, epoch, fence, shut) => {
            let req = BrokerHeartbeatRequest {
                broker_id: id,
                broker_epoch: epoch,
                current_metadata_offset: h.offset as i64,
                want_fence: fence,
                want_shut_down: shut,
                ..Default::default()
            };
            let r = h.c.broker_heartbeat(ctx, &req);
            h.commit(r);
        }
        Op::Create(name, n, rf, lists) => {
            let req = CreateTopicsRequest {
                topics: vec![CreatableTopic {
                    name: NAMES[name as usize].into(),
                    num_partitions: n,
                    replication_factor: rf,
                    assignments: lists
                        .into_iter()
                        .enumerate()
                        .map(|(i, b)| CreatableReplicaAssignment {
                            partition_index: i as i32,
                            broker_ids: b.into(),
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                }],
                ..Default::default()
            };
            let r = h.c.create_topics(ctx, &req, 7);
            h.commit(r);
        }
        Op::Delete(name) => {
            let req = DeleteTopicsRequest {
                topic_names: vec![NAMES[name as usize].into()],
                ..Default::default()
            };
            let r = h.c.delete_topics(ctx, &req, 5);
            h.commit(r);
        }
        Op::Partitions(name, count) => {
            let req = CreatePartitionsRequest {
                topics: vec![create_partitions_request::CreatePartitionsTopic {
                    name: NAMES[name as usize].into(),
                    count,
                    ..Default::default()
                }],
                ..Default::default()
            };
            let r = h.c.create_partitions(ctx, &req);
            h.commit(r);
        }
        Op::Alter(id, epoch, name, index, le, pe, isr, lrs) => {
            let topic_id = h.c.topic(NAMES[name as usize]).map_or(Uuid::ZERO, |t| t.id);
            let req =
                common::alter_partition_request(id, epoch, topic_id, index, le, pe, &isr, lrs);
            let r = h.c.alter_partition(ctx, &req, 3);
            h.commit(r);
        }
        Op::Elect(t) => {
            let req = ElectLeadersRequest {
                election_type: t,
                ..Default::default()
            };
            let r = h.c.elect_leaders(ctx, &req, 2);
            h.commit(r);
        }
        Op::Reassign(name, index, target) => {
            let req = AlterPartitionReassignmentsRequest {
                topics: vec![ReassignableTopic {
                    name: NAMES[name as usize].into(),
                    partitions: vec![ReassignablePartition {
                        partition_index: index,
                        replicas: target.map(Into::into),
                        ..Default::default()
                    }],
                    ..Default::default()
                }],
                ..Default::default()
            };
            let r = h.c.alter_partition_reassignments(ctx, &req);
            h.commit(r);
        }
        Op::Shutdown(id, epoch) => {
            let req = ControlledShutdownRequest {
                broker_id: id,
                broker_epoch: epoch,
                ..Default::default()
            };
            let r = h.c.controlled_shutdown(ctx, &req);
            h.commit(r);
        }
        Op::Unregister(id) => {
            let r = h.c.unregister_broker(
                ctx,
                &UnregisterBrokerRequest {
                    broker_id: id,
                    ..Default::default()
                },
            );
            h.commit(r);
        }
        Op::Producer(id, epoch) => {
            let req = AllocateProducerIdsRequest {
                broker_id: id,
                broker_epoch: epoch,
                ..Default::default()
            };
            let r = h.c.allocate_producer_ids(ctx, &req);
            h.commit(r);
        }
        Op::Tick(ms) => {
            h.now += ms;
            let r = h.c.tick(h.ctx());
            h.commit(r);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_requests_keep_the_invariants(ops in prop::collection::vec(op(), 1..60)) {
        let mut h = Harness::new(ControllerConfig { seed: 3, ..Default::default() });
        h.add_brokers(3);
        for op in ops {
            apply(&mut h, op);
            prop_assert!(h.c.check_consistency().is_ok());
            let image = h.c.image();
            for t in image.topics() {
                for p in t.partitions.values() {
                    prop_assert!(!p.isr.is_empty());
                    prop_assert!(p.isr.iter().all(|r| p.replicas.contains(r)));
                    if p.leader != NO_LEADER {
                        prop_assert!(p.isr.contains(&p.leader));
                        prop_assert!(image.is_active(p.leader), "{:?}", p);
                    }
                }
            }
        }
        prop_assert_eq!(h.replayed().image(), h.c.image());
    }
}
