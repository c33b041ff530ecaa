//! Online migration between the protocols (`group.consumer.migration.policy`, Kafka's
//! `convertToConsumerGroup` / `convertToClassicGroup`).
//!
//! Upgrade: a consumer-protocol member joining a non-empty classic group turns it into a
//! consumer group whose members are the classic ones, each at the classic generation and owning
//! (and targeted at) its classic assignment, so nothing moves until the join computes a new
//! target. The classic members stay classic-protocol members of the consumer group
//! ([`super::classic_members`]).
//!
//! Downgrade: when only classic members would be left after a member is fenced (or after a
//! static classic member took the place of the last consumer-protocol one), the group turns
//! back into a classic group at the group epoch, each member given the partitions it may still
//! own (its assignment and those pending revocation, where Kafka writes the target assignment),
//! and a rebalance starts so that the members rejoin through the classic protocol (after a
//! replacement, only if some member does not own exactly its target).

use std::collections::BTreeMap;

use bytes::Bytes;

use super::group::ConsumerGroup;
use super::handlers::Failure;
use super::member::ConsumerMember;
use super::types::{normalize, Assignment, ConsumerGroupState, MemberState, TopicImage};
use crate::classic::{ClassicGroup, ClassicMember, GroupState};
use crate::consumer_protocol::{
    Assignment as ProtocolAssignment, Subscription, TopicPartitions, CONSUMER_PROTOCOL_TYPE,
};
use crate::coordinator::GroupCoordinator;
use crate::error::Errors;
use crate::ids::MemberIdGenerator;
use crate::record::{ClassicMemberMetadata, ConsumerRecord, GroupRecord};
use crate::timer::{CoordinatorTimer, GroupTimerKey};

/// Partitions by topic name turned into partitions by topic id; topics the image does not know
/// are left out (they cannot be assigned).
pub(crate) fn to_assignment<'a>(
    parts: impl Iterator<Item = &'a TopicPartitions>,
    image: &TopicImage,
) -> Assignment {
    let mut a = Assignment::new();
    for tp in parts {
        if let Some(t) = image.get(&tp.topic) {
            a.entry(t.id)
                .or_default()
                .extend(tp.partitions.iter().copied());
        }
    }
    normalize(a)
}

/// An assignment by topic id in the embedded consumer protocol (topic names from the image or,
/// for a topic gone from it, the group's subscription metadata).
pub(crate) fn to_protocol_assignment(
    a: &Assignment,
    image: &TopicImage,
    group: &ConsumerGroup,
) -> ProtocolAssignment {
    let names: BTreeMap<josef_protocol::Uuid, &str> = group
        .subscription_metadata
        .values()
        .map(|t| (t.id, t.name.as_str()))
        .chain(image.iter().map(|(n, t)| (t.id, n.as_str())))
        .collect();
    ProtocolAssignment {
        partitions: a
            .iter()
            .filter_map(|(id, ps)| {
                names.get(id).map(|n| TopicPartitions {
                    topic: n.to_string(),
                    partitions: ps.iter().copied().collect(),
                })
            })
            .collect(),
        user_data: None,
    }
}

/// The embedded protocol version a member speaks (its subscription's), for its assignment.
pub(crate) fn protocol_version(metadata: &[u8]) -> i16 {
    Subscription::decode(metadata).map_or(0, |(v, _)| v.max(0))
}

fn not_a_consumer_group(group_id: &str) -> Failure {
    (
        Errors::GroupIdNotFound,
        Some(format!("Group {group_id} is not a consumer group.")),
    )
}

