//! The replication state of one partition, without I/O (Kafka's `Partition` leader and follower
//! bookkeeping, `Replica`, `PartitionState` with `PendingExpandIsr` / `PendingShrinkIsr`).
//!
//! Everything here is a pure function of its inputs: the leader's log end offset and the current
//! time come in as arguments, and the results (a new high watermark, an `AlterPartition` proposal
//! to send to the controller) come back as values for the caller to apply to the log and send.

use std::collections::{BTreeMap, BTreeSet};

use josef_protocol::ErrorCode;

use crate::session_cover::SessionCover;

/// A broker (replica) id.
pub type ReplicaId = i32;

/// No offset known yet (Kafka's `UnifiedLog.UnknownOffset`): a follower's LEO after this broker
/// became leader and before that follower fetched.
pub const UNKNOWN_OFFSET: i64 = -1;

/// No leader epoch given (the request did not carry one, or an epoch is undefined).
pub use josef_protocol::constants::NO_PARTITION_LEADER_EPOCH as NO_EPOCH;

/// No broker epoch given (Fetch before v15).
pub const NO_BROKER_EPOCH: i64 = -1;

/// A follower's caught-up time when it never caught up (Kafka uses 0, the epoch, which is as
/// far in the past with wall-clock times; this works with any clock).
pub const NEVER: i64 = i64::MIN;

/// Default `replica.lag.time.max.ms`.
pub const DEFAULT_REPLICA_LAG_TIME_MAX_MS: i64 = 30_000;

/// What this broker knows of one follower, as leader (Kafka's `ReplicaState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FollowerState {
    /// The follower's id.
    pub replica_id: ReplicaId,
    /// Its log end offset: the fetch offset of its last fetch ([`UNKNOWN_OFFSET`] until then).
    pub log_end_offset: i64,
    /// Its log start offset, as it reported it.
    pub log_start_offset: i64,
    /// The leader's LEO at its previous fetch ([`UNKNOWN_OFFSET`] before one).
    pub last_fetch_leader_log_end_offset: i64,
    /// Time of its previous fetch ([`NEVER`] before one).
    pub last_fetch_time_ms: i64,
    /// The last time it was known to have caught up with the leader's LEO ([`NEVER`] if never).
    pub last_caught_up_time_ms: i64,
    /// Broker epoch of its last fetch ([`NO_BROKER_EPOCH`] if unknown).
    pub broker_epoch: i64,
    /// The fetch session whose fetches count as fetches of this partition while it is idle
    /// (see [`crate::session_cover`]); `None` outside a session or once the follower fell behind.
    pub session_cover: Option<SessionCover>,
}

impl FollowerState {
    fn new(replica_id: ReplicaId) -> Self {
        FollowerState {
            replica_id,
            log_end_offset: UNKNOWN_OFFSET,
            log_start_offset: UNKNOWN_OFFSET,
            last_fetch_leader_log_end_offset: UNKNOWN_OFFSET,
            last_fetch_time_ms: NEVER,
            last_caught_up_time_ms: NEVER,
            broker_epoch: NO_BROKER_EPOCH,
            session_cover: None,
        }
    }

    /// A fetch of its covering session at `fetch_ms` counts as a fetch of this partition at its
    /// last offsets, which were the leader's log end (see [`crate::session_cover`]).
    fn count_session_fetch(&mut self, fetch_ms: i64) {
        if fetch_ms > self.last_fetch_time_ms {
            self.last_fetch_time_ms = fetch_ms;
            self.last_caught_up_time_ms = self.last_caught_up_time_ms.max(fetch_ms);
        }
    }

    /// Kafka's `isCaughtUp`: its LEO equals the leader's, or it was caught up less than
    /// `lag_max_ms` ago.
    pub fn is_caught_up(&self, leader_leo: i64, now_ms: i64, lag_max_ms: i64) -> bool {
        self.log_end_offset == leader_leo
            || now_ms.saturating_sub(self.last_caught_up_time_ms) <= lag_max_ms
    }
}

/// The ISR as the leader sees it (Kafka's `PartitionState`): committed, or with one change sent
/// to the controller and not yet answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IsrState {
    /// The ISR the controller committed.
    Committed {
        /// Its members.
        isr: Vec<ReplicaId>,
    },
    /// A follower is being added: the maximal ISR (committed + newcomer) counts at once.
    PendingExpand {
        /// The committed ISR.
        isr: Vec<ReplicaId>,
        /// The joining follower.
        new_member: ReplicaId,
        /// What was sent.
        proposal: AlterPartitionProposal,
    },
    /// Followers are being removed: the committed ISR still counts until the controller answers.
    PendingShrink {
        /// The committed ISR.
        isr: Vec<ReplicaId>,
        /// The leaving followers.
        removed: Vec<ReplicaId>,
        /// What was sent.
        proposal: AlterPartitionProposal,
    },
}

impl IsrState {
    /// The committed ISR.
    pub fn isr(&self) -> &[ReplicaId] {
        match self {
            IsrState::Committed { isr }
            | IsrState::PendingExpand { isr, .. }
            | IsrState::PendingShrink { isr, .. } => isr,
        }
    }

