//! Random operation sequences (valid and invalid ids, generations, versions, protocols, timer
//! jumps, restarts) never panic, every parked request is answered at most once, and groups stay
//! internally consistent (leader is a member, static ids map to members).

mod common;

use bytes::Bytes;
use common::*;
use josef_group::api::*;
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Join {
        group: u8,
        member: u8,
        instance: Option<u8>,
        version: i16,
        protocol: u8,
        session: i32,
    },
    Sync {
        group: u8,
        member: u8,
        generation_delta: i32,
        assign: bool,
    },
    Heartbeat {
        group: u8,
        member: u8,
        generation_delta: i32,
    },
    Leave {
        group: u8,
        member: u8,
        by_instance: Option<u8>,
    },
    Commit {
        group: u8,
        member: u8,
        generation_delta: i32,
        simple: bool,
    },
    TxnCommit {
        group: u8,
        pid: u8,
    },
    EndTxn {
        pid: u8,
        commit: bool,
    },
    Advance {
        ms: u32,
    },
    Delete {
        group: u8,
    },
    DeleteOffsets {
        group: u8,
    },
    Restart,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..3u8, 0..8u8, prop::option::of(0..3u8), 0..10i16, 0..3u8, prop_oneof![Just(10_000), Just(5000), Just(60_000)])
            .prop_map(|(group, member, instance, version, protocol, session)| Op::Join { group, member, instance, version, protocol, session }),
        3 => (0..3u8, 0..8u8, -1..2i32, any::<bool>()).prop_map(|(group, member, generation_delta, assign)| Op::Sync { group, member, generation_delta, assign }),
        2 => (0..3u8, 0..8u8, -1..2i32).prop_map(|(group, member, generation_delta)| Op::Heartbeat { group, member, generation_delta }),
        1 => (0..3u8, 0..8u8, prop::option::of(0..3u8)).prop_map(|(group, member, by_instance)| Op::Leave { group, member, by_instance }),
        2 => (0..3u8, 0..8u8, -1..2i32, any::<bool>()).prop_map(|(group, member, generation_delta, simple)| Op::Commit { group, member, generation_delta, simple }),
        1 => (0..3u8, 0..3u8).prop_map(|(group, pid)| Op::TxnCommit { group, pid }),
        1 => (0..3u8, any::<bool>()).prop_map(|(pid, commit)| Op::EndTxn { pid, commit }),
        3 => prop_oneof![0..2000u32, 2000..40_000u32].prop_map(|ms| Op::Advance { ms }),
        1 => (0..3u8).prop_map(|group| Op::Delete { group }),
        1 => (0..3u8).prop_map(|group| Op::DeleteOffsets { group }),
        1 => Just(Op::Restart),
    ]
}

fn group(g: u8) -> String {
    format!("g{g}")
}

/// Member ids the run has seen (from responses), so ops can reuse real ones.
fn member_id(h: &Harness, idx: u8) -> String {
    let ids: Vec<String> = h
        .responses
        .values()
        .filter_map(|r| match r {
            GroupResponse::Join(j) if !j.member_id.is_empty() => Some(j.member_id.clone()),
            _ => None,
        })
        .collect();
    if ids.is_empty() || idx == 7 {
        return format!("garbage-{idx}");
    }
    ids[idx as usize % ids.len()].clone()
}

fn check_consistency(h: &Harness) {
    for g in h.c.groups() {
        if let Some(l) = g.leader_id() {
            assert!(
                g.has_member(l),
                "leader {l} of {} is not a member",
                g.group_id()
            );
        } else {
            assert_eq!(
                g.num_members(),
                0,
                "members but no leader in {}",
                g.group_id()
            );
        }
        for m in g.members() {
            if let Some(i) = &m.group_instance_id {
                assert_eq!(g.static_member_id(i), Some(m.member_id.as_str()));
            }
        }
    }
}

