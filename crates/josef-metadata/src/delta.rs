//! [`MetadataDelta`]: records replayed on top of an image, giving the next image (Kafka's
//! `MetadataDelta`).

use std::collections::BTreeSet;
use std::sync::Arc;

use josef_protocol::metadata_records::{
    BrokerRegistrationChangeRecord, ClientQuotaRecord, ConfigRecord, FeatureLevelRecord,
    PartitionChangeRecord, PartitionRecord, RemoveTopicRecord, TopicRecord,
};
use josef_protocol::Uuid;

use crate::broker::{BrokerRegistration, ControllerRegistration};
use crate::error::MetadataError;
use crate::image::{
    ConfigResource, ImageData, MetadataImage, MetadataProvenance, QuotaEntity, TopicImage,
    METADATA_VERSION_FEATURE, TOPIC_RESOURCE,
};
use crate::local::LocalReplicaChanges;
use crate::partition::PartitionRegistration;
use crate::record::MetadataRecord;

/// Records replayed on top of a base image; [`MetadataDelta::apply`] gives the next image.
///
/// Controllers and brokers replay the same committed records in log order, so they reach equal
/// images. A record that cannot apply (a `PartitionRecord` of an unknown topic, a fence with a stale
/// broker epoch, ...) is refused with a [`MetadataError`] and leaves the delta unchanged.
///
/// ```
/// use josef_metadata::{MetadataDelta, MetadataError, MetadataImage, MetadataProvenance, MetadataRecord};
/// use josef_protocol::metadata_records::{ConfigRecord, PartitionRecord};
/// use josef_protocol::Uuid;
///
/// let mut delta = MetadataDelta::new(&MetadataImage::empty());
/// let orphan = PartitionRecord { topic_id: Uuid::from_u128(9), ..Default::default() };
/// assert_eq!(
///     delta.replay(&MetadataRecord::Partition(orphan)),
///     Err(MetadataError::UnknownTopic(Uuid::from_u128(9)))
/// );
/// let retention = ConfigRecord {
///     resource_type: 2,
///     resource_name: "orders".into(),
///     name: "retention.ms".into(),
///     value: Some("1000".into()),
///     ..Default::default()
/// };
/// delta.replay(&MetadataRecord::Config(retention)).unwrap();
/// let image = delta.apply(MetadataProvenance::default());
/// assert_eq!(image.topic_config("orders").unwrap()["retention.ms"], "1000");
/// ```
#[derive(Debug, Clone)]
pub struct MetadataDelta {
    base: MetadataImage,
    next: ImageData,
    /// Partitions a `PartitionRecord` or `PartitionChangeRecord` touched.
    touched: BTreeSet<(Uuid, i32)>,
    /// Topics a `RemoveTopicRecord` removed.
    removed_topics: BTreeSet<Uuid>,
}

impl MetadataImage {
    /// This image with `records` replayed on top, at `provenance`: how a node without a quorum
    /// (josef-quorum's `LocalMetadataLog`) rebuilds its image at start and checks a batch before
    /// it writes it. All or nothing: the first record that does not apply is the error, and no
    /// image holds any of the batch.
    ///
    /// ```
    /// use josef_metadata::{MetadataError, MetadataImage, MetadataProvenance, MetadataRecord};
    /// use josef_protocol::metadata_records::FenceBrokerRecord;
    ///
    /// let at = MetadataProvenance { last_offset: 1, last_epoch: 0 };
    /// // Fencing a broker that never registered does not apply.
    /// let fence = MetadataRecord::FenceBroker(FenceBrokerRecord { id: 7, epoch: 1, ..Default::default() });
    /// assert!(matches!(
    ///     MetadataImage::empty().with_records([&fence], at),
    ///     Err(MetadataError::UnknownBroker { broker_id: 7, .. })
    /// ));
    /// let same = MetadataImage::empty().with_records([], at).unwrap();
    /// assert_eq!(same.provenance(), at);
    /// ```
    pub fn with_records<'a>(
        &self,
        records: impl IntoIterator<Item = &'a MetadataRecord>,
        provenance: MetadataProvenance,
    ) -> Result<MetadataImage, MetadataError> {
        let mut delta = MetadataDelta::new(self);
        for r in records {
            delta.replay(r)?;
        }
        Ok(delta.apply(provenance))
    }
}

impl MetadataDelta {
    /// A delta on top of `image`, with nothing replayed yet.
    pub fn new(image: &MetadataImage) -> Self {
        MetadataDelta {
            base: image.clone(),
            next: (*image.data).clone(),
            touched: BTreeSet::new(),
            removed_topics: BTreeSet::new(),
        }
    }

