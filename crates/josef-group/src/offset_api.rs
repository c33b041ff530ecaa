//! OffsetCommit, TxnOffsetCommit, OffsetFetch, OffsetDelete, offset retention, and the admin
//! APIs ListGroups, DescribeGroups, DeleteGroups (Kafka's `OffsetMetadataManager` and the
//! shard-level paths of `GroupCoordinatorShard`).

use crate::api::{
    DeletedGroup, DescribedGroup, DescribedMember, ListGroupsRequest, ListGroupsResponse,
    ListedGroup, OffsetCommitPartitionResponse, OffsetCommitRequest, OffsetCommitResponse,
    OffsetCommitTopic, OffsetCommitTopicResponse, OffsetDeleteRequest, OffsetDeleteResponse,
    OffsetFetchGroupResponse, OffsetFetchPartitionResponse, OffsetFetchRequest,
    OffsetFetchResponse, OffsetFetchTopicResponse, RequestContext, TxnOffsetCommitRequest,
};
use crate::classic::{ClassicGroup, GroupState};
use crate::coordinator::{GroupCoordinator, GroupResult};
use crate::error::Errors;
use crate::ids::MemberIdGenerator;
use crate::record::{GroupRecord, OffsetKey, OffsetValue};
use crate::timer::{CoordinatorTimer, GroupTimerKey};

/// OffsetCommit v9+ answers GROUP_ID_NOT_FOUND for unknown groups (older: ILLEGAL_GENERATION).
const FIRST_COMMIT_VERSION_WITH_GROUP_ID_NOT_FOUND: i16 = 9;
/// DescribeGroups v6+ answers GROUP_ID_NOT_FOUND for unknown groups (older: a Dead group).
const FIRST_DESCRIBE_VERSION_WITH_GROUP_ID_NOT_FOUND: i16 = 6;

/// Length of a string as Java counts it (UTF-16 code units): the metadata limit is in those.
fn java_len(s: &str) -> usize {
    s.encode_utf16().count()
}

/// Kafka's `ConsumerGroup.validateOffsetCommit` (`api_version` is `None` for TxnOffsetCommit):
/// an admin commit (negative epoch) is accepted by an empty group only; otherwise the member
/// must exist, commit with OffsetCommit v9+, at its current epoch.
fn validate_consumer_commit(
    g: &crate::consumer::ConsumerGroup,
    member_id: &str,
    epoch: i32,
    api_version: Option<i16>,
) -> Errors {
    if epoch < 0 && g.members.is_empty() {
        return Errors::None;
    }
    let Some(m) = g.member(member_id) else {
        return Errors::UnknownMemberId;
    };
    // A classic-protocol member commits with its generation (its member epoch) through the
    // OffsetCommit versions it knows.
    if m.uses_classic_protocol() {
        return if epoch == m.member_epoch {
            Errors::None
        } else {
            Errors::IllegalGeneration
        };
    }
    if api_version.is_some_and(|v| v < FIRST_COMMIT_VERSION_WITH_GROUP_ID_NOT_FOUND) {
        return Errors::UnsupportedVersion;
    }
    if epoch != m.member_epoch {
        return Errors::StaleMemberEpoch;
    }
    Errors::None
}

/// Kafka's `ConsumerGroup.validateOffsetFetch` (OffsetFetch v9+): a fetch naming neither a
/// member nor an epoch (admin client, older versions) is served; otherwise the member must exist
/// and fetch at its current epoch, so that a fenced member does not resume from offsets it no
/// longer owns.
fn validate_consumer_fetch(
    g: &crate::consumer::ConsumerGroup,
    member_id: Option<&str>,
    epoch: i32,
) -> Errors {
    let Some(member_id) = member_id else {
        return if epoch < 0 {
            Errors::None
        } else {
            Errors::UnknownMemberId
        };
    };
    let Some(m) = g.member(member_id) else {
        return Errors::UnknownMemberId;
    };
    if epoch == m.member_epoch {
        Errors::None
    } else if m.uses_classic_protocol() {
        Errors::IllegalGeneration
    } else {
        Errors::StaleMemberEpoch
    }
}

