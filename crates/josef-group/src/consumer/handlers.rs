//! ConsumerGroupHeartbeat, ConsumerGroupDescribe, fencing, timers and topic changes of
//! consumer groups (Kafka's `GroupMetadataManager.consumerGroupHeartbeat` and friends).
//!
//! Every change is a [`ConsumerRecord`] applied the moment it is produced (and returned for
//! the broker to append), so the state a handler leaves is exactly what replaying its records
//! rebuilds. All checks that can fail run before the first record.

use std::collections::BTreeMap;

use super::api::{
    ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse, DescribedConsumerGroup,
    DescribedConsumerMember, DescribedTopicPartitions,
};
use super::group::ConsumerGroup;
use super::member::{ConsumerMember, LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH};
use super::reconcile::reconcile;
use super::types::{is_subset, Assignment, MemberState, TopicImage};
use crate::api::RequestContext;
use crate::assignor::server::{server_assignor, GroupSpec, MemberSpec, TopicSpec};
use crate::classic::GroupState;
use crate::coordinator::{GroupCoordinator, GroupResult};
use crate::error::Errors;
use crate::ids::MemberIdGenerator;
use crate::record::{ConsumerRecord, GroupRecord};
use crate::timer::{CoordinatorTimer, GroupTimerKey};

/// From v1 the client generates its member id (KIP-1082).
const CONSUMER_GENERATED_MEMBER_ID_VERSION: i16 = 1;

pub(crate) type Failure = (Errors, Option<String>);

fn invalid(msg: &str) -> Failure {
    (Errors::InvalidRequest, Some(msg.to_string()))
}

fn blank(s: &str) -> bool {
    s.trim().is_empty()
}

impl<T: CoordinatorTimer<GroupTimerKey>, G: MemberIdGenerator> GroupCoordinator<T, G> {
    /// The consumer groups.
    pub fn consumer_groups(&self) -> impl Iterator<Item = &ConsumerGroup> {
        self.consumer_groups.values()
    }

    /// A consumer group.
    pub fn consumer_group(&self, group_id: &str) -> Option<&ConsumerGroup> {
        self.consumer_groups.get(group_id)
    }

    /// The topic image subscriptions are resolved against.
    pub fn topic_image(&self) -> &TopicImage {
        &self.topic_image
    }

    /// Applies a consumer record to its group (creating the group on its first record).
    pub(crate) fn apply_consumer(&mut self, group_id: &str, record: &ConsumerRecord) {
        if let ConsumerRecord::GroupMetadata { epoch: None } = record {
            self.consumer_groups.remove(group_id);
            let keys: Vec<GroupTimerKey> = self
                .deadlines
                .keys()
                .filter(|k| match k {
                    GroupTimerKey::ConsumerSession { group_id: g, .. }
                    | GroupTimerKey::ConsumerRevocation { group_id: g, .. }
                    | GroupTimerKey::ClassicMemberJoin { group_id: g, .. }
                    | GroupTimerKey::ClassicMemberSync { group_id: g, .. } => g == group_id,
                    _ => false,
                })
                .cloned()
                .collect();
            for k in keys {
                self.cancel(&k);
            }
            return;
        }
        if record.is_tombstone() && !self.consumer_groups.contains_key(group_id) {
            return;
        }
        self.consumer_groups
            .entry(group_id.to_string())
            .or_insert_with(|| ConsumerGroup::new(group_id))
            .apply(record);
    }

    pub(crate) fn emit(
        &mut self,
        records: &mut Vec<GroupRecord>,
        group_id: &str,
        record: ConsumerRecord,
    ) {
        self.apply_consumer(group_id, &record);
        records.push(GroupRecord::Consumer {
            group: group_id.to_string(),
            record,
        });
    }

    fn heartbeat_interval(&self) -> i32 {
        self.config.consumer_heartbeat_interval_ms
    }

    pub(crate) fn classic_join_key(group_id: &str, member_id: &str) -> GroupTimerKey {
        GroupTimerKey::ClassicMemberJoin {
            group_id: group_id.to_string(),
            member_id: member_id.to_string(),
        }
    }

    pub(crate) fn classic_sync_key(group_id: &str, member_id: &str) -> GroupTimerKey {
        GroupTimerKey::ClassicMemberSync {
            group_id: group_id.to_string(),
            member_id: member_id.to_string(),
        }
    }

