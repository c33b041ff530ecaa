//! A classic group (`ClassicGroup`): members, leader, protocol vote and the join/sync bookkeeping.

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use indexmap::IndexMap;

use super::{ClassicMember, GroupState};
use crate::api::{JoinGroupResponseMember, JoinProtocol};
use crate::consumer_protocol::{Subscription, CONSUMER_PROTOCOL_TYPE};
use crate::error::Errors;

/// A classic group. Members keep their join order (the leader falls back to the oldest member).
#[derive(Debug, Clone)]
pub struct ClassicGroup {
    pub(crate) group_id: String,
    pub(crate) state: GroupState,
    pub(crate) previous_state: GroupState,
    pub(crate) state_timestamp: Option<i64>,
    pub(crate) protocol_type: Option<String>,
    pub(crate) protocol_name: Option<String>,
    pub(crate) generation_id: i32,
    pub(crate) leader_id: Option<String>,
    pub(crate) members: IndexMap<String, ClassicMember>,
    /// group.instance.id -> member id
    pub(crate) static_members: BTreeMap<String, String>,
    /// Dynamic members told MEMBER_ID_REQUIRED that have not joined with their id yet.
    pub(crate) pending_join_members: BTreeSet<String>,
    /// Members of the current generation that have not sent SyncGroup yet.
    pub(crate) pending_sync_members: BTreeSet<String>,
    /// Set when a member is added during the initial (delayed) rebalance.
    pub(crate) new_member_added: bool,
    /// `(delay, remaining)` of the running initial-rebalance delay.
    pub(crate) initial_delay: Option<(i32, i32)>,
    /// Generation the pending-sync timer was scheduled for.
    pub(crate) sync_timer_generation: i32,
    pub(crate) subscribed_topics: Option<BTreeSet<String>>,
}

impl ClassicGroup {
    /// A new group in `state`.
    pub fn new(group_id: &str, state: GroupState, now_ms: i64) -> Self {
        ClassicGroup {
            group_id: group_id.to_string(),
            state,
            previous_state: GroupState::Dead,
            state_timestamp: Some(now_ms),
            protocol_type: None,
            protocol_name: None,
            generation_id: 0,
            leader_id: None,
            members: IndexMap::new(),
            static_members: BTreeMap::new(),
            pending_join_members: BTreeSet::new(),
            pending_sync_members: BTreeSet::new(),
            new_member_added: false,
            initial_delay: None,
            sync_timer_generation: -1,
            subscribed_topics: None,
        }
    }

    /// The group id.
    pub fn group_id(&self) -> &str {
        &self.group_id
    }
    /// The current state.
    pub fn state(&self) -> GroupState {
        self.state
    }
    /// The previous state.
    pub fn previous_state(&self) -> GroupState {
        self.previous_state
    }
    /// The generation.
    pub fn generation_id(&self) -> i32 {
        self.generation_id
    }
    /// The protocol type, if the group has had members.
    pub fn protocol_type(&self) -> Option<&str> {
        self.protocol_type.as_deref()
    }
    /// The selected protocol.
    pub fn protocol_name(&self) -> Option<&str> {
        self.protocol_name.as_deref()
    }
    /// The leader's member id.
    pub fn leader_id(&self) -> Option<&str> {
        self.leader_id.as_deref()
    }
    /// When the group entered its state.
    pub fn state_timestamp(&self) -> Option<i64> {
        self.state_timestamp
    }
    /// The members in join order.
    pub fn members(&self) -> impl Iterator<Item = &ClassicMember> {
        self.members.values()
    }
    /// A member.
    pub fn member(&self, member_id: &str) -> Option<&ClassicMember> {
        self.members.get(member_id)
    }
    /// Number of members.
    pub fn num_members(&self) -> usize {
        self.members.len()
    }
    /// True if `member_id` is a member.
    pub fn has_member(&self, member_id: &str) -> bool {
        self.members.contains_key(member_id)
    }
    /// True if `member_id` is the leader.
    pub fn is_leader(&self, member_id: &str) -> bool {
        self.leader_id.as_deref() == Some(member_id)
    }
    /// True if `member_id` was told MEMBER_ID_REQUIRED and has not joined yet.
    pub fn is_pending_member(&self, member_id: &str) -> bool {
        self.pending_join_members.contains(member_id)
    }
    /// The member id of a static instance.
    pub fn static_member_id(&self, instance_id: &str) -> Option<&str> {
        self.static_members.get(instance_id).map(String::as_str)
    }
    /// Topics the members subscribe to (consumer groups whose metadata parses), if known.
    pub fn subscribed_topics(&self) -> Option<&BTreeSet<String>> {
        self.subscribed_topics.as_ref()
    }
    /// True if the group uses the `consumer` protocol type.
    pub fn uses_consumer_protocol(&self) -> bool {
        self.protocol_type.as_deref() == Some(CONSUMER_PROTOCOL_TYPE)
    }
    /// Whether the group is subscribed to `topic` (unknown subscriptions count as subscribed for
    /// consumer groups, as in Kafka).
    pub fn is_subscribed_to_topic(&self, topic: &str) -> bool {
        match &self.subscribed_topics {
            Some(t) => t.contains(topic),
            None => self.uses_consumer_protocol(),
        }
    }

