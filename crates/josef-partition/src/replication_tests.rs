use super::*;

fn leader3() -> ReplicationState {
    let mut r = ReplicationState::new(1, 0);
    let c = r.make_leader(1, 1, &[1, 2, 3], &[1, 2, 3], 0, 1_000);
    assert!(c.changed && c.new_leader && c.new_leader_epoch);
    r
}

#[test]
fn caught_up_time_follows_kafkas_rule() {
    let mut r = leader3();
    // Fetch at the leader LEO: caught up now.
    r.update_follower_fetch_state(2, 10, 0, -1, 10, 2_000)
        .unwrap();
    assert_eq!(r.follower(2).unwrap().last_caught_up_time_ms, 2_000);
    // Behind the LEO now, but at the LEO of the previous fetch: caught up at the previous time.
    r.update_follower_fetch_state(2, 10, 0, -1, 20, 3_000)
        .unwrap();
    assert_eq!(r.follower(2).unwrap().last_caught_up_time_ms, 2_000);
    r.update_follower_fetch_state(2, 20, 0, -1, 30, 4_000)
        .unwrap();
    assert_eq!(r.follower(2).unwrap().last_caught_up_time_ms, 3_000);
    // Behind both: unchanged.
    r.update_follower_fetch_state(2, 25, 0, -1, 40, 5_000)
        .unwrap();
    assert_eq!(r.follower(2).unwrap().last_caught_up_time_ms, 3_000);
}

#[test]
fn hw_is_the_minimum_leo_of_the_isr_and_never_goes_back() {
    let mut r = leader3();
    assert_eq!(r.maybe_increment_high_watermark(10, 1_000), None);
    r.update_follower_fetch_state(2, 10, 0, -1, 10, 1_100)
        .unwrap();
    let o = r
        .update_follower_fetch_state(3, 4, 0, -1, 10, 1_100)
        .unwrap();
    assert_eq!(o.high_watermark, Some(4));
    // A later fetch from a lower offset (a restarted follower) does not move it back.
    let o = r
        .update_follower_fetch_state(3, 2, 0, -1, 10, 1_200)
        .unwrap();
    assert_eq!(o.high_watermark, None);
    assert_eq!(r.high_watermark(), 4);
    r.update_follower_fetch_state(3, 10, 0, -1, 10, 1_300)
        .unwrap();
    assert_eq!(r.high_watermark(), 10);
}

#[test]
fn hw_waits_for_every_isr_member_after_an_election() {
    let mut r = ReplicationState::new(1, 5);
    r.make_leader(3, 3, &[1, 2], &[1, 2, 3], 8, 0);
    assert_eq!(r.high_watermark(), 5);
    assert_eq!(r.follower(2).unwrap().log_end_offset, UNKNOWN_OFFSET);
    // Replica 3 is outside the ISR and never fetched: it does not count.
    assert_eq!(
        r.update_follower_fetch_state(2, 8, 0, -1, 8, 1)
            .unwrap()
            .high_watermark,
        Some(8)
    );
}

#[test]
fn expansion_needs_the_hw_and_the_epoch_start_and_is_optimistic() {
    let mut r = ReplicationState::new(1, 0);
    r.make_leader(2, 5, &[1, 2], &[1, 2, 3], 10, 0);
    r.update_follower_fetch_state(2, 12, 0, -1, 12, 1).unwrap();
    assert_eq!(r.high_watermark(), 12);
    // Below the HW: no expansion. Replica 3 is caught up in time though, so it holds the HW.
    let o = r.update_follower_fetch_state(3, 11, 0, 7, 12, 2).unwrap();
    assert_eq!(o.alter_partition, None);
    let o = r.update_follower_fetch_state(3, 12, 0, 7, 12, 3).unwrap();
    let p = o.alter_partition.expect("expansion");
    assert_eq!(p.new_isr, vec![1, 2, 3]);
    assert_eq!(p.new_isr_broker_epochs, vec![-1, -1, 7]);
    assert_eq!((p.leader_epoch, p.partition_epoch), (2, 5));
    assert_eq!(r.isr_state().maximal_isr(), vec![1, 2, 3]);
    assert_eq!(r.isr(), &[1, 2]);
    // One change at a time.
    assert_eq!(r.maybe_shrink_isr(12, 1_000_000), None);
    // Maximal ISR counts for the HW at once.
    r.update_follower_fetch_state(2, 20, 0, -1, 20, 4).unwrap();
    assert_eq!(r.high_watermark(), 12);
    let out = r.on_alter_partition_response(
        &p,
        Ok(CommittedPartitionState {
            leader_id: 1,
            leader_epoch: 2,
            isr: vec![1, 2, 3],
            partition_epoch: 6,
        }),
        20,
        5,
    );
    assert_eq!(
        out,
        AlterPartitionOutcome::Committed {
            high_watermark: None
        }
    );
    assert_eq!(r.isr(), &[1, 2, 3]);
    assert_eq!(r.partition_epoch(), 6);
}

