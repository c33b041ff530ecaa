//! [`BrokerRegistration`] and [`ControllerRegistration`] (Kafka's `BrokerRegistration`,
//! `ControllerRegistration`).

use std::collections::BTreeMap;

use josef_protocol::metadata_records::{
    register_broker_record::{BrokerEndpoint, BrokerFeature},
    register_controller_record::{ControllerEndpoint, ControllerFeature},
    BrokerRegistrationChangeRecord, RegisterBrokerRecord, RegisterControllerRecord,
};
use josef_protocol::Uuid;

use crate::error::MetadataError;

/// A listener a node advertises.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Endpoint {
    /// The listener name (`PLAINTEXT`).
    pub name: String,
    /// The host.
    pub host: String,
    /// The port.
    pub port: u16,
    /// The security protocol id (0 PLAINTEXT, 1 SSL, 2 SASL_PLAINTEXT, 3 SASL_SSL).
    pub security_protocol: i16,
}

/// The range of versions of a feature a node supports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FeatureRange {
    /// Lowest supported level.
    pub min: i16,
    /// Highest supported level.
    pub max: i16,
}

/// The listeners of a registration record (broker and controller records have the same fields).
macro_rules! endpoints_from {
    ($eps:expr) => {
        $eps.iter()
            .map(|e| Endpoint {
                name: e.name.to_string(),
                host: e.host.to_string(),
                port: e.port,
                security_protocol: e.security_protocol,
            })
            .collect()
    };
}

/// The supported features of a registration record.
macro_rules! features_from {
    ($features:expr) => {
        $features
            .iter()
            .map(|f| {
                let range = FeatureRange {
                    min: f.min_supported_version,
                    max: f.max_supported_version,
                };
                (f.name.to_string(), range)
            })
            .collect()
    };
}

/// Listeners as the endpoint structs `$ty` of a registration record.
macro_rules! endpoints_to {
    ($listeners:expr, $ty:ident) => {
        $listeners
            .iter()
            .map(|e| $ty {
                name: e.name.as_str().into(),
                host: e.host.as_str().into(),
                port: e.port,
                security_protocol: e.security_protocol,
                ..Default::default()
            })
            .collect()
    };
}

/// Supported features as the feature structs `$ty` of a registration record.
macro_rules! features_to {
    ($features:expr, $ty:ident) => {
        $features
            .iter()
            .map(|(name, r)| $ty {
                name: name.as_str().into(),
                min_supported_version: r.min,
                max_supported_version: r.max,
                ..Default::default()
            })
            .collect()
    };
}

/// How a `BrokerRegistrationChangeRecord` changes the fenced flag.
fn fencing_change(v: i8) -> Result<Option<bool>, MetadataError> {
    match v {
        -1 => Ok(Some(false)),
        0 => Ok(None),
        1 => Ok(Some(true)),
        other => Err(MetadataError::InvalidFencingChange(other)),
    }
}

/// How a `BrokerRegistrationChangeRecord` changes the controlled-shutdown flag.
fn controlled_shutdown_change(v: i8) -> Result<Option<bool>, MetadataError> {
    match v {
        0 => Ok(None),
        1 => Ok(Some(true)),
        other => Err(MetadataError::InvalidControlledShutdownChange(other)),
    }
}

/// One registered broker.
///
/// ```
/// use josef_metadata::BrokerRegistration;
/// use josef_protocol::metadata_records::{BrokerRegistrationChangeRecord, RegisterBrokerRecord};
///
/// let b = BrokerRegistration::from_record(&RegisterBrokerRecord {
///     broker_id: 1,
///     broker_epoch: 42,
///     ..Default::default()
/// });
/// assert!(b.fenced); // a new registration starts fenced
/// let change = BrokerRegistrationChangeRecord { broker_id: 1, broker_epoch: 42, fenced: -1, ..Default::default() };
/// let b = b.apply_change(&change).unwrap();
/// assert!(!b.fenced && !b.in_controlled_shutdown);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerRegistration {
    /// The broker id.
    pub id: i32,
    /// The broker epoch (the metadata offset of its registration).
    pub epoch: i64,
    /// The id of this run of the broker process.
    pub incarnation_id: Uuid,
    /// Its listeners, in the order registered.
    pub listeners: Vec<Endpoint>,
    /// The features it supports, by name.
    pub supported_features: BTreeMap<String, FeatureRange>,
    /// Its rack.
    pub rack: Option<String>,
    /// Whether it is fenced (may not lead or be in an ISR).
    pub fenced: bool,
    /// Whether it is in controlled shutdown.
    pub in_controlled_shutdown: bool,
    /// Whether it is a ZooKeeper broker being migrated.
    pub is_migrating_zk_broker: bool,
    /// Its online log directories.
    pub directories: Vec<Uuid>,
}

