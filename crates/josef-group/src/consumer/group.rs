//! A consumer group's state (`ConsumerGroup`), changed only by applying its records, so that
//! replaying the partition rebuilds exactly what the handlers built.

use std::collections::{BTreeMap, BTreeSet};

use josef_protocol::Uuid;

use super::member::ConsumerMember;
use super::types::{Assignment, ConsumerGroupState, SubscribedTopic, TopicImage};
use crate::record::ConsumerRecord;

/// A consumer group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerGroup {
    /// The group id.
    pub group_id: String,
    /// The group epoch (bumped whenever the target must be computed again).
    pub group_epoch: i32,
    /// The group epoch the target assignment was computed at.
    pub assignment_epoch: i32,
    /// Members by id.
    pub members: BTreeMap<String, ConsumerMember>,
    /// Target assignment by member id.
    pub target: BTreeMap<String, Assignment>,
    /// Metadata of the subscribed topics that exist, by name.
    pub subscription_metadata: BTreeMap<String, SubscribedTopic>,
    /// `(topic, partition)` -> `(member epoch, member id)` of the member holding it.
    partition_owners: BTreeMap<(Uuid, i32), (i32, String)>,
    /// Instance id -> member id.
    static_members: BTreeMap<String, String>,
}

impl ConsumerGroup {
    /// An empty group at epoch 0.
    pub fn new(group_id: &str) -> ConsumerGroup {
        ConsumerGroup {
            group_id: group_id.to_string(),
            group_epoch: 0,
            assignment_epoch: 0,
            members: BTreeMap::new(),
            target: BTreeMap::new(),
            subscription_metadata: BTreeMap::new(),
            partition_owners: BTreeMap::new(),
            static_members: BTreeMap::new(),
        }
    }

    /// The group's state.
    pub fn state(&self) -> ConsumerGroupState {
        if self.members.is_empty() {
            ConsumerGroupState::Empty
        } else if self.group_epoch > self.assignment_epoch {
            ConsumerGroupState::Assigning
        } else if self
            .members
            .values()
            .any(|m| !m.is_reconciled_to(self.assignment_epoch))
        {
            ConsumerGroupState::Reconciling
        } else {
            ConsumerGroupState::Stable
        }
    }

    /// A member.
    pub fn member(&self, member_id: &str) -> Option<&ConsumerMember> {
        self.members.get(member_id)
    }

    /// The member holding a static instance id.
    pub fn static_member(&self, instance_id: &str) -> Option<&ConsumerMember> {
        self.static_members
            .get(instance_id)
            .and_then(|m| self.members.get(m))
    }

    /// The member (and its epoch) holding a partition, assigned or pending revocation.
    pub fn partition_owner(&self, topic: &Uuid, partition: i32) -> Option<(i32, &str)> {
        self.partition_owners
            .get(&(*topic, partition))
            .map(|(e, m)| (*e, m.as_str()))
    }

    /// Every `(topic, partition) -> member` currently held.
    pub fn partition_owners(&self) -> impl Iterator<Item = ((Uuid, i32), &str)> {
        self.partition_owners
            .iter()
            .map(|(k, (_, m))| (*k, m.as_str()))
    }

    /// The target assignment of a member (empty if none).
    pub fn target_of(&self, member_id: &str) -> Assignment {
        self.target.get(member_id).cloned().unwrap_or_default()
    }

    /// The server assignor named by most members, if any names one (ties: the smaller name).
    pub fn preferred_assignor(&self) -> Option<String> {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for m in self.members.values() {
            if let Some(a) = &m.server_assignor {
                *counts.entry(a).or_default() += 1;
            }
        }
        let max = counts.values().copied().max()?;
        counts
            .into_iter()
            .find(|(_, c)| *c == max)
            .map(|(a, _)| a.to_string())
    }

    /// Topic names a member subscribes to: its names plus what its regex matches in `image`.
    pub fn member_topics(m: &ConsumerMember, image: &TopicImage) -> BTreeSet<String> {
        let mut topics: BTreeSet<String> = m.subscribed_topic_names.iter().cloned().collect();
        if let Some(re) = m.subscribed_topic_regex.as_deref() {
            if let Ok(re) = super::compile_regex(re) {
                topics.extend(image.keys().filter(|t| re.is_match(t)).cloned());
            }
        }
        topics
    }

