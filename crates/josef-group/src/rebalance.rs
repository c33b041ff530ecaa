//! JoinGroup, SyncGroup, Heartbeat, LeaveGroup and the rebalance timers (Kafka's
//! `GroupMetadataManager` classic-group paths).

use std::collections::BTreeMap;

use bytes::Bytes;

use crate::api::{
    HeartbeatRequest, HeartbeatResponse, JoinGroupRequest, JoinGroupResponse,
    LeaveGroupMemberResponse, LeaveGroupRequest, LeaveGroupResponse, RequestContext, RequestId,
    SyncGroupRequest, SyncGroupResponse,
};
use crate::classic::{ClassicGroup, ClassicMember, GroupState};
use crate::coordinator::{GroupCoordinator, GroupResult};
use crate::error::Errors;
use crate::ids::MemberIdGenerator;
use crate::record::GroupRecord;
use crate::timer::{CoordinatorTimer, GroupTimerKey};

/// JoinGroup v4+ requires a member id (KIP-394).
const FIRST_VERSION_REQUIRING_MEMBER_ID: i16 = 4;
/// JoinGroup v9+ can tell a static leader to skip the assignment.
const FIRST_VERSION_SKIPPING_ASSIGNMENT: i16 = 9;

type Records = Vec<GroupRecord>;

/// Strings stored in records are int16-length-prefixed: longer ones cannot be persisted.
pub(crate) fn fits_record(s: &str) -> bool {
    s.len() <= i16::MAX as usize
}

