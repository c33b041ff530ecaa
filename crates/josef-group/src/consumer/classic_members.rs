//! Classic-protocol members of a consumer group (Kafka's `classicGroupJoinToConsumerGroup`,
//! `classicGroupSyncToConsumerGroup`, `classicGroupHeartbeatToConsumerGroup` and
//! `classicGroupLeaveToConsumerGroup`).
//!
//! Such a member is a consumer group member like any other: the coordinator computes its target
//! and reconciles it on each JoinGroup, with the partitions its embedded subscription says it
//! owns. Its generation is its member epoch. The JoinGroup answer makes it a follower (no member
//! list), its SyncGroup returns its current assignment, and its Heartbeat answers
//! REBALANCE_IN_PROGRESS whenever it has something to catch up with, which makes the client
//! rejoin.

use super::handlers::Failure;
use super::member::ConsumerMember;
use super::migration::{protocol_version, to_assignment, to_protocol_assignment};
use super::types::MemberState;
use crate::api::{
    HeartbeatRequest, JoinGroupRequest, JoinGroupResponse, LeaveGroupMemberResponse,
    LeaveGroupRequest, LeaveGroupResponse, RequestContext, RequestId, SyncGroupRequest,
    SyncGroupResponse,
};
use crate::consumer_protocol::{Subscription, CONSUMER_PROTOCOL_TYPE};
use crate::coordinator::GroupCoordinator;
use crate::error::Errors;
use crate::ids::MemberIdGenerator;
use crate::record::{ClassicMemberMetadata, GroupRecord};
use crate::timer::{CoordinatorTimer, GroupTimerKey};

/// JoinGroup v4+ requires a member id (KIP-394).
const FIRST_VERSION_REQUIRING_MEMBER_ID: i16 = 4;

impl<T: CoordinatorTimer<GroupTimerKey>, G: MemberIdGenerator> GroupCoordinator<T, G> {
    /// `validateConsumerGroupMember` plus the classic-protocol check: the member a classic
    /// request names (by instance id for static members).
    fn classic_member_of(
        &self,
        group_id: &str,
        member_id: &str,
        instance_id: Option<&str>,
    ) -> Result<ConsumerMember, Errors> {
        let g = self
            .consumer_groups
            .get(group_id)
            .ok_or(Errors::UnknownMemberId)?;
        let m = match instance_id {
            Some(i) => {
                let m = g.static_member(i).ok_or(Errors::UnknownMemberId)?;
                if m.member_id != member_id {
                    return Err(Errors::FencedInstanceId);
                }
                m
            }
            None => g.member(member_id).ok_or(Errors::UnknownMemberId)?,
        };
        if !m.uses_classic_protocol() {
            return Err(Errors::UnknownMemberId);
        }
        Ok(m.clone())
    }

    /// True if partitions of the member's target are still held by other members (it is waiting
    /// for them; a rejoin would not get them sooner).
    fn waiting_on_unreleased(&self, group_id: &str, m: &ConsumerMember) -> bool {
        let g = &self.consumer_groups[group_id];
        g.target_of(&m.member_id).iter().any(|(t, ps)| {
            ps.iter().any(|p| {
                !super::types::contains(&m.assigned, t, *p)
                    && g.partition_owner(t, *p)
                        .is_some_and(|(_, o)| o != m.member_id)
            })
        })
    }

    /// The member must rejoin: the group moved on, it must revoke, or what it waited for is
    /// free.
    fn must_rejoin(&self, group_id: &str, m: &ConsumerMember) -> bool {
        m.member_epoch < self.consumer_groups[group_id].group_epoch
            || m.state == MemberState::UnrevokedPartitions
            || (m.state == MemberState::UnreleasedPartitions
                && !self.waiting_on_unreleased(group_id, m))
    }

    /// JoinGroup to a non-empty consumer group.
    pub(crate) fn classic_join_to_consumer_group(
        &mut self,
        request: RequestId,
        ctx: &RequestContext,
        req: &JoinGroupRequest,
        records: &mut Vec<GroupRecord>,
    ) {
        let response = match self.classic_join_inner(ctx, req, records) {
            Ok(r) => r,
            Err((e, _)) => JoinGroupResponse::error(e, &req.member_id),
        };
        self.complete_join(request, response);
    }