    /// The image this delta started from.
    pub fn base(&self) -> &MetadataImage {
        &self.base
    }

    /// The image with every record replayed so far, at `provenance`.
    pub fn apply(&self, provenance: MetadataProvenance) -> MetadataImage {
        let mut data = self.next.clone();
        data.provenance = provenance;
        MetadataImage {
            data: Arc::new(data),
        }
    }

    /// What the records replayed so far mean for broker `broker_id` (Kafka's
    /// `TopicsDelta.localChanges`).
    pub fn local_changes(&self, broker_id: i32) -> LocalReplicaChanges {
        LocalReplicaChanges::compute(
            &self.base.data,
            &self.next,
            self.touched.iter().copied(),
            self.removed_topics.iter().copied(),
            broker_id,
        )
    }

    /// Applies one record. On an error nothing changes.
    pub fn replay(&mut self, record: &MetadataRecord) -> Result<(), MetadataError> {
        let d = &mut self.next;
        match record {
            MetadataRecord::RegisterBroker(r) => {
                d.brokers
                    .insert(r.broker_id, BrokerRegistration::from_record(r));
            }
            MetadataRecord::UnregisterBroker(r) => {
                d.brokers.remove(&r.broker_id);
            }
            MetadataRecord::FenceBroker(r) => {
                self.broker_mut(r.id, r.epoch, "fence")?.fenced = true;
            }
            MetadataRecord::UnfenceBroker(r) => {
                self.broker_mut(r.id, r.epoch, "unfence")?.fenced = false;
            }
            MetadataRecord::BrokerRegistrationChange(r) => self.replay_broker_change(r)?,
            MetadataRecord::RegisterController(r) => {
                d.controllers
                    .insert(r.controller_id, ControllerRegistration::from_record(r));
            }
            MetadataRecord::Topic(r) => self.replay_topic(r)?,
            MetadataRecord::Partition(r) => self.replay_partition(r)?,
            MetadataRecord::PartitionChange(r) => self.replay_partition_change(r)?,
            MetadataRecord::RemoveTopic(r) => self.replay_remove_topic(r)?,
            MetadataRecord::Config(r) => replay_config(d, r),
            MetadataRecord::FeatureLevel(r) => replay_feature(d, r),
            MetadataRecord::ProducerIds(r) => d.next_producer_id = r.next_producer_id,
            MetadataRecord::ClusterId(r) => d.cluster_id = Some(r.cluster_id.clone()),
            MetadataRecord::AccessControlEntry(r) => {
                d.acls.insert(r.id, r.clone());
            }
            MetadataRecord::RemoveAccessControlEntry(r) => {
                if d.acls.remove(&r.id).is_none() {
                    return Err(MetadataError::UnknownEntry {
                        what: "ACL",
                        key: r.id.to_string(),
                    });
                }
            }
            MetadataRecord::ClientQuota(r) => replay_quota(d, r),
            MetadataRecord::UserScramCredential(r) => {
                d.scram.insert((r.name.to_string(), r.mechanism), r.clone());
            }
            MetadataRecord::RemoveUserScramCredential(r) => {
                d.scram.remove(&(r.name.to_string(), r.mechanism));
            }
            MetadataRecord::DelegationToken(r) => {
                d.delegation_tokens
                    .insert(r.token_id.to_string(), r.clone());
            }
            MetadataRecord::RemoveDelegationToken(r) => {
                d.delegation_tokens.remove(r.token_id.as_str());
            }
            // Markers of the log, not state of the image.
            MetadataRecord::NoOp(_)
            | MetadataRecord::BeginTransaction(_)
            | MetadataRecord::EndTransaction(_)
            | MetadataRecord::AbortTransaction(_)
            | MetadataRecord::ZkMigrationState(_) => {}
        }
        Ok(())
    }

    fn broker_mut(
        &mut self,
        broker_id: i32,
        epoch: i64,
        action: &'static str,
    ) -> Result<&mut BrokerRegistration, MetadataError> {
        let b = self
            .next
            .brokers
            .get_mut(&broker_id)
            .ok_or(MetadataError::UnknownBroker { action, broker_id })?;
        if b.epoch != epoch {
            return Err(MetadataError::BrokerEpochMismatch {
                action,
                broker_id,
                epoch,
                registered: b.epoch,
            });
        }
        Ok(b)
    }

    fn replay_broker_change(
        &mut self,
        r: &BrokerRegistrationChangeRecord,
    ) -> Result<(), MetadataError> {
        let b = self.broker_mut(r.broker_id, r.broker_epoch, "change")?;
        *b = b.apply_change(r)?;
        Ok(())
    }