    pub(crate) fn session_key(group_id: &str, member_id: &str) -> GroupTimerKey {
        GroupTimerKey::ConsumerSession {
            group_id: group_id.to_string(),
            member_id: member_id.to_string(),
        }
    }

    fn revocation_key(group_id: &str, member_id: &str) -> GroupTimerKey {
        GroupTimerKey::ConsumerRevocation {
            group_id: group_id.to_string(),
            member_id: member_id.to_string(),
        }
    }

    fn validate_heartbeat(
        &self,
        version: i16,
        req: &ConsumerGroupHeartbeatRequest,
    ) -> Result<(), Failure> {
        let epoch = req.member_epoch;
        if blank(&req.group_id) {
            return Err(invalid("GroupId can't be empty."));
        }
        if (version >= CONSUMER_GENERATED_MEMBER_ID_VERSION
            || epoch > 0
            || epoch == LEAVE_GROUP_MEMBER_EPOCH)
            && blank(&req.member_id)
        {
            return Err(invalid("MemberId can't be empty."));
        }
        if req.instance_id.as_deref().is_some_and(blank) {
            return Err(invalid("InstanceId can't be empty."));
        }
        if req.rack_id.as_deref().is_some_and(blank) {
            return Err(invalid("RackId can't be empty."));
        }
        if epoch == 0 {
            if req.rebalance_timeout_ms == -1 {
                return Err(invalid(
                    "RebalanceTimeoutMs must be provided in first request.",
                ));
            }
            if req
                .topic_partitions
                .as_ref()
                .map_or(true, |t| !t.is_empty())
            {
                return Err(invalid("TopicPartitions must be empty when (re-)joining."));
            }
            if req.subscribed_topic_names.is_none() && req.subscribed_topic_regex.is_none() {
                return Err(invalid(
                    "SubscribedTopicNames or SubscribedTopicRegex must be set in first request.",
                ));
            }
        } else if epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH {
            if req.instance_id.is_none() {
                return Err(invalid("InstanceId can't be null."));
            }
        } else if epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH {
            return Err(invalid(&format!("MemberEpoch is invalid: {epoch}")));
        }
        if let Some(a) = &req.server_assignor {
            if !self.config.consumer_assignors.iter().any(|c| c == a) {
                return Err((
                    Errors::UnsupportedAssignor,
                    Some(format!("ServerAssignor {a} is not supported.")),
                ));
            }
        }
        Ok(())
    }

    /// ConsumerGroupHeartbeat (68): join (epoch 0), heartbeat, or leave (-1; -2 for a static
    /// member leaving temporarily).
    pub fn consumer_group_heartbeat(
        &mut self,
        now_ms: i64,
        ctx: &RequestContext,
        req: ConsumerGroupHeartbeatRequest,
    ) -> GroupResult<ConsumerGroupHeartbeatResponse> {
        self.begin(now_ms);
        let mut records = Vec::new();
        let response = match self.validate_heartbeat(ctx.api_version, &req) {
            Err((e, m)) => ConsumerGroupHeartbeatResponse::error(e, m),
            Ok(()) if req.member_epoch < 0 => self
                .consumer_leave(&req, &mut records)
                .unwrap_or_else(|(e, m)| ConsumerGroupHeartbeatResponse::error(e, m)),
            Ok(()) => self
                .consumer_heartbeat(ctx, req, &mut records)
                .unwrap_or_else(|(e, m)| ConsumerGroupHeartbeatResponse::error(e, m)),
        };
        self.finish(records, response)
    }

    fn consumer_leave(
        &mut self,
        req: &ConsumerGroupHeartbeatRequest,
        records: &mut Vec<GroupRecord>,
    ) -> Result<ConsumerGroupHeartbeatResponse, Failure> {
        let group_id = req.group_id.as_str();
        let Some(group) = self.consumer_groups.get(group_id) else {
            return Err((Errors::GroupIdNotFound, None));
        };
        let member = match &req.instance_id {
            Some(instance) => {
                let m = group
                    .static_member(instance)
                    .ok_or((Errors::UnknownMemberId, None))?;
                if m.member_id != req.member_id {
                    return Err((Errors::FencedInstanceId, None));
                }
                m.clone()
            }
            None => group
                .member(&req.member_id)
                .cloned()
                .ok_or((Errors::UnknownMemberId, None))?,
        };
        if req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH {
            // Kept, partitions included, until it comes back or its session expires.
            let mut left = member.clone();
            left.member_epoch = LEAVE_GROUP_STATIC_MEMBER_EPOCH;
            left.pending_revocation.clear();
            self.emit(
                records,
                group_id,
                ConsumerGroup::current_assignment_record(&left),
            );
            self.cancel(&Self::revocation_key(group_id, &member.member_id));
        } else {
            self.fence_member(group_id, &member.member_id, records);
        }
        Ok(ConsumerGroupHeartbeatResponse {
            error: Errors::None,
            error_message: None,
            member_id: Some(member.member_id),
            member_epoch: req.member_epoch,
            heartbeat_interval_ms: 0,
            assignment: None,
        })
    }

