//! [`MetadataImage`]: the immutable state the metadata log describes (Kafka's `MetadataImage`).

use std::collections::BTreeMap;
use std::sync::Arc;

use josef_protocol::metadata_records::{
    client_quota_record::EntityData, AccessControlEntryRecord, ClientQuotaRecord, ConfigRecord,
    DelegationTokenRecord, FeatureLevelRecord, ProducerIdsRecord, TopicRecord,
    UserScramCredentialRecord,
};
use josef_protocol::Uuid;

use crate::broker::{BrokerRegistration, ControllerRegistration};
use crate::partition::PartitionRegistration;
use crate::record::{ClusterIdRecord, MetadataRecord};

/// The name of the feature that versions the metadata log.
pub const METADATA_VERSION_FEATURE: &str = "metadata.version";
/// `ConfigRecord.ResourceType` of a topic.
pub const TOPIC_RESOURCE: i8 = 2;
/// `ConfigRecord.ResourceType` of a broker (an empty name is the cluster-wide default).
pub const BROKER_RESOURCE: i8 = 4;

/// Where an image comes from in the metadata log: the last record it contains.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct MetadataProvenance {
    /// The metadata offset (Raft log index) of the last entry applied.
    pub last_offset: u64,
    /// The epoch (Raft term) of that entry.
    pub last_epoch: u64,
}

/// One topic: its name, id and partitions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicImage {
    /// The topic name.
    pub name: String,
    /// The topic id.
    pub id: Uuid,
    /// Its partitions by index.
    pub partitions: BTreeMap<i32, PartitionRegistration>,
}

/// The resource a config belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConfigResource {
    /// Kafka's `ConfigResource.Type` id ([`TOPIC_RESOURCE`], [`BROKER_RESOURCE`], ...).
    pub resource_type: i8,
    /// The resource's name (topic name, broker id as text, or empty for the cluster default).
    pub name: String,
}

/// A client quota entity: entity type (`user`, `client-id`, `ip`) to name (`None` = the default).
pub type QuotaEntity = BTreeMap<String, Option<String>>;

/// The contents of an image, shared by clones of it.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct ImageData {
    pub(crate) provenance: MetadataProvenance,
    pub(crate) cluster_id: Option<String>,
    pub(crate) features: BTreeMap<String, i16>,
    pub(crate) brokers: BTreeMap<i32, BrokerRegistration>,
    pub(crate) controllers: BTreeMap<i32, ControllerRegistration>,
    pub(crate) topics: BTreeMap<Uuid, Arc<TopicImage>>,
    pub(crate) topic_ids: BTreeMap<String, Uuid>,
    pub(crate) configs: BTreeMap<ConfigResource, BTreeMap<String, String>>,
    pub(crate) next_producer_id: i64,
    pub(crate) acls: BTreeMap<Uuid, AccessControlEntryRecord>,
    pub(crate) client_quotas: BTreeMap<QuotaEntity, BTreeMap<String, f64>>,
    pub(crate) scram: BTreeMap<(String, i8), UserScramCredentialRecord>,
    pub(crate) delegation_tokens: BTreeMap<String, DelegationTokenRecord>,
}

impl ImageData {
    pub(crate) fn empty() -> Self {
        ImageData {
            next_producer_id: -1,
            ..Default::default()
        }
    }
}