impl BrokerRegistration {
    /// The registration a `RegisterBrokerRecord` describes.
    pub fn from_record(r: &RegisterBrokerRecord) -> Self {
        BrokerRegistration {
            id: r.broker_id,
            epoch: r.broker_epoch,
            incarnation_id: r.incarnation_id,
            listeners: endpoints_from!(r.end_points),
            supported_features: features_from!(r.features),
            rack: r.rack.as_ref().map(|s| s.to_string()),
            fenced: r.fenced,
            in_controlled_shutdown: r.in_controlled_shutdown,
            is_migrating_zk_broker: r.is_migrating_zk_broker,
            directories: r.log_dirs.clone(),
        }
    }

    /// The `RegisterBrokerRecord` that recreates this registration.
    pub fn to_record(&self) -> RegisterBrokerRecord {
        RegisterBrokerRecord {
            broker_id: self.id,
            is_migrating_zk_broker: self.is_migrating_zk_broker,
            incarnation_id: self.incarnation_id,
            broker_epoch: self.epoch,
            end_points: endpoints_to!(self.listeners, BrokerEndpoint),
            features: features_to!(self.supported_features, BrokerFeature),
            rack: self.rack.as_deref().map(Into::into),
            fenced: self.fenced,
            in_controlled_shutdown: self.in_controlled_shutdown,
            log_dirs: self.directories.clone(),
            ..Default::default()
        }
    }

    /// The listener named `name`.
    pub fn listener(&self, name: &str) -> Option<&Endpoint> {
        self.listeners.iter().find(|e| e.name == name)
    }

    /// Whether it may lead partitions: unfenced and not in controlled shutdown.
    pub fn is_active(&self) -> bool {
        !self.fenced && !self.in_controlled_shutdown
    }

    /// The registration after a `BrokerRegistrationChangeRecord` (`Fenced`: 1 fence, -1 unfence, 0 keep;
    /// `InControlledShutdown`: 1 entered, 0 keep; non-empty `LogDirs` replace the directories). The
    /// broker id and epoch are checked by [`crate::MetadataDelta::replay`], not here.
    pub fn apply_change(
        &self,
        change: &BrokerRegistrationChangeRecord,
    ) -> Result<Self, MetadataError> {
        let fenced = fencing_change(change.fenced)?;
        let shutdown = controlled_shutdown_change(change.in_controlled_shutdown)?;
        let mut next = self.clone();
        if let Some(f) = fenced {
            next.fenced = f;
        }
        if let Some(s) = shutdown {
            next.in_controlled_shutdown = s;
        }
        if !change.log_dirs.is_empty() {
            next.directories = change.log_dirs.clone();
        }
        Ok(next)
    }
}

/// One registered controller (from a `RegisterControllerRecord`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerRegistration {
    /// The controller's node id.
    pub id: i32,
    /// The id of this run of the controller process.
    pub incarnation_id: Uuid,
    /// Whether it is ready for a ZooKeeper migration.
    pub zk_migration_ready: bool,
    /// Its listeners.
    pub listeners: Vec<Endpoint>,
    /// The features it supports, by name.
    pub supported_features: BTreeMap<String, FeatureRange>,
}

impl ControllerRegistration {
    /// The registration a `RegisterControllerRecord` describes.
    pub fn from_record(r: &RegisterControllerRecord) -> Self {
        ControllerRegistration {
            id: r.controller_id,
            incarnation_id: r.incarnation_id,
            zk_migration_ready: r.zk_migration_ready,
            listeners: endpoints_from!(r.end_points),
            supported_features: features_from!(r.features),
        }
    }

    /// The `RegisterControllerRecord` that recreates this registration.
    pub fn to_record(&self) -> RegisterControllerRecord {
        RegisterControllerRecord {
            controller_id: self.id,
            incarnation_id: self.incarnation_id,
            zk_migration_ready: self.zk_migration_ready,
            end_points: endpoints_to!(self.listeners, ControllerEndpoint),
            features: features_to!(self.supported_features, ControllerFeature),
            ..Default::default()
        }
    }
}