    /// Removes a member (leave, session expiry, revocation timeout): tombstones of its current
    /// assignment, target and subscription, then a new group epoch; or, when only classic
    /// members would remain, the group becomes a classic group.
    pub(crate) fn fence_member(
        &mut self,
        group_id: &str,
        member_id: &str,
        records: &mut Vec<GroupRecord>,
    ) {
        self.fence_members(group_id, &[member_id.to_string()], records);
    }

    /// [`Self::fence_member`] for several members at once (one new group epoch).
    pub(crate) fn fence_members(
        &mut self,
        group_id: &str,
        member_ids: &[String],
        records: &mut Vec<GroupRecord>,
    ) {
        let Some(group) = self.consumer_groups.get(group_id) else {
            return;
        };
        let fenced: Vec<String> = member_ids
            .iter()
            .filter(|m| group.member(m).is_some())
            .cloned()
            .collect();
        if fenced.is_empty() {
            return;
        }
        if self.can_downgrade(group_id, &fenced) {
            self.convert_to_classic_group(group_id, &fenced, records);
            return;
        }
        for member_id in &fenced {
            let had_target = self.consumer_groups[group_id]
                .target
                .contains_key(member_id);
            self.emit(
                records,
                group_id,
                ConsumerRecord::CurrentMemberAssignment {
                    member_id: member_id.to_string(),
                    value: None,
                },
            );
            if had_target {
                self.emit(
                    records,
                    group_id,
                    ConsumerRecord::TargetAssignmentMember {
                        member_id: member_id.to_string(),
                        value: None,
                    },
                );
            }
            self.emit(
                records,
                group_id,
                ConsumerRecord::MemberMetadata {
                    member_id: member_id.to_string(),
                    value: None,
                },
            );
            self.cancel_member_timers(group_id, member_id);
        }
        let epoch = self.consumer_groups[group_id].group_epoch;
        self.maybe_update_subscription_metadata(group_id, records);
        self.emit(
            records,
            group_id,
            ConsumerRecord::GroupMetadata {
                epoch: Some(epoch + 1),
            },
        );
    }

    /// Cancels every timer of a consumer group member.
    pub(crate) fn cancel_member_timers(&mut self, group_id: &str, member_id: &str) {
        self.cancel(&Self::session_key(group_id, member_id));
        self.cancel(&Self::revocation_key(group_id, member_id));
        self.cancel(&Self::classic_join_key(group_id, member_id));
        self.cancel(&Self::classic_sync_key(group_id, member_id));
        self.revocation_epochs
            .remove(&(group_id.to_string(), member_id.to_string()));
    }

    /// Writes record 4 if the subscribed topics' metadata changed; true if it did.
    pub(crate) fn maybe_update_subscription_metadata(
        &mut self,
        group_id: &str,
        records: &mut Vec<GroupRecord>,
    ) -> bool {
        let Some(group) = self.consumer_groups.get(group_id) else {
            return false;
        };
        let computed =
            ConsumerGroup::compute_subscription_metadata(group.members.values(), &self.topic_image);
        if computed == group.subscription_metadata {
            return false;
        }
        self.emit(
            records,
            group_id,
            ConsumerRecord::PartitionMetadata {
                topics: Some(computed.into_values().collect()),
            },
        );
        true
    }