impl<T: CoordinatorTimer<GroupTimerKey>, G: MemberIdGenerator> GroupCoordinator<T, G> {
    /// Tombstones for the group's offsets past retention (explicit expiry, else `base` plus
    /// `offsets.retention.minutes`), except for topics the group `consumes` and partitions with
    /// pending transactional offsets. Returns how many offsets remain.
    fn sweep_offsets(
        &self,
        group_id: &str,
        now_ms: i64,
        consumes: impl Fn(&str) -> bool,
        base: impl Fn(&OffsetValue) -> i64,
        records: &mut Vec<GroupRecord>,
    ) -> usize {
        let retention = self.config.offsets_retention_ms;
        let mut remaining = 0usize;
        for (topic, parts) in self.offsets.group(group_id).into_iter().flatten() {
            for (partition, c) in parts {
                let expired = !consumes(topic)
                    && !self.offsets.has_pending(group_id, topic, *partition)
                    && match c.value.expire_timestamp {
                        Some(e) => now_ms >= e,
                        None => now_ms - base(&c.value) >= retention,
                    };
                if expired {
                    records.push(GroupRecord::OffsetCommit {
                        key: OffsetKey {
                            group: group_id.to_string(),
                            topic: topic.clone(),
                            partition: *partition,
                        },
                        value: None,
                    });
                } else {
                    remaining += 1;
                }
            }
        }
        remaining
    }

    /// Tombstones of every committed offset of a group.
    fn offset_tombstones(&self, group_id: &str) -> Vec<GroupRecord> {
        let mut records = Vec::new();
        if let Some(topics) = self.offsets.group(group_id) {
            for (topic, parts) in topics {
                for partition in parts.keys() {
                    records.push(GroupRecord::OffsetCommit {
                        key: OffsetKey {
                            group: group_id.to_string(),
                            topic: topic.clone(),
                            partition: *partition,
                        },
                        value: None,
                    });
                }
            }
        }
        records
    }

    /// Whether a partition exists, once the broker has given a topic image
    /// ([`GroupCoordinator::on_topics_changed`]); without one every partition is accepted.
    fn partition_exists(&self, topic: &str, partition: i32) -> bool {
        if !self.topic_image_known {
            return true;
        }
        self.topic_image
            .get(topic)
            .is_some_and(|t| (0..t.partitions).contains(&partition))
    }

    fn offset_records(
        &self,
        group_id: &str,
        topics: &[OffsetCommitTopic],
        expire_timestamp: Option<i64>,
    ) -> (Vec<GroupRecord>, OffsetCommitResponse) {
        let mut records = Vec::new();
        let mut response = OffsetCommitResponse::default();
        for topic in topics {
            let mut partitions = Vec::with_capacity(topic.partitions.len());
            for p in &topic.partitions {
                let too_large = p
                    .committed_metadata
                    .as_deref()
                    .map(|m| java_len(m) > self.config.offset_metadata_max_bytes)
                    .unwrap_or(false);
                let error = if too_large {
                    Errors::OffsetMetadataTooLarge
                } else if !crate::rebalance::fits_record(&topic.name)
                    || !self.partition_exists(&topic.name, p.partition_index)
                {
                    Errors::UnknownTopicOrPartition
                } else {
                    records.push(GroupRecord::OffsetCommit {
                        key: OffsetKey {
                            group: group_id.to_string(),
                            topic: topic.name.clone(),
                            partition: p.partition_index,
                        },
                        value: Some(OffsetValue {
                            offset: p.committed_offset,
                            leader_epoch: p.committed_leader_epoch,
                            metadata: p.committed_metadata.clone().unwrap_or_default(),
                            commit_timestamp: if p.commit_timestamp == -1 {
                                self.now
                            } else {
                                p.commit_timestamp
                            },
                            expire_timestamp,
                        }),
                    });
                    Errors::None
                };
                partitions.push(OffsetCommitPartitionResponse {
                    partition_index: p.partition_index,
                    error,
                });
            }
            response.topics.push(OffsetCommitTopicResponse {
                name: topic.name.clone(),
                partitions,
            });
        }
        (records, response)
    }

