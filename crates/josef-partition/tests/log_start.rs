//! The log start offset across replicas: DeleteRecords only on the leader, followers taking the
//! leader's log start from fetch responses, and the low watermark DeleteRecords waits for.

#[allow(dead_code)] // not every helper is used here
mod support;

use bytes::BytesMut;
use josef_log::testing::batch;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use josef_partition::{
    DeleteRecordsOutcome, FetchResponseAction, FollowerFetch, LeaderFetchAnswer, Partition,
    PartitionEvent,
};
use josef_protocol::ErrorCode;
use support::{open, produce};

/// One fetch round through the follower's full response path (`on_follower_fetch_response`),
/// which is where the leader's log start is taken.
fn fetch_round(l: &Partition, f: &Partition, now: i64) -> FetchResponseAction {
    let sent = f.follower_fetch_request().unwrap();
    let fetch = FollowerFetch {
        last_fetched_epoch: sent.last_fetched_epoch,
        log_start_offset: sent.log_start_offset,
        ..FollowerFetch::new(2, sent.fetch_offset, sent.current_leader_epoch)
    };
    let answer = LeaderFetchAnswer::from(l.fetch_from_follower(&fetch, now));
    f.on_follower_fetch_response(&sent, answer, now).unwrap()
}

/// Leader 1 and follower 2 with `n` records replicated and the HW at `n` on both.
fn replicated(dir: &tempfile::TempDir, n: i64) -> (Partition, Partition) {
    let (l, f) = (open(dir, 1), open(dir, 2));
    l.make_leader(0, 0, &[1, 2], &[1, 2], 1, 0).unwrap();
    f.make_follower(1, 0, 0);
    for t in 0..n {
        produce(&l, batch(0, t, &[(None, Some(b"v"))]), 1, t).unwrap();
    }
    for t in 0..3 {
        fetch_round(&l, &f, 10 + t);
    }
    assert_eq!(f.high_watermark(), n);
    (l, f)
}

#[test]
fn delete_records_is_refused_on_a_follower() {
    let dir = tempfile::tempdir().unwrap();
    let (_l, f) = replicated(&dir, 3);
    let e = f.delete_records_before(2).unwrap_err();
    assert_eq!(e.code, ErrorCode::NotLeaderOrFollower);
    assert_eq!(f.log_start_offset(), 0);
    assert_eq!(
        f.low_watermark(|_| true),
        Err(ErrorCode::NotLeaderOrFollower)
    );
}

#[test]
fn a_follower_takes_the_leaders_log_start_and_the_low_watermark_follows() {
    let dir = tempfile::tempdir().unwrap();
    let (l, f) = replicated(&dir, 4);
    assert_eq!(l.delete_records_before(3), Ok(3));
    // The follower has not fetched since: the leader still counts its old log start.
    assert_eq!(l.low_watermark(|_| true), Ok(0));
    fetch_round(&l, &f, 20);
    assert_eq!(f.log_start_offset(), 3);
    // Its next fetch tells the leader.
    fetch_round(&l, &f, 21);
    assert_eq!(l.low_watermark(|_| true), Ok(3));
}

#[test]
fn the_leaders_log_start_never_passes_the_followers_hw_nor_moves_back() {
    let dir = tempfile::tempdir().unwrap();
    let f = open(&dir, 2);
    f.make_follower(1, 0, 0);
    assert_eq!(f.maybe_increment_log_start_offset(5), Ok(0));
    let b: BytesMut = batch(0, 0, &[(None, Some(b"a")), (None, Some(b"b"))]);
    f.append_as_follower(0, b.freeze(), 1, 1).unwrap();
    assert_eq!(f.maybe_increment_log_start_offset(5), Ok(1));
    assert_eq!(f.maybe_increment_log_start_offset(0), Ok(1));
    assert_eq!(f.maybe_increment_log_start_offset(-1), Ok(1));
}