    /// The maximal ISR: the committed one plus a joining follower (Kafka's `maximalIsr`).
    pub fn maximal_isr(&self) -> Vec<ReplicaId> {
        match self {
            IsrState::PendingExpand {
                isr, new_member, ..
            } => {
                let mut m = isr.clone();
                if !m.contains(new_member) {
                    m.push(*new_member);
                }
                m
            }
            _ => self.isr().to_vec(),
        }
    }

    /// Whether a change is in flight.
    pub fn is_pending(&self) -> bool {
        !matches!(self, IsrState::Committed { .. })
    }

    /// The proposal in flight, if any.
    pub fn pending_proposal(&self) -> Option<&AlterPartitionProposal> {
        match self {
            IsrState::Committed { .. } => None,
            IsrState::PendingExpand { proposal, .. } | IsrState::PendingShrink { proposal, .. } => {
                Some(proposal)
            }
        }
    }
}

/// An ISR change for the broker to send to the controller in an `AlterPartition` request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterPartitionProposal {
    /// The leader (this broker).
    pub leader_id: ReplicaId,
    /// The leader epoch it leads in.
    pub leader_epoch: i32,
    /// The partition epoch the change is based on.
    pub partition_epoch: i32,
    /// The proposed ISR.
    pub new_isr: Vec<ReplicaId>,
    /// Broker epochs of the proposed members, as last seen in their fetches (AlterPartition v3
    /// `new_isr_with_epochs`; [`NO_BROKER_EPOCH`] when unknown).
    pub new_isr_broker_epochs: Vec<i64>,
    /// Leader recovery state (0 = RECOVERED; a leader treats itself as recovered at once).
    pub leader_recovery_state: i8,
}

/// What the controller committed, from a successful `AlterPartition` answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommittedPartitionState {
    /// Leader id.
    pub leader_id: ReplicaId,
    /// Leader epoch.
    pub leader_epoch: i32,
    /// The committed ISR.
    pub isr: Vec<ReplicaId>,
    /// The new partition epoch.
    pub partition_epoch: i32,
}

/// What the leader did with an `AlterPartition` answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AlterPartitionOutcome {
    /// The change was committed; the HW may have moved (`Some(new HW)`).
    Committed {
        /// The new high watermark, if it moved.
        high_watermark: Option<i64>,
    },
    /// The answer was for a state no longer current (or not applicable): nothing changed.
    Ignored,
    /// OPERATION_NOT_ATTEMPTED / INELIGIBLE_REPLICA: back to the last committed ISR.
    Reverted,
    /// The change stays pending until new metadata arrives (FENCED_LEADER_EPOCH,
    /// INVALID_UPDATE_VERSION, INVALID_REQUEST, NEW_LEADER_ELECTED, UNKNOWN_TOPIC_*).
    StayPending,
    /// Send the same proposal again (any other error, e.g. NOT_CONTROLLER).
    Resubmit(AlterPartitionProposal),
}

/// What [`ReplicationState::make_leader`] / [`ReplicationState::make_follower`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LeadershipChange {
    /// Whether anything changed (false: a stale or repeated state, ignored).
    pub changed: bool,
    /// The leader epoch grew: as leader, the caller must record `(leader_epoch, leader LEO)` in
    /// the log's epoch cache before appending anything in it.
    pub new_leader_epoch: bool,
    /// This broker was not leader before (make_leader) / the leader changed (make_follower).
    pub new_leader: bool,
    /// The high watermark moved (leader), to this value.
    pub high_watermark: Option<i64>,
}

/// What a follower fetch did to the leader's state.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FollowerFetchOutcome {
    /// The HW moved to this value (wake delayed produces and consumer fetches).
    pub high_watermark: Option<i64>,
    /// An ISR expansion to send to the controller.
    pub alter_partition: Option<AlterPartitionProposal>,
}

/// The role of this broker for the partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Neither leader nor follower yet (no metadata).
    None,
    /// Leader.
    Leader,
    /// Follower of `leader_id` (−1: no leader).
    Follower {
        /// The current leader, −1 if none.
        leader_id: ReplicaId,
    },
}

/// The replication state of one partition on one broker.
///
/// ```
/// use josef_partition::replication::ReplicationState;
/// // Broker 1 leads epoch 0 with replicas [1, 2, 3], all in the ISR; its log is empty.
/// let mut r = ReplicationState::new(1, 0);
/// r.make_leader(0, 0, &[1, 2, 3], &[1, 2, 3], 0, 0);
/// // Ten records appended: the HW waits for the followers.
/// assert_eq!(r.maybe_increment_high_watermark(10, 0), None);
/// r.update_follower_fetch_state(2, 10, 0, -1, 10, 5).unwrap();
/// assert_eq!(r.high_watermark(), 0); // broker 3 has not fetched yet
/// let out = r.update_follower_fetch_state(3, 7, 0, -1, 10, 6).unwrap();
/// assert_eq!(out.high_watermark, Some(7));
/// // acks=-1 for records up to offset 9 is not complete yet.
/// assert_eq!(r.check_enough_replicas_reach_offset(10, 2), Ok(false));
/// ```
#[derive(Debug, Clone)]
pub struct ReplicationState {
    local_id: ReplicaId,
    role: Role,
    leader_epoch: i32,
    partition_epoch: i32,
    replicas: Vec<ReplicaId>,
    isr: IsrState,
    followers: BTreeMap<ReplicaId, FollowerState>,
    high_watermark: i64,
    /// First offset of the current leader epoch (the LEO when this broker became its leader).
    leader_epoch_start_offset: Option<i64>,
    replica_lag_time_max_ms: i64,
    /// Replicas the metadata says may not join the ISR (fenced, shutting down).
    ineligible: BTreeSet<ReplicaId>,
    /// The topic's `min.insync.replicas` (for the HW rule).
    min_insync_replicas: i32,
}