/// The cluster's metadata at one point of the metadata log: features, the cluster id, registered
/// brokers and controllers, topics and their partitions, configs, producer ids, ACLs, quotas, SCRAM
/// credentials and delegation tokens.
///
/// Immutable; a clone shares the contents (`Arc`). The next image comes from a
/// [`crate::MetadataDelta`].
///
/// ```
/// use josef_metadata::{MetadataDelta, MetadataImage, MetadataProvenance, MetadataRecord};
/// use josef_protocol::metadata_records::{PartitionRecord, RegisterBrokerRecord, TopicRecord};
/// use josef_protocol::Uuid;
///
/// let id = Uuid::from_u128(1);
/// let mut delta = MetadataDelta::new(&MetadataImage::empty());
/// for r in [
///     MetadataRecord::RegisterBroker(RegisterBrokerRecord { broker_id: 1, fenced: false, ..Default::default() }),
///     MetadataRecord::Topic(TopicRecord { name: "orders".into(), topic_id: id, ..Default::default() }),
///     MetadataRecord::Partition(PartitionRecord {
///         topic_id: id,
///         partition_id: 0,
///         replicas: vec![1].into(),
///         isr: vec![1].into(),
///         leader: 1,
///         ..Default::default()
///     }),
/// ] {
///     delta.replay(&r).unwrap();
/// }
/// let image = delta.apply(MetadataProvenance { last_offset: 3, last_epoch: 1 });
/// assert_eq!(image.topic_by_name("orders").unwrap().id, id);
/// assert_eq!(image.partition(id, 0).unwrap().leader, 1);
/// assert!(image.is_active(1));
///
/// // A snapshot: records that rebuild the same image.
/// let mut rebuilt = MetadataDelta::new(&MetadataImage::empty());
/// for r in image.to_records() {
///     rebuilt.replay(&r).unwrap();
/// }
/// assert_eq!(rebuilt.apply(image.provenance()), image);
/// ```
#[derive(Debug, Clone)]
pub struct MetadataImage {
    pub(crate) data: Arc<ImageData>,
}

impl PartialEq for MetadataImage {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.data, &other.data) || self.data == other.data
    }
}

impl Default for MetadataImage {
    fn default() -> Self {
        MetadataImage::empty()
    }
}

impl MetadataImage {
    /// The image of an empty metadata log.
    pub fn empty() -> Self {
        MetadataImage {
            data: Arc::new(ImageData::empty()),
        }
    }

    /// Whether nothing has been applied (an empty image at provenance zero).
    pub fn is_empty(&self) -> bool {
        *self.data == ImageData::empty()
    }

    /// The last log entry this image contains.
    pub fn provenance(&self) -> MetadataProvenance {
        self.data.provenance
    }

    /// The cluster id, once the bootstrap `ClusterIdRecord` is applied.
    pub fn cluster_id(&self) -> Option<&str> {
        self.data.cluster_id.as_deref()
    }

    /// Finalized feature levels by name.
    pub fn features(&self) -> &BTreeMap<String, i16> {
        &self.data.features
    }

    /// The finalized level of `metadata.version`.
    pub fn metadata_version(&self) -> Option<i16> {
        self.data.features.get(METADATA_VERSION_FEATURE).copied()
    }

    /// Registered brokers by id.
    pub fn brokers(&self) -> &BTreeMap<i32, BrokerRegistration> {
        &self.data.brokers
    }

    /// The registration of broker `id`.
    pub fn broker(&self, id: i32) -> Option<&BrokerRegistration> {
        self.data.brokers.get(&id)
    }

