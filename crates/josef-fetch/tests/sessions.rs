//! Behaviour of the fetch-session cache, one test per Kafka rule.

use josef_fetch::*;
use josef_protocol::ErrorCode;

type Cache = FetchSessionCache<u32>;

fn cache(max: usize) -> Cache {
    FetchSessionCache::new(FetchSessionCacheConfig {
        max_sessions: max,
        eviction_ms: 120_000,
        id_seed: 7,
    })
}

fn out(hw: i64) -> PartitionOutcome {
    PartitionOutcome {
        high_watermark: hw,
        log_start_offset: 0,
        ..Default::default()
    }
}

fn with_records(hw: i64) -> PartitionOutcome {
    PartitionOutcome {
        has_records: true,
        ..out(hw)
    }
}

/// A full fetch of `parts` at `now`; returns the new session id.
fn create(c: &mut Cache, parts: &[u32], now: i64) -> i32 {
    create_as(c, parts, now, false)
}

fn create_as(c: &mut Cache, parts: &[u32], now: i64, follower: bool) -> i32 {
    let ctx = c.new_context(
        FetchMetadata::new(0, 0),
        false,
        follower,
        parts.iter().map(|&p| (p, PartitionFetch::new(0, 100))),
        [],
        now,
    );
    let mut resp: Vec<(u32, PartitionOutcome)> = parts.iter().map(|&p| (p, out(0))).collect();
    c.update_and_generate_response(&ctx, now, &mut resp, |r| (&r.0, r.1))
        .session_id
}

#[test]
fn full_fetch_with_initial_epoch_creates_session_with_next_epoch_one() {
    let mut c = cache(10);
    let id = create(&mut c, &[1, 2], 0);
    assert!(id > 0);
    let s = c.get(id).unwrap();
    assert_eq!(s.epoch(), 1);
    assert_eq!(s.len(), 2);
    assert_eq!(c.total_partitions(), 2);
}

#[test]
fn final_epoch_is_sessionless_and_closes_named_session() {
    let mut c = cache(10);
    let id = create(&mut c, &[1], 0);
    let ctx = c.new_context(
        FetchMetadata::new(id, FINAL_EPOCH),
        false,
        false,
        [(1, PartitionFetch::new(0, 1))],
        [],
        5,
    );
    assert_eq!(ctx.kind(), ContextKind::Sessionless);
    assert!(c.get(id).is_none());
    let mut resp = vec![(1u32, out(0))];
    let r = c.update_and_generate_response(&ctx, 5, &mut resp, |r| (&r.0, r.1));
    assert_eq!(
        r,
        ResponseSession {
            error_code: 0,
            session_id: 0
        }
    );
    assert_eq!(resp.len(), 1);
}

#[test]
fn full_fetch_naming_a_session_closes_it_and_creates_another() {
    let mut c = cache(10);
    let id = create(&mut c, &[1], 0);
    let ctx = c.new_context(
        FetchMetadata::new(id, 0),
        false,
        false,
        [(1, PartitionFetch::new(0, 1))],
        [],
        1,
    );
    assert!(c.get(id).is_none());
    let mut resp = vec![(1u32, out(0))];
    let r = c.update_and_generate_response(&ctx, 1, &mut resp, |r| (&r.0, r.1));
    assert!(r.session_id > 0 && r.session_id != id);
    assert_eq!(c.len(), 1);
}

#[test]
fn unknown_session_id_is_fetch_session_id_not_found() {
    let mut c = cache(10);
    let ctx = c.new_context(FetchMetadata::new(12345, 1), false, false, [], [], 0);
    assert_eq!(ctx.session_error(), Some(ErrorCode::FetchSessionIdNotFound));
    // Id 0 with an incremental epoch, too.
    let ctx = c.new_context(FetchMetadata::new(0, 3), false, false, [], [], 0);
    assert_eq!(ctx.session_error(), Some(ErrorCode::FetchSessionIdNotFound));
    let mut resp = vec![(1u32, out(0))];
    let r = c.update_and_generate_response(&ctx, 0, &mut resp, |r| (&r.0, r.1));
    assert_eq!(r.error_code, ErrorCode::FetchSessionIdNotFound.code());
    assert_eq!(r.session_id, 0);
    assert!(resp.is_empty());
}