impl ReplicationState {
    /// The state of a partition on broker `local_id`, with no role yet, whose log has
    /// `high_watermark` (from the log's checkpoint, or its LEO on a single node).
    pub fn new(local_id: ReplicaId, high_watermark: i64) -> Self {
        ReplicationState {
            local_id,
            role: Role::None,
            leader_epoch: NO_EPOCH,
            partition_epoch: NO_EPOCH,
            replicas: Vec::new(),
            isr: IsrState::Committed { isr: Vec::new() },
            followers: BTreeMap::new(),
            high_watermark: high_watermark.max(0),
            leader_epoch_start_offset: None,
            replica_lag_time_max_ms: DEFAULT_REPLICA_LAG_TIME_MAX_MS,
            ineligible: BTreeSet::new(),
            min_insync_replicas: 1,
        }
    }

    /// A single-replica partition led by `local_id` in `leader_epoch` (the single-node broker):
    /// ISR = replicas = [local_id], so the HW follows the LEO.
    pub fn single_replica(local_id: ReplicaId, leader_epoch: i32, log_end_offset: i64) -> Self {
        let mut r = ReplicationState::new(local_id, log_end_offset);
        r.make_leader(leader_epoch, 0, &[local_id], &[local_id], log_end_offset, 0);
        r
    }

    /// Sets `replica.lag.time.max.ms` (negative values are taken as 0).
    pub fn set_replica_lag_time_max_ms(&mut self, ms: i64) {
        self.replica_lag_time_max_ms = ms.max(0);
    }

    /// `replica.lag.time.max.ms`.
    pub fn replica_lag_time_max_ms(&self) -> i64 {
        self.replica_lag_time_max_ms
    }

    /// Replicas that may not join the ISR (fenced or shutting down in the metadata image); true
    /// if the set changed. Outside the ISR such a replica no longer holds the HW either (a
    /// stopped follower caught up less than `replica.lag.time.max.ms` ago would otherwise hold
    /// it until the lag expires, and nothing it sends recomputes it then).
    pub fn set_ineligible_replicas(&mut self, ids: &[ReplicaId]) -> bool {
        let ids: BTreeSet<ReplicaId> = ids.iter().copied().collect();
        if ids == self.ineligible {
            return false;
        }
        self.ineligible = ids;
        true
    }

    /// This broker's id.
    pub fn local_id(&self) -> ReplicaId {
        self.local_id
    }

    /// The role.
    pub fn role(&self) -> Role {
        self.role
    }

    /// Whether this broker leads the partition.
    pub fn is_leader(&self) -> bool {
        self.role == Role::Leader
    }

    /// The leader's id, if known (this broker's when leading).
    pub fn leader_id(&self) -> Option<ReplicaId> {
        match self.role {
            Role::Leader => Some(self.local_id),
            Role::Follower { leader_id } if leader_id >= 0 => Some(leader_id),
            _ => None,
        }
    }

    /// The current leader epoch ([`NO_EPOCH`] before any).
    pub fn leader_epoch(&self) -> i32 {
        self.leader_epoch
    }

    /// The current partition epoch ([`NO_EPOCH`] before any).
    pub fn partition_epoch(&self) -> i32 {
        self.partition_epoch
    }

    /// The assigned replicas.
    pub fn replicas(&self) -> &[ReplicaId] {
        &self.replicas
    }

    /// The ISR state (committed or pending).
    pub fn isr_state(&self) -> &IsrState {
        &self.isr
    }

    /// The committed ISR.
    pub fn isr(&self) -> &[ReplicaId] {
        self.isr.isr()
    }

    /// The high watermark.
    pub fn high_watermark(&self) -> i64 {
        self.high_watermark
    }

    /// The first offset of the current leader epoch, when leading.
    pub fn leader_epoch_start_offset(&self) -> Option<i64> {
        self.leader_epoch_start_offset
    }

    /// Whether this leader's `high_watermark` is still below the start of its epoch: elected
    /// moments ago, it has not yet learnt from its followers what the previous leader had
    /// committed, so its HW and LSO are older than what clients were already shown. Kafka
    /// answers consumers' offset lookups OFFSET_NOT_AVAILABLE then (`Partition.fetchOffsetForTimestamp`).
    pub fn high_watermark_lags_epoch_start(&self, high_watermark: i64) -> bool {
        self.leader_epoch_start_offset
            .is_some_and(|start| start > high_watermark)
    }