#[test]
fn expansion_waits_for_the_leader_epoch_start_offset() {
    let mut r = ReplicationState::new(1, 0);
    // HW 0 but the epoch started at 10.
    r.make_leader(1, 1, &[1], &[1, 2], 10, 0);
    let o = r.update_follower_fetch_state(2, 5, 0, -1, 10, 1).unwrap();
    assert!(o.alter_partition.is_none());
    let o = r.update_follower_fetch_state(2, 10, 0, -1, 10, 2).unwrap();
    assert!(o.alter_partition.is_some());
}

#[test]
fn a_new_leaders_high_watermark_lags_until_it_reaches_the_epoch_start() {
    let mut r = ReplicationState::new(1, 0);
    r.make_leader(1, 1, &[1, 2], &[1, 2], 10, 0);
    assert!(r.high_watermark_lags_epoch_start(7));
    assert!(!r.high_watermark_lags_epoch_start(10));
    r.make_follower(2, 2, 2);
    assert!(!r.high_watermark_lags_epoch_start(7), "only a leader lags");
}

#[test]
fn ineligible_replicas_do_not_join() {
    let mut r = ReplicationState::new(1, 0);
    r.make_leader(1, 1, &[1], &[1, 2], 0, 0);
    r.set_ineligible_replicas(&[2]);
    assert!(r
        .update_follower_fetch_state(2, 0, 0, -1, 0, 1)
        .unwrap()
        .alter_partition
        .is_none());
}

#[test]
fn shrink_removes_lagging_followers_and_is_pessimistic() {
    let mut r = leader3();
    r.set_replica_lag_time_max_ms(100);
    r.update_follower_fetch_state(2, 10, 0, -1, 10, 1_050)
        .unwrap();
    r.update_follower_fetch_state(3, 10, 0, -1, 10, 1_050)
        .unwrap();
    assert_eq!(r.maybe_shrink_isr(20, 1_100), None);
    r.update_follower_fetch_state(2, 20, 0, -1, 20, 1_120)
        .unwrap();
    // Replica 3 last caught up at 1 050: out at 1 151.
    let p = r.maybe_shrink_isr(20, 1_151).expect("shrink");
    assert_eq!(p.new_isr, vec![1, 2]);
    // Still counted until committed: the HW stays at replica 3's LEO.
    assert_eq!(r.maybe_increment_high_watermark(20, 1_152), None);
    assert_eq!(r.high_watermark(), 10);
    let committed = CommittedPartitionState {
        leader_id: 1,
        leader_epoch: 1,
        isr: vec![1, 2],
        partition_epoch: 2,
    };
    let out = r.on_alter_partition_response(&p, Ok(committed), 20, 1_153);
    assert_eq!(
        out,
        AlterPartitionOutcome::Committed {
            high_watermark: Some(20)
        }
    );
}

#[test]
fn alter_partition_errors_follow_kafka() {
    let mut r = leader3();
    r.set_replica_lag_time_max_ms(10);
    let p = r.maybe_shrink_isr(0, 2_000).unwrap();
    for code in [
        ErrorCode::FencedLeaderEpoch,
        ErrorCode::InvalidUpdateVersion,
        ErrorCode::InvalidRequest,
        ErrorCode::NewLeaderElected,
        ErrorCode::UnknownTopicOrPartition,
    ] {
        assert_eq!(
            r.on_alter_partition_response(&p, Err(code), 0, 2_000),
            AlterPartitionOutcome::StayPending
        );
        assert!(r.isr_state().is_pending());
    }
    assert_eq!(
        r.on_alter_partition_response(&p, Err(ErrorCode::NotController), 0, 2_000),
        AlterPartitionOutcome::Resubmit(p.clone())
    );
    // A proposal that is not the pending one: ignored.
    let mut other = p.clone();
    other.partition_epoch += 7;
    assert_eq!(
        r.on_alter_partition_response(&other, Err(ErrorCode::OperationNotAttempted), 0, 2_000),
        AlterPartitionOutcome::Ignored
    );
    // A success for another leader epoch, or an older partition epoch: ignored, still pending.
    let stale = CommittedPartitionState {
        leader_id: 1,
        leader_epoch: 0,
        isr: vec![1],
        partition_epoch: 9,
    };
    assert_eq!(
        r.on_alter_partition_response(&p, Ok(stale), 0, 2_000),
        AlterPartitionOutcome::Ignored
    );
    assert_eq!(
        r.on_alter_partition_response(&p, Err(ErrorCode::OperationNotAttempted), 0, 2_000),
        AlterPartitionOutcome::Reverted
    );
    assert_eq!(r.isr_state(), &IsrState::Committed { isr: vec![1, 2, 3] });
}

