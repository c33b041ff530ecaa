//! Kafka's `QuorumController`: the controller as one deterministic state machine, its activation,
//! its periodic work ([`Controller::tick`]) and the replay of committed records.

use std::collections::BTreeMap;

use josef_protocol::ErrorCode;

use crate::cluster_control::{BrokerInfo, ClusterControlManager};
use crate::configuration_control::ConfigurationControlManager;
use crate::producer_id_control::ProducerIdControlManager;
use crate::records::{ClusterIdRecord, FeatureLevelRecord, MetadataRecord};
use crate::replication_control::{ReplicationControlManager, TopicInfo};
use crate::TOPIC_RESOURCE;
use crate::{ApiError, BrokerHeartbeatManager, ControllerConfig, ControllerRng, ReplayError};
use josef_metadata::{MetadataDelta, MetadataImage, MetadataProvenance, METADATA_VERSION_FEATURE};

/// The metadata.version level the bootstrap batch finalizes: 21 = 3.9-IV0 (ISR shrinks keep the
/// leader epoch, BrokerRegistrationChangeRecord and the in-controlled-shutdown flag are in use,
/// eligible leader replicas are not).
pub const BOOTSTRAP_METADATA_VERSION: i16 = 21;

/// What the driver tells the controller about a write it is about to handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WriteContext {
    /// The driver's clock, in milliseconds.
    pub now_ms: i64,
    /// The metadata offset (Raft log index) the batch returned by this call will get if it
    /// commits; a new broker registration takes it as its broker epoch.
    pub next_offset: u64,
}

/// Records to commit and the response to send once they commit (Kafka's `ControllerResult`).
/// The records of one result form one batch, applied atomically.
#[derive(Debug, Clone, PartialEq)]
pub struct ControllerResult<T> {
    /// The batch to propose; empty for reads and refusals (answer at once).
    pub records: Vec<MetadataRecord>,
    /// The response.
    pub response: T,
}

impl<T> ControllerResult<T> {
    /// A result with records.
    pub fn of(records: Vec<MetadataRecord>, response: T) -> Self {
        ControllerResult { records, response }
    }

    /// A result without records.
    pub fn response(response: T) -> Self {
        ControllerResult {
            records: Vec::new(),
            response,
        }
    }
}

/// Kafka's KRaft controller as a pure, deterministic state machine.
///
/// Handlers read the state and return a [`ControllerResult`]: the records to commit and the
/// response to send once they have. The state changes **only** through [`replay`](Self::replay),
/// called for every committed record, in log order, on every controller (active or standby); the
/// driver serializes writes (it replays a batch after it commits, before handling the next event),
/// so handlers always see committed state. The exceptions, as in Kafka, are broker session times
/// (heartbeats) and the rebalance timer, which live outside the log. A standby (not
/// [`activate`](Self::activate)d) answers NOT_CONTROLLER.
///
/// ```
/// use josef_controller::{Controller, ControllerConfig, WriteContext};
/// use josef_protocol::messages::{BrokerHeartbeatRequest, BrokerRegistrationRequest};
/// use josef_protocol::Uuid;
///
/// let mut c = Controller::new(ControllerConfig::default());
/// let mut offset = 0u64;
/// // The driver: propose the records, and once they commit replay them and send the response.
/// let mut commit = |c: &mut Controller, records: Vec<_>| {
///     offset += 1;
///     for r in &records {
///         c.replay(offset, r).unwrap();
///     }
///     offset
/// };
/// let ctx = |offset: u64| WriteContext { now_ms: 0, next_offset: offset + 1 };
/// let r = c.activate(ctx(0), 1, "my-cluster".into());
/// let o = commit(&mut c, r.records);
/// let reg = BrokerRegistrationRequest {
///     broker_id: 1,
///     cluster_id: "my-cluster".into(),
///     incarnation_id: Uuid::from_u128(7),
///     ..Default::default()
/// };
/// let r = c.register_broker(ctx(o), &reg);
/// assert_eq!(r.response.error_code, 0);
/// let epoch = r.response.broker_epoch;
/// let o = commit(&mut c, r.records);
/// assert_eq!(epoch, o as i64); // broker epoch = offset of the registration batch
/// let hb = BrokerHeartbeatRequest {
///     broker_id: 1,
///     broker_epoch: epoch,
///     current_metadata_offset: o as i64,
///     ..Default::default()
/// };
/// let r = c.broker_heartbeat(ctx(o), &hb);
/// assert!(!r.response.is_fenced);
/// commit(&mut c, r.records);
/// assert!(c.broker(1).is_some_and(|b| !b.fenced));
/// ```
#[derive(Debug, Clone)]
pub struct Controller {
    pub(crate) config: ControllerConfig,
    pub(crate) rng: ControllerRng,
    active: bool,
    epoch: i32,
    last_offset: Option<u64>,
    pub(crate) cluster: ClusterControlManager,
    pub(crate) heartbeats: BrokerHeartbeatManager,
    pub(crate) replication: ReplicationControlManager,
    pub(crate) configs: ConfigurationControlManager,
    pub(crate) producer_ids: ProducerIdControlManager,
    pub(crate) client_quotas: crate::client_quota_control::ClientQuotaControlManager,
    pub(crate) acls: crate::acl_control::AclControlManager,
    pub(crate) features: BTreeMap<String, i16>,
    pub(crate) cluster_id: Option<String>,
    next_rebalance_ms: Option<i64>,
    next_unclean_ms: Option<i64>,
    delta: MetadataDelta,
}