    pub(crate) fn transition_to(&mut self, state: GroupState, now_ms: i64) {
        debug_assert!(
            state.valid_previous_states().contains(&self.state),
            "invalid transition {:?} -> {:?}",
            self.state,
            state
        );
        self.previous_state = self.state;
        self.state = state;
        self.state_timestamp = Some(now_ms);
    }

    /// A rebalance may start from Stable, CompletingRebalance and Empty.
    pub fn can_rebalance(&self) -> bool {
        GroupState::PreparingRebalance
            .valid_previous_states()
            .contains(&self.state)
    }

    pub(crate) fn num_awaiting_join(&self) -> usize {
        self.members
            .values()
            .filter(|m| m.is_awaiting_join())
            .count()
    }

    /// All members have rejoined and no MEMBER_ID_REQUIRED member is still on its way.
    pub fn has_all_members_joined(&self) -> bool {
        self.members.len() == self.num_awaiting_join() && self.pending_join_members.is_empty()
    }

    /// The group's rebalance timeout: the largest of its members'.
    pub fn rebalance_timeout_ms(&self) -> i32 {
        self.members
            .values()
            .map(|m| m.rebalance_timeout_ms)
            .max()
            .unwrap_or(0)
    }

    fn supported_count(&self, protocol: &str) -> usize {
        self.members
            .values()
            .filter(|m| m.protocols.iter().any(|p| p.name == protocol))
            .count()
    }

    /// Kafka's `supportsProtocols`: an Empty group accepts any non-empty protocol type and list;
    /// otherwise the type must match and one protocol must be supported by every member.
    pub fn supports_protocols(&self, protocol_type: &str, protocols: &[JoinProtocol]) -> bool {
        if self.state == GroupState::Empty {
            !protocol_type.is_empty() && !protocols.is_empty()
        } else {
            self.protocol_type.as_deref() == Some(protocol_type)
                && protocols
                    .iter()
                    .any(|p| self.supported_count(&p.name) == self.members.len())
        }
    }

    fn candidate_protocols(&self) -> Vec<String> {
        let mut names: BTreeSet<&str> = BTreeSet::new();
        for m in self.members.values() {
            for p in &m.protocols {
                names.insert(&p.name);
            }
        }
        names
            .into_iter()
            .filter(|n| self.supported_count(n) == self.members.len())
            .map(str::to_string)
            .collect()
    }

    /// Protocol selection by vote: each member votes for its first protocol that every member
    /// supports; the most votes wins (ties: the lexicographically smallest name, to be
    /// deterministic where Kafka's HashMap order is not).
    pub fn select_protocol(&self) -> Option<String> {
        let candidates = self.candidate_protocols();
        let refs: Vec<&str> = candidates.iter().map(String::as_str).collect();
        let mut votes: BTreeMap<&str, usize> = BTreeMap::new();
        for m in self.members.values() {
            if let Some(v) = m.vote(&refs) {
                *votes.entry(v).or_default() += 1;
            }
        }
        let max = votes.values().copied().max()?;
        votes
            .into_iter()
            .find(|(_, c)| *c == max)
            .map(|(n, _)| n.to_string())
    }

    pub(crate) fn add(&mut self, member: ClassicMember) {
        if let Some(iid) = &member.group_instance_id {
            self.static_members
                .insert(iid.clone(), member.member_id.clone());
        }
        if self.members.is_empty() {
            self.protocol_type = Some(member.protocol_type.clone());
        }
        if self.leader_id.is_none() {
            self.leader_id = Some(member.member_id.clone());
        }
        self.pending_join_members.remove(&member.member_id);
        self.members.insert(member.member_id.clone(), member);
    }

    /// Removes a member; a removed leader is replaced by the oldest remaining member.
    pub(crate) fn remove(&mut self, member_id: &str) -> Option<ClassicMember> {
        let removed = self.members.shift_remove(member_id);
        if let Some(m) = &removed {
            if let Some(iid) = &m.group_instance_id {
                if self.static_members.get(iid).map(String::as_str) == Some(member_id) {
                    self.static_members.remove(iid);
                }
            }
        }
        if self.is_leader(member_id) {
            self.leader_id = self.members.keys().next().cloned();
        }
        self.pending_join_members.remove(member_id);
        self.pending_sync_members.remove(member_id);
        removed
    }

    /// If the leader has not rejoined, elect the first member that has. Returns false when no
    /// member rejoined (or the group has no leader).
    pub(crate) fn maybe_elect_new_joined_leader(&mut self) -> bool {
        let Some(leader) = self.leader_id.clone() else {
            return false;
        };
        let leader_joined = self
            .members
            .get(&leader)
            .map(|m| m.is_awaiting_join())
            .unwrap_or(false);
        if leader_joined {
            return true;
        }
        match self.members.values().find(|m| m.is_awaiting_join()) {
            Some(m) => {
                self.leader_id = Some(m.member_id.clone());
                true
            }
            None => false,
        }
    }

