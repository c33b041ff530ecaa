//! Kafka's `ReplicationControlManager`: topics and partitions, their creation and deletion, ISR
//! changes from leaders (AlterPartition), elections (fencing, unfencing, controlled shutdown,
//! ElectLeaders, the preferred-leader rebalance) and reassignments.

use std::collections::{BTreeMap, BTreeSet};

use josef_protocol::messages::{
    alter_partition_reassignments_response as apr, alter_partition_response as apres,
    create_partitions_response as cpr, create_topics_response as ctr,
    delete_topics_response as dtr, elect_leaders_response as elr,
    list_partition_reassignments_response as lpr,
};
use josef_protocol::messages::{
    AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse, AlterPartitionRequest,
    AlterPartitionResponse, CreatePartitionsRequest, CreatePartitionsResponse, CreateTopicsRequest,
    CreateTopicsResponse, DeleteTopicsRequest, DeleteTopicsResponse, ElectLeadersRequest,
    ElectLeadersResponse, ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse,
};
use josef_protocol::{ErrorCode, StrBytes, Uuid};

use crate::leader_imbalance::brokers_over_threshold;
use crate::records::{ids, ConfigRecord, MetadataRecord, RemoveTopicRecord, TopicRecord};
use crate::{
    ApiError, Controller, ControllerResult, ElectionStrategy, LeaderRecoveryState,
    PartitionChangeBuilder, PartitionRegistration, ReplayError, StripedReplicaPlacer, WriteContext,
    NO_LEADER, NO_LEADER_CHANGE, TOPIC_RESOURCE,
};

/// Most partitions one request may create in a topic (Kafka bounds a user operation to 10 000
/// records, `MAX_RECORDS_PER_USER_OP`).
pub const MAX_PARTITIONS_PER_REQUEST: i32 = 10_000;
/// Most preferred-leader elections per rebalance run (Kafka's `maxElectionsPerImbalance`).
pub const MAX_ELECTIONS_PER_IMBALANCE: usize = 1000;
/// The metadata log's own topic name, which CreateTopics refuses.
pub const CLUSTER_METADATA_TOPIC: &str = "__cluster_metadata";

/// A topic as the controller tracks it (Kafka's `TopicControlInfo`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicInfo {
    /// Name.
    pub name: String,
    /// Id.
    pub id: Uuid,
    /// Partitions by index.
    pub partitions: BTreeMap<i32, PartitionRegistration>,
}

/// A partition: topic id and index.
pub(crate) type PartitionKey = (Uuid, i32);

/// Partitions by broker and by state, kept up to date on replay (Kafka's `BrokersToIsrs` and
/// `imbalancedPartitions`), so fencing, unfencing and the rebalance do not scan every partition.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PartitionIndex {
    in_isr: BTreeMap<i32, BTreeSet<PartitionKey>>,
    leading: BTreeMap<i32, BTreeSet<PartitionKey>>,
    leaderless: BTreeSet<PartitionKey>,
    imbalanced: BTreeSet<PartitionKey>,
    /// Partition counts by preferred replica (the denominators of the per-broker imbalance).
    preferred: BTreeMap<i32, usize>,
}

fn index_set(s: &mut BTreeSet<PartitionKey>, key: PartitionKey, add: bool) {
    if add {
        s.insert(key);
    } else {
        s.remove(&key);
    }
}

fn index_by_broker(
    m: &mut BTreeMap<i32, BTreeSet<PartitionKey>>,
    broker: i32,
    key: PartitionKey,
    add: bool,
) {
    let s = m.entry(broker).or_default();
    index_set(s, key, add);
    if s.is_empty() {
        m.remove(&broker);
    }
}

fn count_by_broker(m: &mut BTreeMap<i32, usize>, broker: i32, add: bool) {
    let n = m.entry(broker).or_default();
    if add {
        *n += 1;
    } else {
        *n = n.saturating_sub(1);
    }
    if *n == 0 {
        m.remove(&broker);
    }
}

impl PartitionIndex {
    /// Adds (`add`) or removes the entries of partition `key` in state `p`.
    fn update(&mut self, key: PartitionKey, p: &PartitionRegistration, add: bool) {
        for &b in &p.isr {
            index_by_broker(&mut self.in_isr, b, key, add);
        }
        if p.leader == NO_LEADER {
            index_set(&mut self.leaderless, key, add);
        } else {
            index_by_broker(&mut self.leading, p.leader, key, add);
        }
        if !p.has_preferred_leader() {
            index_set(&mut self.imbalanced, key, add);
        }
        if let Some(b) = p.preferred_leader() {
            count_by_broker(&mut self.preferred, b, add);
        }
    }
}

/// Topics by id and name, changed only by replay.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ReplicationControlManager {
    pub(crate) topics: BTreeMap<Uuid, TopicInfo>,
    pub(crate) by_name: BTreeMap<String, Uuid>,
    index: PartitionIndex,
}

impl ReplicationControlManager {
    pub(crate) fn topic_by_name(&self, name: &str) -> Option<&TopicInfo> {
        self.by_name.get(name).and_then(|id| self.topics.get(id))
    }

    pub(crate) fn partition(
        &self,
        key: PartitionKey,
    ) -> Option<(&TopicInfo, &PartitionRegistration)> {
        let t = self.topics.get(&key.0)?;
        Some((t, t.partitions.get(&key.1)?))
    }

    pub(crate) fn leads_any(&self, broker: i32) -> bool {
        self.index.leading.contains_key(&broker)
    }

    /// Partitions with `broker` in the ISR.
    pub(crate) fn with_broker_in_isr(&self, broker: i32) -> Vec<PartitionKey> {
        self.index
            .in_isr
            .get(&broker)
            .map_or_else(Vec::new, |s| s.iter().copied().collect())
    }

