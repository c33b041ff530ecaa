//! Throughput of the group coordinator shard: a full rebalance of a 50-member group (join, leader
//! assignment with the range assignor, syncs), offset commits of 100 partitions, and heartbeats.

use std::collections::BTreeMap;
use std::hint::black_box;

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use josef_group::api::*;
use josef_group::assignor::leader_assign;
use josef_group::consumer_protocol::Subscription;
use josef_group::{GroupConfig, GroupCoordinator, GroupResult, NoopTimer, SeededMemberIds};

type Shard = GroupCoordinator<NoopTimer, SeededMemberIds>;

fn apply<T>(c: &mut Shard, offset: &mut i64, r: GroupResult<T>) -> (T, Vec<Completion>) {
    for rec in &r.records {
        c.replay(*offset, -1, -1, rec);
        *offset += 1;
    }
    (r.response, r.completions)
}

fn join_req(member_id: &str, metadata: &Bytes) -> JoinGroupRequest {
    JoinGroupRequest {
        group_id: "g".into(),
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 30_000,
        member_id: member_id.into(),
        group_instance_id: None,
        protocol_type: "consumer".into(),
        protocols: vec![JoinProtocol {
            name: "range".into(),
            metadata: metadata.clone(),
        }],
        reason: None,
    }
}

fn rebalance(c: &mut Criterion) {
    let members = 50usize;
    let topics = BTreeMap::from([("t".to_string(), 200)]);
    let metadata = Subscription {
        topics: vec!["t".into()],
        ..Subscription::default()
    }
    .encode(1);
    let ctx = RequestContext {
        client_id: "bench".into(),
        client_host: "/127.0.0.1".into(),
        api_version: 9,
    };
    let mut group = c.benchmark_group("group_coordinator");
    group.throughput(Throughput::Elements(members as u64));
    group.bench_function("rebalance_50_members", |b| {
        b.iter(|| {
            let mut shard: Shard =
                GroupCoordinator::new(GroupConfig::default(), NoopTimer, SeededMemberIds::new(1));
            let mut off = 0i64;
            let mut ids = Vec::new();
            let mut req = 0u64;
            for _ in 0..members {
                req += 1;
                let r = shard.join_group(0, req, &ctx, join_req("", &metadata));
                let (_, comp) = apply(&mut shard, &mut off, r);
                let GroupResponse::Join(j) = &comp[0].response else {
                    unreachable!()
                };
                let id = j.member_id.clone();
                req += 1;
                let r = shard.join_group(0, req, &ctx, join_req(&id, &metadata));
                apply(&mut shard, &mut off, r);
                ids.push(id);
            }
            let mut done = Vec::new();
            while let Some(r) = shard.fire_next_due(60_000) {
                done.extend(apply(&mut shard, &mut off, r).1);
            }
            let leader = done
                .iter()
                .find_map(|c| match &c.response {
                    GroupResponse::Join(j) if !j.members.is_empty() => Some(j.clone()),
                    _ => None,
                })
                .expect("leader response");
            let list: Vec<(String, Option<String>, Bytes)> = leader
                .members
                .iter()
                .map(|m| (m.member_id.clone(), None, m.metadata.clone()))
                .collect();
            let assignments = leader_assign("range", &topics, &list, 1).unwrap();
            for id in &ids {
                req += 1;
                let sync = SyncGroupRequest {
                    group_id: "g".into(),
                    generation_id: leader.generation_id,
                    member_id: id.clone(),
                    group_instance_id: None,
                    protocol_type: None,
                    protocol_name: None,
                    assignments: if *id == leader.leader {
                        assignments.clone()
                    } else {
                        vec![]
                    },
                };
                let r = shard.sync_group(60_000, req, sync);
                black_box(apply(&mut shard, &mut off, r));
            }
        })
    });

    // Offset commits and heartbeats against a Stable single-member group.
    let mut shard: Shard =
        GroupCoordinator::new(GroupConfig::default(), NoopTimer, SeededMemberIds::new(1));
    let mut off = 0i64;
    let r = shard.join_group(0, 1, &ctx, join_req("", &metadata));
    let (_, comp) = apply(&mut shard, &mut off, r);
    let GroupResponse::Join(j) = &comp[0].response else {
        unreachable!()
    };
    let id = j.member_id.clone();
    let r = shard.join_group(0, 2, &ctx, join_req(&id, &metadata));
    apply(&mut shard, &mut off, r);
    while let Some(r) = shard.fire_next_due(3000) {
        apply(&mut shard, &mut off, r);
    }
    let r = shard.sync_group(
        3000,
        3,
        SyncGroupRequest {
            group_id: "g".into(),
            generation_id: 1,
            member_id: id.clone(),
            group_instance_id: None,
            protocol_type: None,
            protocol_name: None,
            assignments: vec![],
        },
    );
    apply(&mut shard, &mut off, r);
    let commit = OffsetCommitRequest {
        group_id: "g".into(),
        generation_id_or_member_epoch: 1,
        member_id: id.clone(),
        group_instance_id: None,
        retention_time_ms: -1,
        topics: vec![OffsetCommitTopic {
            name: "t".into(),
            partitions: (0..100)
                .map(|p| OffsetCommitPartition {
                    partition_index: p,
                    committed_offset: 1000,
                    committed_leader_epoch: -1,
                    commit_timestamp: -1,
                    committed_metadata: None,
                })
                .collect(),
        }],
    };
    group.throughput(Throughput::Elements(100));
    group.bench_function("offset_commit_100_partitions", |b| {
        b.iter(|| {
            let r = shard.commit_offsets(3000, &ctx, commit.clone());
            black_box(apply(&mut shard, &mut off, r));
        })
    });
    group.throughput(Throughput::Elements(1));
    let hb = HeartbeatRequest {
        group_id: "g".into(),
        generation_id: 1,
        member_id: id.clone(),
        group_instance_id: None,
    };
    group.bench_function("heartbeat", |b| {
        b.iter(|| black_box(shard.heartbeat(3000, hb.clone())))
    });
    group.finish();
}

criterion_group!(benches, rebalance);
criterion_main!(benches);