#[test]
fn wrong_epoch_is_invalid_fetch_session_epoch_and_session_survives() {
    let mut c = cache(10);
    let id = create(&mut c, &[1], 0);
    for bad in [2, 5, i32::MAX] {
        let ctx = c.new_context(FetchMetadata::new(id, bad), false, false, [], [], 0);
        assert_eq!(
            ctx.session_error(),
            Some(ErrorCode::InvalidFetchSessionEpoch)
        );
    }
    let ctx = c.new_context(FetchMetadata::new(id, 1), false, false, [], [], 0);
    assert!(matches!(
        ctx.kind(),
        ContextKind::Incremental { next_epoch: 2, .. }
    ));
    assert_eq!(c.get(id).unwrap().epoch(), 2);
}

#[test]
fn topic_id_use_must_match_the_creating_version() {
    let mut c = cache(10);
    let id = create(&mut c, &[1], 0); // created without topic ids
    let ctx = c.new_context(FetchMetadata::new(id, 1), true, false, [], [], 0);
    assert_eq!(
        ctx.session_error(),
        Some(ErrorCode::FetchSessionTopicIdError)
    );
}

#[test]
fn incremental_request_reads_all_session_partitions_with_cached_parameters() {
    let mut c = cache(10);
    let id = create(&mut c, &[1, 2, 3], 0);
    let ctx = c.new_context(
        FetchMetadata::new(id, 1),
        false,
        false,
        [
            (2, PartitionFetch::new(50, 100)),
            (4, PartitionFetch::new(7, 100)),
        ],
        [],
        0,
    );
    let parts: Vec<(u32, i64)> = ctx
        .partitions()
        .iter()
        .map(|(k, p)| (*k, p.fetch_offset))
        .collect();
    assert_eq!(parts, [(1, 0), (2, 50), (3, 0), (4, 7)]);
}

#[test]
fn forgotten_partitions_leave_the_session() {
    let mut c = cache(10);
    let id = create(&mut c, &[1, 2, 3], 0);
    let ctx = c.new_context(FetchMetadata::new(id, 1), false, false, [], [2, 9], 0);
    let keys: Vec<u32> = ctx.partitions().iter().map(|(k, _)| *k).collect();
    assert_eq!(keys, [1, 3]);
    assert_eq!(c.get(id).unwrap().len(), 2);
    assert_eq!(c.total_partitions(), 2);
}

#[test]
fn session_emptied_by_forgetting_is_closed_and_fetch_is_sessionless() {
    let mut c = cache(10);
    let id = create(&mut c, &[1], 0);
    let ctx = c.new_context(FetchMetadata::new(id, 1), false, false, [], [1], 0);
    assert_eq!(ctx.kind(), ContextKind::Sessionless);
    assert!(c.get(id).is_none());
    assert_eq!(c.total_partitions(), 0);
}

#[test]
fn incremental_response_holds_only_changed_partitions() {
    let mut c = cache(10);
    let id = create(&mut c, &[1, 2, 3, 4], 0);
    let ctx = c.new_context(FetchMetadata::new(id, 1), false, false, [], [], 0);
    let lso_moved = PartitionOutcome {
        log_start_offset: 5,
        ..out(0)
    };
    let err = PartitionOutcome {
        error_code: ErrorCode::OffsetOutOfRange.code(),
        high_watermark: -1,
        log_start_offset: -1,
        ..Default::default()
    };
    let mut resp = vec![
        (1u32, with_records(3)),
        (2, out(0)),
        (3, lso_moved),
        (4, err),
    ];
    let r = c.update_and_generate_response(&ctx, 0, &mut resp, |r| (&r.0, r.1));
    assert_eq!(
        r,
        ResponseSession {
            error_code: 0,
            session_id: id
        }
    );
    let keys: Vec<u32> = resp.iter().map(|r| r.0).collect();
    assert_eq!(keys, [1, 3, 4]);
    // Next time, with nothing new, only the erroring partition (cached HW was reset) comes back
    // once it is healthy again.
    let ctx = c.new_context(FetchMetadata::new(id, 2), false, false, [], [], 0);
    let lso_same = PartitionOutcome {
        log_start_offset: 5,
        ..out(0)
    };
    let mut resp = vec![(2u32, out(0)), (3, lso_same), (4, out(0)), (1, out(3))];
    c.update_and_generate_response(&ctx, 0, &mut resp, |r| (&r.0, r.1));
    let keys: Vec<u32> = resp.iter().map(|r| r.0).collect();
    assert_eq!(keys, [4]);
}