fn run(ops: Vec<Op>) {
    let mut h = Harness::new();
    for op in ops {
        let gen_of =
            |h: &Harness, g: u8| h.c.group(&group(g)).map(|x| x.generation_id()).unwrap_or(0);
        match op {
            Op::Join {
                group: g,
                member,
                instance,
                version,
                protocol,
                session,
            } => {
                let mid = if member == 0 {
                    String::new()
                } else {
                    member_id(&h, member)
                };
                let mut req = join_req(
                    &group(g),
                    &mid,
                    instance
                        .map(|i| format!("inst-{i}"))
                        .as_deref()
                        .filter(|_| version >= 5),
                );
                req.session_timeout_ms = session;
                req.protocols = protocols(
                    &[["range", "roundrobin", "sticky"][protocol as usize]],
                    &["t"],
                );
                h.join(version, "c", req);
            }
            Op::Sync {
                group: g,
                member,
                generation_delta,
                assign,
            } => {
                let mid = member_id(&h, member);
                let generation = gen_of(&h, g) + generation_delta;
                let assignments = if assign {
                    vec![(mid.clone(), Bytes::from_static(b"a"))]
                } else {
                    vec![]
                };
                h.sync(Harness::sync_req(&group(g), &mid, generation, assignments));
            }
            Op::Heartbeat {
                group: g,
                member,
                generation_delta,
            } => {
                let mid = member_id(&h, member);
                let generation = gen_of(&h, g) + generation_delta;
                h.heartbeat(&group(g), &mid, generation);
            }
            Op::Leave {
                group: g,
                member,
                by_instance,
            } => {
                let mid = if by_instance.is_some() {
                    String::new()
                } else {
                    member_id(&h, member)
                };
                let r = h.c.leave_group(
                    h.now,
                    LeaveGroupRequest {
                        group_id: group(g),
                        members: vec![LeavingMember {
                            member_id: mid,
                            group_instance_id: by_instance.map(|i| format!("inst-{i}")),
                            reason: None,
                        }],
                    },
                );
                h.apply(r);
            }
            Op::Commit {
                group: g,
                member,
                generation_delta,
                simple,
            } => {
                let (mid, generation) = if simple {
                    (String::new(), -1)
                } else {
                    (member_id(&h, member), gen_of(&h, g) + generation_delta)
                };
                let r = h.c.commit_offsets(
                    h.now,
                    &ctx("c", 8),
                    OffsetCommitRequest {
                        group_id: group(g),
                        generation_id_or_member_epoch: generation,
                        member_id: mid,
                        group_instance_id: None,
                        retention_time_ms: -1,
                        topics: vec![OffsetCommitTopic {
                            name: "t".into(),
                            partitions: vec![OffsetCommitPartition {
                                partition_index: 0,
                                committed_offset: h.now,
                                committed_leader_epoch: -1,
                                commit_timestamp: -1,
                                committed_metadata: None,
                            }],
                        }],
                    },
                );
                h.apply(r);
            }
            Op::TxnCommit { group: g, pid } => {
                let r = h.c.commit_txn_offsets(
                    h.now,
                    TxnOffsetCommitRequest {
                        transactional_id: "tx".into(),
                        group_id: group(g),
                        producer_id: pid as i64,
                        producer_epoch: 0,
                        generation_id: -1,
                        member_id: String::new(),
                        group_instance_id: None,
                        topics: vec![OffsetCommitTopic {
                            name: "t".into(),
                            partitions: vec![OffsetCommitPartition {
                                partition_index: 1,
                                committed_offset: 7,
                                committed_leader_epoch: -1,
                                commit_timestamp: -1,
                                committed_metadata: None,
                            }],
                        }],
                    },
                );
                h.apply(r);
            }
            Op::EndTxn { pid, commit } => h.end_transaction(pid as i64, commit),
            Op::Advance { ms } => h.advance(ms as i64),
            Op::Delete { group: g } => {
                let r = h.c.delete_groups(h.now, &[group(g)]);
                h.apply(r);
            }
            Op::DeleteOffsets { group: g } => {
                let r = h.c.delete_offsets(
                    h.now,
                    OffsetDeleteRequest {
                        group_id: group(g),
                        topics: vec![("t".into(), vec![0, 1])],
                    },
                );
                h.apply(r);
            }
            Op::Restart => {
                h.restart();
                h.responses.retain(|_, _| true);
            }
        }
        check_consistency(&h);
        let _ = h.c.list_groups(&ListGroupsRequest::default());
        let _ = h.c.describe_groups(5, &[group(0), group(1), group(2)]);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_operations_never_panic_and_keep_groups_consistent(ops in prop::collection::vec(op(), 1..80)) {
        run(ops);
    }
}