#[test]
fn min_isr_checks() {
    let mut r = ReplicationState::new(1, 0);
    r.make_leader(1, 1, &[1, 2], &[1, 2, 3], 0, 0);
    assert_eq!(r.check_append(-1, 2), Ok(()));
    assert_eq!(r.check_append(-1, 3), Err(ErrorCode::NotEnoughReplicas));
    assert_eq!(r.check_append(1, 3), Ok(()));
    // Effective min ISR is capped by the replica count.
    assert_eq!(r.effective_min_isr(5), 3);
    r.update_follower_fetch_state(2, 5, 0, -1, 5, 1).unwrap();
    assert_eq!(r.check_enough_replicas_reach_offset(5, 2), Ok(true));
    assert_eq!(
        r.check_enough_replicas_reach_offset(5, 3),
        Err(ErrorCode::NotEnoughReplicasAfterAppend)
    );
    assert_eq!(r.check_enough_replicas_reach_offset(6, 3), Ok(false));
    r.make_follower(2, 2, 2);
    assert_eq!(
        r.check_enough_replicas_reach_offset(5, 1),
        Err(ErrorCode::NotLeaderOrFollower)
    );
    assert_eq!(r.check_append(1, 1), Err(ErrorCode::NotLeaderOrFollower));
}

#[test]
fn hw_is_frozen_under_min_isr() {
    let mut r = ReplicationState::new(1, 0);
    r.set_min_insync_replicas(2);
    r.make_leader(1, 1, &[1], &[1, 2], 0, 0);
    assert_eq!(r.maybe_increment_high_watermark(5, 0), None);
    // A single replica is never under its (capped) min ISR.
    let mut s = ReplicationState::single_replica(1, 0, 0);
    s.set_min_insync_replicas(3);
    assert_eq!(s.maybe_increment_high_watermark(5, 0), Some(5));
}

#[test]
fn make_leader_and_follower_ignore_stale_states() {
    let mut r = leader3();
    assert!(!r.make_leader(1, 1, &[1, 2, 3], &[1, 2, 3], 0, 0).changed);
    assert!(!r.make_leader(0, 5, &[1], &[1, 2, 3], 0, 0).changed);
    assert!(!r.make_leader(2, 0, &[1], &[1, 2, 3], 0, 0).changed);
    // Same epoch, newer partition epoch (an ISR change through metadata): changed, same epoch.
    let c = r.make_leader(1, 2, &[1, 2], &[1, 2, 3], 0, 0);
    assert!(c.changed && !c.new_leader_epoch && !c.new_leader);
    let c = r.make_follower(2, 2, 3);
    assert!(c.changed && c.new_leader && c.new_leader_epoch);
    assert_eq!(r.leader_id(), Some(2));
    assert!(r.followers().next().is_none());
    assert!(!r.make_follower(2, 2, 3).changed);
    assert!(!r.make_follower(3, 1, 4).changed);
    let c = r.make_leader(3, 4, &[1, 3], &[1, 2, 3], 7, 10);
    assert!(c.new_leader && c.new_leader_epoch);
    assert_eq!(r.leader_epoch_start_offset(), Some(7));
    assert_eq!(r.follower(3).unwrap().last_caught_up_time_ms, 10);
    assert_eq!(r.follower(2).unwrap().last_caught_up_time_ms, NEVER);
}