    /// Finds (or makes) the group and the member before anything is written.
    fn lookup_member(
        &self,
        req: &ConsumerGroupHeartbeatRequest,
        upgraded: Option<&ConsumerGroup>,
    ) -> Result<(ConsumerMember, Option<ConsumerMember>), Failure> {
        let group_id = req.group_id.as_str();
        let joining = req.member_epoch == 0;
        let fresh = ConsumerGroup::new(group_id);
        let group = match self.consumer_groups.get(group_id).or(upgraded) {
            Some(g) => g,
            None => {
                if let Some(classic) = self.groups.get(group_id) {
                    if !(joining && classic.state == GroupState::Empty) {
                        return Err((
                            Errors::GroupIdNotFound,
                            Some(format!("Group {group_id} is not a consumer group.")),
                        ));
                    }
                }
                if !joining {
                    return Err((
                        Errors::GroupIdNotFound,
                        Some(format!("Group {group_id} not found.")),
                    ));
                }
                &fresh
            }
        };
        let known = !req.member_id.is_empty() && group.member(&req.member_id).is_some();
        if !known && group.members.len() >= self.config.consumer_max_size {
            return Err((
                Errors::GroupMaxSizeReached,
                Some(format!(
                    "The consumer group has reached its maximum capacity of {} members.",
                    self.config.consumer_max_size
                )),
            ));
        }
        let check_epoch = |m: &ConsumerMember| -> Result<(), Failure> {
            let e = req.member_epoch;
            let fenced = (Errors::FencedMemberEpoch, None);
            if e > m.member_epoch {
                return Err(fenced);
            }
            if e < m.member_epoch {
                let owned_subset = req
                    .topic_partitions
                    .as_ref()
                    .is_some_and(|o| is_subset(o, &m.assigned));
                if e != m.previous_member_epoch || !owned_subset {
                    return Err(fenced);
                }
            }
            Ok(())
        };
        let unknown_state = |m: &ConsumerMember| -> Result<(), Failure> {
            let owns = req
                .topic_partitions
                .as_ref()
                .map_or(true, |o| o.values().any(|p| !p.is_empty()));
            if m.state == MemberState::Unknown && owns {
                return Err((Errors::FencedMemberEpoch, None));
            }
            Ok(())
        };
        let existing = match &req.instance_id {
            None => match group.member(&req.member_id) {
                // A member that rejoins (epoch 0, owning nothing) starts over at epoch 0.
                Some(m) if joining => Some(reset(m)),
                Some(m) => {
                    check_epoch(m)?;
                    unknown_state(m)?;
                    Some(m.clone())
                }
                None if joining => None,
                None => return Err((Errors::UnknownMemberId, None)),
            },
            Some(instance) => match group.static_member(instance) {
                None if joining => None,
                None => return Err((Errors::UnknownMemberId, None)),
                Some(holder) if joining => {
                    if holder.member_id == req.member_id {
                        Some(reset(holder))
                    } else if holder.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH {
                        return Err((
                            Errors::UnreleasedInstanceId,
                            Some(format!(
                                "Static member {} with instance id {instance} is not released yet.",
                                holder.member_id
                            )),
                        ));
                    } else {
                        // The replacement comes back with the old member's partitions.
                        return Ok((
                            {
                                let mut m = holder.clone();
                                m.member_id = req.member_id.clone();
                                m.member_epoch = 0;
                                m.previous_member_epoch = 0;
                                m
                            },
                            Some(holder.clone()),
                        ));
                    }
                }
                Some(holder) => {
                    if holder.member_id != req.member_id {
                        return Err((Errors::FencedInstanceId, None));
                    }
                    check_epoch(holder)?;
                    unknown_state(holder)?;
                    Some(holder.clone())
                }
            },
        };
        let member = existing.unwrap_or_else(|| ConsumerMember::new(&req.member_id));
        Ok((member, None))
    }

