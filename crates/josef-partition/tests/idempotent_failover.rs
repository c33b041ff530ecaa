//! An idempotent producer's retry after a failover (Kafka's rule: a retried batch that is
//! already in the new leader's log gets its original offsets, never a second copy), on the
//! paths a replica's producer state goes through before it leads: a clean restart (state from
//! the snapshot taken at close), catching up by replication after the restart, and a truncation
//! of a diverged tail (state rebuilt from an older snapshot and a replay of the log).

mod support;

use bytes::BytesMut;
use josef_log::testing::TestBatch;
use josef_partition::{EpochEndOffset, Partition};
use josef_protocol::ErrorCode;
use support::{open, replicate};

const PID: i64 = 2000;
const EPOCH: i16 = 1;

/// A batch of `n` records from the idempotent producer, starting at sequence `seq`.
fn idem(seq: i32, n: i32) -> BytesMut {
    let mut b = TestBatch::new(0).producer(PID, EPOCH, seq);
    for i in 0..n {
        b = b.record(
            1_000 + i64::from(seq),
            None,
            Some(format!("v{}", seq + i).as_bytes()),
        );
    }
    b.build()
}

/// acks=1: duplicate detection does not depend on acks, and a lone new leader may take it.
fn produce(p: &Partition, b: BytesMut) -> Result<(i64, i64), ErrorCode> {
    support::produce(p, b, 1, 10)
}

fn leo(p: &Partition) -> i64 {
    p.log_end_offset()
}

/// Follower fetch rounds until the follower holds the leader's log; the divergence it
/// truncated by, if any.
fn catch_up(leader: &Partition, follower: &Partition, id: i32) -> Option<EpochEndOffset> {
    let mut diverged = None;
    for _ in 0..8 {
        if let Some(d) = replicate(leader, follower, id, 20) {
            diverged = Some(d);
        } else if leo(follower) == leo(leader) {
            break;
        }
    }
    assert_eq!(leo(follower), leo(leader));
    diverged
}

/// Replica 1 leading epoch 94 with replica 2 following (both in the ISR).
fn leader_and_follower(dir: &tempfile::TempDir) -> (Partition, Partition) {
    let (l, f) = (open(dir, 1), open(dir, 2));
    l.make_leader(94, 1, &[1, 2], &[1, 2], 1, 0).unwrap();
    f.make_follower(1, 94, 1);
    (l, f)
}

#[test]
fn a_follower_restarted_then_caught_up_and_promoted_answers_each_of_the_last_five_retries() {
    let dir = tempfile::tempdir().unwrap();
    let (l, f) = leader_and_follower(&dir);
    let mut seq = 0;
    for n in [3, 1, 2] {
        produce(&l, idem(seq, n)).unwrap();
        seq += n;
    }
    catch_up(&l, &f, 2);
    // A clean restart of the follower: its state comes back from the snapshot taken at close.
    f.close().unwrap();
    let f = open(&dir, 2);
    f.make_follower(1, 94, 1);
    // Five batches in flight (librdkafka's idempotent limit), all replicated before the failover,
    // none acknowledged to the producer.
    let mut in_flight = Vec::new();
    for n in [2, 1, 4, 1, 9] {
        let offsets = produce(&l, idem(seq, n)).unwrap();
        in_flight.push((seq, n, offsets));
        seq += n;
    }
    catch_up(&l, &f, 2);
    f.make_leader(95, 2, &[2], &[1, 2], 1, 30).unwrap();
    let end = leo(&f);
    for &(s, n, offsets) in &in_flight {
        assert_eq!(produce(&f, idem(s, n)), Ok(offsets), "retry of seq {s}");
    }
    assert_eq!(leo(&f), end, "no retry was appended again");
    assert_eq!(produce(&f, idem(seq, 1)), Ok((end, end)));
}

#[test]
fn a_cleanly_restarted_replica_promoted_to_leader_answers_the_retry_of_every_remembered_batch() {
    let dir = tempfile::tempdir().unwrap();
    let (l, f) = leader_and_follower(&dir);
    produce(&l, idem(0, 4)).unwrap();
    let last = produce(&l, idem(4, 9)).unwrap();
    catch_up(&l, &f, 2);
    f.close().unwrap();
    let f = open(&dir, 2);
    assert_eq!(
        f.producer_state_rebuild().replayed_batches,
        0,
        "state from the snapshot"
    );
    f.make_leader(95, 2, &[2], &[1, 2], 1, 30).unwrap();
    assert_eq!(produce(&f, idem(4, 9)), Ok(last));
    assert_eq!(leo(&f), 13);
    // Unlike Kafka's, the snapshot keeps every remembered batch of a producer: the retry of an
    // older one is still a duplicate (bug 23 of docs/reliability.md: librdkafka fails fatally on
    // OUT_OF_ORDER_SEQUENCE_NUMBER for the head of its in-flight queue).
    assert_eq!(produce(&f, idem(0, 4)), Ok((0, 3)));
    assert_eq!(leo(&f), 13);
    assert_eq!(produce(&f, idem(13, 1)), Ok((13, 13)));
}

#[test]
fn a_replica_that_truncated_a_diverged_tail_dedups_the_retry_once_it_leads() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = leader_and_follower(&dir);
    produce(&a, idem(0, 2)).unwrap();
    produce(&a, idem(2, 3)).unwrap();
    catch_up(&a, &b, 2);
    // b restarts (snapshot at 5), then leads epoch 95 for a while and takes a batch of another
    // producer that never reaches a.
    b.close().unwrap();
    let b = open(&dir, 2);
    b.make_leader(95, 2, &[2], &[1, 2], 1, 10).unwrap();
    let other = TestBatch::new(0)
        .producer(7, 0, 0)
        .record(5, None, Some(b"zombie"))
        .build();
    assert_eq!(produce(&b, other), Ok((5, 5)));
    // a, leader again in epoch 96, took the producer's next batch at 5.
    a.make_leader(96, 3, &[1, 2], &[1, 2], 1, 20).unwrap();
    let last = produce(&a, idem(5, 9)).unwrap();
    assert_eq!(last, (5, 13));
    b.make_follower(1, 96, 3);
    // b truncates its epoch-95 tail (its state is rebuilt from the log) and fetches a's batch.
    assert!(catch_up(&a, &b, 2).is_some(), "b diverged");
    assert!(b.producer_txn_state(7).producer_epoch.is_none());
    // b leads epoch 97; the producer retries its last batch.
    b.make_leader(97, 4, &[2], &[1, 2], 1, 40).unwrap();
    assert_eq!(produce(&b, idem(5, 9)), Ok(last));
    assert_eq!(leo(&b), 14);
}