    /// Static member replacement: `old` becomes `new` with the same settings and assignment.
    /// Returns the old member (whose parked requests the caller fences).
    pub(crate) fn replace_static_member(
        &mut self,
        instance_id: &str,
        old_member_id: &str,
        new_member_id: &str,
    ) -> Option<ClassicMember> {
        let index = self.members.get_index_of(old_member_id)?;
        let old = self.members.get(old_member_id)?.clone();
        let mut new = old.clone();
        new.member_id = new_member_id.to_string();
        new.awaiting_join = None;
        new.awaiting_sync = None;
        new.is_new = false;
        // Keep the join position so leader fallback order does not change.
        self.members.shift_remove(old_member_id);
        self.members
            .shift_insert(index, new_member_id.to_string(), new);
        if self.is_leader(old_member_id) {
            self.leader_id = Some(new_member_id.to_string());
        }
        if self.pending_sync_members.remove(old_member_id) {
            self.pending_sync_members.insert(new_member_id.to_string());
        }
        self.static_members
            .insert(instance_id.to_string(), new_member_id.to_string());
        Some(old)
    }

    /// `validateMember`: a given instance id must map to `member_id`, and the member must exist.
    pub fn validate_member(
        &self,
        member_id: &str,
        group_instance_id: Option<&str>,
    ) -> Result<(), Errors> {
        if let Some(iid) = group_instance_id {
            match self.static_members.get(iid) {
                None => return Err(Errors::UnknownMemberId),
                Some(existing) if existing != member_id => return Err(Errors::FencedInstanceId),
                Some(_) => {}
            }
        }
        if !self.has_member(member_id) {
            return Err(Errors::UnknownMemberId);
        }
        Ok(())
    }

    /// `validateOffsetCommit` for classic groups.
    pub fn validate_offset_commit(
        &self,
        member_id: &str,
        group_instance_id: Option<&str>,
        generation_id: i32,
        transactional: bool,
    ) -> Result<(), Errors> {
        if self.state == GroupState::Dead {
            return Err(Errors::CoordinatorNotAvailable);
        }
        if generation_id < 0 && self.state == GroupState::Empty {
            // Admin client or a consumer without group management.
            return Ok(());
        }
        if generation_id >= 0 || !member_id.is_empty() || group_instance_id.is_some() {
            self.validate_member(member_id, group_instance_id)?;
            if generation_id != self.generation_id {
                return Err(Errors::IllegalGeneration);
            }
        } else if !transactional && self.state != GroupState::Empty {
            return Err(Errors::UnknownMemberId);
        }
        if !transactional && self.state == GroupState::CompletingRebalance {
            return Err(Errors::RebalanceInProgress);
        }
        Ok(())
    }

    /// The JoinGroup member list given to the leader.
    pub fn join_response_members(&self) -> Vec<JoinGroupResponseMember> {
        let protocol = self.protocol_name.as_deref().unwrap_or("");
        self.members
            .values()
            .map(|m| JoinGroupResponseMember {
                member_id: m.member_id.clone(),
                group_instance_id: m.group_instance_id.clone(),
                metadata: m.metadata(protocol),
            })
            .collect()
    }

    /// Topics in the members' ConsumerProtocol subscriptions (v0 prefix of every version), if
    /// the group is a consumer group whose metadata all parses.
    pub(crate) fn compute_subscribed_topics(&self) -> Option<BTreeSet<String>> {
        if !self.uses_consumer_protocol() {
            return None;
        }
        if self.members.is_empty() {
            return Some(BTreeSet::new());
        }
        let protocol = self.protocol_name.as_deref()?;
        let mut topics = BTreeSet::new();
        for m in self.members.values() {
            let (_, sub) = Subscription::decode(&m.metadata(protocol)).ok()?;
            topics.extend(sub.topics);
        }
        Some(topics)
    }

    /// `initNextGeneration`: bump the generation, pick the protocol, go to CompletingRebalance
    /// (or Empty without members).
    pub(crate) fn init_next_generation(&mut self, now_ms: i64) {
        self.generation_id += 1;
        if !self.members.is_empty() {
            self.protocol_name = self.select_protocol();
            self.subscribed_topics = self.compute_subscribed_topics();
            self.transition_to(GroupState::CompletingRebalance, now_ms);
        } else {
            self.protocol_name = None;
            self.subscribed_topics = self.compute_subscribed_topics();
            self.transition_to(GroupState::Empty, now_ms);
        }
        self.pending_sync_members.clear();
    }

    /// Current assignments by member id.
    pub fn assignments(&self) -> BTreeMap<String, Bytes> {
        self.members
            .values()
            .map(|m| (m.member_id.clone(), m.assignment.clone()))
            .collect()
    }
}
