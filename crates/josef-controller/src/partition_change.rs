//! Kafka's `PartitionChangeBuilder`: from a partition's state and a target (ISR, replicas,
//! reassignment sets, recovery state, election strategy) to the one change record that gets there,
//! or none when nothing changes.
//!
//! The builder works on josef-metadata's [`PartitionRegistration`] and yields a
//! `PartitionChangeRecord` (apply it with [`PartitionRegistration::merge`]).
//!
//! Order of [`build`](PartitionChangeBuilder::build), as in Kafka: complete the reassignment if the
//! target ISR allows it (`maybeCompleteReassignment`), elect a leader with the strategy, force a
//! leader epoch bump when replicas are removed, then set the ISR (never to empty: with eligible
//! leader replicas off, a change that would empty the ISR leaves it as it is, so the last member
//! stays and is re-elected cleanly when it returns), the assignment and the recovery state.

use josef_metadata::PartitionRegistration;
use josef_protocol::metadata_records::PartitionChangeRecord;
use josef_protocol::Uuid;

use crate::records::ids;
pub use josef_metadata::{LeaderRecoveryState, NO_LEADER, NO_LEADER_CHANGE};

/// How a leader is chosen, by the names of Kafka's election strategies (`Election.scala`, and the
/// KRaft `PartitionChangeBuilder.Election` they became). A *valid* candidate is in the target ISR
/// and acceptable (registered, unfenced, not shutting down, and not the broker being removed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ElectionStrategy {
    /// Broker failure, unfencing, ISR changes, topic creation (Kafka's `Election.ONLINE`, or
    /// `UNCLEAN` with `allow_unclean`): keep the current leader while valid, else the first valid
    /// replica in assignment order; only if unclean election is allowed, else the first acceptable
    /// replica even outside the ISR (the ISR becomes just it, recovery state RECOVERING); else none.
    #[default]
    OfflinePartitionLeaderElectionStrategy,
    /// Controlled shutdown: as the offline strategy, with the shutting-down broker never acceptable
    /// (the caller's acceptor says so), and never unclean.
    ControlledShutdownPartitionLeaderElectionStrategy,
    /// Preferred-leader election (auto rebalance, ElectLeaders PREFERRED; Kafka's
    /// `Election.PREFERRED`): the first assigned replica if valid, else the current leader if valid,
    /// else the first valid other replica.
    PreferredReplicaPartitionLeaderElectionStrategy,
    /// Completion of a reassignment: the current leader if it is a valid target replica, else the
    /// first valid target replica; never unclean.
    ReassignPartitionLeaderElectionStrategy,
}

/// Builds the change of one partition (Kafka's `PartitionChangeBuilder`).
///
/// ```
/// use josef_controller::PartitionChangeBuilder;
/// use josef_metadata::PartitionRegistration;
/// use josef_protocol::Uuid;
/// let p = PartitionRegistration { replicas: vec![1, 2, 3], isr: vec![1, 2, 3], leader: 1, ..Default::default() };
/// // Broker 1 is fenced: drop it from the ISR and elect the next valid replica.
/// let acceptable = |b: i32| b != 1;
/// let change = PartitionChangeBuilder::new(&p, Uuid::ZERO, 0, &acceptable)
///     .set_target_isr(vec![2, 3])
///     .build()
///     .unwrap();
/// let next = p.merge(&change).unwrap();
/// assert_eq!((next.leader, next.isr.clone(), next.leader_epoch, next.partition_epoch), (2, vec![2, 3], 1, 1));
/// ```
pub struct PartitionChangeBuilder<'a> {
    partition: &'a PartitionRegistration,
    topic_id: Uuid,
    partition_id: i32,
    is_acceptable_leader: &'a dyn Fn(i32) -> bool,
    election: ElectionStrategy,
    allow_unclean: bool,
    target_isr: Vec<i32>,
    target_replicas: Vec<i32>,
    target_removing: Vec<i32>,
    target_adding: Vec<i32>,
    target_recovery_state: LeaderRecoveryState,
}