    fn classic_join_inner(
        &mut self,
        ctx: &RequestContext,
        req: &JoinGroupRequest,
        records: &mut Vec<GroupRecord>,
    ) -> Result<JoinGroupResponse, Failure> {
        let group_id = req.group_id.as_str();
        if req.session_timeout_ms < self.config.min_session_timeout_ms
            || req.session_timeout_ms > self.config.max_session_timeout_ms
        {
            return Err((Errors::InvalidSessionTimeout, None));
        }
        let unknown = req.member_id.is_empty();
        let member_id = if unknown {
            self.ids.next_uuid()
        } else {
            req.member_id.clone()
        };
        let g = &self.consumer_groups[group_id];
        if g.member(&member_id).is_none() && g.members.len() >= self.config.consumer_max_size {
            return Err((Errors::GroupMaxSizeReached, None));
        }
        // Kafka's `supportsClassicProtocols`: a protocol every classic member supports.
        let classic: Vec<&ClassicMemberMetadata> = g
            .members
            .values()
            .filter_map(|m| m.classic.as_ref())
            .collect();
        let supported = req.protocol_type == CONSUMER_PROTOCOL_TYPE
            && !req.protocols.is_empty()
            && (classic.is_empty()
                || req.protocols.iter().any(|p| {
                    classic
                        .iter()
                        .all(|c| c.supported_protocols.iter().any(|s| s.name == p.name))
                }));
        if !supported {
            return Err((Errors::InconsistentGroupProtocol, None));
        }
        if unknown
            && req.group_instance_id.is_none()
            && ctx.api_version >= FIRST_VERSION_REQUIRING_MEMBER_ID
        {
            return Ok(JoinGroupResponse::error(
                Errors::MemberIdRequired,
                &member_id,
            ));
        }
        let (_, sub) = Subscription::decode(&req.protocols[0].metadata)
            .map_err(|_| (Errors::InconsistentGroupProtocol, None))?;
        let (member, old, replaced) = match req.group_instance_id.as_deref() {
            None => {
                let old = g.member(&member_id).cloned();
                if old.as_ref().is_some_and(|m| !m.uses_classic_protocol()) {
                    return Err((Errors::UnknownMemberId, None));
                }
                let m = old
                    .clone()
                    .unwrap_or_else(|| ConsumerMember::new(&member_id));
                (m, old, None)
            }
            Some(instance) => match g.static_member(instance).cloned() {
                None if unknown => (ConsumerMember::new(&member_id), None, None),
                None => return Err((Errors::UnknownMemberId, None)),
                Some(holder) if unknown => {
                    // The new instance takes over the old one's partitions.
                    let mut m = holder.clone();
                    m.member_id = member_id.clone();
                    m.member_epoch = 0;
                    m.previous_member_epoch = 0;
                    (m, None, Some(holder))
                }
                Some(holder) => {
                    if holder.member_id != member_id {
                        return Err((Errors::FencedInstanceId, None));
                    }
                    (holder.clone(), Some(holder), None)
                }
            },
        };
        // Nothing can fail from here on.
        let mut updated = member.clone();
        if let Some(i) = &req.group_instance_id {
            updated.instance_id = Some(i.clone());
        }
        if let Some(r) = &sub.rack_id {
            updated.rack_id = Some(r.clone());
        }
        if req.rebalance_timeout_ms != -1 {
            updated.rebalance_timeout_ms = req.rebalance_timeout_ms;
        }
        updated.server_assignor = None;
        let mut topics = sub.topics.clone();
        topics.sort();
        topics.dedup();
        updated.subscribed_topic_names = topics;
        updated.subscribed_topic_regex = None;
        updated.client_id = ctx.client_id.clone();
        updated.client_host = ctx.client_host.clone();
        updated.classic = Some(ClassicMemberMetadata {
            session_timeout_ms: req.session_timeout_ms,
            supported_protocols: req.protocols.clone(),
        });
        let current =
            self.upsert_member(group_id, &member, updated, old, replaced.as_ref(), records)?;
        let owned = to_assignment(sub.owned_partitions.iter(), &self.topic_image);
        let reconciled = self.maybe_reconcile(group_id, &current, Some(&owned), records)?;
        if let Some(holder) = &replaced {
            if self.maybe_downgrade_after_replacement(group_id, holder, records) {
                // The member now belongs to a classic group: it syncs at that group's
                // generation and protocol, and the classic timers watch it.
                let g = &self.groups[group_id];
                return Ok(JoinGroupResponse {
                    error: Errors::None,
                    generation_id: g.generation_id(),
                    protocol_type: Some(CONSUMER_PROTOCOL_TYPE.to_string()),
                    protocol_name: g.protocol_name().map(str::to_string),
                    leader: String::new(),
                    skip_assignment: false,
                    member_id,
                    members: Vec::new(),
                });
            }
        }
        self.cancel(&Self::classic_join_key(group_id, &member_id));
        self.schedule(
            Self::session_key(group_id, &member_id),
            req.session_timeout_ms as i64,
        );
        self.schedule(
            Self::classic_sync_key(group_id, &member_id),
            req.rebalance_timeout_ms.max(0) as i64,
        );
        Ok(JoinGroupResponse {
            error: Errors::None,
            generation_id: reconciled.member_epoch,
            protocol_type: Some(CONSUMER_PROTOCOL_TYPE.to_string()),
            protocol_name: Some(req.protocols[0].name.clone()),
            leader: String::new(),
            skip_assignment: false,
            member_id,
            members: Vec::new(),
        })
    }