impl<T: CoordinatorTimer<GroupTimerKey>, G: MemberIdGenerator> GroupCoordinator<T, G> {
    /// Kafka's `validateOnlineUpgrade` and `ConsumerGroup.fromClassicGroup`: the consumer group a
    /// non-empty classic group becomes, and the records that write it. Nothing is changed.
    pub(crate) fn upgraded_group(
        &self,
        classic: &ClassicGroup,
    ) -> Result<(ConsumerGroup, Vec<ConsumerRecord>), Failure> {
        let group_id = classic.group_id();
        if !self.config.consumer_migration_policy.upgrade_enabled()
            || !classic.uses_consumer_protocol()
            || classic.num_members() > self.config.consumer_max_size
        {
            return Err(not_a_consumer_group(group_id));
        }
        let malformed = || {
            (
                Errors::GroupIdNotFound,
                Some(format!(
                    "Cannot upgrade classic group {group_id} to consumer group because the \
                     embedded consumer protocol is malformed."
                )),
            )
        };
        let epoch = classic.generation_id();
        let mut members = Vec::new();
        for m in classic.members() {
            // Before its first generation the group has no protocol yet: every member's
            // protocols carry the same subscription, the first one will do.
            let metadata = match classic.protocol_name() {
                Some(p) => m.metadata(p),
                None => m
                    .protocols
                    .first()
                    .map(|p| p.metadata.clone())
                    .unwrap_or_default(),
            };
            let (_, sub) = Subscription::decode(&metadata).map_err(|_| malformed())?;
            // A member that has not synced a generation yet owns nothing.
            let owned = if m.assignment.is_empty() {
                Assignment::new()
            } else {
                let (_, a) = ProtocolAssignment::decode(&m.assignment).map_err(|_| malformed())?;
                to_assignment(a.partitions.iter(), &self.topic_image)
            };
            let mut topics = sub.topics.clone();
            topics.sort();
            topics.dedup();
            let mut c = ConsumerMember::new(&m.member_id);
            c.instance_id = m.group_instance_id.clone();
            c.rack_id = sub.rack_id.clone();
            c.client_id = m.client_id.clone();
            c.client_host = m.client_host.clone();
            c.subscribed_topic_names = topics;
            c.rebalance_timeout_ms = m.rebalance_timeout_ms;
            c.member_epoch = epoch;
            c.previous_member_epoch = epoch;
            c.state = MemberState::Stable;
            c.assigned = owned;
            c.classic = Some(ClassicMemberMetadata {
                session_timeout_ms: m.session_timeout_ms,
                supported_protocols: m.protocols.clone(),
            });
            members.push(c);
        }
        // Kafka's `createConsumerGroupRecords` order.
        let mut out = Vec::new();
        for m in &members {
            out.push(ConsumerGroup::member_metadata_record(m));
        }
        out.push(ConsumerRecord::GroupMetadata { epoch: Some(epoch) });
        for m in &members {
            out.push(ConsumerRecord::TargetAssignmentMember {
                member_id: m.member_id.clone(),
                value: Some(m.assigned.clone()),
            });
        }
        out.push(ConsumerRecord::TargetAssignmentMetadata { epoch: Some(epoch) });
        for m in &members {
            out.push(ConsumerGroup::current_assignment_record(m));
        }
        let mut g = ConsumerGroup::new(group_id);
        for r in &out {
            g.apply(r);
        }
        Ok((g, out))
    }

    /// Replaces the classic group by the consumer group of [`Self::upgraded_group`]: parked
    /// JoinGroup/SyncGroup requests are answered REBALANCE_IN_PROGRESS (the members rejoin into
    /// the consumer group) and every member's session runs on its classic timeout.
    pub(crate) fn convert_to_consumer_group(
        &mut self,
        group_id: &str,
        upgrade: Vec<ConsumerRecord>,
        records: &mut Vec<GroupRecord>,
    ) {
        let Some(classic) = self.groups.remove(group_id) else {
            return;
        };
        for m in classic.members() {
            if let Some(req) = m.awaiting_join {
                self.complete_join(
                    req,
                    crate::api::JoinGroupResponse::error(Errors::RebalanceInProgress, &m.member_id),
                );
            }
            if let Some(req) = m.awaiting_sync {
                self.complete_sync(
                    req,
                    crate::api::SyncGroupResponse::error(Errors::RebalanceInProgress),
                );
            }
        }
        for key in [
            GroupTimerKey::Join {
                group_id: group_id.to_string(),
            },
            GroupTimerKey::Sync {
                group_id: group_id.to_string(),
            },
        ] {
            self.cancel(&key);
        }
        for m in classic.members() {
            self.cancel(&Self::heartbeat_key(group_id, &m.member_id));
        }
        records.push(GroupRecord::GroupMetadata {
            group: group_id.to_string(),
            value: None,
        });
        for r in upgrade {
            self.emit(records, group_id, r);
        }
        for m in classic.members() {
            self.schedule(
                Self::session_key(group_id, &m.member_id),
                m.session_timeout_ms as i64,
            );
        }
    }

