//! The log start offset across replicas: DeleteRecords only on the leader, followers taking the
//! leader's log start from fetch responses, and the low watermark DeleteRecords waits for.

#[allow(dead_code)] // not every helper is used here
mod support;

use bytes::BytesMut;
use josef_log::testing::batch;
use josef_partition::{FetchResponseAction, FollowerFetch, LeaderFetchAnswer, Partition};
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
    assert_eq!(f.low_watermark(), Err(ErrorCode::NotLeaderOrFollower));
}

#[test]
fn a_follower_takes_the_leaders_log_start_and_the_low_watermark_follows() {
    let dir = tempfile::tempdir().unwrap();
    let (l, f) = replicated(&dir, 4);
    assert_eq!(l.delete_records_before(3), Ok(3));
    // The follower has not fetched since: the leader still counts its old log start.
    assert_eq!(l.low_watermark(), Ok(0));
    fetch_round(&l, &f, 20);
    assert_eq!(f.log_start_offset(), 3);
    // Its next fetch tells the leader.
    fetch_round(&l, &f, 21);
    assert_eq!(l.low_watermark(), Ok(3));
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