    /// OffsetCommit. The offsets change when the returned records are replayed.
    pub fn commit_offsets(
        &mut self,
        now_ms: i64,
        ctx: &RequestContext,
        req: OffsetCommitRequest,
    ) -> GroupResult<OffsetCommitResponse> {
        self.begin(now_ms);
        if req.group_id.is_empty() || !crate::rebalance::fits_record(&req.group_id) {
            return self.finish(
                Vec::new(),
                OffsetCommitResponse::all(&req.topics, Errors::InvalidGroupId),
            );
        }
        let generation = req.generation_id_or_member_epoch;
        if let Some(cg) = self.consumer_groups.get(&req.group_id) {
            let e = validate_consumer_commit(cg, &req.member_id, generation, Some(ctx.api_version));
            if !e.is_none() {
                return self.finish(Vec::new(), OffsetCommitResponse::all(&req.topics, e));
            }
            let expire =
                (req.retention_time_ms != -1).then(|| now_ms.saturating_add(req.retention_time_ms));
            let (records, response) = self.offset_records(&req.group_id, &req.topics, expire);
            return self.finish(records, response);
        }
        if !self.groups.contains_key(&req.group_id) {
            if generation < 0 {
                // A consumer without group management (or the admin client): a simple group.
                let g = ClassicGroup::new(&req.group_id, GroupState::Empty, now_ms);
                self.groups.insert(req.group_id.clone(), g);
            } else {
                let error = if ctx.api_version >= FIRST_COMMIT_VERSION_WITH_GROUP_ID_NOT_FOUND {
                    Errors::GroupIdNotFound
                } else {
                    Errors::IllegalGeneration
                };
                return self.finish(Vec::new(), OffsetCommitResponse::all(&req.topics, error));
            }
        }
        let g = &self.groups[&req.group_id];
        if let Err(e) = g.validate_offset_commit(
            &req.member_id,
            req.group_instance_id.as_deref(),
            generation,
            false,
        ) {
            return self.finish(Vec::new(), OffsetCommitResponse::all(&req.topics, e));
        }
        // In the classic protocol a commit also keeps the member's session alive.
        if matches!(g.state, GroupState::Stable | GroupState::PreparingRebalance) {
            if let Some(m) = g.member(&req.member_id) {
                let session = m.session_timeout_ms as i64;
                self.schedule(Self::heartbeat_key(&req.group_id, &req.member_id), session);
            }
        }
        let expire = if req.retention_time_ms == -1 {
            None
        } else {
            Some(now_ms.saturating_add(req.retention_time_ms))
        };
        let (records, response) = self.offset_records(&req.group_id, &req.topics, expire);
        self.finish(records, response)
    }

    /// TxnOffsetCommit: the records are appended as part of the producer's transaction
    /// ([`GroupResult::transaction`]) and stay pending until [`GroupCoordinator::complete_transaction`].
    /// Producer-epoch fencing is the caller's (the broker checks the partition's producer state
    /// before running this: coordinator records skip the log's producer checks).
    pub fn commit_txn_offsets(
        &mut self,
        now_ms: i64,
        req: TxnOffsetCommitRequest,
    ) -> GroupResult<OffsetCommitResponse> {
        self.begin(now_ms);
        if req.group_id.is_empty() || !crate::rebalance::fits_record(&req.group_id) {
            return self.finish(
                Vec::new(),
                OffsetCommitResponse::all(&req.topics, Errors::InvalidGroupId),
            );
        }
        if let Some(cg) = self.consumer_groups.get(&req.group_id) {
            let e = validate_consumer_commit(cg, &req.member_id, req.generation_id, None);
            if !e.is_none() {
                return self.finish(Vec::new(), OffsetCommitResponse::all(&req.topics, e));
            }
            let (records, response) = self.offset_records(&req.group_id, &req.topics, None);
            let mut result = self.finish(records, response);
            result.transaction = Some((req.producer_id, req.producer_epoch));
            return result;
        }
        if !self.groups.contains_key(&req.group_id) {
            if req.generation_id < 0 {
                let g = ClassicGroup::new(&req.group_id, GroupState::Empty, now_ms);
                self.groups.insert(req.group_id.clone(), g);
            } else {
                return self.finish(
                    Vec::new(),
                    OffsetCommitResponse::all(&req.topics, Errors::IllegalGeneration),
                );
            }
        }
        let g = &self.groups[&req.group_id];
        if let Err(e) = g.validate_offset_commit(
            &req.member_id,
            req.group_instance_id.as_deref(),
            req.generation_id,
            true,
        ) {
            return self.finish(Vec::new(), OffsetCommitResponse::all(&req.topics, e));
        }
        let (records, response) = self.offset_records(&req.group_id, &req.topics, None);
        let mut result = self.finish(records, response);
        result.transaction = Some((req.producer_id, req.producer_epoch));
        result
    }

