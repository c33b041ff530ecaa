//! A leader whose follower fetches in an incremental fetch session (KIP-227) with change
//! tracking does not read an idle partition on every fetch; the session's fetches must still
//! count as fetches of it (Kafka's leader reads every session partition each time, which
//! refreshes the follower's caught-up time). Explicit times: the lag is 1 000 ms, the partition
//! idles for 10 s while the session fetches every 500 ms, then the leader appends.

#[allow(dead_code)] // not every helper is used here
mod support;

use josef_log::testing::batch;
use josef_partition::{FollowerFetch, Partition, SessionCover, SessionFetch};
use support::{open, produce};

const SESSION: SessionCover = SessionCover {
    session_id: 11,
    created_ms: 100,
};
const LAG_MS: i64 = 1_000;
/// A fetch of `SESSION` whose previous fetch was at 900.
const IN_SESSION: SessionFetch = SessionFetch {
    cover: SESSION,
    previous_fetch_ms: 900,
};

/// Leader 1, follower 2 in the ISR, one record replicated; the follower's last read (in
/// `session`, if any) left it at the log end at 1 000.
fn idle_leader(dir: &tempfile::TempDir, session: Option<SessionFetch>) -> Partition {
    let l = open(dir, 1);
    l.make_leader(0, 0, &[1, 2], &[1, 2], 1, 0).unwrap();
    l.set_replica_lag_time_max_ms(LAG_MS);
    produce(&l, batch(0, 0, &[(None, Some(b"v"))]), 1, 10).unwrap();
    l.fetch_from_follower(&FollowerFetch::new(2, 0, 0), 500)
        .unwrap();
    // At the log end: nothing to read; the session covers it from here.
    let r = l
        .fetch_from_follower_in_session(&FollowerFetch::new(2, 1, 0), session, 1_000)
        .unwrap();
    assert!(r.read.records.is_empty());
    assert_eq!(l.high_watermark(), 1);
    l
}

/// The session fetched every 500 ms up to 10 000 without listing the partition; the leader
/// appends at 10 100 and the ISR check runs at 10 200, before the follower's next fetch.
fn append_after_idle(l: &Partition, session_last_fetch: Option<i64>) -> Option<Vec<i32>> {
    produce(l, batch(0, 1, &[(None, Some(b"w"))]), 1, 10_100).unwrap();
    l.maybe_shrink_isr_with_sessions(10_200, |c| {
        (c == SESSION).then_some(session_last_fetch).flatten()
    })
    .map(|p| p.new_isr)
}

#[test]
fn a_fetching_session_keeps_its_follower_in_the_isr_after_an_idle_period() {
    let dir = tempfile::tempdir().unwrap();
    let session = IN_SESSION;
    let l = idle_leader(&dir, Some(session));
    assert_eq!(append_after_idle(&l, Some(10_000)), None);
    // The follower's next fetch reads the new record: its caught-up time is the session's last
    // fetch before it (it was at the old log end then), as Kafka's rule gives.
    l.fetch_from_follower_in_session(
        &FollowerFetch::new(2, 1, 0),
        Some(SessionFetch {
            previous_fetch_ms: 10_000,
            ..session
        }),
        10_300,
    )
    .unwrap();
    assert_eq!(l.maybe_shrink_isr(10_900), None);
}

#[test]
fn without_a_session_the_same_follower_leaves_the_isr() {
    let dir = tempfile::tempdir().unwrap();
    let l = idle_leader(&dir, None);
    assert_eq!(append_after_idle(&l, Some(10_000)), Some(vec![1]));
}

#[test]
fn a_session_that_stopped_fetching_does_not_keep_it() {
    let dir = tempfile::tempdir().unwrap();
    let session = IN_SESSION;
    let l = idle_leader(&dir, Some(session));
    // Its last fetch was at 1 500: the follower lags past 1 000 ms.
    assert_eq!(append_after_idle(&l, Some(1_500)), Some(vec![1]));
}

#[test]
fn a_forgotten_partition_is_no_longer_covered() {
    let dir = tempfile::tempdir().unwrap();
    let session = IN_SESSION;
    let l = idle_leader(&dir, Some(session));
    l.set_follower_session_cover(2, None);
    assert_eq!(append_after_idle(&l, Some(10_000)), Some(vec![1]));
}

#[test]
fn a_failed_read_ends_the_cover() {
    let dir = tempfile::tempdir().unwrap();
    let session = IN_SESSION;
    let l = idle_leader(&dir, Some(session));
    // A fetch in an epoch the leader does not know is refused.
    assert!(l
        .fetch_from_follower_in_session(&FollowerFetch::new(2, 1, 5), Some(session), 2_000)
        .is_err());
    assert_eq!(append_after_idle(&l, Some(10_000)), Some(vec![1]));
}

/// A read by one follower in its session leaves the other followers' covers alone (it once
/// cleared them: their sessions are not the reading one).
#[test]
fn a_read_by_one_follower_keeps_the_others_covered() {
    let dir = tempfile::tempdir().unwrap();
    let l = open(&dir, 1);
    l.make_leader(0, 0, &[1, 2, 3], &[1, 2, 3], 1, 0).unwrap();
    l.set_replica_lag_time_max_ms(LAG_MS);
    let other = SessionFetch {
        cover: SessionCover {
            session_id: 12,
            created_ms: 100,
        },
        previous_fetch_ms: 900,
    };
    l.fetch_from_follower_in_session(&FollowerFetch::new(2, 0, 0), Some(IN_SESSION), 1_000)
        .unwrap();
    l.fetch_from_follower_in_session(&FollowerFetch::new(3, 0, 0), Some(other), 1_000)
        .unwrap();
    // Follower 3 reads again in its session; follower 2's session keeps fetching until 10 000.
    l.fetch_from_follower_in_session(&FollowerFetch::new(3, 0, 0), Some(other), 9_000)
        .unwrap();
    produce(&l, batch(0, 0, &[(None, Some(b"v"))]), 1, 10_100).unwrap();
    let shrink = l.maybe_shrink_isr_with_sessions(10_200, |c| match c.session_id {
        11 => Some(10_000),
        12 => Some(10_000),
        _ => None,
    });
    assert_eq!(shrink, None);
}