    /// Registered brokers that are not fenced, by id.
    pub fn alive_brokers(&self) -> impl Iterator<Item = &BrokerRegistration> + '_ {
        self.data.brokers.values().filter(|b| !b.fenced)
    }

    /// Whether broker `id` is registered, unfenced and not in controlled shutdown.
    pub fn is_active(&self, id: i32) -> bool {
        self.broker(id).is_some_and(BrokerRegistration::is_active)
    }

    /// Registered controllers by id.
    pub fn controllers(&self) -> &BTreeMap<i32, ControllerRegistration> {
        &self.data.controllers
    }

    /// Every topic, by id order.
    pub fn topics(&self) -> impl Iterator<Item = &TopicImage> + '_ {
        self.data.topics.values().map(|t| &**t)
    }

    /// Topic ids by name.
    pub fn topic_ids(&self) -> &BTreeMap<String, Uuid> {
        &self.data.topic_ids
    }

    /// The topic with id `id`.
    pub fn topic_by_id(&self, id: Uuid) -> Option<&TopicImage> {
        self.data.topics.get(&id).map(|t| &**t)
    }

    /// The topic named `name`.
    pub fn topic_by_name(&self, name: &str) -> Option<&TopicImage> {
        self.data
            .topic_ids
            .get(name)
            .and_then(|id| self.topic_by_id(*id))
    }

    /// Partition `index` of topic `topic_id`.
    pub fn partition(&self, topic_id: Uuid, index: i32) -> Option<&PartitionRegistration> {
        self.topic_by_id(topic_id)?.partitions.get(&index)
    }

    /// Every config by resource.
    pub fn configs(&self) -> &BTreeMap<ConfigResource, BTreeMap<String, String>> {
        &self.data.configs
    }

    /// The configs set on one resource.
    pub fn config(&self, resource_type: i8, name: &str) -> Option<&BTreeMap<String, String>> {
        let key = ConfigResource {
            resource_type,
            name: name.to_string(),
        };
        self.data.configs.get(&key)
    }

    /// The configs set on topic `name`.
    pub fn topic_config(&self, name: &str) -> Option<&BTreeMap<String, String>> {
        self.config(TOPIC_RESOURCE, name)
    }

    /// The next producer id the controller hands out (the end of the last block), or -1 before any.
    pub fn next_producer_id(&self) -> i64 {
        self.data.next_producer_id
    }

    /// ACLs by id.
    pub fn acls(&self) -> &BTreeMap<Uuid, AccessControlEntryRecord> {
        &self.data.acls
    }

    /// Client quotas by entity, then quota key.
    pub fn client_quotas(&self) -> &BTreeMap<QuotaEntity, BTreeMap<String, f64>> {
        &self.data.client_quotas
    }

    /// SCRAM credentials by (user name, mechanism).
    pub fn scram_credentials(&self) -> &BTreeMap<(String, i8), UserScramCredentialRecord> {
        &self.data.scram
    }

    /// Delegation tokens by token id.
    pub fn delegation_tokens(&self) -> &BTreeMap<String, DelegationTokenRecord> {
        &self.data.delegation_tokens
    }

    /// Records that rebuild this image when replayed into a delta of an empty image (a snapshot):
    /// features (`metadata.version` first), the cluster id, controllers, brokers, each topic followed
    /// by its partitions, configs, client quotas, the producer id block, ACLs, SCRAM credentials and
    /// delegation tokens. The provenance is not a record: pass it to [`crate::MetadataDelta::apply`].
    pub fn to_records(&self) -> Vec<MetadataRecord> {
        let d = &*self.data;
        let mut out = Vec::new();
        let features = d.features.iter();
        let (mv, rest): (Vec<_>, Vec<_>) =
            features.partition(|(n, _)| *n == METADATA_VERSION_FEATURE);
        for (name, level) in mv.into_iter().chain(rest) {
            out.push(
                FeatureLevelRecord {
                    name: name.as_str().into(),
                    feature_level: *level,
                    ..Default::default()
                }
                .into(),
            );
        }
        if let Some(id) = &d.cluster_id {
            out.push(
                ClusterIdRecord {
                    cluster_id: id.clone(),
                }
                .into(),
            );
        }
        out.extend(d.controllers.values().map(|c| c.to_record().into()));
        out.extend(d.brokers.values().map(|b| b.to_record().into()));
        for t in d.topics.values() {
            out.push(
                TopicRecord {
                    name: t.name.as_str().into(),
                    topic_id: t.id,
                    ..Default::default()
                }
                .into(),
            );
            out.extend(
                t.partitions
                    .iter()
                    .map(|(i, p)| p.to_record(t.id, *i).into()),
            );
        }
        for (res, entries) in &d.configs {
            for (name, value) in entries {
                out.push(
                    ConfigRecord {
                        resource_type: res.resource_type,
                        resource_name: res.name.as_str().into(),
                        name: name.as_str().into(),
                        value: Some(value.as_str().into()),
                        ..Default::default()
                    }
                    .into(),
                );
            }
        }
        for (entity, quotas) in &d.client_quotas {
            let entity: Vec<EntityData> = entity
                .iter()
                .map(|(t, n)| EntityData {
                    entity_type: t.as_str().into(),
                    entity_name: n.as_deref().map(Into::into),
                    ..Default::default()
                })
                .collect();
            for (key, value) in quotas {
                out.push(
                    ClientQuotaRecord {
                        entity: entity.clone(),
                        key: key.as_str().into(),
                        value: *value,
                        remove: false,
                        ..Default::default()
                    }
                    .into(),
                );
            }
        }
        if d.next_producer_id != -1 {
            let r = ProducerIdsRecord {
                broker_id: -1,
                broker_epoch: -1,
                next_producer_id: d.next_producer_id,
                ..Default::default()
            };
            out.push(r.into());
        }
        out.extend(d.acls.values().map(|a| a.clone().into()));
        out.extend(d.scram.values().map(|s| s.clone().into()));
        out.extend(d.delegation_tokens.values().map(|t| t.clone().into()));
        out
    }
}