    fn consumer_heartbeat(
        &mut self,
        ctx: &RequestContext,
        mut req: ConsumerGroupHeartbeatRequest,
        records: &mut Vec<GroupRecord>,
    ) -> Result<ConsumerGroupHeartbeatResponse, Failure> {
        if req.member_id.is_empty() {
            req.member_id = self.ids.next_uuid();
        }
        let group_id = req.group_id.clone();
        // A consumer-protocol member joining a non-empty classic group upgrades it (when the
        // migration policy allows): the converted group is only written once nothing can fail.
        let upgraded = match self.groups.get(&group_id) {
            Some(classic)
                if req.member_epoch == 0
                    && classic.state != GroupState::Empty
                    && !self.consumer_groups.contains_key(&group_id) =>
            {
                Some(self.upgraded_group(classic)?)
            }
            _ => None,
        };
        let (member, replaced) = self.lookup_member(&req, upgraded.as_ref().map(|(g, _)| g))?;
        let old = self
            .consumer_groups
            .get(&group_id)
            .or(upgraded.as_ref().map(|(g, _)| g))
            .and_then(|g| g.member(&req.member_id))
            .cloned();
        if let Some(re) = req
            .subscribed_topic_regex
            .as_deref()
            .filter(|r| !r.is_empty())
        {
            if member.subscribed_topic_regex.as_deref() != Some(re) {
                super::compile_regex(re).map_err(|e| {
                    (
                        Errors::InvalidRegularExpression,
                        Some(format!(
                            "SubscribedTopicRegex `{re}` is not a valid regular expression: {e}"
                        )),
                    )
                })?;
            }
        }
        // Nothing can fail from here on.
        if let Some((_, upgrade_records)) = upgraded {
            self.convert_to_consumer_group(&group_id, upgrade_records, records);
        } else if !self.consumer_groups.contains_key(&group_id)
            && self.groups.contains_key(&group_id)
        {
            // An empty classic group (offsets only) becomes a consumer group.
            records.push(GroupRecord::GroupMetadata {
                group: group_id.clone(),
                value: None,
            });
            self.groups.remove(&group_id);
        }
        let mut updated = member.clone();
        if let Some(i) = &req.instance_id {
            updated.instance_id = Some(i.clone());
        }
        if let Some(r) = &req.rack_id {
            updated.rack_id = Some(r.clone());
        }
        if req.rebalance_timeout_ms != -1 {
            updated.rebalance_timeout_ms = req.rebalance_timeout_ms;
        }
        if let Some(a) = &req.server_assignor {
            updated.server_assignor = Some(a.clone());
        }
        if let Some(n) = &req.subscribed_topic_names {
            let mut n = n.clone();
            n.sort();
            n.dedup();
            updated.subscribed_topic_names = n;
        }
        if let Some(re) = &req.subscribed_topic_regex {
            updated.subscribed_topic_regex = Some(re.clone()).filter(|r| !r.is_empty());
        }
        updated.client_id = ctx.client_id.clone();
        updated.client_host = ctx.client_host.clone();
        let is_new = old.is_none() && replaced.is_none();
        let current =
            self.upsert_member(&group_id, &member, updated, old, replaced.as_ref(), records)?;
        let reconciled =
            self.maybe_reconcile(&group_id, &current, req.topic_partitions.as_ref(), records)?;
        let session = self.config.consumer_session_timeout_ms as i64;
        self.schedule(Self::session_key(&group_id, &reconciled.member_id), session);
        let full = req.member_epoch == 0
            || (req.rebalance_timeout_ms != -1
                && req.subscribed_topic_names.is_some()
                && req.topic_partitions.is_some());
        Ok(ConsumerGroupHeartbeatResponse {
            error: Errors::None,
            error_message: None,
            member_id: Some(reconciled.member_id.clone()),
            member_epoch: reconciled.member_epoch,
            heartbeat_interval_ms: self.heartbeat_interval(),
            assignment: (full || reconciled.assigned != current.assigned || is_new)
                .then(|| reconciled.assigned.clone()),
        })
    }