    /// What the leader knows of follower `id`.
    pub fn follower(&self, id: ReplicaId) -> Option<&FollowerState> {
        self.followers.get(&id)
    }

    /// Every follower's state, by id.
    pub fn followers(&self) -> impl Iterator<Item = &FollowerState> {
        self.followers.values()
    }

    /// `min.insync.replicas` capped by the replica count (Kafka's `effectiveMinIsr`).
    pub fn effective_min_isr(&self, min_insync_replicas: i32) -> usize {
        usize::try_from(min_insync_replicas.max(1))
            .unwrap_or(1)
            .min(self.replicas.len().max(1))
    }

    /// Becomes (or stays) leader with the controller's state (Kafka's `makeLeader`). A partition
    /// epoch older than the local one, or a leader epoch that goes back, is ignored (`changed`
    /// false). On a new leader epoch every follower is reset: its LEO unknown if this broker was
    /// not leader, its caught-up time `now_ms` if it is in the ISR, else [`NEVER`]; the epoch starts at
    /// `leader_log_end_offset`, which the caller must record in the log's epoch cache before
    /// appending. Any pending ISR change is dropped for the new state.
    pub fn make_leader(
        &mut self,
        leader_epoch: i32,
        partition_epoch: i32,
        isr: &[ReplicaId],
        replicas: &[ReplicaId],
        leader_log_end_offset: i64,
        now_ms: i64,
    ) -> LeadershipChange {
        if partition_epoch < self.partition_epoch || leader_epoch < self.leader_epoch {
            return LeadershipChange::default();
        }
        let was_leader = self.is_leader();
        let new_leader_epoch = leader_epoch > self.leader_epoch || !was_leader;
        if was_leader
            && !new_leader_epoch
            && partition_epoch == self.partition_epoch
            && self.replicas == replicas
            && self.isr.isr() == isr
        {
            return LeadershipChange::default();
        }
        self.replicas = dedup(replicas);
        self.isr = IsrState::Committed { isr: dedup(isr) };
        let remote: Vec<ReplicaId> = self
            .replicas
            .iter()
            .copied()
            .filter(|&r| r != self.local_id)
            .collect();
        self.followers.retain(|id, _| remote.contains(id));
        for &id in &remote {
            self.followers
                .entry(id)
                .or_insert_with(|| FollowerState::new(id));
        }
        if new_leader_epoch {
            for f in self.followers.values_mut() {
                if !was_leader {
                    *f = FollowerState::new(f.replica_id);
                }
                // The follower must fetch in the new epoch before its session counts again.
                f.session_cover = None;
                f.last_caught_up_time_ms = if isr.contains(&f.replica_id) {
                    now_ms
                } else {
                    NEVER
                };
            }
            self.leader_epoch_start_offset = Some(leader_log_end_offset);
        }
        self.role = Role::Leader;
        self.leader_epoch = leader_epoch;
        self.partition_epoch = partition_epoch;
        let high_watermark = self.maybe_increment_high_watermark(leader_log_end_offset, now_ms);
        LeadershipChange {
            changed: true,
            new_leader_epoch,
            new_leader: !was_leader,
            high_watermark,
        }
    }

    /// Becomes (or stays) a follower of `leader_id` (−1: no leader) (Kafka's `makeFollower`):
    /// records leader and epochs and clears the leader-side state. Stale states (older partition
    /// epoch, or leader epoch going back) are ignored. No truncation happens here: the fetcher
    /// finds the divergence ([`truncation_offset`]). `changed` is true when the leader or the
    /// leader epoch changed.
    pub fn make_follower(
        &mut self,
        leader_id: ReplicaId,
        leader_epoch: i32,
        partition_epoch: i32,
    ) -> LeadershipChange {
        if partition_epoch < self.partition_epoch || leader_epoch < self.leader_epoch {
            return LeadershipChange::default();
        }
        let new_leader = self.role != (Role::Follower { leader_id });
        let new_leader_epoch = leader_epoch > self.leader_epoch;
        self.role = Role::Follower { leader_id };
        self.leader_epoch = leader_epoch;
        self.partition_epoch = partition_epoch;
        self.isr = IsrState::Committed { isr: Vec::new() };
        self.followers.clear();
        self.leader_epoch_start_offset = None;
        LeadershipChange {
            changed: new_leader || new_leader_epoch,
            new_leader_epoch,
            new_leader,
            high_watermark: None,
        }
    }