    /// Partitions without a leader.
    pub(crate) fn leaderless(&self) -> impl Iterator<Item = PartitionKey> + '_ {
        self.index.leaderless.iter().copied()
    }

    /// Partitions whose leader is not the preferred replica (leaderless ones included).
    pub(crate) fn imbalanced(&self) -> impl Iterator<Item = PartitionKey> + '_ {
        self.index.imbalanced.iter().copied()
    }

    /// Partition counts by preferred replica.
    pub(crate) fn preferred_counts(&self) -> &BTreeMap<i32, usize> {
        &self.index.preferred
    }

    /// The preferred replica of partition `key`.
    pub(crate) fn preferred_replica(&self, key: PartitionKey) -> Option<i32> {
        self.partition(key).and_then(|(_, p)| p.preferred_leader())
    }

    /// Partitions `broker` still leads once the partition changes among `records` apply.
    pub(crate) fn led_after(&self, broker: i32, records: &[MetadataRecord]) -> Vec<(String, i32)> {
        let mut led: BTreeSet<PartitionKey> =
            self.index.leading.get(&broker).cloned().unwrap_or_default();
        for r in records {
            if let MetadataRecord::PartitionChange(c) = r {
                if c.leader == broker {
                    led.insert((c.topic_id, c.partition_id));
                } else if c.leader != NO_LEADER_CHANGE {
                    led.remove(&(c.topic_id, c.partition_id));
                }
            }
        }
        led.into_iter()
            .filter_map(|k| self.topics.get(&k.0).map(|t| (t.name.clone(), k.1)))
            .collect()
    }

    pub(crate) fn replay_topic(&mut self, r: &TopicRecord) {
        self.by_name.insert(r.name.to_string(), r.topic_id);
        self.topics.insert(
            r.topic_id,
            TopicInfo {
                name: r.name.to_string(),
                id: r.topic_id,
                partitions: BTreeMap::new(),
            },
        );
    }

    pub(crate) fn replay_partition(
        &mut self,
        r: &josef_protocol::metadata_records::PartitionRecord,
    ) -> Result<(), ReplayError> {
        let t = self
            .topics
            .get_mut(&r.topic_id)
            .ok_or(ReplayError::UnknownTopic(r.topic_id))?;
        let key = (r.topic_id, r.partition_id);
        let p = PartitionRegistration::from_record(r)?;
        if let Some(old) = t.partitions.insert(r.partition_id, p.clone()) {
            self.index.update(key, &old, false);
        }
        self.index.update(key, &p, true);
        Ok(())
    }

    pub(crate) fn replay_partition_change(
        &mut self,
        r: &josef_protocol::metadata_records::PartitionChangeRecord,
    ) -> Result<(), ReplayError> {
        let t = self
            .topics
            .get_mut(&r.topic_id)
            .ok_or(ReplayError::UnknownTopic(r.topic_id))?;
        let p = t
            .partitions
            .get_mut(&r.partition_id)
            .ok_or(ReplayError::UnknownPartition {
                topic: r.topic_id,
                partition: r.partition_id,
            })?;
        let key = (r.topic_id, r.partition_id);
        let next = p.merge(r)?;
        self.index.update(key, p, false);
        *p = next;
        self.index.update(key, p, true);
        Ok(())
    }

    pub(crate) fn replay_remove_topic(&mut self, id: Uuid) -> Result<TopicInfo, ReplayError> {
        let t = self
            .topics
            .remove(&id)
            .ok_or(ReplayError::UnknownTopic(id))?;
        self.by_name.remove(&t.name);
        for (&i, p) in &t.partitions {
            self.index.update((id, i), p, false);
        }
        Ok(t)
    }
}

/// Kafka's legal topic names (`Topic.validate`).
pub(crate) fn validate_topic_name(name: &str) -> Result<(), ApiError> {
    let legal_chars = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    let why = match () {
        _ if name.is_empty() => "it can't be empty",
        _ if name == "." || name == ".." => "it cannot be \".\" or \"..\"",
        _ if name.len() > 249 => "it can't be longer than 249 characters",
        _ if !legal_chars => {
            "it contains a character other than ASCII alphanumerics, '.', '_' and '-'"
        }
        _ => return Ok(()),
    };
    Err(ApiError::new(
        ErrorCode::InvalidTopicException,
        format!("Topic name \"{name}\" is illegal, {why}"),
    ))
}

fn collision_key(name: &str) -> String {
    name.replace('.', "_")
}

fn has_duplicates(v: &[i32]) -> Option<i32> {
    let mut seen = BTreeSet::new();
    v.iter().copied().find(|b| !seen.insert(*b))
}

fn without(v: &[i32], drop: &[i32]) -> Vec<i32> {
    v.iter().copied().filter(|r| !drop.contains(r)).collect()
}

