//! The group coordinator shard: one per `__consumer_offsets` partition.
//!
//! Handlers take a request and `now_ms` and return a [`GroupResult`]: records to append, the
//! handler's own response and [`Completion`]s of parked JoinGroup/SyncGroup requests. The caller
//! appends the records, replays them with [`GroupCoordinator::replay`], and sends the response and
//! completions once the records are durable (all of them together: a completion may depend on
//! the records, e.g. the leader's assignment).
//!
//! What changes only by replay: committed and pending offsets, group existence and deletion,
//! and on load the whole classic group. What handlers change directly, as Kafka does
//! (`replayRecords=false` for classic groups): the classic rebalance bookkeeping (members joining,
//! parked requests, generation), which Kafka never persists either; it is rebuilt from the last
//! `GroupMetadata` record after a restart.

use std::collections::BTreeMap;

use bytes::Bytes;
use josef_coordinator::{CoordinatorResult, CoordinatorShard, ReplayError, TransactionResult};

use crate::api::{Completion, GroupResponse, JoinGroupResponse, RequestId, SyncGroupResponse};
use crate::classic::{ClassicGroup, ClassicMember, GroupState};
use crate::config::GroupConfig;
use crate::error::Errors;
use crate::ids::MemberIdGenerator;
use crate::offsets::{CommittedOffset, OffsetStore};
use crate::record::{GroupMetadata, GroupRecord, MemberMetadata};
use crate::timer::{CoordinatorTimer, GroupTimerKey};

pub use josef_protocol::constants::NO_PRODUCER_ID;

/// What a handler returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupResult<T> {
    /// Records to append to the `__consumer_offsets` partition, then replay.
    pub records: Vec<GroupRecord>,
    /// The handler's own response (`()` for JoinGroup/SyncGroup, whose answers are completions).
    pub response: T,
    /// Answers to parked JoinGroup/SyncGroup requests (possibly this very request).
    pub completions: Vec<Completion>,
    /// `(producer_id, producer_epoch)` when the records must be appended transactionally
    /// (TxnOffsetCommit); `None` for plain appends.
    pub transaction: Option<(i64, i16)>,
}

/// What the broker holds until a write is durable: the handler's response and the completions
/// of parked requests (see [`GroupResult::into_coordinator_result`]).
pub type Handled<T> = (T, Vec<Completion>);

impl<T> GroupResult<T> {
    /// The result in `josef-coordinator`'s shape, to run through a `CoordinatorDriver`:
    /// `driver.write(move |_| result.into_coordinator_result())` (or `write_transactional` with
    /// [`GroupResult::transaction`]). The driver appends and replays the records and releases the
    /// response and completions together once they are durable.
    pub fn into_coordinator_result(self) -> CoordinatorResult<GroupRecord, Handled<T>> {
        CoordinatorResult::new(self.records, (self.response, self.completions))
    }

    /// Maps the response.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> GroupResult<U> {
        GroupResult {
            records: self.records,
            response: f(self.response),
            completions: self.completions,
            transaction: self.transaction,
        }
    }
}