    /// Writes a joining or heartbeating member (record 5 if its subscription changed, record 8
    /// if a rejoin dropped what it owned), bumps the group epoch when the subscriptions changed
    /// and computes the target at the new epoch. `member` is the member as looked up (reset on a
    /// rejoin), `updated` the same with the request's fields. Returns the member as stored.
    pub(crate) fn upsert_member(
        &mut self,
        group_id: &str,
        member: &ConsumerMember,
        updated: ConsumerMember,
        old: Option<ConsumerMember>,
        replaced: Option<&ConsumerMember>,
        records: &mut Vec<GroupRecord>,
    ) -> Result<ConsumerMember, Failure> {
        if let Some(holder) = replaced {
            self.replace_static_member(group_id, holder, member, records);
        }
        let is_new = old.is_none() && replaced.is_none();
        let persisted = self
            .consumer_groups
            .get(group_id)
            .and_then(|g| g.member(&updated.member_id))
            .cloned();
        if persisted
            .as_ref()
            .map_or(true, |p| !p.same_metadata(&updated))
        {
            self.emit(
                records,
                group_id,
                ConsumerGroup::member_metadata_record(&updated),
            );
        }
        if !is_new
            && persisted
                .as_ref()
                .is_some_and(|p| !p.same_assignment(member))
        {
            // A rejoin at epoch 0 drops what the member owned (it reported owning nothing).
            self.emit(
                records,
                group_id,
                ConsumerGroup::current_assignment_record(member),
            );
        }
        let before = old
            .or_else(|| replaced.cloned())
            .unwrap_or_else(|| ConsumerMember::new(&updated.member_id));
        let mut bump = before.subscribed_topic_names != updated.subscribed_topic_names
            || before.subscribed_topic_regex != updated.subscribed_topic_regex;
        if bump || is_new {
            bump |= self.maybe_update_subscription_metadata(group_id, records);
        }
        let group_epoch = self.consumer_groups[group_id].group_epoch;
        if bump || group_epoch == 0 {
            self.emit(
                records,
                group_id,
                ConsumerRecord::GroupMetadata {
                    epoch: Some(group_epoch + 1),
                },
            );
        }
        let g = &self.consumer_groups[group_id];
        if g.group_epoch > g.assignment_epoch {
            if let Err(e) = self.update_target_assignment(group_id, records) {
                return Err((Errors::UnknownServerError, Some(e.to_string())));
            }
        }
        Ok(self.consumer_groups[group_id].members[&updated.member_id].clone())
    }

    /// The static member `holder` (at epoch -2) is replaced by `new` with its target and
    /// partitions.
    pub(crate) fn replace_static_member(
        &mut self,
        group_id: &str,
        holder: &ConsumerMember,
        new: &ConsumerMember,
        records: &mut Vec<GroupRecord>,
    ) {
        let target = self.consumer_groups[group_id].target_of(&holder.member_id);
        let had_target = self.consumer_groups[group_id]
            .target
            .contains_key(&holder.member_id);
        for r in [
            ConsumerRecord::CurrentMemberAssignment {
                member_id: holder.member_id.clone(),
                value: None,
            },
            ConsumerRecord::TargetAssignmentMember {
                member_id: holder.member_id.clone(),
                value: None,
            },
            ConsumerRecord::MemberMetadata {
                member_id: holder.member_id.clone(),
                value: None,
            },
        ] {
            if matches!(r, ConsumerRecord::TargetAssignmentMember { .. }) && !had_target {
                continue;
            }
            self.emit(records, group_id, r);
        }
        self.emit(
            records,
            group_id,
            ConsumerGroup::member_metadata_record(new),
        );
        if had_target {
            self.emit(
                records,
                group_id,
                ConsumerRecord::TargetAssignmentMember {
                    member_id: new.member_id.clone(),
                    value: Some(target),
                },
            );
        }
        self.emit(
            records,
            group_id,
            ConsumerGroup::current_assignment_record(new),
        );
        self.cancel(&Self::session_key(group_id, &holder.member_id));
        self.cancel(&Self::revocation_key(group_id, &holder.member_id));
    }

    /// Computes the target at the group epoch: record 7 per member whose target changed, then
    /// record 6.
    fn update_target_assignment(
        &mut self,
        group_id: &str,
        records: &mut Vec<GroupRecord>,
    ) -> Result<(), crate::error::GroupError> {
        let g = &self.consumer_groups[group_id];
        let by_name: BTreeMap<&str, &super::types::SubscribedTopic> = g
            .subscription_metadata
            .iter()
            .map(|(n, t)| (n.as_str(), t))
            .collect();
        let spec = GroupSpec {
            topics: g
                .subscription_metadata
                .values()
                .map(|t| {
                    (
                        t.id,
                        TopicSpec {
                            partitions: t.partitions,
                            racks: t.racks.clone(),
                        },
                    )
                })
                .collect(),
            members: g
                .members
                .values()
                .map(|m| {
                    let topics = ConsumerGroup::member_topics(m, &self.topic_image)
                        .iter()
                        .filter_map(|n| by_name.get(n.as_str()).map(|t| t.id))
                        .collect();
                    (
                        m.member_id.clone(),
                        MemberSpec {
                            instance_id: m.instance_id.clone(),
                            rack_id: m.rack_id.clone(),
                            topics,
                            current: g.target_of(&m.member_id),
                        },
                    )
                })
                .collect(),
        };
        let name = self.assignor_name(g);
        let assignor =
            server_assignor(&name).ok_or_else(|| crate::error::GroupError::Assignor {
                assignor: "server",
                reason: format!("unknown assignor {name}"),
            })?;
        let target = assignor.assign(&spec)?;
        let epoch = g.group_epoch;
        let changed: Vec<(String, Assignment)> = target
            .into_iter()
            .filter(|(m, a)| g.target.get(m) != Some(a))
            .collect();
        for (member_id, a) in changed {
            self.emit(
                records,
                group_id,
                ConsumerRecord::TargetAssignmentMember {
                    member_id,
                    value: Some(a),
                },
            );
        }
        self.emit(
            records,
            group_id,
            ConsumerRecord::TargetAssignmentMetadata { epoch: Some(epoch) },
        );
        Ok(())
    }