    /// OffsetFetch (all versions; several groups at once from v8).
    pub fn fetch_offsets(&self, req: &OffsetFetchRequest) -> OffsetFetchResponse {
        let groups = req
            .groups
            .iter()
            .map(|rg| {
                if rg.group_id.is_empty() {
                    return OffsetFetchGroupResponse {
                        group_id: rg.group_id.clone(),
                        topics: Vec::new(),
                        error: Errors::InvalidGroupId,
                    };
                }
                if let Some(cg) = self.consumer_groups.get(&rg.group_id) {
                    let error =
                        validate_consumer_fetch(cg, rg.member_id.as_deref(), rg.member_epoch);
                    if !error.is_none() {
                        return OffsetFetchGroupResponse {
                            group_id: rg.group_id.clone(),
                            topics: Vec::new(),
                            error,
                        };
                    }
                }
                let exists = self
                    .groups
                    .get(&rg.group_id)
                    .map(|g| g.state != GroupState::Dead)
                    .unwrap_or(false)
                    || self.consumer_groups.contains_key(&rg.group_id);
                let stored = if exists {
                    self.offsets.group(&rg.group_id)
                } else {
                    None
                };
                let entry = |topic: &str, partition: i32| {
                    if req.require_stable
                        && self.offsets.has_pending(&rg.group_id, topic, partition)
                    {
                        return OffsetFetchPartitionResponse {
                            partition_index: partition,
                            committed_offset: -1,
                            committed_leader_epoch: -1,
                            metadata: Some(String::new()),
                            error: Errors::UnstableOffsetCommit,
                        };
                    }
                    match stored
                        .and_then(|t| t.get(topic))
                        .and_then(|p| p.get(&partition))
                    {
                        Some(c) => OffsetFetchPartitionResponse {
                            partition_index: partition,
                            committed_offset: c.value.offset,
                            committed_leader_epoch: c.value.leader_epoch,
                            metadata: Some(c.value.metadata.clone()),
                            error: Errors::None,
                        },
                        None => OffsetFetchPartitionResponse {
                            partition_index: partition,
                            committed_offset: -1,
                            committed_leader_epoch: -1,
                            metadata: Some(String::new()),
                            error: Errors::None,
                        },
                    }
                };
                let topics = match &rg.topics {
                    Some(topics) => topics
                        .iter()
                        .map(|t| OffsetFetchTopicResponse {
                            name: t.name.clone(),
                            partitions: t
                                .partition_indexes
                                .iter()
                                .map(|p| entry(&t.name, *p))
                                .collect(),
                        })
                        .collect(),
                    None => stored
                        .map(|topics| {
                            topics
                                .iter()
                                .map(|(name, parts)| OffsetFetchTopicResponse {
                                    name: name.clone(),
                                    partitions: parts.keys().map(|p| entry(name, *p)).collect(),
                                })
                                .collect()
                        })
                        .unwrap_or_default(),
                };
                OffsetFetchGroupResponse {
                    group_id: rg.group_id.clone(),
                    topics,
                    error: Errors::None,
                }
            })
            .collect();
        OffsetFetchResponse { groups }
    }