impl<'a> PartitionChangeBuilder<'a> {
    /// A builder for partition `partition_id` of topic `topic_id` whose targets are the
    /// partition's current values; `is_acceptable_leader` tells which brokers may lead (Kafka's
    /// `LeaderAcceptor`).
    pub fn new(
        partition: &'a PartitionRegistration,
        topic_id: Uuid,
        partition_id: i32,
        is_acceptable_leader: &'a dyn Fn(i32) -> bool,
    ) -> Self {
        PartitionChangeBuilder {
            partition,
            topic_id,
            partition_id,
            is_acceptable_leader,
            election: ElectionStrategy::default(),
            allow_unclean: false,
            target_isr: partition.isr.clone(),
            target_replicas: partition.replicas.clone(),
            target_removing: partition.removing_replicas.clone(),
            target_adding: partition.adding_replicas.clone(),
            target_recovery_state: partition.leader_recovery_state,
        }
    }

    /// The election strategy.
    pub fn set_election(mut self, election: ElectionStrategy) -> Self {
        self.election = election;
        self
    }

    /// Whether the offline strategy may fall back to an unclean election
    /// (`unclean.leader.election.enable` of the topic, or an explicit UNCLEAN ElectLeaders).
    pub fn set_allow_unclean(mut self, allow: bool) -> Self {
        self.allow_unclean = allow;
        self
    }

    /// The target ISR.
    pub fn set_target_isr(mut self, isr: Vec<i32>) -> Self {
        self.target_isr = isr;
        self
    }

    /// The target replicas.
    pub fn set_target_replicas(mut self, replicas: Vec<i32>) -> Self {
        self.target_replicas = replicas;
        self
    }

    /// The target removing replicas.
    pub fn set_target_removing(mut self, removing: Vec<i32>) -> Self {
        self.target_removing = removing;
        self
    }

    /// The target adding replicas.
    pub fn set_target_adding(mut self, adding: Vec<i32>) -> Self {
        self.target_adding = adding;
        self
    }

    /// The target leader recovery state.
    pub fn set_target_leader_recovery_state(mut self, state: LeaderRecoveryState) -> Self {
        self.target_recovery_state = state;
        self
    }

    fn is_valid_new_leader(&self, replica: i32) -> bool {
        replica != NO_LEADER
            && self.target_isr.contains(&replica)
            && (self.is_acceptable_leader)(replica)
    }

    /// Kafka's `PartitionReassignmentReplicas.maybeCompleteReassignment`: once the ISR without the
    /// removing replicas is non-empty and holds every target replica, the removing replicas go.
    fn complete_reassignment_if_needed(&mut self) {
        if self.target_adding.is_empty() && self.target_removing.is_empty() {
            return;
        }
        let removing = &self.target_removing;
        let isr: Vec<i32> = self
            .target_isr
            .iter()
            .copied()
            .filter(|r| !removing.contains(r))
            .collect();
        let replicas: Vec<i32> = self
            .target_replicas
            .iter()
            .copied()
            .filter(|r| !removing.contains(r))
            .collect();
        if isr.is_empty() || !replicas.iter().all(|r| isr.contains(r)) {
            return;
        }
        self.target_isr = isr;
        self.target_replicas = replicas;
        self.target_removing.clear();
        self.target_adding.clear();
        if self.election != ElectionStrategy::PreferredReplicaPartitionLeaderElectionStrategy {
            self.election = ElectionStrategy::ReassignPartitionLeaderElectionStrategy;
        }
    }