impl Controller {
    fn acceptable_leader(&self, remove: i32, add: i32) -> impl Fn(i32) -> bool + '_ {
        move |r| r != remove && (r == add || self.cluster.is_active(r))
    }

    /// Kafka's `generateLeaderAndIsrUpdates`: for each partition of `keys`, `remove` leaves the
    /// target ISR and may not lead, `add` may lead even while still fenced.
    fn generate_leader_and_isr_updates(
        &self,
        remove: i32,
        add: i32,
        election: ElectionStrategy,
        keys: impl IntoIterator<Item = PartitionKey>,
        records: &mut Vec<MetadataRecord>,
    ) {
        let acceptable = self.acceptable_leader(remove, add);
        for key in keys {
            let Some((t, p)) = self.replication.partition(key) else {
                continue;
            };
            let change = PartitionChangeBuilder::new(p, t.id, key.1, &acceptable)
                .set_election(election)
                .set_allow_unclean(self.unclean_leader_election_enabled(&t.name))
                .set_target_isr(without(&p.isr, &[remove]))
                .build();
            records.extend(change.map(MetadataRecord::PartitionChange));
        }
    }

    /// Drops `broker` from every ISR, re-electing where it led (never emptying an ISR).
    pub(crate) fn remove_from_isrs(&self, broker: i32, records: &mut Vec<MetadataRecord>) {
        self.generate_leader_and_isr_updates(
            broker,
            NO_LEADER,
            ElectionStrategy::OfflinePartitionLeaderElectionStrategy,
            self.replication.with_broker_in_isr(broker),
            records,
        );
    }

    /// Elections of the leaderless partitions `broker` (being unfenced) may lead.
    pub(crate) fn elect_for_leaderless(&self, broker: i32, records: &mut Vec<MetadataRecord>) {
        let keys: Vec<PartitionKey> = self
            .replication
            .leaderless()
            .filter(|&k| {
                self.replication
                    .partition(k)
                    .is_some_and(|(_, p)| p.replicas.contains(&broker))
            })
            .collect();
        self.generate_leader_and_isr_updates(
            NO_LEADER,
            broker,
            ElectionStrategy::OfflinePartitionLeaderElectionStrategy,
            keys,
            records,
        );
    }

    /// Moves leaderships and ISR membership off a broker entering controlled shutdown.
    pub(crate) fn move_off_for_controlled_shutdown(
        &self,
        broker: i32,
        records: &mut Vec<MetadataRecord>,
    ) {
        self.generate_leader_and_isr_updates(
            broker,
            NO_LEADER,
            ElectionStrategy::ControlledShutdownPartitionLeaderElectionStrategy,
            self.replication.with_broker_in_isr(broker),
            records,
        );
    }

    /// Kafka's `buildPartitionRegistration`: ISR = the active replicas in order, leader = the first.
    fn new_partition(&self, replicas: Vec<i32>) -> Option<PartitionRegistration> {
        let isr: Vec<i32> = replicas
            .iter()
            .copied()
            .filter(|&r| self.cluster.is_active(r))
            .collect();
        let leader = *isr.first()?;
        Some(PartitionRegistration {
            replicas,
            isr,
            leader,
            ..Default::default()
        })
    }

    /// Kafka's `validateManualPartitionAssignment` for one replica list.
    fn validate_manual_assignment(
        &self,
        replicas: &[i32],
        replication_factor: Option<usize>,
    ) -> Result<(), ApiError> {
        let bad = |m: String| Err(ApiError::new(ErrorCode::InvalidReplicaAssignment, m));
        if replicas.is_empty() {
            return bad("The manual partition assignment includes an empty replica list.".into());
        }
        if let Some(b) = replicas
            .iter()
            .find(|b| !self.cluster.brokers.contains_key(b))
        {
            return bad(format!(
                "The manual partition assignment includes broker {b}, but no such broker is registered."
            ));
        }
        if let Some(b) = has_duplicates(replicas) {
            return bad(format!(
                "The manual partition assignment includes the broker {b} more than once."
            ));
        }
        if let Some(rf) = replication_factor {
            if replicas.len() != rf {
                return bad(format!(
                    "The manual partition assignment includes a partition with {} replica(s), but this is not consistent with previous partitions, which have {rf} replica(s).",
                    replicas.len()
                ));
            }
        }
        Ok(())
    }

    /// New partitions from a manual assignment (`lists[i]` for partition `first + i`).
    fn manual_partitions(
        &self,
        lists: &[Vec<i32>],
        first: i32,
        replication_factor: Option<usize>,
    ) -> Result<Vec<PartitionRegistration>, ApiError> {
        let rf = replication_factor.or_else(|| lists.first().map(Vec::len));
        lists
            .iter()
            .enumerate()
            .map(|(i, r)| {
                self.validate_manual_assignment(r, rf)?;
                self.new_partition(r.clone()).ok_or_else(|| {
                    ApiError::new(
                        ErrorCode::InvalidReplicaAssignment,
                        format!(
                            "All brokers specified in the manual partition assignment for partition {} are fenced or in controlled shutdown.",
                            first + i as i32
                        ),
                    )
                })
            })
            .collect()
    }

    /// New partitions placed by [`StripedReplicaPlacer`].
    fn placed_partitions(
        &mut self,
        count: i32,
        replication_factor: i32,
    ) -> Result<Vec<PartitionRegistration>, ApiError> {
        let usable = self.cluster.usable_brokers();
        let placement = StripedReplicaPlacer::place(
            &mut self.rng,
            count as usize,
            replication_factor,
            &usable,
        )?;
        placement
            .into_iter()
            .map(|r| {
                self.new_partition(r).ok_or_else(|| {
                    ApiError::new(
                        ErrorCode::InvalidReplicationFactor,
                        "Unable to replicate the partition: no active broker was placed",
                    )
                })
            })
            .collect()
    }

    fn new_topic_id(&mut self) -> Uuid {
        loop {
            let id = self.rng.topic_id();
            if !self.replication.topics.contains_key(&id) {
                return id;
            }
        }
    }

    /// CreateTopics (API 19; Kafka's `ReplicationControlManager.createTopics`). Per topic, the first
    /// failure wins: INVALID_REQUEST (duplicate in the request, `__cluster_metadata`, manual
    /// assignment with a partition count or factor other than −1), INVALID_TOPIC_EXCEPTION (illegal
    /// name, '.'/'_' collision), TOPIC_ALREADY_EXISTS, INVALID_CONFIG, INVALID_REPLICA_ASSIGNMENT,
    /// INVALID_REPLICATION_FACTOR, INVALID_PARTITIONS. Each created topic is a TopicRecord, its
    /// ConfigRecords and its PartitionRecords; `validate_only` writes nothing.
    pub fn create_topics(
        &mut self,
        _ctx: WriteContext,
        req: &CreateTopicsRequest,
        _version: i16,
    ) -> ControllerResult<CreateTopicsResponse> {
        let failed = |name: &StrBytes, e: ApiError| ctr::CreatableTopicResult {
            name: name.clone(),
            error_code: e.code(),
            error_message: Some(e.message.into()),
            num_partitions: -1,
            replication_factor: -1,
            configs: None,
            ..Default::default()
        };
        let mut response = CreateTopicsResponse::default();
        if let Err(e) = self.check_active() {
            response.topics = req
                .topics
                .iter()
                .map(|t| failed(&t.name, e.clone()))
                .collect();
            return ControllerResult::response(response);
        }
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for t in &req.topics {
            *counts.entry(t.name.as_str()).or_default() += 1;
        }
        let mut collisions: BTreeMap<String, String> = self
            .replication
            .by_name
            .keys()
            .map(|n| (collision_key(n), n.clone()))
            .collect();
        let mut records = Vec::new();
        for t in &req.topics {
            match self.create_topic(t, counts[t.name.as_str()] > 1, &mut collisions) {
                Ok((result, topic_records)) => {
                    if !req.validate_only {
                        records.extend(topic_records);
                    }
                    response.topics.push(result);
                }
                Err(e) => response.topics.push(failed(&t.name, e)),
            }
        }
        ControllerResult::of(records, response)
    }

    fn create_topic(
        &mut self,
        t: &josef_protocol::messages::create_topics_request::CreatableTopic,
        duplicate: bool,
        collisions: &mut BTreeMap<String, String>,
    ) -> Result<(ctr::CreatableTopicResult, Vec<MetadataRecord>), ApiError> {
        let name = t.name.as_str();
        if duplicate {
            return Err(ApiError::new(
                ErrorCode::InvalidRequest,
                "Duplicate topic name.",
            ));
        }
        if name == CLUSTER_METADATA_TOPIC {
            return Err(ApiError::new(
                ErrorCode::InvalidRequest,
                format!("Creation of internal topic {name} is prohibited."),
            ));
        }
        validate_topic_name(name)?;
        if self.replication.by_name.contains_key(name) {
            return Err(ApiError::new(
                ErrorCode::TopicAlreadyExists,
                format!("Topic '{name}' already exists."),
            ));
        }
        if let Some(other) = collisions.get(&collision_key(name)) {
            return Err(ApiError::new(
                ErrorCode::InvalidTopicException,
                format!("Topic '{name}' collides with existing topic: {other}"),
            ));
        }
        let mut configs: BTreeMap<String, String> = BTreeMap::new();
        for c in &t.configs {
            let Some(value) = &c.value else {
                return Err(ApiError::new(
                    ErrorCode::InvalidConfig,
                    format!("Null value not supported for topic configs: {}", c.name),
                ));
            };
            crate::configuration_control::validate_topic_config(&c.name, value)?;
            configs.insert(c.name.to_string(), value.to_string());
        }
        let partitions = if !t.assignments.is_empty() {
            if t.replication_factor != -1 {
                return Err(ApiError::new(
                    ErrorCode::InvalidRequest,
                    "A manual partition assignment was specified, but replication factor was not set to -1.",
                ));
            }
            if t.num_partitions != -1 {
                return Err(ApiError::new(
                    ErrorCode::InvalidRequest,
                    "A manual partition assignment was specified, but numPartitions was not set to -1.",
                ));
            }
            let mut by_index: BTreeMap<i32, Vec<i32>> = BTreeMap::new();
            for a in &t.assignments {
                if by_index
                    .insert(a.partition_index, a.broker_ids.to_vec())
                    .is_some()
                {
                    return Err(ApiError::new(
                        ErrorCode::InvalidReplicaAssignment,
                        format!(
                            "Partition {} appears more than once in the assignment.",
                            a.partition_index
                        ),
                    ));
                }
            }
            if by_index.keys().copied().ne(0..by_index.len() as i32) {
                return Err(ApiError::new(
                    ErrorCode::InvalidReplicaAssignment,
                    "Partition assignments must name partitions 0 to N-1, each once.",
                ));
            }
            let lists: Vec<Vec<i32>> = by_index.into_values().collect();
            self.manual_partitions(&lists, 0, None)?
        } else {
            if t.replication_factor < -1 || t.replication_factor == 0 {
                return Err(ApiError::new(
                    ErrorCode::InvalidReplicationFactor,
                    "Replication factor must be larger than 0, or -1 to use the default value.",
                ));
            }
            if t.num_partitions < -1 || t.num_partitions == 0 {
                return Err(ApiError::new(
                    ErrorCode::InvalidPartitions,
                    "Number of partitions was set to an invalid non-positive value.",
                ));
            }
            let count = if t.num_partitions == -1 {
                self.config.num_partitions
            } else {
                t.num_partitions
            };
            if count > MAX_PARTITIONS_PER_REQUEST {
                return Err(ApiError::new(
                    ErrorCode::InvalidPartitions,
                    format!("A request may create at most {MAX_PARTITIONS_PER_REQUEST} partitions of a topic."),
                ));
            }
            let rf = if t.replication_factor == -1 {
                self.config.default_replication_factor
            } else {
                t.replication_factor
            };
            self.placed_partitions(count, i32::from(rf))?
        };
        let id = self.new_topic_id();
        collisions.insert(collision_key(name), name.to_string());
        let mut records = vec![MetadataRecord::Topic(TopicRecord {
            name: t.name.clone(),
            topic_id: id,
            ..Default::default()
        })];
        for (k, v) in &configs {
            records.push(MetadataRecord::Config(ConfigRecord {
                resource_type: TOPIC_RESOURCE,
                resource_name: t.name.clone(),
                name: k.as_str().into(),
                value: Some(v.as_str().into()),
                ..Default::default()
            }));
        }
        for (i, p) in partitions.iter().enumerate() {
            records.push(MetadataRecord::Partition(p.to_record(id, i as i32)));
        }
        let result = ctr::CreatableTopicResult {
            name: t.name.clone(),
            topic_id: id,
            num_partitions: partitions.len() as i32,
            replication_factor: partitions.first().map_or(0, |p| p.replicas.len()) as i16,
            configs: Some(
                configs
                    .into_iter()
                    .map(|(k, v)| ctr::CreatableTopicConfigs {
                        name: k.into(),
                        value: Some(v.into()),
                        config_source: 1,
                        ..Default::default()
                    })
                    .collect(),
            ),
            ..Default::default()
        };
        Ok((result, records))
    }

    /// DeleteTopics (API 20): by name (v0–5 `topic_names`, or `topics` entries with a name) or by
    /// id (v6+). UNKNOWN_TOPIC_OR_PARTITION / UNKNOWN_TOPIC_ID for unknown topics, INVALID_REQUEST
    /// for an entry with both name and id or a topic named twice, and with `delete.topic.enable`
    /// off, every topic fails (INVALID_REQUEST below v3, TOPIC_DELETION_DISABLED from v3). One
    /// RemoveTopicRecord per deleted topic, in one batch.
    pub fn delete_topics(
        &mut self,
        _ctx: WriteContext,
        req: &DeleteTopicsRequest,
        version: i16,
    ) -> ControllerResult<DeleteTopicsResponse> {
        // (name, id) as asked.
        let asked: Vec<(Option<StrBytes>, Uuid)> = req
            .topic_names
            .iter()
            .map(|n| (Some(n.clone()), Uuid::ZERO))
            .chain(req.topics.iter().map(|t| (t.name.clone(), t.topic_id)))
            .collect();
        let result =
            |name: Option<StrBytes>, id: Uuid, e: Option<ApiError>| dtr::DeletableTopicResult {
                name,
                topic_id: id,
                error_code: e.as_ref().map_or(0, ApiError::code),
                error_message: e.map(|e| e.message.into()),
                ..Default::default()
            };
        let whole_request_error = if let Err(e) = self.check_active() {
            Some(e)
        } else if !self.config.delete_topic_enable {
            Some(ApiError::new(
                if version < 3 {
                    ErrorCode::InvalidRequest
                } else {
                    ErrorCode::TopicDeletionDisabled
                },
                "Topic deletion is disabled.",
            ))
        } else {
            None
        };
        if let Some(e) = whole_request_error {
            let responses = asked
                .into_iter()
                .map(|(n, id)| result(n, id, Some(e.clone())))
                .collect();
            return ControllerResult::response(DeleteTopicsResponse {
                responses,
                ..Default::default()
            });
        }
        let resolved: Vec<Result<Uuid, ApiError>> = asked
            .iter()
            .map(|(name, id)| match name {
                Some(_) if !id.is_zero() => Err(ApiError::new(
                    ErrorCode::InvalidRequest,
                    "A topic must be named by name or by id, not both.",
                )),
                Some(n) => self
                    .replication
                    .by_name
                    .get(n.as_str())
                    .copied()
                    .ok_or_else(|| {
                        ApiError::new(
                            ErrorCode::UnknownTopicOrPartition,
                            format!("No such topic as {n}"),
                        )
                    }),
                None => self
                    .replication
                    .topics
                    .contains_key(id)
                    .then_some(*id)
                    .ok_or_else(|| {
                        ApiError::new(ErrorCode::UnknownTopicId, format!("No such topic id {id}"))
                    }),
            })
            .collect();
        let mut counts: BTreeMap<Uuid, usize> = BTreeMap::new();
        for id in resolved.iter().flatten() {
            *counts.entry(*id).or_default() += 1;
        }
        let mut records = Vec::new();
        let mut responses = Vec::new();
        for ((name, asked_id), r) in asked.into_iter().zip(resolved) {
            match r {
                Err(e) => responses.push(result(name, asked_id, Some(e))),
                Ok(id) if counts[&id] > 1 => responses.push(result(
                    name,
                    asked_id,
                    Some(ApiError::new(
                        ErrorCode::InvalidRequest,
                        "Duplicate topic in the request.",
                    )),
                )),
                Ok(id) => {
                    let topic_name = self.replication.topics.get(&id).map(|t| t.name.clone());
                    records.push(MetadataRecord::RemoveTopic(RemoveTopicRecord {
                        topic_id: id,
                        ..Default::default()
                    }));
                    responses.push(result(topic_name.map(Into::into), id, None));
                }
            }
        }
        ControllerResult::of(
            records,
            DeleteTopicsResponse {
                responses,
                ..Default::default()
            },
        )
    }

    /// CreatePartitions (API 37; Kafka's `createPartitions`): the topic's replication factor is
    /// kept; INVALID_REQUEST for a topic named twice, UNKNOWN_TOPIC_OR_PARTITION,
    /// INVALID_PARTITIONS (no increase), INVALID_REPLICA_ASSIGNMENT (wrong number of assignments or
    /// a bad one), INVALID_REPLICATION_FACTOR (placement). `validate_only` writes nothing.
    pub fn create_partitions(
        &mut self,
        _ctx: WriteContext,
        req: &CreatePartitionsRequest,
    ) -> ControllerResult<CreatePartitionsResponse> {
        let result = |name: &StrBytes, e: Option<ApiError>| cpr::CreatePartitionsTopicResult {
            name: name.clone(),
            error_code: e.as_ref().map_or(0, ApiError::code),
            error_message: e.map(|e| e.message.into()),
            ..Default::default()
        };
        if let Err(e) = self.check_active() {
            let results = req
                .topics
                .iter()
                .map(|t| result(&t.name, Some(e.clone())))
                .collect();
            return ControllerResult::response(CreatePartitionsResponse {
                results,
                ..Default::default()
            });
        }
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for t in &req.topics {
            *counts.entry(t.name.as_str()).or_default() += 1;
        }
        let mut records = Vec::new();
        let mut results = Vec::new();
        for t in &req.topics {
            let outcome = if counts[t.name.as_str()] > 1 {
                Err(ApiError::new(
                    ErrorCode::InvalidRequest,
                    "Duplicate topic name.",
                ))
            } else {
                self.create_partitions_of(t)
            };
            match outcome {
                Ok(rs) => {
                    if !req.validate_only {
                        records.extend(rs);
                    }
                    results.push(result(&t.name, None));
                }
                Err(e) => results.push(result(&t.name, Some(e))),
            }
        }
        ControllerResult::of(
            records,
            CreatePartitionsResponse {
                results,
                ..Default::default()
            },
        )
    }

    fn create_partitions_of(
        &mut self,
        t: &josef_protocol::messages::create_partitions_request::CreatePartitionsTopic,
    ) -> Result<Vec<MetadataRecord>, ApiError> {
        let Some(topic) = self.replication.topic_by_name(t.name.as_str()) else {
            return Err(ApiError::new(
                ErrorCode::UnknownTopicOrPartition,
                format!("No such topic as {}", t.name),
            ));
        };
        let id = topic.id;
        let current = topic.partitions.len() as i32;
        // The replication factor of partition 0, not counting replicas a reassignment removes.
        let rf = topic.partitions.values().next().map_or(1, |p| {
            (p.replicas.len() - p.removing_replicas.len().min(p.replicas.len())).max(1)
        });
        if t.count < current {
            return Err(ApiError::new(
                ErrorCode::InvalidPartitions,
                format!("The topic {} currently has {current} partition(s); {} would not be an increase.", t.name, t.count),
            ));
        }
        if t.count == current {
            return Err(ApiError::new(
                ErrorCode::InvalidPartitions,
                format!("Topic already has {current} partition(s)."),
            ));
        }
        let added = t.count - current;
        if added > MAX_PARTITIONS_PER_REQUEST {
            return Err(ApiError::new(
                ErrorCode::InvalidPartitions,
                format!("A request may create at most {MAX_PARTITIONS_PER_REQUEST} partitions of a topic."),
            ));
        }
        let partitions = match &t.assignments {
            Some(a) => {
                if a.len() != added as usize {
                    return Err(ApiError::new(
                        ErrorCode::InvalidReplicaAssignment,
                        format!("Attempted to add {added} additional partition(s), but only {} assignment(s) were specified.", a.len()),
                    ));
                }
                let lists: Vec<Vec<i32>> = a.iter().map(|x| x.broker_ids.to_vec()).collect();
                self.manual_partitions(&lists, current, Some(rf))?
            }
            None => self.placed_partitions(added, rf as i32)?,
        };
        Ok(partitions
            .iter()
            .enumerate()
            .map(|(i, p)| MetadataRecord::Partition(p.to_record(id, current + i as i32)))
            .collect())
    }

    /// AlterPartition (API 56; Kafka's `alterPartition` and `validateAlterPartitionData`): ISR
    /// changes proposed by partition leaders. STALE_BROKER_EPOCH for the whole request on a wrong
    /// sender epoch; per partition, first failure wins: UNKNOWN_TOPIC_ID (v2+) /
    /// UNKNOWN_TOPIC_OR_PARTITION, NOT_CONTROLLER (epochs ahead of ours), FENCED_LEADER_EPOCH,
    /// INVALID_REQUEST (not the leader), INVALID_UPDATE_VERSION (stale partition epoch),
    /// INVALID_REQUEST (ISR not a duplicate-free subset of the replicas holding the leader, bad
    /// recovery state), INELIGIBLE_REPLICA (v2+; OPERATION_NOT_ATTEMPTED below) for a member that
    /// is unregistered, fenced, shutting down or at another broker epoch. Success answers the new
    /// state; a completed reassignment that moved leadership away answers NEW_LEADER_ELECTED
    /// (FENCED_LEADER_EPOCH below v2). A partition named twice gets INVALID_REQUEST the second time.
    pub fn alter_partition(
        &mut self,
        _ctx: WriteContext,
        req: &AlterPartitionRequest,
        version: i16,
    ) -> ControllerResult<AlterPartitionResponse> {
        let top = |e: ApiError| {
            ControllerResult::response(AlterPartitionResponse {
                error_code: e.code(),
                ..Default::default()
            })
        };
        if let Err(e) = self.check_active() {
            return top(e);
        }
        if let Err(e) = self
            .cluster
            .check_broker_epoch(req.broker_id, req.broker_epoch)
        {
            return top(e);
        }
        let mut response = AlterPartitionResponse::default();
        let mut records = Vec::new();
        let mut seen: BTreeSet<(Uuid, i32)> = BTreeSet::new();
        for td in &req.topics {
            let topic_id = if version > 1 {
                Some(td.topic_id).filter(|id| self.replication.topics.contains_key(id))
            } else {
                self.replication
                    .by_name
                    .get(td.topic_name.as_str())
                    .copied()
            };
            let mut out = apres::TopicData {
                topic_name: td.topic_name.clone(),
                topic_id: td.topic_id,
                partitions: Vec::new(),
                ..Default::default()
            };
            let error_only = |index: i32, code: ErrorCode| apres::PartitionData {
                partition_index: index,
                error_code: code.code(),
                ..Default::default()
            };
            let Some(topic_id) = topic_id else {
                let code = if version > 1 {
                    ErrorCode::UnknownTopicId
                } else {
                    ErrorCode::UnknownTopicOrPartition
                };
                out.partitions = td
                    .partitions
                    .iter()
                    .map(|p| error_only(p.partition_index, code))
                    .collect();
                response.topics.push(out);
                continue;
            };
            for pd in &td.partitions {
                if !seen.insert((topic_id, pd.partition_index)) {
                    out.partitions
                        .push(error_only(pd.partition_index, ErrorCode::InvalidRequest));
                    continue;
                }
                let new_isr: Vec<(i32, i64)> = if version >= 3 || !pd.new_isr_with_epochs.is_empty()
                {
                    pd.new_isr_with_epochs
                        .iter()
                        .map(|b| (b.broker_id, b.broker_epoch))
                        .collect()
                } else {
                    pd.new_isr.iter().map(|&b| (b, -1)).collect()
                };
                match self.alter_one_partition(req.broker_id, topic_id, pd, &new_isr, version) {
                    Err(code) => out.partitions.push(error_only(pd.partition_index, code)),
                    Ok((change, state)) => {
                        if let Some(c) = change {
                            records.push(MetadataRecord::PartitionChange(c));
                        }
                        if state.leader != req.broker_id {
                            let code = if version > 1 {
                                ErrorCode::NewLeaderElected
                            } else {
                                ErrorCode::FencedLeaderEpoch
                            };
                            out.partitions.push(error_only(pd.partition_index, code));
                        } else {
                            out.partitions.push(apres::PartitionData {
                                partition_index: pd.partition_index,
                                error_code: 0,
                                leader_id: state.leader,
                                leader_epoch: state.leader_epoch,
                                isr: ids(&state.isr),
                                leader_recovery_state: state.leader_recovery_state.value(),
                                partition_epoch: state.partition_epoch,
                                ..Default::default()
                            });
                        }
                    }
                }
            }
            response.topics.push(out);
        }
        ControllerResult::of(records, response)
    }

    #[allow(clippy::type_complexity)]
    fn alter_one_partition(
        &self,
        sender: i32,
        topic_id: Uuid,
        pd: &josef_protocol::messages::alter_partition_request::PartitionData,
        new_isr: &[(i32, i64)],
        version: i16,
    ) -> Result<
        (
            Option<josef_protocol::metadata_records::PartitionChangeRecord>,
            PartitionRegistration,
        ),
        ErrorCode,
    > {
        let topic = self
            .replication
            .topics
            .get(&topic_id)
            .ok_or(ErrorCode::UnknownTopicOrPartition)?;
        let p = topic
            .partitions
            .get(&pd.partition_index)
            .ok_or(ErrorCode::UnknownTopicOrPartition)?;
        if pd.leader_epoch > p.leader_epoch || pd.partition_epoch > p.partition_epoch {
            return Err(ErrorCode::NotController);
        }
        if pd.leader_epoch < p.leader_epoch {
            return Err(ErrorCode::FencedLeaderEpoch);
        }
        if sender != p.leader {
            return Err(ErrorCode::InvalidRequest);
        }
        if pd.partition_epoch < p.partition_epoch {
            return Err(ErrorCode::InvalidUpdateVersion);
        }
        let isr: Vec<i32> = new_isr.iter().map(|&(b, _)| b).collect();
        if has_duplicates(&isr).is_some()
            || !isr.iter().all(|b| p.replicas.contains(b))
            || !isr.contains(&p.leader)
        {
            return Err(ErrorCode::InvalidRequest);
        }
        let recovery = LeaderRecoveryState::from_value(pd.leader_recovery_state)
            .map_err(|_| ErrorCode::InvalidRequest)?;
        if recovery == LeaderRecoveryState::Recovering && isr.len() > 1 {
            return Err(ErrorCode::InvalidRequest);
        }
        if p.leader_recovery_state == LeaderRecoveryState::Recovered
            && recovery == LeaderRecoveryState::Recovering
        {
            return Err(ErrorCode::InvalidRequest);
        }
        let ineligible = new_isr.iter().any(|&(b, epoch)| {
            self.cluster.brokers.get(&b).map_or(true, |r| {
                !r.is_active() || (epoch != -1 && epoch != r.epoch)
            })
        });
        if ineligible {
            return Err(if version >= 2 {
                ErrorCode::IneligibleReplica
            } else {
                ErrorCode::OperationNotAttempted
            });
        }
        let acceptable = self.acceptable_leader(NO_LEADER, NO_LEADER);
        let change = PartitionChangeBuilder::new(p, topic_id, pd.partition_index, &acceptable)
            .set_allow_unclean(self.unclean_leader_election_enabled(&topic.name))
            .set_target_isr(isr)
            .set_target_leader_recovery_state(recovery)
            .build();
        let state = match &change {
            Some(c) => p.merge(c).map_err(|_| ErrorCode::UnknownServerError)?,
            None => p.clone(),
        };
        Ok((change, state))
    }

    /// ElectLeaders (API 43; Kafka's `electLeaders`): election_type 0 PREFERRED, 1 UNCLEAN, else
    /// INVALID_REQUEST for the request. `topic_partitions` null = every partition (and the answer
    /// then leaves out ELECTION_NOT_NEEDED). Per partition: UNKNOWN_TOPIC_OR_PARTITION,
    /// ELECTION_NOT_NEEDED (preferred already leads / unclean with a leader),
    /// PREFERRED_LEADER_NOT_AVAILABLE / ELIGIBLE_LEADERS_NOT_AVAILABLE when no change is possible,
    /// else NONE. An UNCLEAN request ignores the topic config.
    pub fn elect_leaders(
        &mut self,
        _ctx: WriteContext,
        req: &ElectLeadersRequest,
        version: i16,
    ) -> ControllerResult<ElectLeadersResponse> {
        let top = |e: ApiError| {
            ControllerResult::response(ElectLeadersResponse {
                error_code: e.code(),
                ..Default::default()
            })
        };
        if let Err(e) = self.check_active() {
            return top(e);
        }
        let election_type = if version == 0 { 0 } else { req.election_type };
        let unclean = match election_type {
            0 => false,
            1 => true,
            t => {
                return top(ApiError::new(
                    ErrorCode::InvalidRequest,
                    format!("Unknown election type {t}"),
                ))
            }
        };
        let all = req.topic_partitions.is_none();
        let asked: Vec<(String, Vec<i32>)> = match &req.topic_partitions {
            Some(tps) => tps
                .iter()
                .map(|t| (t.topic.to_string(), t.partitions.to_vec()))
                .collect(),
            None => self
                .replication
                .topics
                .values()
                .map(|t| (t.name.clone(), t.partitions.keys().copied().collect()))
                .collect(),
        };
        let mut records = Vec::new();
        let mut done: BTreeMap<(String, i32), ErrorCode> = BTreeMap::new();
        let mut response = ElectLeadersResponse::default();
        for (topic, partitions) in asked {
            let mut result = elr::ReplicaElectionResult {
                topic: topic.as_str().into(),
                ..Default::default()
            };
            for p in partitions {
                let key = (topic.clone(), p);
                let code = match done.get(&key) {
                    Some(&c) => c,
                    None => {
                        let c = self.elect_leader(&topic, p, unclean, &mut records);
                        done.insert(key, c);
                        c
                    }
                };
                if all && code == ErrorCode::ElectionNotNeeded {
                    continue;
                }
                result.partition_result.push(elr::PartitionResult {
                    partition_id: p,
                    error_code: code.code(),
                    error_message: (code != ErrorCode::None).then(|| code.name().into()),
                    ..Default::default()
                });
            }
            if !all || !result.partition_result.is_empty() {
                response.replica_election_results.push(result);
            }
        }
        ControllerResult::of(records, response)
    }

    fn elect_leader(
        &self,
        topic: &str,
        partition: i32,
        unclean: bool,
        records: &mut Vec<MetadataRecord>,
    ) -> ErrorCode {
        let Some(t) = self.replication.topic_by_name(topic) else {
            return ErrorCode::UnknownTopicOrPartition;
        };
        let Some(p) = t.partitions.get(&partition) else {
            return ErrorCode::UnknownTopicOrPartition;
        };
        if (!unclean && p.has_preferred_leader()) || (unclean && p.has_leader()) {
            return ErrorCode::ElectionNotNeeded;
        }
        let acceptable = self.acceptable_leader(NO_LEADER, NO_LEADER);
        let election = if unclean {
            ElectionStrategy::OfflinePartitionLeaderElectionStrategy
        } else {
            ElectionStrategy::PreferredReplicaPartitionLeaderElectionStrategy
        };
        match PartitionChangeBuilder::new(p, t.id, partition, &acceptable)
            .set_election(election)
            .set_allow_unclean(unclean)
            .build()
        {
            Some(c) => {
                records.push(MetadataRecord::PartitionChange(c));
                ErrorCode::None
            }
            None if unclean => ErrorCode::EligibleLeadersNotAvailable,
            None => ErrorCode::PreferredLeaderNotAvailable,
        }
    }

    /// Whether any partition's leader is not its preferred replica (Kafka's
    /// `imbalancedPartitions` is non-empty).
    pub(crate) fn has_imbalanced_partitions(&self) -> bool {
        self.replication.imbalanced().next().is_some()
    }

    /// Kafka's `maybeBalancePartitionLeaders` with the ZooKeeper-era controller's per-broker
    /// threshold (`checkAndTriggerAutoLeaderRebalance`): up to [`MAX_ELECTIONS_PER_IMBALANCE`]
    /// preferred elections, only of partitions whose preferred replica is a broker with an
    /// imbalance ratio above `leader_imbalance_per_broker_percentage` (`leader_imbalance.rs`)
    /// and is active and in the ISR
    /// (`canPreferredReplicaBeLeader`); the flag says the cap was hit.
    pub(crate) fn maybe_balance_partition_leaders(&self) -> (Vec<MetadataRecord>, bool) {
        let rc = &self.replication;
        let over = brokers_over_threshold(
            rc.preferred_counts(),
            rc.imbalanced().filter_map(|k| rc.preferred_replica(k)),
            self.config.leader_imbalance_per_broker_percentage,
        );
        let candidates = rc.imbalanced().filter(|&k| {
            rc.partition(k).is_some_and(|(_, p)| {
                p.preferred_leader().is_some_and(|b| {
                    over.contains(&b) && p.isr.contains(&b) && self.cluster.is_active(b)
                })
            })
        });
        self.bounded_elections(
            candidates,
            ElectionStrategy::PreferredReplicaPartitionLeaderElectionStrategy,
            false,
        )
    }

    /// Elections of the partitions of `keys`, at most [`MAX_ELECTIONS_PER_IMBALANCE`]; the flag
    /// says the cap was hit.
    fn bounded_elections(
        &self,
        keys: impl Iterator<Item = PartitionKey>,
        election: ElectionStrategy,
        allow_unclean: bool,
    ) -> (Vec<MetadataRecord>, bool) {
        let acceptable = self.acceptable_leader(NO_LEADER, NO_LEADER);
        let mut records = Vec::new();
        for key in keys {
            if records.len() >= MAX_ELECTIONS_PER_IMBALANCE {
                return (records, true);
            }
            let Some((t, p)) = self.replication.partition(key) else {
                continue;
            };
            let change = PartitionChangeBuilder::new(p, t.id, key.1, &acceptable)
                .set_election(election)
                .set_allow_unclean(allow_unclean)
                .build();
            records.extend(change.map(MetadataRecord::PartitionChange));
        }
        (records, false)
    }

    fn unclean_electable(&self) -> impl Iterator<Item = PartitionKey> + '_ {
        self.replication.leaderless().filter(|&k| {
            self.replication
                .partition(k)
                .is_some_and(|(t, _)| self.unclean_leader_election_enabled(&t.name))
        })
    }

    /// Whether a leaderless partition's topic allows unclean election.
    pub(crate) fn has_unclean_electable_partitions(&self) -> bool {
        self.unclean_electable().next().is_some()
    }

    /// Kafka's `maybeElectUncleanLeaders`: up to [`MAX_ELECTIONS_PER_IMBALANCE`] elections of
    /// leaderless partitions whose topic allows unclean election (clean first, as ever); the flag
    /// says the cap was hit.
    pub(crate) fn maybe_elect_unclean_leaders(&self) -> (Vec<MetadataRecord>, bool) {
        self.bounded_elections(
            self.unclean_electable(),
            ElectionStrategy::OfflinePartitionLeaderElectionStrategy,
            true,
        )
    }

    /// AlterPartitionReassignments (API 45; Kafka's `alterPartitionReassignments`), one batch for
    /// the request. Per partition: UNKNOWN_TOPIC_OR_PARTITION; a target that is empty, names a
    /// broker twice or an unregistered one → INVALID_REPLICA_ASSIGNMENT; a null target cancels:
    /// NO_REASSIGNMENT_IN_PROGRESS without one, INVALID_REPLICA_ASSIGNMENT if reverting would need
    /// an unclean election that the topic does not allow (or none is possible); a partition named
    /// twice → INVALID_REQUEST. Starting sets replicas = target then the removed ones, adding and
    /// removing; the leader and ISR stay, and the reassignment completes (in any later change, e.g.
    /// the AlterPartition that brings the last target into the ISR) once the ISR holds every target.
    pub fn alter_partition_reassignments(
        &mut self,
        _ctx: WriteContext,
        req: &AlterPartitionReassignmentsRequest,
    ) -> ControllerResult<AlterPartitionReassignmentsResponse> {
        if let Err(e) = self.check_active() {
            return ControllerResult::response(AlterPartitionReassignmentsResponse {
                error_code: e.code(),
                error_message: Some(e.message.into()),
                ..Default::default()
            });
        }
        let mut records = Vec::new();
        let mut seen: BTreeSet<(String, i32)> = BTreeSet::new();
        let mut response = AlterPartitionReassignmentsResponse::default();
        for t in &req.topics {
            let mut out = apr::ReassignableTopicResponse {
                name: t.name.clone(),
                ..Default::default()
            };
            for p in &t.partitions {
                let outcome = if !seen.insert((t.name.to_string(), p.partition_index)) {
                    Err(ApiError::new(
                        ErrorCode::InvalidRequest,
                        "Duplicate partition in the request.",
                    ))
                } else {
                    self.reassign_partition(
                        t.name.as_str(),
                        p.partition_index,
                        p.replicas.as_deref(),
                    )
                };
                let e = match outcome {
                    Ok(change) => {
                        records.extend(change.map(MetadataRecord::PartitionChange));
                        None
                    }
                    Err(e) => Some(e),
                };
                out.partitions.push(apr::ReassignablePartitionResponse {
                    partition_index: p.partition_index,
                    error_code: e.as_ref().map_or(0, ApiError::code),
                    error_message: e.map(|e| e.message.into()),
                    ..Default::default()
                });
            }
            response.responses.push(out);
        }
        ControllerResult::of(records, response)
    }

    fn reassign_partition(
        &self,
        topic: &str,
        partition: i32,
        target: Option<&[i32]>,
    ) -> Result<Option<josef_protocol::metadata_records::PartitionChangeRecord>, ApiError> {
        let unknown = || {
            ApiError::new(
                ErrorCode::UnknownTopicOrPartition,
                format!("Unable to find partition {topic}:{partition}."),
            )
        };
        let t = self.replication.topic_by_name(topic).ok_or_else(unknown)?;
        let p = t.partitions.get(&partition).ok_or_else(unknown)?;
        let acceptable = self.acceptable_leader(NO_LEADER, NO_LEADER);
        let unclean = self.unclean_leader_election_enabled(topic);
        let change = match target {
            None => {
                if !p.is_reassigning() {
                    return Err(ApiError::new(
                        ErrorCode::NoReassignmentInProgress,
                        "No reassignment is in progress for the partition.",
                    ));
                }
                // Kafka's PartitionReassignmentRevert: back to the replicas without the adding ones.
                let replicas = without(&p.replicas, &p.adding_replicas);
                let isr = without(&p.isr, &p.adding_replicas);
                let needs_unclean = isr.is_empty();
                let refuse = || {
                    ApiError::new(
                        ErrorCode::InvalidReplicaAssignment,
                        format!("Unable to revert partition assignment for {topic}:{partition} because it would require an unclean leader election."),
                    )
                };
                if needs_unclean && !unclean {
                    return Err(refuse());
                }
                let change = PartitionChangeBuilder::new(p, t.id, partition, &acceptable)
                    .set_allow_unclean(unclean)
                    .set_target_replicas(replicas)
                    .set_target_isr(isr)
                    .set_target_removing(Vec::new())
                    .set_target_adding(Vec::new())
                    .build();
                if let Some(c) = &change {
                    let next = p.merge(c).map_err(|_| refuse())?;
                    if !next.isr.iter().all(|r| next.replicas.contains(r)) {
                        return Err(refuse());
                    }
                }
                change
            }
            Some(target) => {
                if target.is_empty() {
                    return Err(ApiError::new(
                        ErrorCode::InvalidReplicaAssignment,
                        "The manual partition assignment includes an empty replica list.",
                    ));
                }
                self.validate_manual_assignment(target, None)?;
                let current = &p.replicas;
                let removing = without(current, target);
                let adding = without(target, current);
                let mut replicas = target.to_vec();
                replicas.extend(removing.iter().copied());
                PartitionChangeBuilder::new(p, t.id, partition, &acceptable)
                    .set_target_replicas(replicas)
                    .set_target_removing(removing)
                    .set_target_adding(adding)
                    .build()
            }
        };
        Ok(change)
    }

    /// ListPartitionReassignments (API 46), read only: the reassigning partitions, of every topic
    /// (`topics` null) or of the named ones (unknown names and partitions are left out).
    pub fn list_partition_reassignments(
        &self,
        req: &ListPartitionReassignmentsRequest,
    ) -> ListPartitionReassignmentsResponse {
        if let Err(e) = self.check_active() {
            return ListPartitionReassignmentsResponse {
                error_code: e.code(),
                error_message: Some(e.message.into()),
                ..Default::default()
            };
        }
        let ongoing = |index: i32, p: &PartitionRegistration| lpr::OngoingPartitionReassignment {
            partition_index: index,
            replicas: ids(&p.replicas),
            adding_replicas: ids(&p.adding_replicas),
            removing_replicas: ids(&p.removing_replicas),
            ..Default::default()
        };
        let mut topics = Vec::new();
        let mut push = |t: &TopicInfo, partitions: Vec<lpr::OngoingPartitionReassignment>| {
            if !partitions.is_empty() {
                topics.push(lpr::OngoingTopicReassignment {
                    name: t.name.as_str().into(),
                    partitions,
                    ..Default::default()
                });
            }
        };
        match &req.topics {
            None => {
                for t in self.replication.topics.values() {
                    let ps = t
                        .partitions
                        .iter()
                        .filter(|(_, p)| p.is_reassigning())
                        .map(|(&i, p)| ongoing(i, p))
                        .collect();
                    push(t, ps);
                }
            }
            Some(asked) => {
                for a in asked {
                    let Some(t) = self.replication.topic_by_name(a.name.as_str()) else {
                        continue;
                    };
                    let ps = a
                        .partition_indexes
                        .iter()
                        .filter_map(|i| t.partitions.get(i).map(|p| (*i, p)))
                        .filter(|(_, p)| p.is_reassigning())
                        .map(|(i, p)| ongoing(i, p))
                        .collect();
                    push(t, ps);
                }
            }
        }
        ListPartitionReassignmentsResponse {
            topics,
            ..Default::default()
        }
    }
}

impl ReplicationControlManager {
    /// The index rebuilt from the partitions, to check the one kept on replay.
    pub(crate) fn rebuilt_index(&self) -> PartitionIndex {
        let mut index = PartitionIndex::default();
        for t in self.topics.values() {
            for (&i, p) in &t.partitions {
                index.update((t.id, i), p, true);
            }
        }
        index
    }

    /// Whether the index kept on replay is the index of the partitions.
    pub(crate) fn index_is_consistent(&self) -> bool {
        self.rebuilt_index() == self.index
    }
}