#[test]
fn partitions_with_records_move_to_the_back_of_the_session_order() {
    let mut c = cache(10);
    let id = create(&mut c, &[1, 2, 3], 0);
    let ctx = c.new_context(FetchMetadata::new(id, 1), false, false, [], [], 0);
    let mut resp = vec![(1u32, with_records(5)), (2, out(0)), (3, out(0))];
    c.update_and_generate_response(&ctx, 0, &mut resp, |r| (&r.0, r.1));
    let ctx = c.new_context(FetchMetadata::new(id, 2), false, false, [], [], 0);
    let keys: Vec<u32> = ctx.partitions().iter().map(|(k, _)| *k).collect();
    assert_eq!(keys, [2, 3, 1]);
}

#[test]
fn duplicate_request_detected_when_response_is_generated() {
    let mut c = cache(10);
    let id = create(&mut c, &[1], 0);
    let first = c.new_context(FetchMetadata::new(id, 1), false, false, [], [], 0);
    // A second request with the next epoch overtakes the first one's response.
    let _second = c.new_context(FetchMetadata::new(id, 2), false, false, [], [], 0);
    let mut resp = vec![(1u32, with_records(1))];
    let r = c.update_and_generate_response(&first, 0, &mut resp, |r| (&r.0, r.1));
    assert_eq!(r.error_code, ErrorCode::InvalidFetchSessionEpoch.code());
    assert_eq!(r.session_id, id);
    assert!(resp.is_empty());
}

#[test]
fn epoch_wraps_from_max_to_one() {
    let mut c = cache(10);
    let id = create(&mut c, &[1], 0);
    // Walk the epoch with real requests is too slow to reach i32::MAX; check the rule itself.
    assert_eq!(next_epoch(i32::MAX), 1);
    let ctx = c.new_context(FetchMetadata::new(id, 1), false, false, [], [], 0);
    assert!(matches!(
        ctx.kind(),
        ContextKind::Incremental { next_epoch: 2, .. }
    ));
}

#[test]
fn full_cache_creates_no_session_when_nothing_is_evictable() {
    let mut c = cache(2);
    create(&mut c, &[1], 0);
    create(&mut c, &[1], 0);
    // Both are young (created at 0): a consumer cannot evict them, even with more partitions.
    assert_eq!(create(&mut c, &[1, 2, 3], 1_000), 0);
    assert_eq!(c.len(), 2);
}

#[test]
fn zero_slots_never_creates_a_session() {
    let mut c = cache(0);
    assert_eq!(create(&mut c, &[1], 0), 0);
    assert!(c.is_empty());
}

#[test]
fn stale_session_is_evicted_first() {
    let mut c = cache(2);
    let a = create(&mut c, &[1, 2, 3], 0);
    let b = create(&mut c, &[1], 100_000);
    // At 130 s, `a` is unused for > 120 s: it goes, even though it is the bigger one.
    let n = create(&mut c, &[1], 130_000);
    assert!(n > 0);
    assert!(c.get(a).is_none());
    assert!(c.get(b).is_some());
    assert_eq!(c.evictions(), 1);
}

#[test]
fn old_small_session_is_evicted_by_a_bigger_one() {
    let mut c = cache(2);
    let small = create(&mut c, &[1], 0);
    let big = create(&mut c, &[1, 2, 3], 0);
    // Keep both in use, and older than eviction_ms, so neither is stale.
    for (id, t) in [(small, 125_000), (big, 125_000)] {
        let ctx = c.new_context(FetchMetadata::new(id, 1), false, false, [], [], t);
        let mut resp: Vec<(u32, PartitionOutcome)> = Vec::new();
        c.update_and_generate_response(&ctx, t, &mut resp, |r| (&r.0, r.1));
    }
    // A same-size newcomer does not evict (it must rank strictly higher)...
    assert_eq!(create(&mut c, &[7], 130_000), 0);
    // ...a bigger one evicts the smallest.
    let n = create(&mut c, &[1, 2], 130_000);
    assert!(n > 0);
    assert!(c.get(small).is_none());
    assert!(c.get(big).is_some());
}