    fn replay_topic(&mut self, r: &TopicRecord) -> Result<(), MetadataError> {
        let d = &mut self.next;
        if d.topics.contains_key(&r.topic_id) {
            return Err(MetadataError::TopicIdExists(r.topic_id));
        }
        if let Some(existing) = d.topic_ids.get(r.name.as_str()) {
            return Err(MetadataError::TopicNameExists {
                name: r.name.to_string(),
                existing: *existing,
            });
        }
        let topic = TopicImage {
            name: r.name.to_string(),
            id: r.topic_id,
            partitions: Default::default(),
        };
        d.topics.insert(r.topic_id, Arc::new(topic));
        d.topic_ids.insert(r.name.to_string(), r.topic_id);
        Ok(())
    }

    fn topic_mut(&mut self, topic_id: Uuid) -> Result<&mut TopicImage, MetadataError> {
        let topic = self
            .next
            .topics
            .get_mut(&topic_id)
            .ok_or(MetadataError::UnknownTopic(topic_id))?;
        Ok(Arc::make_mut(topic))
    }

    fn replay_partition(&mut self, r: &PartitionRecord) -> Result<(), MetadataError> {
        if !self.next.topics.contains_key(&r.topic_id) {
            return Err(MetadataError::UnknownTopic(r.topic_id));
        }
        if r.partition_id < 0 {
            return Err(MetadataError::InvalidPartitionIndex {
                topic_id: r.topic_id,
                partition: r.partition_id,
            });
        }
        let p = PartitionRegistration::from_record(r)?;
        self.topic_mut(r.topic_id)?
            .partitions
            .insert(r.partition_id, p);
        self.touched.insert((r.topic_id, r.partition_id));
        Ok(())
    }

    fn replay_partition_change(&mut self, r: &PartitionChangeRecord) -> Result<(), MetadataError> {
        let unknown = MetadataError::UnknownPartition {
            topic_id: r.topic_id,
            partition: r.partition_id,
        };
        let topic = self
            .next
            .topics
            .get(&r.topic_id)
            .ok_or(MetadataError::UnknownTopic(r.topic_id))?;
        let next = topic
            .partitions
            .get(&r.partition_id)
            .ok_or(unknown)?
            .merge(r)?;
        self.topic_mut(r.topic_id)?
            .partitions
            .insert(r.partition_id, next);
        self.touched.insert((r.topic_id, r.partition_id));
        Ok(())
    }

    fn replay_remove_topic(&mut self, r: &RemoveTopicRecord) -> Result<(), MetadataError> {
        let d = &mut self.next;
        let topic = d
            .topics
            .remove(&r.topic_id)
            .ok_or(MetadataError::UnknownTopic(r.topic_id))?;
        d.topic_ids.remove(&topic.name);
        d.configs.remove(&ConfigResource {
            resource_type: TOPIC_RESOURCE,
            name: topic.name.clone(),
        });
        self.removed_topics.insert(r.topic_id);
        Ok(())
    }
}

fn replay_config(d: &mut ImageData, r: &ConfigRecord) {
    let key = ConfigResource {
        resource_type: r.resource_type,
        name: r.resource_name.to_string(),
    };
    match &r.value {
        Some(v) => {
            d.configs
                .entry(key)
                .or_default()
                .insert(r.name.to_string(), v.to_string());
        }
        None => {
            if let Some(entries) = d.configs.get_mut(&key) {
                entries.remove(r.name.as_str());
                if entries.is_empty() {
                    d.configs.remove(&key);
                }
            }
        }
    }
}

/// Level 0 removes a feature, except `metadata.version`, which is always kept.
fn replay_feature(d: &mut ImageData, r: &FeatureLevelRecord) {
    if r.feature_level == 0 && r.name.as_str() != METADATA_VERSION_FEATURE {
        d.features.remove(r.name.as_str());
    } else {
        d.features.insert(r.name.to_string(), r.feature_level);
    }
}

fn replay_quota(d: &mut ImageData, r: &ClientQuotaRecord) {
    let entity: QuotaEntity = r
        .entity
        .iter()
        .map(|e| {
            (
                e.entity_type.to_string(),
                e.entity_name.as_ref().map(|n| n.to_string()),
            )
        })
        .collect();
    if r.remove {
        if let Some(quotas) = d.client_quotas.get_mut(&entity) {
            quotas.remove(r.key.as_str());
            if quotas.is_empty() {
                d.client_quotas.remove(&entity);
            }
        }
    } else {
        d.client_quotas
            .entry(entity)
            .or_default()
            .insert(r.key.to_string(), r.value);
    }
}