    /// Leader: applies a follower's fetch (Kafka's `updateFollowerFetchState` +
    /// `Replica.updateFetchStateOrThrow`), then tries to expand the ISR and to move the HW.
    /// `leader_log_end_offset` is the leader's LEO at this fetch. A replica that is not a follower
    /// of this partition is NOT_LEADER_OR_FOLLOWER (UNKNOWN_LEADER_EPOCH belongs to the fetch
    /// validation, [`ReplicationState::validate_follower_fetch`]); a broker epoch older than the
    /// one seen last is NOT_LEADER_OR_FOLLOWER with the state untouched.
    pub fn update_follower_fetch_state(
        &mut self,
        replica_id: ReplicaId,
        fetch_offset: i64,
        follower_log_start_offset: i64,
        broker_epoch: i64,
        leader_log_end_offset: i64,
        now_ms: i64,
    ) -> Result<FollowerFetchOutcome, ErrorCode> {
        if !self.is_leader() {
            return Err(ErrorCode::NotLeaderOrFollower);
        }
        let f = self
            .followers
            .get_mut(&replica_id)
            .ok_or(ErrorCode::NotLeaderOrFollower)?;
        if broker_epoch != NO_BROKER_EPOCH && broker_epoch < f.broker_epoch {
            return Err(ErrorCode::NotLeaderOrFollower);
        }
        if fetch_offset >= leader_log_end_offset {
            f.last_caught_up_time_ms = f.last_caught_up_time_ms.max(now_ms);
        } else if f.last_fetch_leader_log_end_offset != UNKNOWN_OFFSET
            && fetch_offset >= f.last_fetch_leader_log_end_offset
        {
            f.last_caught_up_time_ms = f.last_caught_up_time_ms.max(f.last_fetch_time_ms);
        }
        f.log_start_offset = follower_log_start_offset;
        f.log_end_offset = fetch_offset;
        f.last_fetch_leader_log_end_offset = leader_log_end_offset;
        f.last_fetch_time_ms = now_ms;
        if broker_epoch != NO_BROKER_EPOCH {
            f.broker_epoch = broker_epoch;
        }
        let alter_partition = self.maybe_expand_isr(replica_id);
        let high_watermark = self.maybe_increment_high_watermark(leader_log_end_offset, now_ms);
        Ok(FollowerFetchOutcome {
            high_watermark,
            alter_partition,
        })
    }

    fn is_isr_eligible(&self, id: ReplicaId) -> bool {
        !self.ineligible.contains(&id)
    }

    /// Kafka's `isFollowerInSync` for expansion: LEO ≥ HW and ≥ the start of the leader epoch.
    fn follower_reached_hw(&self, f: &FollowerState) -> bool {
        f.log_end_offset >= self.high_watermark
            && self
                .leader_epoch_start_offset
                .is_some_and(|start| f.log_end_offset >= start)
    }

    /// Kafka's `maybeExpandIsr`: with no change in flight, a follower outside the ISR that
    /// reached the HW and the start of the current leader epoch (and is eligible) is proposed as
    /// a member; the maximal ISR counts at once.
    fn maybe_expand_isr(&mut self, replica_id: ReplicaId) -> Option<AlterPartitionProposal> {
        if self.isr.is_pending() || self.isr.isr().contains(&replica_id) {
            return None;
        }
        let f = self.followers.get(&replica_id)?;
        if !self.follower_reached_hw(f) || !self.is_isr_eligible(replica_id) {
            return None;
        }
        let isr = self.isr.isr().to_vec();
        let mut new_isr = isr.clone();
        new_isr.push(replica_id);
        let proposal = self.proposal(new_isr);
        self.isr = IsrState::PendingExpand {
            isr,
            new_member: replica_id,
            proposal: proposal.clone(),
        };
        Some(proposal)
    }

    /// Kafka's `maybeShrinkIsr` (run every `replica.lag.time.max.ms / 2`): with no change in
    /// flight, every ISR follower not caught up is proposed for removal. The committed ISR keeps
    /// counting until the controller answers.
    pub fn maybe_shrink_isr(
        &mut self,
        leader_log_end_offset: i64,
        now_ms: i64,
    ) -> Option<AlterPartitionProposal> {
        if !self.is_leader() || self.isr.is_pending() {
            return None;
        }
        let lag = self.replica_lag_time_max_ms;
        let out: Vec<ReplicaId> = self
            .isr
            .isr()
            .iter()
            .copied()
            .filter(|&id| id != self.local_id)
            .filter(|id| {
                self.followers.get(id).map_or(true, |f| {
                    !f.is_caught_up(leader_log_end_offset, now_ms, lag)
                })
            })
            .collect();
        if out.is_empty() {
            return None;
        }
        let isr = self.isr.isr().to_vec();
        let new_isr: Vec<ReplicaId> = isr.iter().copied().filter(|i| !out.contains(i)).collect();
        let proposal = self.proposal(new_isr);
        self.isr = IsrState::PendingShrink {
            isr,
            removed: out,
            proposal: proposal.clone(),
        };
        Some(proposal)
    }

    fn proposal(&self, new_isr: Vec<ReplicaId>) -> AlterPartitionProposal {
        let new_isr_broker_epochs = new_isr
            .iter()
            .map(|id| {
                self.followers
                    .get(id)
                    .map_or(NO_BROKER_EPOCH, |f| f.broker_epoch)
            })
            .collect();
        AlterPartitionProposal {
            leader_id: self.local_id,
            leader_epoch: self.leader_epoch,
            partition_epoch: self.partition_epoch,
            new_isr,
            new_isr_broker_epochs,
            leader_recovery_state: 0,
        }
    }