#[test]
fn fetch_epoch_checks() {
    let r = leader3();
    assert_eq!(r.check_current_leader_epoch(-1, true), Ok(()));
    assert_eq!(r.check_current_leader_epoch(1, true), Ok(()));
    assert_eq!(
        r.check_current_leader_epoch(0, true),
        Err(ErrorCode::FencedLeaderEpoch)
    );
    assert_eq!(
        r.check_current_leader_epoch(2, true),
        Err(ErrorCode::UnknownLeaderEpoch)
    );
    assert_eq!(r.validate_follower_fetch(2, 1), Ok(()));
    assert_eq!(
        r.validate_follower_fetch(9, 1),
        Err(ErrorCode::UnknownLeaderEpoch)
    );
    assert_eq!(
        r.validate_follower_fetch(9, -1),
        Err(ErrorCode::NotLeaderOrFollower)
    );
    let mut f = ReplicationState::new(2, 0);
    f.make_follower(1, 1, 1);
    assert_eq!(
        f.check_current_leader_epoch(1, true),
        Err(ErrorCode::NotLeaderOrFollower)
    );
    assert_eq!(f.check_current_leader_epoch(1, false), Ok(()));
}

#[test]
fn an_older_broker_epoch_is_refused_with_the_state_untouched() {
    let mut r = leader3();
    r.update_follower_fetch_state(2, 5, 0, 10, 5, 1).unwrap();
    assert_eq!(
        r.update_follower_fetch_state(2, 7, 0, 9, 7, 2),
        Err(ErrorCode::NotLeaderOrFollower)
    );
    assert_eq!(r.follower(2).unwrap().log_end_offset, 5);
    assert_eq!(
        r.update_follower_fetch_state(9, 7, 0, 9, 7, 2),
        Err(ErrorCode::NotLeaderOrFollower)
    );
}

#[test]
fn diverging_epoch_on_the_leader() {
    // Leader cache: epoch 1 from 0, epoch 3 from 10; LEO 15.
    // Follower at epoch 1 offset 12: epoch 1 ended at 10 -> diverging (1, 10).
    assert_eq!(
        leader_diverging_epoch(1, 12, 0, (1, 10)),
        Ok(Some(EpochEndOffset {
            epoch: 1,
            end_offset: 10
        }))
    );
    // Follower at epoch 2 (unknown to the leader): leader answers (1, 10): smaller epoch.
    assert_eq!(
        leader_diverging_epoch(2, 10, 0, (1, 10)),
        Ok(Some(EpochEndOffset {
            epoch: 1,
            end_offset: 10
        }))
    );
    assert_eq!(leader_diverging_epoch(3, 12, 0, (3, 15)), Ok(None));
    assert_eq!(leader_diverging_epoch(-1, 12, 0, (-1, -1)), Ok(None));
    assert_eq!(
        leader_diverging_epoch(5, 12, 0, (-1, -1)),
        Err(ErrorCode::OffsetOutOfRange)
    );
    assert_eq!(
        leader_diverging_epoch(3, 2, 5, (3, 15)),
        Err(ErrorCode::OffsetOutOfRange)
    );
}

#[test]
fn truncation_follows_kafkas_rules() {
    let d = |epoch, end_offset| EpochEndOffset { epoch, end_offset };
    // Undefined end: back to the HW.
    assert_eq!(
        truncation_offset(d(-1, -1), (1, 9), 20, 7),
        TruncationDecision {
            offset: 7,
            completed: true
        }
    );
    // Same epoch locally: min(leader end, local end, LEO).
    assert_eq!(
        truncation_offset(d(2, 12), (2, 15), 20, 0),
        TruncationDecision {
            offset: 12,
            completed: true
        }
    );
    assert_eq!(
        truncation_offset(d(2, 30), (2, 15), 20, 0),
        TruncationDecision {
            offset: 15,
            completed: true
        }
    );
    // Leader's epoch unknown locally (local floor is lower): truncate to the local end, ask again.
    assert_eq!(
        truncation_offset(d(3, 12), (2, 10), 20, 0),
        TruncationDecision {
            offset: 10,
            completed: false
        }
    );
    // Nothing at or below locally.
    assert_eq!(
        truncation_offset(d(3, 12), (-1, -1), 20, 0),
        TruncationDecision {
            offset: 12,
            completed: true
        }
    );
    // Very old leader without epochs.
    assert_eq!(
        truncation_offset(d(-1, 40), (-1, -1), 20, 0),
        TruncationDecision {
            offset: 20,
            completed: true
        }
    );
}

