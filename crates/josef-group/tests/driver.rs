//! The coordinator run through `josef-coordinator`'s driver: responses and completions are held
//! until the records are durable, and a restart replays the partition into a fresh shard.

use bytes::Bytes;
use josef_coordinator::{
    CoordinatorDriver, InMemoryPartitionWriter, ManualTimer, TransactionResult,
};
use josef_group::api::*;
use josef_group::consumer_protocol::Subscription;
use josef_group::record::GroupRecord;
use josef_group::{Errors, GroupConfig, GroupCoordinator, GroupTimerKey, Handled, SeededMemberIds};

type Shard = GroupCoordinator<ManualTimer<GroupTimerKey>, SeededMemberIds>;
type Driver<T> = CoordinatorDriver<Shard, InMemoryPartitionWriter<GroupRecord>, Handled<T>>;

fn shard(seed: u64) -> Shard {
    GroupCoordinator::new(
        GroupConfig::default(),
        ManualTimer::new(),
        SeededMemberIds::new(seed),
    )
}

fn join(member_id: &str) -> JoinGroupRequest {
    JoinGroupRequest {
        group_id: "g".into(),
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 30_000,
        member_id: member_id.into(),
        group_instance_id: None,
        protocol_type: "consumer".into(),
        protocols: vec![JoinProtocol {
            name: "range".into(),
            metadata: Subscription {
                topics: vec!["t".into()],
                ..Subscription::default()
            }
            .encode(1),
        }],
        reason: None,
    }
}

fn ctx() -> RequestContext {
    RequestContext {
        client_id: "c".into(),
        client_host: "/h".into(),
        api_version: 9,
    }
}

fn join_resp(c: &[Completion], id: RequestId) -> JoinGroupResponse {
    c.iter()
        .find_map(|c| match (&c.response, c.request == id) {
            (GroupResponse::Join(j), true) => Some(j.clone()),
            _ => None,
        })
        .expect("completion present")
}

#[test]
fn responses_and_completions_wait_for_the_high_watermark_and_a_restart_replays_the_log() {
    let mut d: Driver<()> = CoordinatorDriver::new(shard(1), InMemoryPartitionWriter::new());
    // First join: MEMBER_ID_REQUIRED, held until the new group's record is durable.
    let r = d.shard_mut().join_group(0, 1, &ctx(), join(""));
    assert_eq!(r.records.len(), 1);
    assert_eq!(d.write(move |_| r.into_coordinator_result()).unwrap(), None);
    let hw = d.writer_mut().commit_all();
    let released = d.on_high_watermark(hw);
    let member_id = join_resp(&released[0].1, 1).member_id;

    // Second join parks; the initial delay's timer completes it.
    let r = d.shard_mut().join_group(0, 2, &ctx(), join(&member_id));
    assert!(r.completions.is_empty());
    let released = d.write(move |_| r.into_coordinator_result()).unwrap();
    assert!(
        released.is_some(),
        "no records and nothing pending: released at once"
    );
    let expired = d.shard_mut().timer_mut().poll_expired(3000);
    assert_eq!(
        expired,
        vec![GroupTimerKey::Join {
            group_id: "g".into()
        }]
    );
    let r = d.shard_mut().on_timer(3000, &expired[0]);
    let (_, completions) = d
        .write(move |_| r.into_coordinator_result())
        .unwrap()
        .unwrap();
    let joined = join_resp(&completions, 2);
    assert_eq!(joined.leader, member_id);

    // The leader's SyncGroup writes the assignment; its answer is held until durable.
    let r = d.shard_mut().sync_group(
        3000,
        3,
        SyncGroupRequest {
            group_id: "g".into(),
            generation_id: joined.generation_id,
            member_id: member_id.clone(),
            group_instance_id: None,
            protocol_type: None,
            protocol_name: None,
            assignments: vec![(member_id.clone(), Bytes::from_static(b"A"))],
        },
    );
    assert_eq!(d.write(move |_| r.into_coordinator_result()).unwrap(), None);
    assert_eq!(d.pending_responses(), 1);
    let hw = d.writer_mut().commit_all();
    let released = d.on_high_watermark(hw);
    let GroupResponse::Sync(s) = &released[0].1[0].response else {
        panic!()
    };
    assert_eq!(s.assignment, Bytes::from_static(b"A"));

    // A transactional offset commit, then its marker.
    let r = d.shard_mut().commit_txn_offsets(
        3000,
        TxnOffsetCommitRequest {
            transactional_id: "tx".into(),
            group_id: "g".into(),
            producer_id: 42,
            producer_epoch: 1,
            generation_id: joined.generation_id,
            member_id: member_id.clone(),
            group_instance_id: None,
            topics: vec![OffsetCommitTopic {
                name: "t".into(),
                partitions: vec![OffsetCommitPartition {
                    partition_index: 0,
                    committed_offset: 100,
                    committed_leader_epoch: -1,
                    commit_timestamp: -1,
                    committed_metadata: None,
                }],
            }],
        },
    );
    let (pid, epoch) = r.transaction.unwrap();
    // One driver holds one response type; a broker maps each response into its own enum.
    let r = r.map(|_| ());
    d.write_transactional(pid, epoch, move |_| r.into_coordinator_result())
        .unwrap();
    d.complete_transaction(42, 1, 0, TransactionResult::Commit, ((), vec![]))
        .unwrap();
    let fetch = |c: &Shard| {
        c.fetch_offsets(&OffsetFetchRequest {
            groups: vec![OffsetFetchGroup {
                group_id: "g".into(),
                topics: None,
                ..Default::default()
            }],
            require_stable: true,
        })
    };
    assert_eq!(
        d.read(fetch).groups[0].topics[0].partitions[0].committed_offset,
        100
    );

    // Restart: a fresh shard loaded from the partition has the same group and offsets.
    let entries = d.writer().entries().to_vec();
    let mut restarted: Driver<()> =
        CoordinatorDriver::new(shard(2), InMemoryPartitionWriter::new());
    restarted.load(entries).unwrap();
    let g = restarted.shard().group("g").unwrap();
    assert_eq!(g.generation_id(), joined.generation_id);
    assert_eq!(
        g.member(&member_id).unwrap().assignment,
        Bytes::from_static(b"A")
    );
    assert_eq!(
        restarted.read(fetch).groups[0].topics[0].partitions[0].committed_offset,
        100
    );
    // Loaded members get session timers on the first call.
    let hb = restarted.shard_mut().heartbeat(
        5000,
        HeartbeatRequest {
            group_id: "g".into(),
            generation_id: joined.generation_id,
            member_id: member_id.clone(),
            group_instance_id: None,
        },
    );
    assert_eq!(hb.response.error, Errors::None);
    assert!(restarted
        .shard()
        .timer()
        .contains(&GroupTimerKey::Heartbeat {
            group_id: "g".into(),
            member_id
        }));
}