#[test]
fn a_follower_restarted_inside_a_batch_keeps_the_batch_whole_then_takes_the_leaders_log_start() {
    use josef_partition::OutOfRangeOutcome;
    let dir = tempfile::tempdir().unwrap();
    let (l, f) = (open(&dir, 1), open(&dir, 2));
    l.make_leader(0, 0, &[1], &[1, 2], 1, 0).unwrap();
    f.make_follower(1, 0, 0);
    // One batch of offsets 0..=4; the leader's log start moves to 3, inside it.
    let v: &[u8] = b"v";
    let five = [(None, Some(v)); 5];
    let b = batch(0, 1, &five);
    let h = josef_log::BatchHeader::parse(&b).unwrap();
    // min.insync.replicas 1: the HW follows the LEO with the ISR [1].
    l.append_from_client(josef_partition::ClientBatch::Owned(b), &h, 1, 1, 1)
        .unwrap();
    assert_eq!(l.delete_records_before(3), Ok(3));
    // The empty follower fetches at 0: out of range; ListOffsets gives LEO 5, log start 3.
    assert_eq!(
        fetch_round(&l, &f, 2),
        FetchResponseAction::OffsetOutOfRange
    );
    let sent = f.follower_fetch_request().unwrap();
    assert_eq!(
        f.on_offset_out_of_range(&sent, 5, 3, 3).unwrap(),
        OutOfRangeOutcome::StartedAt(3)
    );
    // The fetch at 3 returns the batch from 0: the empty log restarts at 0 to keep it whole,
    // then takes the leader's log start once its HW allows.
    assert!(matches!(
        fetch_round(&l, &f, 4),
        FetchResponseAction::Appended(_)
    ));
    fetch_round(&l, &f, 5);
    assert_eq!((f.log_start_offset(), f.log_end_offset()), (3, 5));
}

/// Leader 1 of replicas [1, 2, 3] with ISR [1, 2], four records replicated to follower 2, and
/// follower 3 never fetching.
fn three_replicas(dir: &tempfile::TempDir) -> (Partition, Partition) {
    let (l, f) = (open(dir, 1), open(dir, 2));
    l.make_leader(0, 0, &[1, 2], &[1, 2, 3], 1, 0).unwrap();
    f.make_follower(1, 0, 0);
    for t in 0..4 {
        produce(&l, batch(0, t, &[(None, Some(b"v"))]), 1, t).unwrap();
    }
    for t in 0..3 {
        fetch_round(&l, &f, 10 + t);
    }
    (l, f)
}

#[test]
fn the_low_watermark_counts_every_follower_on_a_live_broker_not_only_the_isr() {
    let dir = tempfile::tempdir().unwrap();
    let (l, f) = three_replicas(&dir);
    let all = |_: i32| true;
    let without_3 = |id: i32| id != 3;
    // Follower 3 is out of the ISR and never fetched: on a live broker it holds the low
    // watermark at -1 (unknown); on a fenced one it does not count.
    assert_eq!(l.low_watermark(all), Ok(-1));
    assert_eq!(l.low_watermark(without_3), Ok(0));
    assert_eq!(
        l.delete_records_on_leader(3, without_3).unwrap(),
        DeleteRecordsOutcome {
            requested_offset: 3,
            low_watermark: 0
        }
    );
    fetch_round(&l, &f, 20);
    fetch_round(&l, &f, 21);
    assert_eq!(l.low_watermark(without_3), Ok(3));
    assert_eq!(l.low_watermark(all), Ok(-1));
}

#[test]
fn a_delete_is_complete_once_the_followers_report_the_new_log_start() {
    let dir = tempfile::tempdir().unwrap();
    let (l, f) = replicated(&dir, 4);
    let woken = Arc::new(AtomicBool::new(false));
    let w = woken.clone();
    l.set_append_listener(Arc::new(move |_: &Partition, e: &PartitionEvent| {
        w.fetch_or(e.follower_log_start_moved, Ordering::SeqCst);
    }));
    // -1 is the HW.
    let out = l.delete_records_on_leader(-1, |_| true).unwrap();
    assert_eq!(
        out,
        DeleteRecordsOutcome {
            requested_offset: 4,
            low_watermark: 0
        }
    );
    assert_eq!(l.check_low_watermark_reaches(4, |_| true), Ok(None));
    // The follower learns the leader's log start from this answer, but reports it only in its
    // next fetch.
    fetch_round(&l, &f, 20);
    assert_eq!(l.check_low_watermark_reaches(4, |_| true), Ok(None));
    assert!(!woken.load(Ordering::SeqCst));
    fetch_round(&l, &f, 21);
    assert!(
        woken.load(Ordering::SeqCst),
        "the leader's listener heard of it"
    );
    assert_eq!(l.check_low_watermark_reaches(4, |_| true), Ok(Some(4)));
}

#[test]
fn a_waiting_delete_ends_with_not_leader_once_leadership_moves() {
    let dir = tempfile::tempdir().unwrap();
    let (l, _f) = replicated(&dir, 4);
    l.delete_records_on_leader(2, |_| true).unwrap();
    assert_eq!(l.check_low_watermark_reaches(2, |_| true), Ok(None));
    l.make_follower(2, 1, 1);
    assert_eq!(
        l.check_low_watermark_reaches(2, |_| true),
        Err(ErrorCode::NotLeaderOrFollower)
    );
    assert_eq!(
        l.delete_records_on_leader(3, |_| true).map_err(|e| e.code),
        Err(ErrorCode::NotLeaderOrFollower)
    );
}