#[test]
fn follower_hw_is_min_of_leader_hw_and_local_leo() {
    let mut r = ReplicationState::new(2, 0);
    r.make_follower(1, 1, 1);
    assert_eq!(r.update_follower_high_watermark(10, 6), Some(6));
    assert_eq!(r.update_follower_high_watermark(10, 12), Some(10));
    assert_eq!(r.update_follower_high_watermark(10, 12), None);
    r.on_truncation(4);
    assert_eq!(r.high_watermark(), 4);
}

const COVER: SessionCover = SessionCover {
    session_id: 7,
    created_ms: 1_000,
};

/// Followers 2 and 3 read the partition at the leader's LEO 10 at 1 050 in session `COVER`;
/// lag 100 ms.
fn idle_followers_in_a_session() -> ReplicationState {
    let mut r = leader3();
    r.set_replica_lag_time_max_ms(100);
    for id in [2, 3] {
        r.update_follower_fetch_state(id, 10, 0, -1, 10, 1_050)
            .unwrap();
        r.set_session_cover(id, Some(COVER));
    }
    r
}

/// The session kept fetching while the partition stayed idle: after the first append, the
/// followers still count as caught up at their session's last fetch, as they would in Kafka
/// (whose leader reads every session partition on each fetch). Without that, the first append
/// after an idle period longer than the lag shrinks the ISR to the leader.
#[test]
fn a_covering_session_keeps_idle_followers_caught_up() {
    let mut r = idle_followers_in_a_session();
    // 10 s later, the leader appends (LEO 11); the session last fetched at 10 000.
    r.apply_session_fetches(|c| (c == COVER).then_some(10_000));
    assert_eq!(r.maybe_shrink_isr(11, 10_050), None);
    assert_eq!(r.follower(2).unwrap().last_caught_up_time_ms, 10_000);
    // The same without session fetches (a sessionless follower that stopped): both out.
    let mut r = idle_followers_in_a_session();
    let p = r.maybe_shrink_isr(11, 10_050).expect("lagging");
    assert_eq!(p.new_isr, vec![1]);
}

#[test]
fn a_gone_session_ends_the_cover() {
    let mut r = idle_followers_in_a_session();
    r.apply_session_fetches(|_| None);
    assert_eq!(r.follower(2).unwrap().session_cover, None);
    // It no longer counts even if a session with the same id shows up.
    r.apply_session_fetches(|_| Some(10_000));
    assert!(r.maybe_shrink_isr(11, 10_050).is_some());
}

#[test]
fn a_follower_behind_the_log_end_is_not_covered() {
    let mut r = leader3();
    r.update_follower_fetch_state(2, 5, 0, -1, 10, 1_050)
        .unwrap();
    r.set_session_cover(2, Some(COVER));
    assert_eq!(r.follower(2).unwrap().session_cover, None);
    // A session fetch does not move its times.
    r.apply_session_fetches(|_| Some(9_000));
    assert_eq!(r.follower(2).unwrap().last_fetch_time_ms, 1_050);
}

#[test]
fn a_new_leader_epoch_ends_the_cover() {
    let mut r = idle_followers_in_a_session();
    r.make_leader(2, 2, &[1, 2, 3], &[1, 2, 3], 10, 2_000);
    assert_eq!(r.follower(2).unwrap().session_cover, None);
}

/// Follower 3 reached the log end while ineligible (its broker was fenced), so its read could
/// not add it; once eligible, its covering session lets the leader retry without a read.
#[test]
fn a_covered_follower_outside_the_isr_is_added_once_eligible() {
    let mut r = ReplicationState::new(1, 0);
    r.make_leader(1, 1, &[1, 2], &[1, 2, 3], 0, 1_000);
    r.set_ineligible_replicas(&[3]);
    r.update_follower_fetch_state(2, 10, 0, -1, 10, 1_050)
        .unwrap();
    let o = r
        .update_follower_fetch_state(3, 10, 0, -1, 10, 1_050)
        .unwrap();
    assert!(o.alter_partition.is_none());
    assert_eq!(r.maybe_expand_isr_for_covered(), None);
    r.set_session_cover(3, Some(COVER));
    assert_eq!(r.maybe_expand_isr_for_covered(), None, "still ineligible");
    r.set_ineligible_replicas(&[]);
    let p = r.maybe_expand_isr_for_covered().expect("expansion");
    assert_eq!(p.new_isr, vec![1, 2, 3]);
}