    /// The classic group a consumer group becomes once `leaving` are gone, with each member's
    /// assignment; `None` when the group cannot be downgraded (Kafka's
    /// `validateOnlineDowngradeWithFencedMembers` and `ClassicGroup.fromConsumerGroup`).
    fn downgraded_group(
        &self,
        group_id: &str,
        leaving: &[String],
    ) -> Option<(ClassicGroup, BTreeMap<String, Bytes>)> {
        if !self.config.consumer_migration_policy.downgrade_enabled() {
            return None;
        }
        let g = self.consumer_groups.get(group_id)?;
        let staying: Vec<&ConsumerMember> = g
            .members
            .values()
            .filter(|m| !leaving.contains(&m.member_id))
            .collect();
        if staying.is_empty()
            || staying.len() > self.config.max_group_size
            || staying.iter().any(|m| !m.uses_classic_protocol())
        {
            return None;
        }
        let mut classic = ClassicGroup::new(group_id, GroupState::Stable, self.now);
        classic.generation_id = g.group_epoch;
        for m in &staying {
            let meta = m.classic.as_ref()?;
            classic.add(ClassicMember {
                member_id: m.member_id.clone(),
                group_instance_id: m.instance_id.clone(),
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                rebalance_timeout_ms: m.rebalance_timeout_ms,
                session_timeout_ms: meta.session_timeout_ms,
                protocol_type: CONSUMER_PROTOCOL_TYPE.to_string(),
                protocols: meta.supported_protocols.clone(),
                assignment: Bytes::new(),
                awaiting_join: None,
                awaiting_join_version: 0,
                awaiting_sync: None,
                is_new: false,
            });
        }
        classic.protocol_type = Some(CONSUMER_PROTOCOL_TYPE.to_string());
        let protocol = classic.select_protocol()?;
        classic.protocol_name = Some(protocol.clone());
        classic.subscribed_topics = classic.compute_subscribed_topics();
        let mut assignments = BTreeMap::new();
        for m in classic.members.values_mut() {
            let version = protocol_version(&m.metadata(&protocol));
            // Kafka writes the target assignment here. But a classic group's assignments are
            // what a later upgrade takes the members to own, and a member still revoking
            // partitions the target took away owns them until it rejoins: written as the
            // target, an upgrade during the downgrade's rebalance would hand them to another
            // member while this one still consumes them. So: what it may still own.
            let a = g
                .members
                .get(&m.member_id)
                .map_or_else(Assignment::new, |c| {
                    let mut a = c.assigned.clone();
                    for (t, ps) in &c.pending_revocation {
                        a.entry(*t).or_default().extend(ps.iter().copied());
                    }
                    normalize(a)
                });
            let a = to_protocol_assignment(&a, &self.topic_image, g);
            m.assignment = a.encode(version);
            assignments.insert(m.member_id.clone(), m.assignment.clone());
        }
        Some((classic, assignments))
    }

    /// True if fencing `leaving` leaves only classic members and the policy allows going back.
    pub(crate) fn can_downgrade(&self, group_id: &str, leaving: &[String]) -> bool {
        self.downgraded_group(group_id, leaving).is_some()
    }

    /// Replaces the consumer group by its classic group (tombstones of every consumer record,
    /// then the classic `GroupMetadata`), and starts a rebalance so its members rejoin.
    pub(crate) fn convert_to_classic_group(
        &mut self,
        group_id: &str,
        leaving: &[String],
        records: &mut Vec<GroupRecord>,
    ) {
        self.convert(group_id, leaving, true, records);
    }