impl Controller {
    /// A standby controller with an empty state.
    pub fn new(config: ControllerConfig) -> Self {
        Controller {
            rng: ControllerRng::new(config.seed),
            heartbeats: BrokerHeartbeatManager::new(config.broker_session_timeout_ms),
            config,
            active: false,
            epoch: -1,
            last_offset: None,
            cluster: ClusterControlManager::default(),
            replication: ReplicationControlManager::default(),
            configs: ConfigurationControlManager::default(),
            producer_ids: ProducerIdControlManager::default(),
            client_quotas: Default::default(),
            acls: crate::acl_control::AclControlManager::new(),
            features: BTreeMap::new(),
            cluster_id: None,
            next_rebalance_ms: None,
            next_unclean_ms: None,
            delta: MetadataDelta::new(&MetadataImage::empty()),
        }
    }

    /// The committed state as josef-metadata's image (every replayed record applied through a
    /// [`MetadataDelta`], as brokers do), at provenance (last replayed offset, epoch 0: the
    /// controller is not told the Raft term of each entry). Each call copies the image's data.
    pub fn image(&self) -> MetadataImage {
        self.delta.apply(MetadataProvenance {
            last_offset: self.last_offset.unwrap_or(0),
            last_epoch: 0,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &ControllerConfig {
        &self.config
    }

    pub(crate) fn check_active(&self) -> Result<(), ApiError> {
        if self.active {
            Ok(())
        } else {
            Err(ApiError::new(
                ErrorCode::NotController,
                "This node is not the active controller.",
            ))
        }
    }

    /// Becoming the active controller with controller epoch `epoch` (the Raft term; Kafka's
    /// `claim`): every registered broker gets a fresh session from `ctx.now_ms`, and if the log
    /// holds no cluster id yet, the bootstrap batch (FeatureLevelRecord `metadata.version` and a
    /// ClusterIdRecord with `cluster_id_if_new`) is returned to be proposed first.
    pub fn activate(
        &mut self,
        ctx: WriteContext,
        epoch: i32,
        cluster_id_if_new: String,
    ) -> ControllerResult<()> {
        self.active = true;
        self.epoch = epoch;
        // A new stream of randomness per activation: two controllers with the same seed must not
        // hand out the same topic ids after a failover.
        self.rng = ControllerRng::new(
            self.config.seed
                ^ (epoch as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
                ^ self.last_offset.unwrap_or(0).rotate_left(32),
        );
        self.heartbeats.clear();
        self.next_rebalance_ms = None;
        self.next_unclean_ms = None;
        for &id in self.cluster.brokers.keys() {
            self.heartbeats.touch(id, ctx.now_ms, None);
        }
        let mut records = Vec::new();
        if self.cluster_id.is_none() {
            if !self.features.contains_key(METADATA_VERSION_FEATURE) {
                records.push(MetadataRecord::FeatureLevel(FeatureLevelRecord {
                    name: METADATA_VERSION_FEATURE.into(),
                    feature_level: BOOTSTRAP_METADATA_VERSION,
                    ..Default::default()
                }));
            }
            records.push(MetadataRecord::ClusterId(ClusterIdRecord {
                cluster_id: cluster_id_if_new,
            }));
            for (name, level) in &self.config.bootstrap_features {
                if *level > 0 && !self.features.contains_key(name) {
                    records.push(MetadataRecord::FeatureLevel(FeatureLevelRecord {
                        name: name.as_str().into(),
                        feature_level: *level,
                        ..Default::default()
                    }));
                }
            }
        }
        ControllerResult::of(records, ())
    }

    /// No longer the active controller (Kafka's `renounce`): sessions and timers are dropped; the
    /// state is the replay of what committed, so nothing needs reverting.
    pub fn deactivate(&mut self) {
        self.active = false;
        self.heartbeats.clear();
        self.next_rebalance_ms = None;
        self.next_unclean_ms = None;
    }

    /// Whether this controller is active.
    pub fn is_active(&self) -> bool {
        self.active
    }

    /// The controller epoch of the last activation (−1 before any).
    pub fn epoch(&self) -> i32 {
        self.epoch
    }

    /// The offset of the last replayed record.
    pub fn last_offset(&self) -> Option<u64> {
        self.last_offset
    }

    /// The cluster id, once the bootstrap batch committed.
    pub fn cluster_id(&self) -> Option<&str> {
        self.cluster_id.as_deref()
    }

    /// A finalized feature level.
    pub fn feature_level(&self, name: &str) -> Option<i16> {
        self.features.get(name).copied()
    }

    /// A registered broker.
    pub fn broker(&self, id: i32) -> Option<&BrokerInfo> {
        self.cluster.brokers.get(&id)
    }

    /// Every registered broker, by id.
    pub fn brokers(&self) -> impl Iterator<Item = &BrokerInfo> {
        self.cluster.brokers.values()
    }

    /// Every topic, by id.
    pub fn topics(&self) -> impl Iterator<Item = &TopicInfo> {
        self.replication.topics.values()
    }

    /// A topic by name.
    pub fn topic(&self, name: &str) -> Option<&TopicInfo> {
        self.replication.topic_by_name(name)
    }

    /// A config of a resource (type 2 topic, 4 broker).
    pub fn config_value(&self, resource_type: i8, resource: &str, name: &str) -> Option<&str> {
        self.configs.get(resource_type, resource, name)
    }

    /// Checks the controller's internal indexes (partitions by ISR member, leader, imbalance)
    /// against its partitions; for tests and debugging.
    pub fn check_consistency(&self) -> Result<(), String> {
        if self.replication.index_is_consistent() {
            Ok(())
        } else {
            Err("the partition index differs from the partitions".into())
        }
    }

    /// The first producer id of the next block.
    pub fn next_producer_id(&self) -> i64 {
        self.producer_ids.next_producer_id
    }

    /// Periodic work of the active controller, one batch per call (the driver calls it on a timer,
    /// and again at once while it returns records), first match wins:
    /// 1. fence **one** broker whose session expired (Kafka's `maybeFenceOneStaleBroker`);
    /// 2. unclean elections for leaderless partitions of topics allowing them, every
    ///    `unclean_leader_election_interval_ms` while there are any (`maybeElectUncleanLeaders`);
    /// 3. with `auto_leader_rebalance_enable`, preferred-leader elections once
    ///    `leader_imbalance_check_interval_ms` has passed since imbalance was seen
    ///    (`maybeBalancePartitionLeaders`), then every interval while some remains; only for
    ///    brokers whose share of preferred leaderships held elsewhere (or by none) is above
    ///    `leader_imbalance_per_broker_percentage`, and only where the preferred replica is
    ///    active and in the ISR (the ZooKeeper-era `checkAndTriggerAutoLeaderRebalance`).
    ///
    /// Runs 2 and 3 do at most 1000 elections; when capped, the next run is due at once.
    pub fn tick(&mut self, ctx: WriteContext) -> ControllerResult<()> {
        if !self.active {
            return ControllerResult::response(());
        }
        let now = ctx.now_ms;
        let fenced = self.maybe_fence_one_stale_broker(now);
        if !fenced.is_empty() {
            return ControllerResult::of(fenced, ());
        }
        let unclean_work = self.has_unclean_electable_partitions();
        let interval = self.config.unclean_leader_election_interval_ms;
        if due(&mut self.next_unclean_ms, now, interval, unclean_work) {
            let (records, capped) = self.maybe_elect_unclean_leaders();
            self.next_unclean_ms = capped.then_some(now);
            if !records.is_empty() {
                return ControllerResult::of(records, ());
            }
        }
        let rebalance_work =
            self.config.auto_leader_rebalance_enable && self.has_imbalanced_partitions();
        let interval = self.config.leader_imbalance_check_interval_ms;
        if due(&mut self.next_rebalance_ms, now, interval, rebalance_work) {
            let (records, capped) = self.maybe_balance_partition_leaders();
            self.next_rebalance_ms = capped.then_some(now);
            return ControllerResult::of(records, ());
        }
        ControllerResult::response(())
    }

    /// When the next [`tick`](Self::tick) has work: the earliest session expiry of an unfenced
    /// broker, or a due time of the periodic elections (`None`: nothing scheduled).
    pub fn next_deadline_ms(&self) -> Option<i64> {
        let sessions = self
            .cluster
            .brokers
            .values()
            .filter(|b| !b.fenced)
            .filter_map(|b| self.heartbeats.session(b.id))
            .map(|s| {
                s.last_contact_ms
                    .saturating_add(self.config.broker_session_timeout_ms)
                    .saturating_add(1)
            })
            .min();
        [sessions, self.next_rebalance_ms, self.next_unclean_ms]
            .into_iter()
            .flatten()
            .min()
    }

    fn check_replay(&self, record: &MetadataRecord) -> Result<(), ReplayError> {
        let broker_at = |id, epoch| self.cluster.check_epoch(id, epoch);
        match record {
            MetadataRecord::UnregisterBroker(r) => broker_at(r.broker_id, r.broker_epoch),
            MetadataRecord::BrokerRegistrationChange(r) => broker_at(r.broker_id, r.broker_epoch),
            MetadataRecord::FenceBroker(r) => broker_at(r.id, r.epoch),
            MetadataRecord::UnfenceBroker(r) => broker_at(r.id, r.epoch),
            MetadataRecord::ProducerIds(r) if r.next_producer_id < self.next_producer_id() => {
                Err(ReplayError::Invalid(format!(
                    "next producer id {} is below {}",
                    r.next_producer_id,
                    self.next_producer_id()
                )))
            }
            MetadataRecord::RemoveTopic(r)
                if !self.replication.topics.contains_key(&r.topic_id) =>
            {
                Err(ReplayError::UnknownTopic(r.topic_id))
            }
            MetadataRecord::ClientQuota(r) => josef_quota::entity_from_components(
                r.entity
                    .iter()
                    .map(|e| (e.entity_type.as_str(), e.entity_name.as_deref())),
                false,
            )
            .map(|_| ())
            .map_err(|e| ReplayError::Invalid(format!("ClientQuotaRecord: {e}"))),
            MetadataRecord::AccessControlEntry(r) => self.acls.check_add(r),
            _ => Ok(()),
        }
    }

    /// Applies one committed record at metadata offset `offset` (every record of a batch has the
    /// batch's offset). Records must come in log order; a record that does not fit the state is
    /// refused with the state unchanged.
    pub fn replay(&mut self, offset: u64, record: &MetadataRecord) -> Result<(), ReplayError> {
        if let Some(last) = self.last_offset {
            if offset < last {
                return Err(ReplayError::OffsetWentBack { offset, last });
            }
        }
        let at = i64::try_from(offset)
            .map_err(|_| ReplayError::Invalid(format!("offset {offset} is too large")))?;
        // Check first what the controller's own state could refuse, then the image (on an error
        // it changes nothing, and what it accepts every broker's image accepts too), so a refused
        // record leaves both as they were.
        self.check_replay(record)?;
        self.delta.replay(record)?;
        match record {
            MetadataRecord::RegisterBroker(r) => self.cluster.replay_register(r, at),
            MetadataRecord::UnregisterBroker(r) => self.cluster.replay_unregister(r)?,
            MetadataRecord::BrokerRegistrationChange(r) => self.cluster.replay_change(r, at)?,
            MetadataRecord::FenceBroker(r) => self.cluster.replay_fence(r.id, r.epoch, true)?,
            MetadataRecord::UnfenceBroker(r) => self.cluster.replay_fence(r.id, r.epoch, false)?,
            MetadataRecord::Topic(r) => self.replication.replay_topic(r),
            MetadataRecord::Partition(r) => self.replication.replay_partition(r)?,
            MetadataRecord::PartitionChange(r) => self.replication.replay_partition_change(r)?,
            MetadataRecord::RemoveTopic(r) => {
                let t = self.replication.replay_remove_topic(r.topic_id)?;
                self.configs.remove_resource(TOPIC_RESOURCE, &t.name);
            }
            MetadataRecord::Config(r) => self.configs.replay(r),
            MetadataRecord::ProducerIds(r) => self.producer_ids.replay(r)?,
            MetadataRecord::FeatureLevel(r) => {
                if r.feature_level == 0 && r.name.as_str() != METADATA_VERSION_FEATURE {
                    self.features.remove(r.name.as_str());
                } else {
                    self.features.insert(r.name.to_string(), r.feature_level);
                }
            }
            MetadataRecord::ClusterId(r) => self.cluster_id = Some(r.cluster_id.clone()),
            MetadataRecord::ClientQuota(r) => {
                // check_replay accepted the entity, so the store takes the record.
                let _ = self.client_quotas.store.replay(r);
            }
            MetadataRecord::AccessControlEntry(r) => self.acls.replay_add(r),
            MetadataRecord::RemoveAccessControlEntry(r) => self.acls.replay_remove(r),
            _ => {}
        }
        self.last_offset = Some(offset);
        Ok(())
    }
}

/// A periodic task's schedule (`None`: not scheduled): scheduled `interval` after work is first
/// seen, dropped when there is none; true when it is due now.
fn due(slot: &mut Option<i64>, now: i64, interval: i64, has_work: bool) -> bool {
    if !has_work {
        *slot = None;
        return false;
    }
    match *slot {
        None => {
            *slot = Some(now.saturating_add(interval));
            false
        }
        Some(at) => now >= at,
    }
}