    fn assignor_name(&self, g: &ConsumerGroup) -> String {
        g.preferred_assignor()
            .filter(|a| self.config.consumer_assignors.contains(a))
            .or_else(|| self.config.consumer_assignors.first().cloned())
            .unwrap_or_else(|| "uniform".to_string())
    }

    /// Moves the member towards its target; writes record 8 if it changed and arms or disarms
    /// its revocation timer.
    pub(crate) fn maybe_reconcile(
        &mut self,
        group_id: &str,
        member: &ConsumerMember,
        owned: Option<&Assignment>,
        records: &mut Vec<GroupRecord>,
    ) -> Result<ConsumerMember, Failure> {
        let g = &self.consumer_groups[group_id];
        if member.is_reconciled_to(g.assignment_epoch) {
            return Ok(member.clone());
        }
        let target = g.target_of(&member.member_id);
        let me = member.member_id.clone();
        let held = |t: &josef_protocol::Uuid, p: i32| {
            g.partition_owner(t, p).is_some_and(|(_, m)| m != me)
        };
        let next = reconcile(member, g.assignment_epoch, &target, &held, owned)
            .map_err(|e| (Errors::from(e), None))?;
        if !next.same_assignment(member) {
            self.emit(
                records,
                group_id,
                ConsumerGroup::current_assignment_record(&next),
            );
        }
        let key = (group_id.to_string(), me.clone());
        if next.state == MemberState::UnrevokedPartitions {
            if self.revocation_epochs.get(&key) != Some(&next.member_epoch) {
                self.revocation_epochs.insert(key, next.member_epoch);
                let timeout = next.rebalance_timeout_ms.max(0) as i64;
                self.schedule(Self::revocation_key(group_id, &me), timeout);
            }
        } else if self.revocation_epochs.remove(&key).is_some() {
            self.cancel(&Self::revocation_key(group_id, &me));
        }
        Ok(next)
    }

    /// A consumer timer fired: the session expired, or the member did not revoke in time.
    pub(crate) fn on_consumer_timer(&mut self, key: &GroupTimerKey) -> Vec<GroupRecord> {
        let mut records = Vec::new();
        match key {
            GroupTimerKey::ConsumerSession {
                group_id,
                member_id,
            }
            | GroupTimerKey::ClassicMemberJoin {
                group_id,
                member_id,
            }
            | GroupTimerKey::ClassicMemberSync {
                group_id,
                member_id,
            } => self.fence_member(group_id, member_id, &mut records),
            GroupTimerKey::ConsumerRevocation {
                group_id,
                member_id,
            } => {
                let armed = self
                    .revocation_epochs
                    .remove(&(group_id.clone(), member_id.clone()));
                let still = self
                    .consumer_groups
                    .get(group_id)
                    .and_then(|g| g.member(member_id))
                    .is_some_and(|m| {
                        m.state == MemberState::UnrevokedPartitions && Some(m.member_epoch) == armed
                    });
                if still {
                    self.fence_member(group_id, member_id, &mut records);
                }
            }
            _ => {}
        }
        records
    }