    /// SyncGroup to a consumer group: the member's current assignment (REBALANCE_IN_PROGRESS if
    /// the group moved on since its join).
    pub(crate) fn classic_sync_to_consumer_group(
        &mut self,
        request: RequestId,
        req: &SyncGroupRequest,
    ) {
        let response = self
            .classic_sync_inner(req)
            .unwrap_or_else(SyncGroupResponse::error);
        self.complete_sync(request, response);
    }

    fn classic_sync_inner(&mut self, req: &SyncGroupRequest) -> Result<SyncGroupResponse, Errors> {
        let group_id = req.group_id.as_str();
        let m =
            self.classic_member_of(group_id, &req.member_id, req.group_instance_id.as_deref())?;
        if req.generation_id != m.member_epoch {
            return Err(Errors::IllegalGeneration);
        }
        let meta = m.classic.as_ref().ok_or(Errors::UnknownMemberId)?;
        let first = meta.supported_protocols.first();
        if req
            .protocol_type
            .as_deref()
            .is_some_and(|t| t != CONSUMER_PROTOCOL_TYPE)
            || req
                .protocol_name
                .as_deref()
                .is_some_and(|n| first.map(|p| p.name.as_str()) != Some(n))
        {
            return Err(Errors::InconsistentGroupProtocol);
        }
        // A newer group epoch means a rejoin, unless the member is revoking: then this answer
        // (its assignment without what it must give up) is how it learns what to revoke.
        if self.consumer_groups[group_id].group_epoch > m.member_epoch
            && m.state != MemberState::UnrevokedPartitions
        {
            let key = Self::classic_join_key(group_id, &m.member_id);
            if self.deadline(&key).is_none() {
                self.schedule(key, m.rebalance_timeout_ms.max(0) as i64);
            }
            return Err(Errors::RebalanceInProgress);
        }
        self.cancel(&Self::classic_sync_key(group_id, &m.member_id));
        self.schedule(
            Self::session_key(group_id, &m.member_id),
            meta.session_timeout_ms as i64,
        );
        let version = first.map_or(0, |p| protocol_version(&p.metadata));
        let g = &self.consumer_groups[group_id];
        let assignment = to_protocol_assignment(&m.assigned, &self.topic_image, g).encode(version);
        Ok(SyncGroupResponse {
            error: Errors::None,
            protocol_type: Some(CONSUMER_PROTOCOL_TYPE.to_string()),
            protocol_name: first.map(|p| p.name.clone()),
            assignment,
        })
    }

    /// Heartbeat to a consumer group: REBALANCE_IN_PROGRESS when the member must rejoin (it then
    /// has its rebalance timeout to do so).
    pub(crate) fn classic_heartbeat_to_consumer_group(&mut self, req: &HeartbeatRequest) -> Errors {
        let group_id = req.group_id.as_str();
        let m = match self.classic_member_of(
            group_id,
            &req.member_id,
            req.group_instance_id.as_deref(),
        ) {
            Ok(m) => m,
            Err(e) => return e,
        };
        if req.generation_id != m.member_epoch {
            return Errors::IllegalGeneration;
        }
        let session = m.session_timeout_ms(self.config.consumer_session_timeout_ms);
        self.schedule(Self::session_key(group_id, &m.member_id), session as i64);
        if self.must_rejoin(group_id, &m) {
            let key = Self::classic_join_key(group_id, &m.member_id);
            if self.deadline(&key).is_none() {
                self.schedule(key, m.rebalance_timeout_ms.max(0) as i64);
            }
            return Errors::RebalanceInProgress;
        }
        Errors::None
    }

    /// LeaveGroup from a consumer group: the members are fenced (and the group may become a
    /// classic group again).
    pub(crate) fn classic_leave_to_consumer_group(
        &mut self,
        req: &LeaveGroupRequest,
        records: &mut Vec<GroupRecord>,
    ) -> LeaveGroupResponse {
        let group_id = req.group_id.as_str();
        let mut fenced = Vec::new();
        let mut members = Vec::with_capacity(req.members.len());
        for leaving in &req.members {
            let found = if leaving.member_id.is_empty() {
                // Admin removal of a static member by instance id.
                leaving
                    .group_instance_id
                    .as_deref()
                    .and_then(|i| self.consumer_groups[group_id].static_member(i))
                    .map(|m| m.member_id.clone())
                    .ok_or(Errors::UnknownMemberId)
            } else {
                self.classic_member_of(
                    group_id,
                    &leaving.member_id,
                    leaving.group_instance_id.as_deref(),
                )
                .map(|m| m.member_id)
            };
            let error = match found {
                Ok(id) => {
                    fenced.push(id);
                    Errors::None
                }
                Err(e) => e,
            };
            members.push(LeaveGroupMemberResponse {
                member_id: leaving.member_id.clone(),
                group_instance_id: leaving.group_instance_id.clone(),
                error,
            });
        }
        self.fence_members(group_id, &fenced, records);
        LeaveGroupResponse {
            error: Errors::None,
            members,
        }
    }
}