/// The group coordinator of one `__consumer_offsets` partition.
///
/// ```
/// use josef_group::{GroupCoordinator, GroupConfig, NoopTimer, SeededMemberIds};
/// use josef_group::api::{JoinGroupRequest, JoinProtocol, RequestContext, GroupResponse};
/// use josef_group::Errors;
///
/// let mut c = GroupCoordinator::new(GroupConfig::default(), NoopTimer, SeededMemberIds::new(1));
/// let ctx = RequestContext { client_id: "app".into(), client_host: "/127.0.0.1".into(), api_version: 9 };
/// let join = JoinGroupRequest {
///     group_id: "g".into(), session_timeout_ms: 10_000, rebalance_timeout_ms: 30_000,
///     member_id: String::new(), group_instance_id: None, protocol_type: "consumer".into(),
///     protocols: vec![JoinProtocol { name: "range".into(), metadata: Default::default() }],
///     reason: None,
/// };
/// let r = c.join_group(0, 1, &ctx, join);
/// // v4+: the first join is answered MEMBER_ID_REQUIRED with a generated `clientId-UUID` id.
/// let GroupResponse::Join(resp) = &r.completions[0].response else { panic!() };
/// assert_eq!(resp.error, Errors::MemberIdRequired);
/// assert!(resp.member_id.starts_with("app-"));
/// ```
pub struct GroupCoordinator<T, G> {
    pub(crate) config: GroupConfig,
    pub(crate) timer: T,
    pub(crate) ids: G,
    pub(crate) deadlines: BTreeMap<GroupTimerKey, i64>,
    pub(crate) groups: BTreeMap<String, ClassicGroup>,
    pub(crate) consumer_groups: BTreeMap<String, crate::consumer::ConsumerGroup>,
    pub(crate) topic_image: crate::consumer::TopicImage,
    /// Set once the broker has given a topic image (commits are checked against it from then).
    pub(crate) topic_image_known: bool,
    /// `(group, member)` -> the member epoch its revocation timer was armed at.
    pub(crate) revocation_epochs: BTreeMap<(String, String), i32>,
    pub(crate) offsets: OffsetStore,
    pub(crate) loaded: bool,
    pub(crate) outbox: Vec<Completion>,
    pub(crate) now: i64,
}