    /// The subscription metadata for `members` against `image`.
    pub fn compute_subscription_metadata<'a>(
        members: impl Iterator<Item = &'a ConsumerMember>,
        image: &TopicImage,
    ) -> BTreeMap<String, SubscribedTopic> {
        let mut out = BTreeMap::new();
        for m in members {
            for name in Self::member_topics(m, image) {
                if let Some(t) = image.get(&name) {
                    out.entry(name.clone())
                        .or_insert_with(|| SubscribedTopic::from_image(&name, t));
                }
            }
        }
        out
    }

    /// Applies one record of this group.
    pub fn apply(&mut self, record: &ConsumerRecord) {
        match record {
            ConsumerRecord::GroupMetadata { epoch } => {
                if let Some(e) = epoch {
                    self.group_epoch = *e;
                }
            }
            ConsumerRecord::PartitionMetadata { topics } => {
                self.subscription_metadata = topics
                    .iter()
                    .flatten()
                    .map(|t| (t.name.clone(), t.clone()))
                    .collect();
            }
            ConsumerRecord::MemberMetadata { member_id, value } => match value {
                Some(v) => {
                    let m = self
                        .members
                        .entry(member_id.clone())
                        .or_insert_with(|| ConsumerMember::new(member_id));
                    let old_instance = m.instance_id.clone();
                    m.set_metadata(v);
                    if let Some(old) = old_instance {
                        if self.static_members.get(&old) == Some(member_id) {
                            self.static_members.remove(&old);
                        }
                    }
                    if let Some(i) = &v.instance_id {
                        self.static_members.insert(i.clone(), member_id.clone());
                    }
                }
                None => {
                    if let Some(m) = self.members.remove(member_id) {
                        self.release_partitions(&m);
                        if let Some(i) = &m.instance_id {
                            if self.static_members.get(i) == Some(member_id) {
                                self.static_members.remove(i);
                            }
                        }
                    }
                }
            },
            ConsumerRecord::TargetAssignmentMetadata { epoch } => {
                if let Some(e) = epoch {
                    self.assignment_epoch = *e;
                }
            }
            ConsumerRecord::TargetAssignmentMember { member_id, value } => match value {
                Some(a) => {
                    self.target.insert(member_id.clone(), a.clone());
                }
                None => {
                    self.target.remove(member_id);
                }
            },
            ConsumerRecord::CurrentMemberAssignment { member_id, value } => {
                let Some(m) = self.members.get(member_id).cloned() else {
                    return;
                };
                self.release_partitions(&m);
                let updated = {
                    let m = self.members.get_mut(member_id).expect("present");
                    match value {
                        Some(v) => m.set_assignment(v),
                        // A tombstone: back to a member that has just joined.
                        None => m.set_assignment(&ConsumerMember::new(member_id).assignment()),
                    }
                    m.clone()
                };
                self.claim_partitions(&updated);
            }
        }
    }

    fn release_partitions(&mut self, m: &ConsumerMember) {
        for a in [&m.assigned, &m.pending_revocation] {
            for (t, ps) in a {
                for p in ps {
                    if self
                        .partition_owners
                        .get(&(*t, *p))
                        .is_some_and(|(_, o)| *o == m.member_id)
                    {
                        self.partition_owners.remove(&(*t, *p));
                    }
                }
            }
        }
    }

    fn claim_partitions(&mut self, m: &ConsumerMember) {
        for a in [&m.assigned, &m.pending_revocation] {
            for (t, ps) in a {
                for p in ps {
                    self.partition_owners
                        .insert((*t, *p), (m.member_epoch, m.member_id.clone()));
                }
            }
        }
    }

    /// Record 8 of a member's state.
    pub fn current_assignment_record(m: &ConsumerMember) -> ConsumerRecord {
        ConsumerRecord::CurrentMemberAssignment {
            member_id: m.member_id.clone(),
            value: Some(m.assignment()),
        }
    }

    /// Record 5 of a member's subscription.
    pub fn member_metadata_record(m: &ConsumerMember) -> ConsumerRecord {
        ConsumerRecord::MemberMetadata {
            member_id: m.member_id.clone(),
            value: Some(m.metadata()),
        }
    }

    /// The tombstones that delete the group, in Kafka's order: current assignments, targets,
    /// target epoch, members, subscription metadata, group.
    pub fn tombstones(&self) -> Vec<ConsumerRecord> {
        let mut out = Vec::new();
        for id in self.members.keys() {
            out.push(ConsumerRecord::CurrentMemberAssignment {
                member_id: id.clone(),
                value: None,
            });
        }
        for id in self.target.keys() {
            out.push(ConsumerRecord::TargetAssignmentMember {
                member_id: id.clone(),
                value: None,
            });
        }
        out.push(ConsumerRecord::TargetAssignmentMetadata { epoch: None });
        for id in self.members.keys() {
            out.push(ConsumerRecord::MemberMetadata {
                member_id: id.clone(),
                value: None,
            });
        }
        out.push(ConsumerRecord::PartitionMetadata { topics: None });
        out.push(ConsumerRecord::GroupMetadata { epoch: None });
        out
    }
}
