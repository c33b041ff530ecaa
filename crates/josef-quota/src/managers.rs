//! Every client quota of a broker together, fed by ClientQuotaRecords (Kafka's `QuotaManagers`
//! and `ClientQuotaMetadataManager`).

use std::net::IpAddr;

use josef_protocol::metadata_records::ClientQuotaRecord;

use crate::client::{ClientQuotaManager, ClientQuotaType};
use crate::config::QuotaWindow;
use crate::connection::IpConnectionQuotas;
use crate::entity::{EntityName, QuotaEntity, QuotaKey};
use crate::error::QuotaRecordError;
use crate::mutation::ControllerMutationQuotaManager;
use crate::store::{QuotaChange, QuotaStore};

/// The sample windows of the quota managers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QuotaManagersConfig {
    /// `quota.window.num` / `quota.window.size.seconds`: produce, fetch, request and ip
    /// connection quotas.
    pub client: QuotaWindow,
    /// `controller.quota.window.num` / `controller.quota.window.size.seconds`: mutation quotas.
    pub controller: QuotaWindow,
    /// `replication.quota.window.num` / `replication.quota.window.size.seconds`: replication
    /// throttles (KIP-73).
    pub replication: QuotaWindow,
}

/// The store of client quotas and a manager per quota type, kept in step.
#[derive(Debug, Clone)]
pub struct QuotaManagers {
    /// Every quota as configured (for DescribeClientQuotas and AlterClientQuotas).
    pub store: QuotaStore,
    /// `producer_byte_rate`.
    pub produce: ClientQuotaManager,
    /// `consumer_byte_rate`.
    pub fetch: ClientQuotaManager,
    /// `request_percentage`.
    pub request: ClientQuotaManager,
    /// `controller_mutation_rate`.
    pub controller_mutation: ControllerMutationQuotaManager,
    /// `connection_creation_rate`.
    pub ip_connections: IpConnectionQuotas,
}

impl QuotaManagers {
    /// No quotas yet.
    pub fn new(config: QuotaManagersConfig) -> Self {
        QuotaManagers {
            store: QuotaStore::new(),
            produce: ClientQuotaManager::new(ClientQuotaType::Produce, config.client),
            fetch: ClientQuotaManager::new(ClientQuotaType::Fetch, config.client),
            request: ClientQuotaManager::new(ClientQuotaType::Request, config.client),
            controller_mutation: ControllerMutationQuotaManager::new(config.controller),
            ip_connections: IpConnectionQuotas::new(config.client),
        }
    }

    /// Applies a ClientQuotaRecord to the store and to the manager of its key.
    pub fn replay(&mut self, record: &ClientQuotaRecord) -> Result<QuotaChange, QuotaRecordError> {
        let change = self.store.replay(record)?;
        self.apply_to_managers(&change);
        Ok(change)
    }

    /// Applies a change to the store and to the manager of its key.
    pub fn apply(&mut self, change: &QuotaChange) {
        self.store.apply(change);
        self.apply_to_managers(change);
    }

    /// Brings the store and the managers to `target` (the quotas of a newer metadata image),
    /// applying only what differs so that the sensors of unchanged quotas keep their samples.
    /// Returns the changes applied.
    pub fn sync_to(&mut self, target: &QuotaStore) -> Vec<QuotaChange> {
        let changes = self.store.changes_to(target);
        for change in &changes {
            self.apply(change);
        }
        changes
    }

    fn apply_to_managers(&mut self, change: &QuotaChange) {
        // Keys this crate does not know, and keys on an entity that cannot take them, are kept
        // in the store but enforce nothing (Kafka logs and ignores them).
        let Some(key) = QuotaKey::parse(&change.key) else {
            return;
        };
        let entity = &change.entity;
        match key {
            QuotaKey::ProducerByteRate => {
                self.produce.update_quota(entity, change.value);
            }
            QuotaKey::ConsumerByteRate => {
                self.fetch.update_quota(entity, change.value);
            }
            QuotaKey::RequestPercentage => {
                self.request.update_quota(entity, change.value);
            }
            QuotaKey::ControllerMutationRate => {
                self.controller_mutation.update_quota(entity, change.value);
            }
            QuotaKey::ConnectionCreationRate => {
                let QuotaEntity::Ip(name) = entity else {
                    return;
                };
                let ip = match name {
                    EntityName::Default => None,
                    EntityName::Name(n) => match n.parse::<IpAddr>() {
                        Ok(ip) => Some(ip),
                        Err(_) => return,
                    },
                };
                // Kafka converts with Double.toInt: saturating, NaN to 0.
                let rate = change
                    .value
                    .map(|v| v.clamp(0.0, f64::from(i32::MAX)) as u32);
                self.ip_connections
                    .update_ip_connection_rate_quota(ip, rate);
            }
        }
    }
}