/// The client id part of a member id, cut so that `prefix-UUID` still fits a record.
fn member_id_prefix(s: &str) -> &str {
    let max = i16::MAX as usize - 37;
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

impl<T: CoordinatorTimer<GroupTimerKey>, G: MemberIdGenerator> GroupCoordinator<T, G> {
    // ---------------------------------------------------------------- JoinGroup

    /// JoinGroup. The answer usually comes later (when the join phase ends), as a
    /// [`crate::api::Completion`] for `request` in this or a later result.
    pub fn join_group(
        &mut self,
        now_ms: i64,
        request: RequestId,
        ctx: &RequestContext,
        req: JoinGroupRequest,
    ) -> GroupResult<()> {
        self.begin(now_ms);
        let mut records = Vec::new();
        if let Some(cg) = self.consumer_groups.get(&req.group_id) {
            if cg.state() != crate::consumer::ConsumerGroupState::Empty {
                // A classic-protocol member of a consumer group.
                if req.group_id.is_empty() || !fits_record(&req.group_id) {
                    self.complete_join(
                        request,
                        JoinGroupResponse::error(Errors::InvalidGroupId, &req.member_id),
                    );
                } else {
                    self.classic_join_to_consumer_group(request, ctx, &req, &mut records);
                }
                return self.finish(records, ());
            }
            // An empty consumer group becomes a classic group (its offsets stay).
            for r in cg.tombstones() {
                self.apply_consumer(&req.group_id, &r);
                records.push(GroupRecord::Consumer {
                    group: req.group_id.clone(),
                    record: r,
                });
            }
        }
        records.extend(self.join_group_inner(request, ctx, &req));
        self.finish(records, ())
    }

    fn join_group_inner(
        &mut self,
        request: RequestId,
        ctx: &RequestContext,
        req: &JoinGroupRequest,
    ) -> Records {
        if req.group_id.is_empty() || !fits_record(&req.group_id) {
            self.complete_join(
                request,
                JoinGroupResponse::error(Errors::InvalidGroupId, &req.member_id),
            );
            return Vec::new();
        }
        if req
            .group_instance_id
            .as_deref()
            .is_some_and(|i| !fits_record(i))
        {
            self.complete_join(
                request,
                JoinGroupResponse::error(Errors::InvalidRequest, &req.member_id),
            );
            return Vec::new();
        }
        if req.session_timeout_ms < self.config.min_session_timeout_ms
            || req.session_timeout_ms > self.config.max_session_timeout_ms
        {
            self.complete_join(
                request,
                JoinGroupResponse::error(Errors::InvalidSessionTimeout, &req.member_id),
            );
            return Vec::new();
        }
        let is_unknown_member = req.member_id.is_empty();
        let is_new_group = !self.groups.contains_key(&req.group_id);
        if is_new_group {
            if !is_unknown_member {
                // A member id for a group that does not exist.
                self.complete_join(
                    request,
                    JoinGroupResponse::error(Errors::UnknownMemberId, &req.member_id),
                );
                return Vec::new();
            }
            let g = ClassicGroup::new(&req.group_id, GroupState::Empty, self.now);
            self.groups.insert(req.group_id.clone(), g);
        }
        let mut records = if !self.accept_joining_member(&req.group_id, &req.member_id) {
            if let Some(g) = self.groups.get_mut(&req.group_id) {
                g.remove(&req.member_id);
            }
            self.complete_join(
                request,
                JoinGroupResponse::error(Errors::GroupMaxSizeReached, ""),
            );
            Vec::new()
        } else if is_unknown_member {
            self.join_new_member(request, ctx, req)
        } else {
            self.join_existing_member(request, ctx, req)
        };
        if is_new_group && records.is_empty() {
            // Persist the new group so it survives a restart even before its first generation.
            let g = &self.groups[&req.group_id];
            records.push(GroupRecord::GroupMetadata {
                group: g.group_id.clone(),
                value: Some(crate::record::GroupMetadata {
                    protocol_type: g.protocol_type.clone().unwrap_or_default(),
                    generation: g.generation_id,
                    protocol: None,
                    leader: None,
                    current_state_timestamp: g.state_timestamp.unwrap_or(-1),
                    members: Vec::new(),
                }),
            });
        }
        records
    }

    /// `acceptJoiningMember`: the group.max.size rule.
    fn accept_joining_member(&self, group_id: &str, member_id: &str) -> bool {
        let g = &self.groups[group_id];
        let max = self.config.max_group_size;
        match g.state {
            GroupState::Empty | GroupState::Dead => true,
            GroupState::PreparingRebalance => {
                g.member(member_id)
                    .map(|m| m.is_awaiting_join())
                    .unwrap_or(false)
                    || g.num_awaiting_join() < max
            }
            GroupState::CompletingRebalance | GroupState::Stable => {
                g.has_member(member_id) || g.num_members() < max
            }
        }
    }

    fn join_new_member(
        &mut self,
        request: RequestId,
        ctx: &RequestContext,
        req: &JoinGroupRequest,
    ) -> Records {
        let g = &self.groups[&req.group_id];
        if g.state == GroupState::Dead {
            self.complete_join(
                request,
                JoinGroupResponse::error(Errors::CoordinatorNotAvailable, ""),
            );
            return Vec::new();
        }
        if !g.supports_protocols(&req.protocol_type, &req.protocols) {
            self.complete_join(
                request,
                JoinGroupResponse::error(Errors::InconsistentGroupProtocol, ""),
            );
            return Vec::new();
        }
        let prefix = member_id_prefix(req.group_instance_id.as_deref().unwrap_or(&ctx.client_id));
        let new_member_id = format!("{}-{}", prefix, self.ids.next_uuid());
        match &req.group_instance_id {
            Some(instance_id) => match g.static_member_id(instance_id).map(str::to_string) {
                Some(existing) => self.update_static_member_then_rebalance_or_complete_join(
                    request,
                    ctx,
                    req,
                    &existing,
                    &new_member_id,
                ),
                None => self.add_member_then_rebalance_or_complete_join(
                    request,
                    ctx,
                    req,
                    &new_member_id,
                ),
            },
            None if ctx.api_version >= FIRST_VERSION_REQUIRING_MEMBER_ID => {
                // KIP-394: hand out the id and wait for the member to come back with it.
                let g = self.groups.get_mut(&req.group_id).expect("group exists");
                g.pending_join_members.insert(new_member_id.clone());
                let key = Self::heartbeat_key(&req.group_id, &new_member_id);
                self.schedule(key, req.session_timeout_ms as i64);
                self.complete_join(
                    request,
                    JoinGroupResponse::error(Errors::MemberIdRequired, &new_member_id),
                );
                Vec::new()
            }
            None => {
                self.add_member_then_rebalance_or_complete_join(request, ctx, req, &new_member_id)
            }
        }
    }

    fn current_generation_response(
        &self,
        group: &ClassicGroup,
        member_id: &str,
        with_members: bool,
    ) -> JoinGroupResponse {
        JoinGroupResponse {
            error: Errors::None,
            generation_id: group.generation_id,
            protocol_type: group.protocol_type.clone(),
            protocol_name: group.protocol_name.clone(),
            leader: group.leader_id.clone().unwrap_or_default(),
            skip_assignment: false,
            member_id: member_id.to_string(),
            members: if with_members {
                group.join_response_members()
            } else {
                Vec::new()
            },
        }
    }

    fn join_existing_member(
        &mut self,
        request: RequestId,
        ctx: &RequestContext,
        req: &JoinGroupRequest,
    ) -> Records {
        let member_id = req.member_id.as_str();
        let g = &self.groups[&req.group_id];
        if g.state == GroupState::Dead {
            self.complete_join(
                request,
                JoinGroupResponse::error(Errors::CoordinatorNotAvailable, member_id),
            );
            return Vec::new();
        }
        if !g.supports_protocols(&req.protocol_type, &req.protocols) {
            self.complete_join(
                request,
                JoinGroupResponse::error(Errors::InconsistentGroupProtocol, member_id),
            );
            return Vec::new();
        }
        if g.is_pending_member(member_id) {
            if req.group_instance_id.is_some() {
                // Pending members are dynamic by construction; Kafka treats this as a bug.
                self.complete_join(
                    request,
                    JoinGroupResponse::error(Errors::InvalidRequest, member_id),
                );
                return Vec::new();
            }
            return self.add_member_then_rebalance_or_complete_join(request, ctx, req, member_id);
        }
        if let Err(e) = g.validate_member(member_id, req.group_instance_id.as_deref()) {
            self.complete_join(request, JoinGroupResponse::error(e, member_id));
            return Vec::new();
        }
        let member = g.member(member_id).expect("validated");
        let matches = member.matches(&req.protocols);
        match g.state {
            GroupState::PreparingRebalance => {
                self.update_member_then_rebalance_or_complete_join(request, ctx, req)
            }
            GroupState::CompletingRebalance => {
                if matches {
                    // A retry of a join whose response was lost: answer with this generation.
                    let resp =
                        self.current_generation_response(g, member_id, g.is_leader(member_id));
                    self.complete_join(request, resp);
                    Vec::new()
                } else {
                    self.update_member_then_rebalance_or_complete_join(request, ctx, req)
                }
            }
            GroupState::Stable => {
                if g.is_leader(member_id) || !matches {
                    // A leader's join forces a rebalance (e.g. topic metadata changed); so
                    // does a changed subscription.
                    self.update_member_then_rebalance_or_complete_join(request, ctx, req)
                } else {
                    let resp = self.current_generation_response(g, member_id, false);
                    self.complete_join(request, resp);
                    Vec::new()
                }
            }
            GroupState::Empty | GroupState::Dead => {
                self.complete_join(
                    request,
                    JoinGroupResponse::error(Errors::UnknownMemberId, member_id),
                );
                Vec::new()
            }
        }
    }

    fn add_member_then_rebalance_or_complete_join(
        &mut self,
        request: RequestId,
        ctx: &RequestContext,
        req: &JoinGroupRequest,
        member_id: &str,
    ) -> Records {
        let member = ClassicMember {
            member_id: member_id.to_string(),
            group_instance_id: req.group_instance_id.clone(),
            client_id: ctx.client_id.clone(),
            client_host: ctx.client_host.clone(),
            rebalance_timeout_ms: req.rebalance_timeout_ms,
            session_timeout_ms: req.session_timeout_ms,
            protocol_type: req.protocol_type.clone(),
            protocols: req.protocols.clone(),
            assignment: Bytes::new(),
            awaiting_join: Some(request),
            awaiting_join_version: ctx.api_version,
            awaiting_sync: None,
            is_new: true,
        };
        let g = self.groups.get_mut(&req.group_id).expect("group exists");
        if g.state == GroupState::PreparingRebalance && g.previous_state == GroupState::Empty {
            // Lets the initial rebalance delay be extended.
            g.new_member_added = true;
        }
        g.add(member);
        // A parked join cannot heartbeat and a muted socket hides disconnects: bound the wait.
        let key = Self::heartbeat_key(&req.group_id, member_id);
        self.schedule(key, self.config.new_member_join_timeout_ms as i64);
        self.maybe_prepare_rebalance_or_complete_join(&req.group_id)
    }

    fn park_join(&mut self, group_id: &str, member_id: &str, request: RequestId, version: i16) {
        let old = {
            let m = self
                .groups
                .get_mut(group_id)
                .and_then(|g| g.members.get_mut(member_id))
                .expect("member exists");
            m.awaiting_join_version = version;
            m.awaiting_join.replace(request)
        };
        if let Some(old) = old.filter(|o| *o != request) {
            // Kafka drops the superseded future; answer it so the broker does not hold it forever.
            self.complete_join(
                old,
                JoinGroupResponse::error(Errors::RebalanceInProgress, member_id),
            );
        }
    }

    fn update_member_then_rebalance_or_complete_join(
        &mut self,
        request: RequestId,
        ctx: &RequestContext,
        req: &JoinGroupRequest,
    ) -> Records {
        {
            let m = self
                .groups
                .get_mut(&req.group_id)
                .and_then(|g| g.members.get_mut(&req.member_id))
                .expect("member exists");
            m.protocols = req.protocols.clone();
            m.rebalance_timeout_ms = req.rebalance_timeout_ms;
            m.session_timeout_ms = req.session_timeout_ms;
        }
        self.park_join(&req.group_id, &req.member_id, request, ctx.api_version);
        self.maybe_prepare_rebalance_or_complete_join(&req.group_id)
    }

    fn update_static_member_then_rebalance_or_complete_join(
        &mut self,
        request: RequestId,
        ctx: &RequestContext,
        req: &JoinGroupRequest,
        old_member_id: &str,
        new_member_id: &str,
    ) -> Records {
        let group_id = req.group_id.as_str();
        let instance_id = req.group_instance_id.as_deref().expect("static member");
        let current_leader = self.groups[group_id].leader_id.clone().unwrap_or_default();
        let old = self
            .groups
            .get_mut(group_id)
            .expect("group exists")
            .replace_static_member(instance_id, old_member_id, new_member_id)
            .expect("static member exists");
        // Fence the old incarnation's parked requests right away.
        if let Some(j) = old.awaiting_join {
            self.complete_join(
                j,
                JoinGroupResponse {
                    protocol_type: None,
                    protocol_name: None,
                    ..JoinGroupResponse::error(Errors::FencedInstanceId, old_member_id)
                },
            );
        }
        if let Some(s) = old.awaiting_sync {
            self.complete_sync(s, SyncGroupResponse::error(Errors::FencedInstanceId));
        }
        self.cancel(&Self::heartbeat_key(group_id, old_member_id));
        let session = old.session_timeout_ms as i64;
        self.schedule(Self::heartbeat_key(group_id, new_member_id), session);
        {
            let m = self
                .groups
                .get_mut(group_id)
                .and_then(|g| g.members.get_mut(new_member_id))
                .expect("replaced member");
            m.protocols = req.protocols.clone();
            m.rebalance_timeout_ms = req.rebalance_timeout_ms;
            m.session_timeout_ms = req.session_timeout_ms;
            m.awaiting_join = Some(request);
            m.awaiting_join_version = ctx.api_version;
        }
        let g = &self.groups[group_id];
        match g.state {
            GroupState::Stable => {
                let selected = g.select_protocol();
                if g.protocol_name.is_some() && g.protocol_name == selected {
                    // Same protocol: no rebalance, just persist the new member id (KIP-345).
                    let record = Self::group_metadata_record(g, &g.assignments());
                    let resp = if ctx.api_version >= FIRST_VERSION_SKIPPING_ASSIGNMENT {
                        let is_leader = g.is_leader(new_member_id);
                        JoinGroupResponse {
                            skip_assignment: is_leader,
                            ..self.current_generation_response(g, new_member_id, is_leader)
                        }
                    } else {
                        // Older clients: report the old leader id so a rejoining static leader
                        // acts as a follower and does not reassign.
                        JoinGroupResponse {
                            leader: current_leader,
                            ..self.current_generation_response(g, new_member_id, false)
                        }
                    };
                    self.complete_member_join(group_id, new_member_id, resp);
                    vec![record]
                } else {
                    self.maybe_prepare_rebalance_or_complete_join(group_id)
                }
            }
            GroupState::CompletingRebalance => {
                // The leader may already be assigning with the old member id: rebalance.
                self.prepare_rebalance(group_id)
            }
            GroupState::PreparingRebalance => self.maybe_complete_join_phase(group_id),
            GroupState::Empty | GroupState::Dead => {
                self.complete_member_join(
                    group_id,
                    new_member_id,
                    JoinGroupResponse::error(Errors::CoordinatorNotAvailable, new_member_id),
                );
                Vec::new()
            }
        }
    }

    pub(crate) fn maybe_prepare_rebalance_or_complete_join(&mut self, group_id: &str) -> Records {
        if self.groups[group_id].can_rebalance() {
            self.prepare_rebalance(group_id)
        } else {
            self.maybe_complete_join_phase(group_id)
        }
    }

    pub(crate) fn prepare_rebalance(&mut self, group_id: &str) -> Records {
        if self.groups[group_id].state == GroupState::CompletingRebalance {
            self.reset_and_propagate_assignment_with_error(group_id, Errors::RebalanceInProgress);
        }
        self.remove_sync_expiration(group_id);
        let now = self.now;
        let delay = self.config.initial_rebalance_delay_ms;
        let g = self.groups.get_mut(group_id).expect("group exists");
        let is_initial = g.state == GroupState::Empty;
        if is_initial {
            let remaining = (g.rebalance_timeout_ms() - delay).max(0);
            g.initial_delay = Some((delay, remaining));
        }
        g.transition_to(GroupState::PreparingRebalance, now);
        if is_initial {
            self.schedule(
                GroupTimerKey::Join {
                    group_id: group_id.to_string(),
                },
                delay as i64,
            );
            Vec::new()
        } else {
            self.maybe_complete_join_else_schedule(group_id)
        }
    }

    fn maybe_complete_join_else_schedule(&mut self, group_id: &str) -> Records {
        let g = self.groups.get_mut(group_id).expect("group exists");
        if g.has_all_members_joined() {
            self.complete_join_phase(group_id)
        } else {
            g.initial_delay = None;
            let timeout = g.rebalance_timeout_ms() as i64;
            self.schedule(
                GroupTimerKey::Join {
                    group_id: group_id.to_string(),
                },
                timeout,
            );
            Vec::new()
        }
    }

    pub(crate) fn maybe_complete_join_phase(&mut self, group_id: &str) -> Records {
        let g = &self.groups[group_id];
        if g.state != GroupState::PreparingRebalance
            || g.previous_state == GroupState::Empty
            || !g.has_all_members_joined()
        {
            // Not rebalancing, the initial delay runs to its end, or members are missing.
            return Vec::new();
        }
        self.complete_join_phase(group_id)
    }

    pub(crate) fn on_join_timer(&mut self, group_id: &str) -> Records {
        let Some(g) = self.groups.get_mut(group_id) else {
            return Vec::new();
        };
        match g.initial_delay {
            Some((delay, remaining)) if g.new_member_added && remaining != 0 => {
                // New members keep arriving: extend the initial delay.
                g.new_member_added = false;
                let new_delay = self.config.initial_rebalance_delay_ms.min(remaining);
                let new_remaining = (remaining - delay).max(0);
                g.initial_delay = Some((new_delay, new_remaining));
                self.schedule(
                    GroupTimerKey::Join {
                        group_id: group_id.to_string(),
                    },
                    new_delay as i64,
                );
                Vec::new()
            }
            _ => self.complete_join_phase(group_id),
        }
    }

    /// `completeClassicGroupJoin`: drop dynamic members that did not rejoin, start the next
    /// generation and answer every parked join (the leader gets the member list).
    pub(crate) fn complete_join_phase(&mut self, group_id: &str) -> Records {
        self.cancel(&GroupTimerKey::Join {
            group_id: group_id.to_string(),
        });
        let now = self.now;
        let not_rejoined: Vec<String> = {
            let g = self.groups.get_mut(group_id).expect("group exists");
            g.initial_delay = None;
            g.new_member_added = false;
            g.members()
                .filter(|m| !m.is_awaiting_join() && !m.is_static())
                .map(|m| m.member_id.clone())
                .collect()
        };
        for m in &not_rejoined {
            if let Some(removed) = self.groups.get_mut(group_id).and_then(|g| g.remove(m)) {
                if let Some(s) = removed.awaiting_sync {
                    self.complete_sync(s, SyncGroupResponse::error(Errors::UnknownMemberId));
                }
            }
            self.cancel(&Self::heartbeat_key(group_id, m));
        }
        let g = self.groups.get_mut(group_id).expect("group exists");
        if g.state == GroupState::Dead {
            return Vec::new();
        }
        if !g.maybe_elect_new_joined_leader() && g.num_members() > 0 {
            // Only static members that have not rejoined remain: wait for their sessions.
            let timeout = g.rebalance_timeout_ms() as i64;
            self.schedule(
                GroupTimerKey::Join {
                    group_id: group_id.to_string(),
                },
                timeout,
            );
            return Vec::new();
        }
        g.init_next_generation(now);
        if g.state == GroupState::Empty {
            return vec![Self::group_metadata_record(g, &BTreeMap::new())];
        }
        let members: Vec<(String, i64)> = g
            .members()
            .map(|m| (m.member_id.clone(), m.session_timeout_ms as i64))
            .collect();
        for (member_id, session) in members {
            let g = &self.groups[group_id];
            let resp = self.current_generation_response(g, &member_id, g.is_leader(&member_id));
            self.complete_member_join(group_id, &member_id, resp);
            self.schedule(Self::heartbeat_key(group_id, &member_id), session);
            let g = self.groups.get_mut(group_id).expect("group exists");
            if let Some(m) = g.members.get_mut(&member_id) {
                m.is_new = false;
            }
            g.pending_sync_members.insert(member_id);
        }
        let g = self.groups.get_mut(group_id).expect("group exists");
        g.sync_timer_generation = g.generation_id;
        let timeout = g.rebalance_timeout_ms() as i64;
        self.schedule(
            GroupTimerKey::Sync {
                group_id: group_id.to_string(),
            },
            timeout,
        );
        Vec::new()
    }

    fn remove_sync_expiration(&mut self, group_id: &str) {
        if let Some(g) = self.groups.get_mut(group_id) {
            g.pending_sync_members.clear();
        }
        self.cancel(&GroupTimerKey::Sync {
            group_id: group_id.to_string(),
        });
    }

    pub(crate) fn expire_pending_sync(&mut self, group_id: &str) -> Records {
        let Some(g) = self.groups.get(group_id) else {
            return Vec::new();
        };
        if g.sync_timer_generation != g.generation_id {
            return Vec::new();
        }
        if !matches!(
            g.state,
            GroupState::CompletingRebalance | GroupState::Stable
        ) || g.pending_sync_members.is_empty()
        {
            return Vec::new();
        }
        let missing: Vec<String> = g.pending_sync_members.iter().cloned().collect();
        for m in &missing {
            if let Some(removed) = self.groups.get_mut(group_id).and_then(|g| g.remove(m)) {
                if let Some(j) = removed.awaiting_join {
                    self.complete_join(j, JoinGroupResponse::error(Errors::UnknownMemberId, ""));
                }
            }
            self.cancel(&Self::heartbeat_key(group_id, m));
        }
        self.prepare_rebalance(group_id)
    }

    fn reset_and_propagate_assignment_with_error(&mut self, group_id: &str, error: Errors) {
        if let Some(g) = self.groups.get_mut(group_id) {
            for m in g.members.values_mut() {
                m.assignment = Bytes::new();
            }
        }
        self.propagate_assignment(group_id, error);
    }

    fn propagate_assignment(&mut self, group_id: &str, error: Errors) {
        let g = &self.groups[group_id];
        let (ptype, pname) = if error.is_none() {
            (g.protocol_type.clone(), g.protocol_name.clone())
        } else {
            (None, None)
        };
        let members: Vec<(String, Bytes, i64)> = g
            .members()
            .map(|m| {
                (
                    m.member_id.clone(),
                    m.assignment.clone(),
                    m.session_timeout_ms as i64,
                )
            })
            .collect();
        for (member_id, assignment, session) in members {
            let resp = SyncGroupResponse {
                error,
                protocol_type: ptype.clone(),
                protocol_name: pname.clone(),
                assignment,
            };
            if self.complete_member_sync(group_id, &member_id, resp) {
                // Sessions that ran out while parked were ignored: start a fresh one.
                self.schedule(Self::heartbeat_key(group_id, &member_id), session);
            }
        }
    }

    // ---------------------------------------------------------------- SyncGroup

    /// SyncGroup. Followers that sync before the leader are parked until its assignment.
    pub fn sync_group(
        &mut self,
        now_ms: i64,
        request: RequestId,
        req: SyncGroupRequest,
    ) -> GroupResult<()> {
        self.begin(now_ms);
        let records = self.sync_group_inner(request, &req);
        self.finish(records, ())
    }

    fn sync_group_inner(&mut self, request: RequestId, req: &SyncGroupRequest) -> Records {
        if req.group_id.is_empty() {
            self.complete_sync(request, SyncGroupResponse::error(Errors::InvalidGroupId));
            return Vec::new();
        }
        if self.consumer_groups.contains_key(&req.group_id) {
            self.classic_sync_to_consumer_group(request, req);
            return Vec::new();
        }
        let Some(g) = self.groups.get(&req.group_id) else {
            self.complete_sync(request, SyncGroupResponse::error(Errors::UnknownMemberId));
            return Vec::new();
        };
        if g.state == GroupState::Empty {
            self.complete_sync(request, SyncGroupResponse::error(Errors::UnknownMemberId));
            return Vec::new();
        }
        if let Err(e) = Self::validate_sync(g, req) {
            self.complete_sync(request, SyncGroupResponse::error(e));
            return Vec::new();
        }
        let group_id = req.group_id.as_str();
        let member_id = req.member_id.as_str();
        match g.state {
            GroupState::PreparingRebalance => {
                self.complete_sync(
                    request,
                    SyncGroupResponse::error(Errors::RebalanceInProgress),
                );
                Vec::new()
            }
            GroupState::CompletingRebalance => {
                let old = self
                    .groups
                    .get_mut(group_id)
                    .and_then(|g| g.members.get_mut(member_id))
                    .and_then(|m| m.awaiting_sync.replace(request));
                if let Some(old) = old.filter(|o| *o != request) {
                    self.complete_sync(old, SyncGroupResponse::error(Errors::RebalanceInProgress));
                }
                self.remove_pending_sync_member(group_id, member_id);
                let g = &self.groups[group_id];
                if !g.is_leader(member_id) {
                    return Vec::new();
                }
                // The leader's assignment: missing members get an empty one.
                let given: BTreeMap<&str, &Bytes> = req
                    .assignments
                    .iter()
                    .map(|(m, a)| (m.as_str(), a))
                    .collect();
                let assignments: BTreeMap<String, Bytes> = g
                    .members()
                    .map(|m| {
                        let a = given
                            .get(m.member_id.as_str())
                            .map(|b| (*b).clone())
                            .unwrap_or_default();
                        (m.member_id.clone(), a)
                    })
                    .collect();
                let now = self.now;
                let g = self.groups.get_mut(group_id).expect("group exists");
                for m in g.members.values_mut() {
                    m.assignment = assignments.get(&m.member_id).cloned().unwrap_or_default();
                }
                g.transition_to(GroupState::Stable, now);
                let record = Self::group_metadata_record(g, &assignments);
                // The answers go out with the record: once it is durable.
                self.propagate_assignment(group_id, Errors::None);
                vec![record]
            }
            GroupState::Stable => {
                self.remove_pending_sync_member(group_id, member_id);
                let g = &self.groups[group_id];
                let m = g.member(member_id).expect("validated");
                let resp = SyncGroupResponse {
                    error: Errors::None,
                    protocol_type: g.protocol_type.clone(),
                    protocol_name: g.protocol_name.clone(),
                    assignment: m.assignment.clone(),
                };
                self.complete_sync(request, resp);
                Vec::new()
            }
            GroupState::Empty | GroupState::Dead => {
                self.complete_sync(
                    request,
                    SyncGroupResponse::error(Errors::CoordinatorNotAvailable),
                );
                Vec::new()
            }
        }
    }

    fn validate_sync(g: &ClassicGroup, req: &SyncGroupRequest) -> Result<(), Errors> {
        if g.state == GroupState::Dead {
            return Err(Errors::CoordinatorNotAvailable);
        }
        g.validate_member(&req.member_id, req.group_instance_id.as_deref())?;
        if req.generation_id != g.generation_id {
            return Err(Errors::IllegalGeneration);
        }
        let inconsistent = |asked: &Option<String>, has: &Option<String>| match (asked, has) {
            (Some(a), Some(h)) => a != h,
            _ => false,
        };
        if inconsistent(&req.protocol_type, &g.protocol_type)
            || inconsistent(&req.protocol_name, &g.protocol_name)
        {
            return Err(Errors::InconsistentGroupProtocol);
        }
        Ok(())
    }

    fn remove_pending_sync_member(&mut self, group_id: &str, member_id: &str) {
        let g = self.groups.get_mut(group_id).expect("group exists");
        g.pending_sync_members.remove(member_id);
        let cancel = match g.state {
            GroupState::Dead | GroupState::Empty | GroupState::PreparingRebalance => true,
            GroupState::CompletingRebalance | GroupState::Stable => {
                g.pending_sync_members.is_empty()
            }
        };
        if cancel {
            self.cancel(&GroupTimerKey::Sync {
                group_id: group_id.to_string(),
            });
        }
    }

    // ---------------------------------------------------------------- Heartbeat

    /// Heartbeat: keeps the session alive and tells members when to rejoin.
    pub fn heartbeat(
        &mut self,
        now_ms: i64,
        req: HeartbeatRequest,
    ) -> GroupResult<HeartbeatResponse> {
        self.begin(now_ms);
        let error = self.heartbeat_inner(&req);
        self.finish(Vec::new(), HeartbeatResponse { error })
    }

    fn heartbeat_inner(&mut self, req: &HeartbeatRequest) -> Errors {
        if req.group_id.is_empty() {
            return Errors::InvalidGroupId;
        }
        if self.consumer_groups.contains_key(&req.group_id) {
            return self.classic_heartbeat_to_consumer_group(req);
        }
        let Some(g) = self.groups.get(&req.group_id) else {
            return Errors::UnknownMemberId;
        };
        if g.state == GroupState::Dead {
            return Errors::CoordinatorNotAvailable;
        }
        if let Err(e) = g.validate_member(&req.member_id, req.group_instance_id.as_deref()) {
            return e;
        }
        if req.generation_id != g.generation_id {
            return Errors::IllegalGeneration;
        }
        let session = g
            .member(&req.member_id)
            .map(|m| m.session_timeout_ms as i64)
            .unwrap_or(0);
        match g.state {
            GroupState::Empty => Errors::UnknownMemberId,
            GroupState::PreparingRebalance => {
                self.schedule(Self::heartbeat_key(&req.group_id, &req.member_id), session);
                Errors::RebalanceInProgress
            }
            GroupState::CompletingRebalance | GroupState::Stable => {
                self.schedule(Self::heartbeat_key(&req.group_id, &req.member_id), session);
                Errors::None
            }
            GroupState::Dead => Errors::CoordinatorNotAvailable,
        }
    }

    pub(crate) fn expire_heartbeat(&mut self, group_id: &str, member_id: &str) -> Records {
        let Some(g) = self.groups.get(group_id) else {
            return Vec::new();
        };
        if g.state == GroupState::Dead {
            return Vec::new();
        }
        if g.is_pending_member(member_id) {
            let g = self.groups.get_mut(group_id).expect("group exists");
            g.remove(member_id);
            if g.state == GroupState::PreparingRebalance && g.has_all_members_joined() {
                return self.complete_join_phase(group_id);
            }
            return Vec::new();
        }
        match g.member(member_id) {
            None => Vec::new(),
            Some(m) if m.has_satisfied_heartbeat() => Vec::new(),
            Some(_) => self.remove_member_and_update_group(group_id, member_id),
        }
    }

    fn remove_member_and_update_group(&mut self, group_id: &str, member_id: &str) -> Records {
        self.complete_member_join(
            group_id,
            member_id,
            JoinGroupResponse::error(Errors::UnknownMemberId, ""),
        );
        self.complete_member_sync(
            group_id,
            member_id,
            SyncGroupResponse::error(Errors::UnknownMemberId),
        );
        let g = self.groups.get_mut(group_id).expect("group exists");
        g.remove(member_id);
        match g.state {
            GroupState::Stable | GroupState::CompletingRebalance => {
                self.maybe_prepare_rebalance_or_complete_join(group_id)
            }
            GroupState::PreparingRebalance if g.has_all_members_joined() => {
                self.complete_join_phase(group_id)
            }
            _ => Vec::new(),
        }
    }

    // ---------------------------------------------------------------- LeaveGroup

    /// LeaveGroup (one member in v0–2, a batch in v3+).
    pub fn leave_group(
        &mut self,
        now_ms: i64,
        req: LeaveGroupRequest,
    ) -> GroupResult<LeaveGroupResponse> {
        self.begin(now_ms);
        let (records, response) = self.leave_group_inner(&req);
        self.finish(records, response)
    }

    fn leave_group_inner(&mut self, req: &LeaveGroupRequest) -> (Records, LeaveGroupResponse) {
        let top = |error| LeaveGroupResponse {
            error,
            members: Vec::new(),
        };
        if req.group_id.is_empty() {
            return (Vec::new(), top(Errors::InvalidGroupId));
        }
        let group_id = req.group_id.as_str();
        if self.consumer_groups.contains_key(group_id) {
            let mut records = Vec::new();
            let response = self.classic_leave_to_consumer_group(req, &mut records);
            return (records, response);
        }
        let Some(g) = self.groups.get(group_id) else {
            return (Vec::new(), top(Errors::UnknownMemberId));
        };
        if g.state == GroupState::Dead {
            return (Vec::new(), top(Errors::CoordinatorNotAvailable));
        }
        let mut members = Vec::with_capacity(req.members.len());
        let mut any_left = false;
        for leaving in &req.members {
            let g = &self.groups[group_id];
            let error = if leaving.member_id.is_empty() {
                // Admin removal of a static member by instance id.
                match leaving
                    .group_instance_id
                    .as_deref()
                    .and_then(|i| g.static_member_id(i))
                {
                    Some(id) => {
                        let id = id.to_string();
                        self.remove_current_member(group_id, &id);
                        Errors::None
                    }
                    None => Errors::UnknownMemberId,
                }
            } else if g.is_pending_member(&leaving.member_id) {
                let g = self.groups.get_mut(group_id).expect("group exists");
                g.remove(&leaving.member_id);
                self.cancel(&Self::heartbeat_key(group_id, &leaving.member_id));
                Errors::None
            } else {
                match g.validate_member(&leaving.member_id, leaving.group_instance_id.as_deref()) {
                    Ok(()) => {
                        self.remove_current_member(group_id, &leaving.member_id);
                        Errors::None
                    }
                    Err(e) => e,
                }
            };
            any_left |= error.is_none();
            members.push(LeaveGroupMemberResponse {
                member_id: leaving.member_id.clone(),
                group_instance_id: leaving.group_instance_id.clone(),
                error,
            });
        }
        let records = if any_left {
            match self.groups[group_id].state {
                GroupState::Stable | GroupState::CompletingRebalance => {
                    self.maybe_prepare_rebalance_or_complete_join(group_id)
                }
                GroupState::PreparingRebalance => self.maybe_complete_join_phase(group_id),
                _ => Vec::new(),
            }
        } else {
            Vec::new()
        };
        (
            records,
            LeaveGroupResponse {
                error: Errors::None,
                members,
            },
        )
    }

    fn remove_current_member(&mut self, group_id: &str, member_id: &str) {
        self.cancel(&Self::heartbeat_key(group_id, member_id));
        self.complete_member_join(
            group_id,
            member_id,
            JoinGroupResponse::error(Errors::UnknownMemberId, ""),
        );
        self.complete_member_sync(
            group_id,
            member_id,
            SyncGroupResponse::error(Errors::UnknownMemberId),
        );
        if let Some(g) = self.groups.get_mut(group_id) {
            g.remove(member_id);
        }
    }
}