impl<T: CoordinatorTimer<GroupTimerKey>, G: MemberIdGenerator> GroupCoordinator<T, G> {
    /// An empty coordinator. Replay the partition's records, then serve requests (the first
    /// request or timer call finishes the load: see [`GroupCoordinator::on_loaded`]).
    pub fn new(config: GroupConfig, timer: T, ids: G) -> Self {
        GroupCoordinator {
            config,
            timer,
            ids,
            deadlines: BTreeMap::new(),
            groups: BTreeMap::new(),
            consumer_groups: BTreeMap::new(),
            topic_image: Default::default(),
            topic_image_known: false,
            revocation_epochs: BTreeMap::new(),
            offsets: OffsetStore::default(),
            loaded: false,
            outbox: Vec::new(),
            now: 0,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &GroupConfig {
        &self.config
    }
    /// The timer.
    pub fn timer(&self) -> &T {
        &self.timer
    }
    /// The timer, mutably.
    pub fn timer_mut(&mut self) -> &mut T {
        &mut self.timer
    }
    /// A group.
    pub fn group(&self, group_id: &str) -> Option<&ClassicGroup> {
        self.groups.get(group_id)
    }
    /// All groups.
    pub fn groups(&self) -> impl Iterator<Item = &ClassicGroup> {
        self.groups.values()
    }
    /// The offsets.
    pub fn offsets(&self) -> &OffsetStore {
        &self.offsets
    }
    /// The earliest pending timer deadline.
    pub fn next_deadline(&self) -> Option<i64> {
        self.deadlines.values().copied().min()
    }
    /// The deadline of a timer key, if scheduled.
    pub fn deadline(&self, key: &GroupTimerKey) -> Option<i64> {
        self.deadlines.get(key).copied()
    }

    pub(crate) fn begin(&mut self, now_ms: i64) {
        self.now = now_ms;
        if !self.loaded {
            self.on_loaded(now_ms);
        }
    }

    pub(crate) fn finish<R>(&mut self, records: Vec<GroupRecord>, response: R) -> GroupResult<R> {
        GroupResult {
            records,
            response,
            completions: std::mem::take(&mut self.outbox),
            transaction: None,
        }
    }

    /// Ends loading: schedules a session timer for every loaded member and the offset-retention
    /// sweep. Called automatically by the first handler or timer call after replaying.
    pub fn on_loaded(&mut self, now_ms: i64) {
        self.now = now_ms;
        self.loaded = true;
        let sessions: Vec<(String, String, i32)> = self
            .groups
            .values()
            .flat_map(|g| {
                g.members().map(|m| {
                    (
                        g.group_id.clone(),
                        m.member_id.clone(),
                        m.session_timeout_ms,
                    )
                })
            })
            .collect();
        for (g, m, timeout) in sessions {
            self.schedule(
                GroupTimerKey::Heartbeat {
                    group_id: g,
                    member_id: m,
                },
                timeout as i64,
            );
        }
        let interval = self.config.offsets_retention_check_interval_ms;
        self.schedule(GroupTimerKey::OffsetsRetention, interval);
        self.schedule_loaded_consumer_timers();
    }

    /// True once loading has finished.
    pub fn is_loaded(&self) -> bool {
        self.loaded
    }

    pub(crate) fn schedule(&mut self, key: GroupTimerKey, delay_ms: i64) {
        let deadline = self.now.saturating_add(delay_ms.max(0));
        self.deadlines.insert(key.clone(), deadline);
        self.timer.schedule(key, deadline);
    }

    pub(crate) fn cancel(&mut self, key: &GroupTimerKey) {
        if self.deadlines.remove(key).is_some() {
            self.timer.cancel(key);
        }
    }

    pub(crate) fn heartbeat_key(group_id: &str, member_id: &str) -> GroupTimerKey {
        GroupTimerKey::Heartbeat {
            group_id: group_id.to_string(),
            member_id: member_id.to_string(),
        }
    }

    pub(crate) fn complete_join(&mut self, request: RequestId, response: JoinGroupResponse) {
        self.outbox.push(Completion {
            request,
            response: GroupResponse::Join(response),
        });
    }

    pub(crate) fn complete_sync(&mut self, request: RequestId, response: SyncGroupResponse) {
        self.outbox.push(Completion {
            request,
            response: GroupResponse::Sync(response),
        });
    }

    /// Completes a member's parked join, if any.
    pub(crate) fn complete_member_join(
        &mut self,
        group_id: &str,
        member_id: &str,
        response: JoinGroupResponse,
    ) -> bool {
        let parked = self
            .groups
            .get_mut(group_id)
            .and_then(|g| g.members.get_mut(member_id))
            .and_then(|m| m.awaiting_join.take());
        match parked {
            Some(req) => {
                self.complete_join(req, response);
                true
            }
            None => false,
        }
    }

    /// Completes a member's parked sync, if any.
    pub(crate) fn complete_member_sync(
        &mut self,
        group_id: &str,
        member_id: &str,
        response: SyncGroupResponse,
    ) -> bool {
        let parked = self
            .groups
            .get_mut(group_id)
            .and_then(|g| g.members.get_mut(member_id))
            .and_then(|m| m.awaiting_sync.take());
        match parked {
            Some(req) => {
                self.complete_sync(req, response);
                true
            }
            None => false,
        }
    }

    /// The `GroupMetadata` record of a group with the given assignments.
    pub(crate) fn group_metadata_record(
        group: &ClassicGroup,
        assignments: &BTreeMap<String, Bytes>,
    ) -> GroupRecord {
        let protocol = group.protocol_name.clone();
        GroupRecord::GroupMetadata {
            group: group.group_id.clone(),
            value: Some(GroupMetadata {
                protocol_type: group.protocol_type.clone().unwrap_or_default(),
                generation: group.generation_id,
                protocol: protocol.clone(),
                leader: group.leader_id.clone(),
                current_state_timestamp: group.state_timestamp.unwrap_or(-1),
                members: group
                    .members()
                    .map(|m| MemberMetadata {
                        member_id: m.member_id.clone(),
                        group_instance_id: m.group_instance_id.clone(),
                        client_id: m.client_id.clone(),
                        client_host: m.client_host.clone(),
                        rebalance_timeout_ms: m.rebalance_timeout_ms,
                        session_timeout_ms: m.session_timeout_ms,
                        subscription: m.metadata(protocol.as_deref().unwrap_or("")),
                        assignment: assignments.get(&m.member_id).cloned().unwrap_or_default(),
                    })
                    .collect(),
            }),
        }
    }

    /// Applies one record of the partition (live, after appending it, or while loading).
    ///
    /// `producer_id` is the batch's producer id: offsets written by a transaction
    /// (`producer_id != -1`) stay pending until [`GroupCoordinator::complete_transaction`].
    pub fn replay(
        &mut self,
        offset: i64,
        producer_id: i64,
        _producer_epoch: i16,
        record: &GroupRecord,
    ) {
        match record {
            GroupRecord::OffsetCommit {
                key,
                value: Some(v),
            } => {
                // A group that only commits offsets (no membership) is a "simple" group.
                if !self.groups.contains_key(&key.group)
                    && !self.consumer_groups.contains_key(&key.group)
                {
                    let g = ClassicGroup::new(&key.group, GroupState::Empty, self.now);
                    self.groups.insert(key.group.clone(), g);
                }
                let entry = CommittedOffset {
                    value: v.clone(),
                    record_offset: offset,
                };
                if producer_id == NO_PRODUCER_ID {
                    self.offsets.put(key, entry);
                } else {
                    self.offsets.put_pending(producer_id, key.clone(), entry);
                }
            }
            GroupRecord::OffsetCommit { key, value: None } => {
                self.offsets.remove(key);
                self.offsets.remove_pending_everywhere(key);
            }
            GroupRecord::GroupMetadata { group, value: None } => {
                self.groups.remove(group);
                let keys: Vec<GroupTimerKey> = self
                    .deadlines
                    .keys()
                    .filter(|k| match k {
                        GroupTimerKey::Heartbeat { group_id, .. }
                        | GroupTimerKey::Join { group_id }
                        | GroupTimerKey::Sync { group_id } => group_id == group,
                        GroupTimerKey::OffsetsRetention
                        | GroupTimerKey::ConsumerSession { .. }
                        | GroupTimerKey::ConsumerRevocation { .. }
                        | GroupTimerKey::ClassicMemberJoin { .. }
                        | GroupTimerKey::ClassicMemberSync { .. } => false,
                    })
                    .cloned()
                    .collect();
                for k in keys {
                    self.cancel(&k);
                }
            }
            GroupRecord::GroupMetadata {
                group,
                value: Some(v),
            } => {
                if !self.loaded {
                    let g = Self::group_from_record(group, v, self.now);
                    self.groups.insert(group.clone(), g);
                }
                // Live: the handler that wrote the record already holds this state.
            }
            GroupRecord::Consumer { group, record } => {
                // Live, the handler applied it when it produced it.
                if !self.loaded {
                    self.apply_consumer(group, record);
                }
            }
        }
    }

    /// Kafka's `replayEndTransactionMarker`: the transaction of `producer_id` ended; its offsets
    /// become committed (`committed == true`) or are dropped.
    pub fn complete_transaction(&mut self, producer_id: i64, committed: bool) {
        self.offsets.complete_transaction(producer_id, committed);
    }

    fn group_from_record(group_id: &str, v: &GroupMetadata, now: i64) -> ClassicGroup {
        let state = if v.members.is_empty() {
            GroupState::Empty
        } else {
            GroupState::Stable
        };
        let mut g = ClassicGroup::new(group_id, state, now);
        g.generation_id = v.generation;
        g.protocol_type = Some(v.protocol_type.clone()).filter(|t| !t.is_empty());
        g.protocol_name = v.protocol.clone();
        g.state_timestamp = Some(v.current_state_timestamp).filter(|t| *t != -1);
        let protocol = v.protocol.clone().unwrap_or_default();
        for m in &v.members {
            let member = ClassicMember {
                member_id: m.member_id.clone(),
                group_instance_id: m.group_instance_id.clone(),
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                rebalance_timeout_ms: if m.rebalance_timeout_ms == -1 {
                    m.session_timeout_ms
                } else {
                    m.rebalance_timeout_ms
                },
                session_timeout_ms: m.session_timeout_ms,
                protocol_type: v.protocol_type.clone(),
                protocols: vec![crate::api::JoinProtocol {
                    name: protocol.clone(),
                    metadata: m.subscription.clone(),
                }],
                assignment: m.assignment.clone(),
                awaiting_join: None,
                awaiting_join_version: 0,
                awaiting_sync: None,
                is_new: false,
            };
            g.add(member);
        }
        g.leader_id = v.leader.clone().filter(|l| g.has_member(l));
        if g.leader_id.is_none() {
            g.leader_id = g.members.keys().next().cloned();
        }
        g.subscribed_topics = g.compute_subscribed_topics();
        g
    }

    /// Fires one timer key (the broker calls this when its timer for `key` expires).
    /// Fires that are early or for keys no longer scheduled are ignored.
    pub fn on_timer(&mut self, now_ms: i64, key: &GroupTimerKey) -> GroupResult<()> {
        self.begin(now_ms);
        let due = matches!(self.deadlines.get(key), Some(d) if *d <= now_ms);
        if !due {
            return self.finish(Vec::new(), ());
        }
        self.deadlines.remove(key);
        let records = match key {
            GroupTimerKey::Heartbeat {
                group_id,
                member_id,
            } => self.expire_heartbeat(group_id, member_id),
            GroupTimerKey::Join { group_id } => self.on_join_timer(group_id),
            GroupTimerKey::Sync { group_id } => self.expire_pending_sync(group_id),
            GroupTimerKey::ConsumerSession { .. }
            | GroupTimerKey::ConsumerRevocation { .. }
            | GroupTimerKey::ClassicMemberJoin { .. }
            | GroupTimerKey::ClassicMemberSync { .. } => self.on_consumer_timer(key),
            GroupTimerKey::OffsetsRetention => {
                let records = self.expired_offset_records(now_ms);
                // Consumer records are applied when produced (replay skips them when live).
                for r in &records {
                    if let GroupRecord::Consumer { group, record } = r {
                        self.apply_consumer(group, record);
                    }
                }
                let interval = self.config.offsets_retention_check_interval_ms;
                self.schedule(GroupTimerKey::OffsetsRetention, interval);
                records
            }
        };
        self.finish(records, ())
    }

    /// Fires the earliest timer due at `now_ms`, at its own deadline (timers it schedules count
    /// from there, as with a real timer), or returns `None` if nothing is due. For callers that
    /// drive time themselves (tests, simulations): apply each result (append and replay its
    /// records) before firing the next, since later timers see the replayed state.
    pub fn fire_next_due(&mut self, now_ms: i64) -> Option<GroupResult<()>> {
        if !self.loaded {
            self.on_loaded(now_ms);
        }
        let (key, deadline) = self
            .deadlines
            .iter()
            .filter(|(_, d)| **d <= now_ms)
            .min_by_key(|(k, d)| (**d, (*k).clone()))
            .map(|(k, d)| (k.clone(), *d))?;
        let mut result = self.on_timer(deadline, &key);
        self.now = now_ms;
        result.completions.extend(std::mem::take(&mut self.outbox));
        Some(result)
    }

    /// The partition moves away (or the broker stops): every parked request is answered
    /// NOT_COORDINATOR and every group becomes Dead. The shard should be dropped afterwards.
    pub fn unload(&mut self) -> Vec<Completion> {
        let ids: Vec<String> = self.groups.keys().cloned().collect();
        for id in ids {
            let (state, members) = {
                let g = &self.groups[&id];
                (g.state, g.members.keys().cloned().collect::<Vec<_>>())
            };
            if let Some(g) = self.groups.get_mut(&id) {
                g.previous_state = state;
                g.state = GroupState::Dead;
            }
            for m in members {
                self.complete_member_join(
                    &id,
                    &m,
                    JoinGroupResponse::error(Errors::NotCoordinator, &m),
                );
                self.complete_member_sync(
                    &id,
                    &m,
                    SyncGroupResponse::error(Errors::NotCoordinator),
                );
            }
        }
        let keys: Vec<GroupTimerKey> = self.deadlines.keys().cloned().collect();
        for k in keys {
            self.cancel(&k);
        }
        std::mem::take(&mut self.outbox)
    }
}

impl<T: CoordinatorTimer<GroupTimerKey>, G: MemberIdGenerator> CoordinatorShard
    for GroupCoordinator<T, G>
{
    type Record = GroupRecord;

    fn replay(
        &mut self,
        offset: i64,
        producer_id: i64,
        producer_epoch: i16,
        record: &GroupRecord,
    ) -> Result<(), ReplayError> {
        GroupCoordinator::replay(self, offset, producer_id, producer_epoch, record);
        Ok(())
    }

    fn replay_end_transaction_marker(
        &mut self,
        _offset: i64,
        producer_id: i64,
        _producer_epoch: i16,
        result: TransactionResult,
    ) -> Result<(), ReplayError> {
        self.complete_transaction(producer_id, result == TransactionResult::Commit);
        Ok(())
    }
}