#[test]
fn follower_session_evicts_young_consumer_session() {
    let mut c = cache(1);
    let consumer = create(&mut c, &[1, 2, 3], 0);
    let follower = create_as(&mut c, &[1], 10, true);
    assert!(follower > 0);
    assert!(c.get(consumer).is_none());
    assert!(c.get(follower).unwrap().is_privileged());
    // And a consumer cannot evict the young follower session.
    assert_eq!(create(&mut c, &[1, 2, 3, 4], 20), 0);
}

#[test]
fn session_ids_are_positive_and_unique() {
    let mut c = cache(500);
    let mut ids = std::collections::HashSet::new();
    for _ in 0..500 {
        let id = create(&mut c, &[1], 0);
        assert!(id > 0);
        assert!(ids.insert(id));
    }
}

#[test]
fn full_fetch_session_keeps_response_order_and_skips_unrequested() {
    let mut c = cache(10);
    let ctx = c.new_context(
        FetchMetadata::new(0, 0),
        false,
        false,
        [
            (1, PartitionFetch::new(4, 100)),
            (2, PartitionFetch::new(9, 100)),
            (1, PartitionFetch::new(5, 100)),
        ],
        [],
        0,
    );
    // A repeated partition is read once, with its last parameters.
    assert_eq!(ctx.partitions().len(), 2);
    assert_eq!(ctx.partitions()[0], (1, PartitionFetch::new(5, 100)));
    let mut resp = vec![(2u32, out(3)), (1, out(3)), (99, out(0))];
    let r = c.update_and_generate_response(&ctx, 0, &mut resp, |r| (&r.0, r.1));
    assert_eq!(resp.len(), 3, "a full response is sent whole");
    let s = c.get(r.session_id).unwrap();
    let keys: Vec<u32> = s.partitions().map(|(k, _)| *k).collect();
    assert_eq!(keys, [2, 1]);
    assert_eq!(s.partition(&2).unwrap().high_watermark, 3);
    assert_eq!(s.partition(&1).unwrap().request.fetch_offset, 5);
}

#[test]
fn evicted_session_during_wait_answers_fetch_session_id_not_found() {
    let mut c = cache(10);
    let id = create(&mut c, &[1], 0);
    let ctx = c.new_context(FetchMetadata::new(id, 1), false, false, [], [], 0);
    c.remove(id);
    let mut resp = vec![(1u32, with_records(1))];
    let r = c.update_and_generate_response(&ctx, 0, &mut resp, |r| (&r.0, r.1));
    assert_eq!(r.error_code, ErrorCode::FetchSessionIdNotFound.code());
    assert!(resp.is_empty());
}

/// An incremental context tells when its session was created and when it fetched before; a
/// full or sessionless one tells nothing (its session, if any, does not exist yet).
#[test]
fn incremental_context_carries_the_session_times() {
    let mut c = cache(10);
    let id = create_as(&mut c, &[1, 2], 1_000, true);
    let full = c.new_context(FetchMetadata::new(0, 0), false, true, [], [], 1_100);
    assert_eq!(full.session_times(), None);
    let ctx = c.new_context(FetchMetadata::new(id, 1), false, true, [], [], 1_500);
    assert_eq!(
        ctx.session_times(),
        Some(SessionTimes {
            created_ms: 1_000,
            previous_fetch_ms: 1_000
        })
    );
    let ctx = c.new_context(FetchMetadata::new(id, 2), false, true, [], [], 2_000);
    assert_eq!(ctx.session_times().unwrap().previous_fetch_ms, 1_500);
    // The sessions can be listed (a leader snapshots its followers' last fetches).
    let s: Vec<_> = c
        .sessions()
        .map(|s| (s.id(), s.is_privileged(), s.last_used_ms()))
        .collect();
    assert_eq!(s, vec![(id, true, 2_000)]);
}