    /// OffsetDelete: only offsets of topics the group does not consume may go.
    pub fn delete_offsets(
        &mut self,
        now_ms: i64,
        req: OffsetDeleteRequest,
    ) -> GroupResult<OffsetDeleteResponse> {
        self.begin(now_ms);
        let top = |error| OffsetDeleteResponse {
            error,
            topics: Vec::new(),
        };
        if req.group_id.is_empty() {
            return self.finish(Vec::new(), top(Errors::InvalidGroupId));
        }
        let Some(g) = self.groups.get(&req.group_id) else {
            return self.finish(Vec::new(), top(Errors::GroupIdNotFound));
        };
        match g.state {
            GroupState::Dead => return self.finish(Vec::new(), top(Errors::GroupIdNotFound)),
            GroupState::Stable
            | GroupState::PreparingRebalance
            | GroupState::CompletingRebalance
                if !g.uses_consumer_protocol() =>
            {
                return self.finish(Vec::new(), top(Errors::NonEmptyGroup));
            }
            _ => {}
        }
        let mut records = Vec::new();
        let mut topics = Vec::new();
        for (topic, partitions) in &req.topics {
            let subscribed = g.is_subscribed_to_topic(topic);
            let mut out = Vec::new();
            for p in partitions {
                if subscribed {
                    out.push((*p, Errors::GroupSubscribedToTopic));
                    continue;
                }
                if self.offsets.get(&req.group_id, topic, *p).is_some() {
                    records.push(GroupRecord::OffsetCommit {
                        key: OffsetKey {
                            group: req.group_id.clone(),
                            topic: topic.clone(),
                            partition: *p,
                        },
                        value: None,
                    });
                }
                out.push((*p, Errors::None));
            }
            topics.push((topic.clone(), out));
        }
        self.finish(
            records,
            OffsetDeleteResponse {
                error: Errors::None,
                topics,
            },
        )
    }

    /// Tombstones for offsets past retention, and for groups left Empty without offsets.
    ///
    /// An offset expires when its explicit expire timestamp has passed, or when
    /// `offsets.retention.minutes` have passed since its base time: the time the group became
    /// Empty (consumer groups), or the commit time (simple groups, and topics a Stable consumer
    /// group no longer subscribes to). Partitions with pending transactional offsets never expire.
    pub fn expired_offset_records(&self, now_ms: i64) -> Vec<GroupRecord> {
        let mut records = Vec::new();
        for (group_id, g) in &self.groups {
            // The time retention counts from: when the group became Empty, or the commit.
            let since_empty = match (&g.protocol_type, g.state) {
                (Some(_), GroupState::Empty) => Some(g.state_timestamp),
                (Some(_), GroupState::Stable)
                    if g.uses_consumer_protocol() && g.subscribed_topics.is_some() =>
                {
                    Some(None)
                }
                (None, _) => Some(None),
                _ => None,
            };
            let Some(since_empty) = since_empty else {
                continue;
            };
            let base = |v: &OffsetValue| since_empty.unwrap_or(v.commit_timestamp);
            let remaining = self.sweep_offsets(
                group_id,
                now_ms,
                |topic| g.is_subscribed_to_topic(topic),
                base,
                &mut records,
            );
            if remaining == 0
                && g.state == GroupState::Empty
                && !self.offsets.group_has_pending(group_id)
            {
                records.push(GroupRecord::GroupMetadata {
                    group: group_id.clone(),
                    value: None,
                });
            }
        }
        for (group_id, g) in &self.consumer_groups {
            let empty = g.state() == crate::consumer::ConsumerGroupState::Empty;
            let remaining = self.sweep_offsets(
                group_id,
                now_ms,
                |topic| !empty && g.subscription_metadata.contains_key(topic),
                |v| v.commit_timestamp,
                &mut records,
            );
            if empty && remaining == 0 && !self.offsets.group_has_pending(group_id) {
                records.extend(
                    g.tombstones()
                        .into_iter()
                        .map(|record| GroupRecord::Consumer {
                            group: group_id.clone(),
                            record,
                        }),
                );
            }
        }
        records
    }

    /// ListGroups, with the v4+ state filter and v5+ type filter (case-insensitive).
    pub fn list_groups(&self, req: &ListGroupsRequest) -> ListGroupsResponse {
        let states: Vec<String> = req.states_filter.iter().map(|s| s.to_lowercase()).collect();
        let types: Vec<String> = req.types_filter.iter().map(|s| s.to_lowercase()).collect();
        let groups: Vec<ListedGroup> = self
            .groups
            .values()
            .filter(|g| states.is_empty() || states.contains(&g.state.name().to_lowercase()))
            .filter(|_| types.is_empty() || types.iter().any(|t| t == "classic"))
            .map(|g| ListedGroup {
                group_id: g.group_id.clone(),
                protocol_type: g.protocol_type.clone().unwrap_or_default(),
                group_state: g.state.name().to_string(),
                group_type: "classic".to_string(),
            })
            .chain(
                self.consumer_groups
                    .values()
                    .filter(|g| {
                        states.is_empty() || states.contains(&g.state().name().to_lowercase())
                    })
                    .filter(|_| types.is_empty() || types.iter().any(|t| t == "consumer"))
                    .map(|g| ListedGroup {
                        group_id: g.group_id.clone(),
                        protocol_type: "consumer".to_string(),
                        group_state: g.state().name().to_string(),
                        group_type: "consumer".to_string(),
                    }),
            )
            .collect();
        ListGroupsResponse {
            error: Errors::None,
            groups,
        }
    }