    /// Applies the controller's answer to `sent` (Kafka's `handleAlterPartitionUpdate` and
    /// `handleAlterPartitionError`). An answer to a proposal that is no longer the pending one is
    /// ignored. Success with this leader epoch and a partition epoch not older than ours commits
    /// the ISR and tries the HW.
    pub fn on_alter_partition_response(
        &mut self,
        sent: &AlterPartitionProposal,
        result: Result<CommittedPartitionState, ErrorCode>,
        leader_log_end_offset: i64,
        now_ms: i64,
    ) -> AlterPartitionOutcome {
        if !self.is_leader() || self.isr.pending_proposal() != Some(sent) {
            return AlterPartitionOutcome::Ignored;
        }
        match result {
            Ok(committed) => {
                if committed.leader_epoch != self.leader_epoch
                    || committed.partition_epoch < self.partition_epoch
                {
                    return AlterPartitionOutcome::Ignored;
                }
                self.isr = IsrState::Committed {
                    isr: dedup(&committed.isr),
                };
                self.partition_epoch = committed.partition_epoch;
                let high_watermark =
                    self.maybe_increment_high_watermark(leader_log_end_offset, now_ms);
                AlterPartitionOutcome::Committed { high_watermark }
            }
            Err(ErrorCode::OperationNotAttempted | ErrorCode::IneligibleReplica) => {
                self.isr = IsrState::Committed {
                    isr: self.isr.isr().to_vec(),
                };
                AlterPartitionOutcome::Reverted
            }
            Err(
                ErrorCode::UnknownTopicOrPartition
                | ErrorCode::UnknownTopicId
                | ErrorCode::FencedLeaderEpoch
                | ErrorCode::InvalidUpdateVersion
                | ErrorCode::InvalidRequest
                | ErrorCode::NewLeaderElected,
            ) => AlterPartitionOutcome::StayPending,
            Err(_) => AlterPartitionOutcome::Resubmit(sent.clone()),
        }
    }

    /// Sets the topic's `min.insync.replicas` used by the HW rule (default 1).
    pub fn set_min_insync_replicas(&mut self, min_insync_replicas: i32) {
        self.min_insync_replicas = min_insync_replicas.max(1);
    }

    /// Kafka's `maybeIncrementLeaderHW`: nothing while the committed ISR is smaller than the
    /// effective `min.insync.replicas` ([`ReplicationState::set_min_insync_replicas`];
    /// KAFKA-15583: even acks 0/1 data stays invisible until the ISR recovers); else the HW
    /// moves to the minimum LEO of the leader and of every follower in the maximal ISR or caught
    /// up and eligible (so a joining follower holds it), only forward. Returns the new HW if it
    /// moved.
    pub fn maybe_increment_high_watermark(
        &mut self,
        leader_log_end_offset: i64,
        now_ms: i64,
    ) -> Option<i64> {
        if !self.is_leader()
            || self.isr.isr().len() < self.effective_min_isr(self.min_insync_replicas)
        {
            return None;
        }
        let maximal = self.isr.maximal_isr();
        let lag = self.replica_lag_time_max_ms;
        let mut candidate = leader_log_end_offset;
        for f in self.followers.values() {
            let counts = maximal.contains(&f.replica_id)
                || (f.is_caught_up(leader_log_end_offset, now_ms, lag)
                    && self.is_isr_eligible(f.replica_id));
            if counts && f.log_end_offset < candidate {
                candidate = f.log_end_offset;
            }
        }
        if candidate > self.high_watermark {
            self.high_watermark = candidate;
            Some(candidate)
        } else {
            None
        }
    }

    /// The pre-append check of `appendRecordsToLeader`: not leader → NOT_LEADER_OR_FOLLOWER;
    /// acks = −1 with a committed ISR smaller than the effective `min.insync.replicas` →
    /// NOT_ENOUGH_REPLICAS (nothing may be written). acks 0 and 1 skip the ISR check.
    pub fn check_append(&self, acks: i16, min_insync_replicas: i32) -> Result<(), ErrorCode> {
        if !self.is_leader() {
            return Err(ErrorCode::NotLeaderOrFollower);
        }
        if acks == -1 && self.isr.isr().len() < self.effective_min_isr(min_insync_replicas) {
            return Err(ErrorCode::NotEnoughReplicas);
        }
        Ok(())
    }

    /// Kafka's `checkEnoughReplicasReachOffset`, the DelayedProduce condition for one partition:
    /// `Ok(false)` while the HW is below `required_offset` (last offset + 1); once it is reached,
    /// `Ok(true)`, or NOT_ENOUGH_REPLICAS_AFTER_APPEND if the maximal ISR is now smaller than the
    /// effective `min_insync_replicas` (the data is in the log). Not leader →
    /// NOT_LEADER_OR_FOLLOWER.
    pub fn check_enough_replicas_reach_offset(
        &self,
        required_offset: i64,
        min_insync_replicas: i32,
    ) -> Result<bool, ErrorCode> {
        if !self.is_leader() {
            return Err(ErrorCode::NotLeaderOrFollower);
        }
        if self.high_watermark < required_offset {
            return Ok(false);
        }
        if self.isr.maximal_isr().len() < self.effective_min_isr(min_insync_replicas) {
            return Err(ErrorCode::NotEnoughReplicasAfterAppend);
        }
        Ok(true)
    }