    /// The elected leader and whether the election was unclean.
    fn elect_leader(&self) -> (i32, bool) {
        let current = self.partition.leader;
        if self.election == ElectionStrategy::PreferredReplicaPartitionLeaderElectionStrategy {
            let preferred = self.target_replicas.first().copied().unwrap_or(NO_LEADER);
            if self.is_valid_new_leader(preferred) {
                return (preferred, false);
            }
            if self.is_valid_new_leader(current) {
                return (current, false);
            }
            let other = self.target_replicas.iter().skip(1).copied();
            return (
                other
                    .into_iter()
                    .find(|&r| self.is_valid_new_leader(r))
                    .unwrap_or(NO_LEADER),
                false,
            );
        }
        if self.is_valid_new_leader(current) {
            return (current, false);
        }
        if let Some(r) = self
            .target_replicas
            .iter()
            .copied()
            .find(|&r| self.is_valid_new_leader(r))
        {
            return (r, false);
        }
        if self.election == ElectionStrategy::OfflinePartitionLeaderElectionStrategy
            && self.allow_unclean
        {
            if let Some(r) = self
                .target_replicas
                .iter()
                .copied()
                .find(|&r| (self.is_acceptable_leader)(r))
            {
                return (r, true);
            }
        }
        (NO_LEADER, false)
    }