    /// The cluster's topics changed (created, deleted, more partitions): regexes are resolved
    /// again, and every group whose subscribed topics changed gets a new group epoch, so its
    /// next heartbeat computes a new target.
    pub fn on_topics_changed(&mut self, now_ms: i64, image: TopicImage) -> GroupResult<()> {
        self.begin(now_ms);
        self.topic_image_known = true;
        if image == self.topic_image {
            return self.finish(Vec::new(), ());
        }
        let old = std::mem::replace(&mut self.topic_image, image);
        let mut records = Vec::new();
        let ids: Vec<String> = self.consumer_groups.keys().cloned().collect();
        for id in ids {
            let g = &self.consumer_groups[&id];
            let regex_moved = g.members.values().any(|m| {
                m.subscribed_topic_regex.is_some()
                    && ConsumerGroup::member_topics(m, &old)
                        != ConsumerGroup::member_topics(m, &self.topic_image)
            });
            let epoch = g.group_epoch;
            let changed = self.maybe_update_subscription_metadata(&id, &mut records);
            if changed || regex_moved {
                self.emit(
                    &mut records,
                    &id,
                    ConsumerRecord::GroupMetadata {
                        epoch: Some(epoch + 1),
                    },
                );
            }
        }
        self.finish(records, ())
    }

    /// ConsumerGroupDescribe (69). Missing and classic groups answer GROUP_ID_NOT_FOUND.
    pub fn consumer_group_describe(&self, group_ids: &[String]) -> Vec<DescribedConsumerGroup> {
        group_ids
            .iter()
            .map(|id| {
                let Some(g) = self.consumer_groups.get(id) else {
                    let msg = if self.groups.contains_key(id) {
                        format!("Group {id} is not a consumer group.")
                    } else {
                        format!("Group {id} not found.")
                    };
                    return DescribedConsumerGroup::error(id, Errors::GroupIdNotFound, Some(msg));
                };
                let names: BTreeMap<josef_protocol::Uuid, String> = self
                    .topic_image
                    .iter()
                    .map(|(n, t)| (t.id, n.clone()))
                    .chain(
                        g.subscription_metadata
                            .values()
                            .map(|t| (t.id, t.name.clone())),
                    )
                    .collect();
                let describe = |a: &Assignment| {
                    a.iter()
                        .map(|(t, ps)| DescribedTopicPartitions {
                            topic_id: *t,
                            topic_name: names.get(t).cloned().unwrap_or_default(),
                            partitions: ps.iter().copied().collect(),
                        })
                        .collect()
                };
                DescribedConsumerGroup {
                    error: Errors::None,
                    error_message: None,
                    group_id: id.clone(),
                    group_state: g.state().name().to_string(),
                    group_epoch: g.group_epoch,
                    assignment_epoch: g.assignment_epoch,
                    assignor_name: self.assignor_name(g),
                    members: g
                        .members
                        .values()
                        .map(|m| DescribedConsumerMember {
                            member_id: m.member_id.clone(),
                            instance_id: m.instance_id.clone(),
                            rack_id: m.rack_id.clone(),
                            member_epoch: m.member_epoch,
                            client_id: m.client_id.clone(),
                            client_host: m.client_host.clone(),
                            subscribed_topic_names: m.subscribed_topic_names.clone(),
                            subscribed_topic_regex: m.subscribed_topic_regex.clone(),
                            assignment: describe(&m.assigned),
                            target_assignment: describe(&g.target_of(&m.member_id)),
                        })
                        .collect(),
                }
            })
            .collect()
    }

    /// Session timers of loaded consumer members (and revocation timers of those revoking).
    pub(crate) fn schedule_loaded_consumer_timers(&mut self) {
        let session = self.config.consumer_session_timeout_ms;
        let members: Vec<(String, String, bool, i32, i32, i32)> = self
            .consumer_groups
            .values()
            .flat_map(|g| {
                g.members.values().map(|m| {
                    (
                        g.group_id.clone(),
                        m.member_id.clone(),
                        m.state == MemberState::UnrevokedPartitions,
                        m.member_epoch,
                        m.rebalance_timeout_ms,
                        m.session_timeout_ms(session),
                    )
                })
            })
            .collect();
        for (g, m, revoking, epoch, timeout, session) in members {
            self.schedule(Self::session_key(&g, &m), session as i64);
            if revoking {
                self.revocation_epochs.insert((g.clone(), m.clone()), epoch);
                self.schedule(Self::revocation_key(&g, &m), timeout.max(0) as i64);
            }
        }
    }
}

/// A member rejoining at epoch 0: it reported owning nothing, so it owns nothing.
fn reset(m: &ConsumerMember) -> ConsumerMember {
    let mut r = m.clone();
    r.member_epoch = 0;
    r.previous_member_epoch = 0;
    r.state = MemberState::Stable;
    r.assigned.clear();
    r.pending_revocation.clear();
    r
}