    /// The leader-epoch check of every read and of OffsetsForLeaderEpoch (Kafka's
    /// `checkCurrentLeaderEpoch` + `getLocalLog`): a request epoch older than ours →
    /// FENCED_LEADER_EPOCH, newer → UNKNOWN_LEADER_EPOCH ([`NO_EPOCH`] skips the check); then,
    /// if `require_leader`, not leading → NOT_LEADER_OR_FOLLOWER.
    pub fn check_current_leader_epoch(
        &self,
        current_leader_epoch: i32,
        require_leader: bool,
    ) -> Result<(), ErrorCode> {
        if current_leader_epoch != NO_EPOCH {
            if current_leader_epoch < self.leader_epoch {
                return Err(ErrorCode::FencedLeaderEpoch);
            }
            if current_leader_epoch > self.leader_epoch {
                return Err(ErrorCode::UnknownLeaderEpoch);
            }
        }
        if require_leader && !self.is_leader() {
            return Err(ErrorCode::NotLeaderOrFollower);
        }
        Ok(())
    }

    /// The checks of a follower's fetch on the leader (Kafka's `fetchRecords` +
    /// `followerReplicaOrThrow`): the epoch check, then a replica id that is not an assigned
    /// follower is UNKNOWN_LEADER_EPOCH if an epoch was sent (the follower's metadata may be
    /// ahead), else NOT_LEADER_OR_FOLLOWER.
    pub fn validate_follower_fetch(
        &self,
        replica_id: ReplicaId,
        current_leader_epoch: i32,
    ) -> Result<(), ErrorCode> {
        self.check_current_leader_epoch(current_leader_epoch, true)?;
        if !self.followers.contains_key(&replica_id) {
            return Err(if current_leader_epoch != NO_EPOCH {
                ErrorCode::UnknownLeaderEpoch
            } else {
                ErrorCode::NotLeaderOrFollower
            });
        }
        Ok(())
    }

    /// Leader: folds the fetches of the followers' covering sessions into their fetch and
    /// caught-up times ([`crate::session_cover`]). `session_fetch_ms` gives the time of a
    /// session's last fetch, or `None` if the session is gone (the cover then ends). A session
    /// fetch counts as one of this partition at the follower's last offsets: its fetch time moves
    /// to it, and so does its caught-up time (it was at the leader's log end then).
    pub fn apply_session_fetches(
        &mut self,
        session_fetch_ms: impl Fn(SessionCover) -> Option<i64>,
    ) {
        for f in self.followers.values_mut() {
            let Some(cover) = f.session_cover else {
                continue;
            };
            match session_fetch_ms(cover) {
                Some(t) => f.count_session_fetch(t),
                None => f.session_cover = None,
            }
        }
    }

    /// Leader: [`apply_session_fetches`](Self::apply_session_fetches) for one follower and one
    /// session only (a read in that session): if `replica_id`'s cover is `cover`, the session's
    /// fetch at `fetch_ms` counts. Other followers' covers are left alone.
    pub fn apply_session_fetch(
        &mut self,
        replica_id: ReplicaId,
        cover: SessionCover,
        fetch_ms: i64,
    ) {
        if let Some(f) = self.followers.get_mut(&replica_id) {
            if f.session_cover == Some(cover) {
                f.count_session_fetch(fetch_ms);
            }
        }
    }

    /// Leader: retries the ISR expansion of the followers outside the ISR whose fetch session
    /// covers this partition (see [`crate::session_cover`]). Kafka tries `maybeExpandIsr` on every
    /// follower fetch; a session fetch that does not read an idle partition cannot, so an
    /// expansion refused at the follower's last read (another ISR change in flight, the follower
    /// not yet eligible) is retried here. The first proposal made, if any.
    pub fn maybe_expand_isr_for_covered(&mut self) -> Option<AlterPartitionProposal> {
        if !self.is_leader() || self.isr.is_pending() {
            return None;
        }
        let covered: Vec<ReplicaId> = self
            .followers
            .values()
            .filter(|f| f.session_cover.is_some() && !self.isr.isr().contains(&f.replica_id))
            .map(|f| f.replica_id)
            .collect();
        covered.into_iter().find_map(|id| self.maybe_expand_isr(id))
    }

    /// Leader: after a read of this partition for follower `replica_id` in fetch session
    /// `cover` (or outside any, `None`): the session covers the partition only if the follower is
    /// at the log end it last reported and that was the leader's log end at its fetch (see
    /// [`crate::session_cover`]). A follower that is not one of this partition's is ignored.
    pub fn set_session_cover(&mut self, replica_id: ReplicaId, cover: Option<SessionCover>) {
        if let Some(f) = self.followers.get_mut(&replica_id) {
            let at_end = f.log_end_offset != UNKNOWN_OFFSET
                && f.log_end_offset >= f.last_fetch_leader_log_end_offset;
            f.session_cover = cover.filter(|_| at_end && self.role == Role::Leader);
        }
    }