    /// DescribeGroups. Metadata, assignments and the protocol are shown for Stable groups only.
    pub fn describe_groups(&self, api_version: i16, group_ids: &[String]) -> Vec<DescribedGroup> {
        group_ids
            .iter()
            .map(|id| {
                let dead = |error| DescribedGroup {
                    error,
                    group_id: id.clone(),
                    group_state: GroupState::Dead.name().to_string(),
                    protocol_type: String::new(),
                    protocol_data: String::new(),
                    members: Vec::new(),
                };
                if id.is_empty() {
                    return dead(Errors::InvalidGroupId);
                }
                let Some(g) = self.groups.get(id).filter(|g| g.state != GroupState::Dead) else {
                    return dead(
                        if api_version >= FIRST_DESCRIBE_VERSION_WITH_GROUP_ID_NOT_FOUND {
                            Errors::GroupIdNotFound
                        } else {
                            Errors::None
                        },
                    );
                };
                let stable = g.state == GroupState::Stable;
                let protocol = g.protocol_name.clone().unwrap_or_default();
                DescribedGroup {
                    error: Errors::None,
                    group_id: id.clone(),
                    group_state: g.state.name().to_string(),
                    protocol_type: g.protocol_type.clone().unwrap_or_default(),
                    protocol_data: if stable {
                        protocol.clone()
                    } else {
                        String::new()
                    },
                    members: g
                        .members()
                        .map(|m| DescribedMember {
                            member_id: m.member_id.clone(),
                            group_instance_id: m.group_instance_id.clone(),
                            client_id: m.client_id.clone(),
                            client_host: m.client_host.clone(),
                            member_metadata: if stable {
                                m.metadata(&protocol)
                            } else {
                                Default::default()
                            },
                            member_assignment: if stable {
                                m.assignment.clone()
                            } else {
                                Default::default()
                            },
                        })
                        .collect(),
                }
            })
            .collect()
    }

    /// DeleteGroups: Empty groups only; writes tombstones for their offsets and metadata.
    pub fn delete_groups(
        &mut self,
        now_ms: i64,
        group_ids: &[String],
    ) -> GroupResult<Vec<DeletedGroup>> {
        self.begin(now_ms);
        let mut records = Vec::new();
        let mut results = Vec::with_capacity(group_ids.len());
        for id in group_ids {
            if let Some(cg) = self.consumer_groups.get(id) {
                let error = if cg.state() != crate::consumer::ConsumerGroupState::Empty {
                    Errors::NonEmptyGroup
                } else {
                    records.extend(self.offset_tombstones(id));
                    let tombstones = cg.tombstones();
                    for r in tombstones {
                        self.apply_consumer(id, &r);
                        records.push(GroupRecord::Consumer {
                            group: id.clone(),
                            record: r,
                        });
                    }
                    Errors::None
                };
                results.push(DeletedGroup {
                    group_id: id.clone(),
                    error,
                });
                continue;
            }
            let error = match self.groups.get(id) {
                _ if id.is_empty() => Errors::InvalidGroupId,
                None => Errors::GroupIdNotFound,
                Some(g) if g.state == GroupState::Dead => Errors::GroupIdNotFound,
                Some(g) if g.state != GroupState::Empty => Errors::NonEmptyGroup,
                Some(_) => {
                    records.extend(self.offset_tombstones(id));
                    records.push(GroupRecord::GroupMetadata {
                        group: id.clone(),
                        value: None,
                    });
                    Errors::None
                }
            };
            results.push(DeletedGroup {
                group_id: id.clone(),
                error,
            });
        }
        self.finish(records, results)
    }
}