    /// The change record, or `None` when the partition stays as it is.
    pub fn build(mut self) -> Option<PartitionChangeRecord> {
        self.complete_reassignment_if_needed();
        let p = self.partition;
        let mut change = PartitionChangeRecord {
            topic_id: self.topic_id,
            partition_id: self.partition_id,
            ..Default::default()
        };
        let unchanged = change.clone();
        let mut recovery = None;
        let (leader, unclean) = self.elect_leader();
        if leader != p.leader {
            change.leader = leader;
            if unclean {
                change.isr = Some(ids(&[leader]));
                if p.leader_recovery_state != LeaderRecoveryState::Recovering {
                    recovery = Some(LeaderRecoveryState::Recovering);
                }
            }
        }
        // Removing replicas from the assignment fences the old replica set: bump the leader epoch.
        if change.leader == NO_LEADER_CHANGE
            && self.target_replicas != p.replicas
            && !p.replicas.iter().all(|r| self.target_replicas.contains(r))
        {
            change.leader = p.leader;
        }
        if change.isr.is_none() && !self.target_isr.is_empty() && self.target_isr != p.isr {
            change.isr = Some(ids(&self.target_isr));
        }
        if self.target_replicas != p.replicas {
            change.replicas = Some(ids(&self.target_replicas));
        }
        if self.target_removing != p.removing_replicas {
            change.removing_replicas = Some(ids(&self.target_removing));
        }
        if self.target_adding != p.adding_replicas {
            change.adding_replicas = Some(ids(&self.target_adding));
        }
        if recovery.is_none() && self.target_recovery_state != p.leader_recovery_state {
            recovery = Some(self.target_recovery_state);
        }
        change.leader_recovery_state =
            recovery.map_or(LeaderRecoveryState::NO_CHANGE, |r| r.value());
        (change != unchanged).then_some(change)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ElectionStrategy::*;

    fn part(replicas: &[i32], isr: &[i32], leader: i32) -> PartitionRegistration {
        PartitionRegistration {
            replicas: replicas.to_vec(),
            isr: isr.to_vec(),
            leader,
            ..Default::default()
        }
    }

    fn apply(p: &PartitionRegistration, b: PartitionChangeBuilder<'_>) -> PartitionRegistration {
        match b.build() {
            Some(c) => p.merge(&c).unwrap(),
            None => p.clone(),
        }
    }

    #[test]
    fn offline_strategy_first_valid_replica_in_assignment_order() {
        let p = part(&[3, 1, 2], &[2, 1], 3);
        let ok = |b: i32| b != 3;
        let n = apply(
            &p,
            PartitionChangeBuilder::new(&p, Uuid::ZERO, 0, &ok).set_target_isr(vec![2, 1]),
        );
        // Assignment order (3, 1, 2), not ISR order: 1 wins.
        assert_eq!(n.leader, 1);
        assert_eq!(n.leader_epoch, 1);
        assert_eq!(n.partition_epoch, 1);
    }

    #[test]
    fn offline_strategy_keeps_a_valid_leader() {
        let p = part(&[1, 2, 3], &[1, 2, 3], 2);
        let ok = |_| true;
        let c = PartitionChangeBuilder::new(&p, Uuid::ZERO, 0, &ok)
            .set_target_isr(vec![2, 3])
            .build()
            .unwrap();
        assert_eq!(
            c.leader, NO_LEADER_CHANGE,
            "ISR shrink keeps the leader epoch"
        );
        assert_eq!(p.merge(&c).unwrap().leader_epoch, 0);
        assert_eq!(p.merge(&c).unwrap().partition_epoch, 1);
    }

    #[test]
    fn last_isr_member_stays_and_leader_goes() {
        let p = part(&[1, 2], &[1], 1);
        let ok = |b: i32| b != 1;
        let n = apply(
            &p,
            PartitionChangeBuilder::new(&p, Uuid::ZERO, 0, &ok).set_target_isr(vec![]),
        );
        assert_eq!(n.leader, NO_LEADER);
        assert_eq!(n.isr, vec![1], "the ISR is never emptied");
        assert_eq!(n.leader_epoch, 1);
        // When broker 1 returns, it is elected cleanly.
        let back = |_| true;
        let m = apply(&n, PartitionChangeBuilder::new(&n, Uuid::ZERO, 0, &back));
        assert_eq!((m.leader, m.leader_epoch), (1, 2));
    }

    #[test]
    fn unclean_fallback_only_when_allowed() {
        let p = part(&[1, 2], &[1], NO_LEADER);
        let ok = |b: i32| b == 2;
        assert!(PartitionChangeBuilder::new(&p, Uuid::ZERO, 0, &ok)
            .build()
            .is_none());
        let n = apply(
            &p,
            PartitionChangeBuilder::new(&p, Uuid::ZERO, 0, &ok).set_allow_unclean(true),
        );
        assert_eq!(n.leader, 2);
        assert_eq!(n.isr, vec![2]);
        assert_eq!(n.leader_recovery_state, LeaderRecoveryState::Recovering);
        // Other strategies never elect uncleanly.
        for s in [
            ControlledShutdownPartitionLeaderElectionStrategy,
            ReassignPartitionLeaderElectionStrategy,
            PreferredReplicaPartitionLeaderElectionStrategy,
        ] {
            let b = PartitionChangeBuilder::new(&p, Uuid::ZERO, 0, &ok)
                .set_election(s)
                .set_allow_unclean(true);
            assert!(b.build().is_none(), "{s:?}");
        }
    }

    #[test]
    fn controlled_shutdown_strategy_moves_leadership_off_the_broker() {
        let p = part(&[1, 2, 3], &[1, 2, 3], 1);
        let not_shutting_down = |b: i32| b != 1;
        let n = apply(
            &p,
            PartitionChangeBuilder::new(&p, Uuid::ZERO, 0, &not_shutting_down)
                .set_election(ControlledShutdownPartitionLeaderElectionStrategy)
                .set_target_isr(vec![2, 3]),
        );
        assert_eq!((n.leader, n.isr.clone()), (2, vec![2, 3]));
        // Sole ISR member: leader -1, ISR kept.
        let q = part(&[1, 2], &[1], 1);
        let m = apply(
            &q,
            PartitionChangeBuilder::new(&q, Uuid::ZERO, 0, &not_shutting_down)
                .set_election(ControlledShutdownPartitionLeaderElectionStrategy)
                .set_allow_unclean(true)
                .set_target_isr(vec![]),
        );
        assert_eq!((m.leader, m.isr.clone()), (NO_LEADER, vec![1]));
    }

    #[test]
    fn preferred_strategy() {
        let p = part(&[1, 2, 3], &[1, 2, 3], 2);
        let all = |_| true;
        let pref = |p: &PartitionRegistration, ok: &dyn Fn(i32) -> bool| {
            PartitionChangeBuilder::new(p, Uuid::ZERO, 0, ok)
                .set_election(PreferredReplicaPartitionLeaderElectionStrategy)
                .build()
        };
        assert_eq!(pref(&p, &all).unwrap().leader, 1);
        // Preferred not valid, current valid: no change.
        let not1 = |b: i32| b != 1;
        assert!(pref(&p, &not1).is_none());
        // Preferred not in the ISR: no change either.
        let q = part(&[1, 2, 3], &[2, 3], 2);
        assert!(pref(&q, &all).is_none());
        // Neither preferred nor current valid: the first valid other replica.
        let only3 = |b: i32| b == 3;
        assert_eq!(pref(&p, &only3).unwrap().leader, 3);
    }

    #[test]
    fn reassignment_completes_when_isr_holds_every_target() {
        // Reassign [1,2,3] -> [4,5,6]: replicas = targets then removing.
        let p = PartitionRegistration {
            replicas: vec![4, 5, 6, 1, 2, 3],
            isr: vec![1, 2, 3],
            adding_replicas: vec![4, 5, 6],
            removing_replicas: vec![1, 2, 3],
            leader: 1,
            ..Default::default()
        };
        let all = |_| true;
        // Not yet: 6 missing.
        let n = apply(
            &p,
            PartitionChangeBuilder::new(&p, Uuid::ZERO, 0, &all)
                .set_target_isr(vec![1, 2, 3, 4, 5]),
        );
        assert_eq!(n.replicas, p.replicas);
        assert_eq!(n.leader_epoch, 0);
        let m = apply(
            &n,
            PartitionChangeBuilder::new(&n, Uuid::ZERO, 0, &all)
                .set_target_isr(vec![1, 2, 3, 4, 5, 6]),
        );
        assert_eq!(m.replicas, vec![4, 5, 6]);
        assert_eq!(m.isr, vec![4, 5, 6]);
        assert!(m.adding_replicas.is_empty() && m.removing_replicas.is_empty());
        assert_eq!(m.leader, 4, "reassign strategy: first valid target");
        assert_eq!(m.leader_epoch, 1);
    }

    #[test]
    fn removing_a_follower_bumps_the_leader_epoch() {
        let p = part(&[1, 2, 3], &[1, 2, 3], 1);
        let all = |_| true;
        let c = PartitionChangeBuilder::new(&p, Uuid::ZERO, 0, &all)
            .set_target_replicas(vec![1, 2])
            .set_target_isr(vec![1, 2])
            .build()
            .unwrap();
        assert_eq!(c.leader, 1, "forced bump, same leader");
        let n = p.merge(&c).unwrap();
        assert_eq!((n.leader, n.leader_epoch), (1, 1));
        // Adding only: no bump.
        let c = PartitionChangeBuilder::new(&p, Uuid::ZERO, 0, &all)
            .set_target_replicas(vec![1, 2, 3, 4])
            .build()
            .unwrap();
        assert_eq!(c.leader, NO_LEADER_CHANGE);
    }

    #[test]
    fn no_op_yields_nothing_and_recovery_state_changes() {
        let p = part(&[1, 2], &[1, 2], 1);
        let all = |_| true;
        assert!(PartitionChangeBuilder::new(&p, Uuid::ZERO, 0, &all)
            .build()
            .is_none());
        let mut r = part(&[1, 2], &[1], 1);
        r.leader_recovery_state = LeaderRecoveryState::Recovering;
        let c = PartitionChangeBuilder::new(&r, Uuid::ZERO, 0, &all)
            .set_target_leader_recovery_state(LeaderRecoveryState::Recovered)
            .build()
            .unwrap();
        assert_eq!(
            c.leader_recovery_state,
            LeaderRecoveryState::Recovered.value()
        );
    }
}