    /// Follower: the HW learned from a fetch response, `min(leader HW, local LEO)` (it may go
    /// back, as Kafka's follower HW may). Returns the new HW if it changed.
    pub fn update_follower_high_watermark(
        &mut self,
        leader_high_watermark: i64,
        local_log_end_offset: i64,
    ) -> Option<i64> {
        if self.is_leader() {
            return None;
        }
        let hw = leader_high_watermark.min(local_log_end_offset).max(0);
        (hw != self.high_watermark).then(|| {
            self.high_watermark = hw;
            hw
        })
    }

    /// The log was truncated to `log_end_offset` (follower): the HW cannot stay above it.
    pub fn on_truncation(&mut self, log_end_offset: i64) {
        self.high_watermark = self.high_watermark.min(log_end_offset.max(0));
    }

    /// Sets the HW directly (a log whose start moved past it, a restart): the caller's value,
    /// for a follower or before any role.
    pub fn reset_high_watermark(&mut self, hw: i64) {
        self.high_watermark = hw.max(0);
    }
}

fn dedup(ids: &[ReplicaId]) -> Vec<ReplicaId> {
    let mut out = Vec::with_capacity(ids.len());
    for &i in ids {
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

/// An epoch and the offset where it ends (OffsetsForLeaderEpoch's answer, Fetch's
/// `diverging_epoch`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpochEndOffset {
    /// The epoch (−1 undefined).
    pub epoch: i32,
    /// The offset where it ends (−1 undefined).
    pub end_offset: i64,
}

impl EpochEndOffset {
    /// Both undefined.
    pub const UNDEFINED: EpochEndOffset = EpochEndOffset {
        epoch: NO_EPOCH,
        end_offset: UNKNOWN_OFFSET,
    };
}

/// Leader: the `diverging_epoch` of a follower fetch (Fetch v12+, Kafka's
/// `validateFetchOffsetAndMaybeGetDivergingEpoch`). `leader_end_offset_for` is the leader log's
/// `end_offset_for_epoch(last_fetched_epoch)`. An undefined answer, or a fetch offset below the
/// log start, is OFFSET_OUT_OF_RANGE; an answer with a smaller epoch or an end below the fetch
/// offset is a divergence: no records, `Some(answer)`; else `None` (read on).
pub fn leader_diverging_epoch(
    last_fetched_epoch: i32,
    fetch_offset: i64,
    leader_log_start_offset: i64,
    leader_end_offset_for: (i32, i64),
) -> Result<Option<EpochEndOffset>, ErrorCode> {
    if last_fetched_epoch < 0 {
        return Ok(None);
    }
    let (epoch, end_offset) = leader_end_offset_for;
    if epoch == NO_EPOCH || end_offset == UNKNOWN_OFFSET {
        return Err(ErrorCode::OffsetOutOfRange);
    }
    if fetch_offset < leader_log_start_offset {
        return Err(ErrorCode::OffsetOutOfRange);
    }
    if epoch < last_fetched_epoch || end_offset < fetch_offset {
        return Ok(Some(EpochEndOffset { epoch, end_offset }));
    }
    Ok(None)
}

/// Where a follower truncates, given the leader's answer (Kafka's
/// `AbstractFetcherThread.getOffsetTruncationState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TruncationDecision {
    /// Truncate the log to this offset (no-op when ≥ the LEO).
    pub offset: i64,
    /// Whether the divergence point is known; if not, truncate there and ask again (the next
    /// fetch, with the new latest epoch, re-checks).
    pub completed: bool,
}

/// Follower: where to truncate after the leader answered `leader` (from `diverging_epoch` or
/// OffsetsForLeaderEpoch). `local_end_offset_for` is the local log's
/// `end_offset_for_epoch(leader.epoch)`, `local_log_end_offset` the local LEO and
/// `high_watermark` the local HW (the fallback when the leader knows no end offset). Going below
/// the HW is allowed (an unclean election causes it).
pub fn truncation_offset(
    leader: EpochEndOffset,
    local_end_offset_for: (i32, i64),
    local_log_end_offset: i64,
    high_watermark: i64,
) -> TruncationDecision {
    if leader.end_offset == UNKNOWN_OFFSET {
        return TruncationDecision {
            offset: high_watermark.min(local_log_end_offset),
            completed: true,
        };
    }
    if leader.epoch == NO_EPOCH {
        return TruncationDecision {
            offset: leader.end_offset.min(local_log_end_offset),
            completed: true,
        };
    }
    let (local_epoch, local_end) = local_end_offset_for;
    if local_epoch == NO_EPOCH || local_end == UNKNOWN_OFFSET {
        return TruncationDecision {
            offset: leader.end_offset.min(local_log_end_offset),
            completed: true,
        };
    }
    let intermediate = local_end.min(local_log_end_offset);
    if local_epoch == leader.epoch {
        TruncationDecision {
            offset: leader.end_offset.min(intermediate),
            completed: true,
        }
    } else {
        TruncationDecision {
            offset: intermediate,
            completed: false,
        }
    }
}

#[cfg(test)]
#[path = "replication_tests.rs"]
mod tests;