    /// Kafka's `validateOnlineDowngradeWithReplacedMemberId`: a static classic member has just
    /// taken the place of `replaced`; if that was the last consumer-protocol member and the
    /// policy allows, the group becomes a classic group. Returns true if it did.
    ///
    /// Unlike a downgrade on fencing, nobody left, so Kafka starts no rebalance. But each
    /// classic member is given what it may still own, not its target (see
    /// [`Self::downgraded_group`]): unless every member already owns exactly its target, a
    /// rebalance starts so that the group converges.
    pub(crate) fn maybe_downgrade_after_replacement(
        &mut self,
        group_id: &str,
        replaced: &ConsumerMember,
        records: &mut Vec<GroupRecord>,
    ) -> bool {
        if replaced.uses_classic_protocol() || !self.can_downgrade(group_id, &[]) {
            return false;
        }
        let settled = self.consumer_groups[group_id].state() == ConsumerGroupState::Stable;
        self.convert(group_id, &[], !settled, records);
        true
    }

    fn convert(
        &mut self,
        group_id: &str,
        leaving: &[String],
        rebalance: bool,
        records: &mut Vec<GroupRecord>,
    ) {
        let Some((classic, assignments)) = self.downgraded_group(group_id, leaving) else {
            return;
        };
        let members: Vec<String> = self.consumer_groups[group_id]
            .members
            .keys()
            .cloned()
            .collect();
        for m in &members {
            self.cancel_member_timers(group_id, m);
        }
        for r in self.consumer_groups[group_id].tombstones() {
            self.emit(records, group_id, r);
        }
        records.push(Self::group_metadata_record(&classic, &assignments));
        let sessions: Vec<(String, i32)> = classic
            .members()
            .map(|m| (m.member_id.clone(), m.session_timeout_ms))
            .collect();
        self.groups.insert(group_id.to_string(), classic);
        for (m, timeout) in sessions {
            self.schedule(Self::heartbeat_key(group_id, &m), timeout as i64);
        }
        if rebalance {
            records.extend(self.prepare_rebalance(group_id));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use josef_protocol::Uuid;

    use crate::api::{
        GroupResponse, JoinGroupRequest, JoinProtocol, RequestContext, SyncGroupRequest,
    };
    use crate::consumer::api::ConsumerGroupHeartbeatRequest;
    use crate::consumer::{TopicInfo, LEAVE_GROUP_MEMBER_EPOCH};
    use crate::consumer_protocol::{Assignment as ProtocolAssignment, Subscription};
    use crate::{GroupConfig, GroupCoordinator, GroupResult, NoopTimer, SeededMemberIds};

    type C = GroupCoordinator<NoopTimer, SeededMemberIds>;

    struct T {
        c: C,
        now: i64,
        offset: i64,
        answers: Vec<(u64, GroupResponse)>,
    }

    fn topic() -> Uuid {
        Uuid::from_u64_pair(7, 7)
    }

    fn ctx(api_version: i16) -> RequestContext {
        RequestContext {
            client_id: "client".into(),
            client_host: "/127.0.0.1".into(),
            api_version,
        }
    }

    impl T {
        fn take<R>(&mut self, r: GroupResult<R>) -> R {
            for rec in &r.records {
                self.c.replay(self.offset, -1, -1, rec);
                self.offset += 1;
            }
            for c in r.completions {
                self.answers.push((c.request, c.response));
            }
            r.response
        }

        fn answer(&mut self, request: u64) -> GroupResponse {
            let i = self
                .answers
                .iter()
                .position(|(r, _)| *r == request)
                .unwrap();
            self.answers.remove(i).1
        }

        fn join(&mut self, request: u64, member_id: &str) {
            let req = JoinGroupRequest {
                group_id: "g".into(),
                session_timeout_ms: 10_000,
                rebalance_timeout_ms: 30_000,
                member_id: member_id.into(),
                group_instance_id: None,
                protocol_type: "consumer".into(),
                protocols: vec![JoinProtocol {
                    name: "range".into(),
                    metadata: Subscription {
                        topics: vec!["t".into()],
                        ..Default::default()
                    }
                    .encode(1),
                }],
                reason: None,
            };
            let r = self.c.join_group(self.now, request, &ctx(5), req);
            self.take(r);
        }

        fn heartbeat(&mut self, member_id: &str, epoch: i32) -> BTreeSet<i32> {
            let req = ConsumerGroupHeartbeatRequest {
                group_id: "g".into(),
                member_id: member_id.into(),
                member_epoch: epoch,
                rebalance_timeout_ms: 30_000,
                subscribed_topic_names: (epoch == 0).then(|| vec!["t".to_string()]),
                topic_partitions: (epoch == 0).then(Default::default),
                ..Default::default()
            };
            let r = self.c.consumer_group_heartbeat(self.now, &ctx(1), req);
            let r = self.take(r);
            assert_eq!(r.error, crate::Errors::None, "{r:?}");
            r.assignment
                .and_then(|a| a.get(&topic()).cloned())
                .unwrap_or_default()
        }
    }

    /// A classic member owning every partition; a consumer member joins (upgrade: the classic
    /// member must revoke half) and leaves before it revoked them (downgrade); another consumer
    /// member joins (upgrade again) while the classic member still owns all of them.
    #[test]
    fn upgrade_during_the_downgrade_rebalance_keeps_what_a_classic_member_still_owns() {
        let mut t = T {
            c: GroupCoordinator::new(GroupConfig::default(), NoopTimer, SeededMemberIds::new(1)),
            now: 1_000,
            offset: 0,
            answers: Vec::new(),
        };
        let image = [("t".to_string(), TopicInfo::new(topic(), 6))].into();
        let r = t.c.on_topics_changed(t.now, image);
        t.take(r);

        // m2, classic, alone: it owns all 6 partitions.
        t.join(1, "");
        let GroupResponse::Join(r) = t.answer(1) else {
            panic!()
        };
        let m2 = r.member_id;
        t.join(2, &m2);
        t.now += 6_001;
        while let Some(r) = t.c.fire_next_due(t.now) {
            t.take(r);
        }
        let GroupResponse::Join(r) = t.answer(2) else {
            panic!()
        };
        let all = ProtocolAssignment {
            partitions: vec![crate::consumer_protocol::TopicPartitions {
                topic: "t".into(),
                partitions: (0..6).collect(),
            }],
            user_data: None,
        };
        let req = SyncGroupRequest {
            group_id: "g".into(),
            generation_id: r.generation_id,
            member_id: m2.clone(),
            group_instance_id: None,
            protocol_type: Some("consumer".into()),
            protocol_name: r.protocol_name.clone(),
            assignments: vec![(m2.clone(), all.encode(1))],
        };
        let r = t.c.sync_group(t.now, 3, req);
        t.take(r);
        let GroupResponse::Sync(r) = t.answer(3) else {
            panic!()
        };
        assert_eq!(r.error, crate::Errors::None);

        // m3 joins (upgrade) and leaves (downgrade) before m2 heard of either.
        t.heartbeat("m3", 0);
        t.heartbeat("m3", LEAVE_GROUP_MEMBER_EPOCH);
        assert!(t.c.group("g").is_some(), "downgraded");

        // m0 joins (upgrade): m2 still owns every partition, so m0 gets none yet.
        let got = t.heartbeat("m0", 0);
        assert_eq!(got, BTreeSet::new(), "m0 is given partitions m2 still owns");
        let g = t.c.consumer_group("g").unwrap();
        let m2 = g.member(&m2).unwrap();
        let mut held = m2.assigned.get(&topic()).cloned().unwrap_or_default();
        held.extend(
            m2.pending_revocation
                .get(&topic())
                .cloned()
                .unwrap_or_default(),
        );
        assert_eq!(held, (0..6).collect::<BTreeSet<i32>>());
    }
}
