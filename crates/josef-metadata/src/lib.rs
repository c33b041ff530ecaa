//! Kafka's KRaft metadata, as a pure library: the records of the metadata log, the immutable
//! [`MetadataImage`] they describe, and the [`MetadataDelta`] that replays records into the next image
//! (Kafka's `org.apache.kafka.image` and `org.apache.kafka.metadata` classes). No I/O, no clock.
//!
//! * [`MetadataRecord`]: every metadata record type (the structs generated into
//!   [`josef_protocol::metadata_records`]) plus Josef's [`ClusterIdRecord`], with Kafka's metadata
//!   record serde ([`MetadataRecord::encode`], [`MetadataRecord::decode`]).
//! * [`PartitionRegistration`] with Kafka's merge rules for a `PartitionChangeRecord`;
//!   [`BrokerRegistration`], [`ControllerRegistration`].
//! * [`MetadataImage`] (cheap to clone), [`MetadataDelta`] ([`MetadataDelta::replay`],
//!   [`MetadataDelta::apply`]), snapshots with [`MetadataImage::to_records`].
//! * [`LocalReplicaChanges`]: what a delta means for one broker's replicas.
//!
//! ```
//! use josef_metadata::{MetadataDelta, MetadataImage, MetadataProvenance, MetadataRecord};
//! use josef_protocol::metadata_records::{FenceBrokerRecord, RegisterBrokerRecord, UnfenceBrokerRecord};
//!
//! let mut delta = MetadataDelta::new(&MetadataImage::empty());
//! let register = RegisterBrokerRecord { broker_id: 1, broker_epoch: 10, ..Default::default() };
//! delta.replay(&MetadataRecord::decode(&MetadataRecord::from(register).encode()?)?)?;
//! delta.replay(&UnfenceBrokerRecord { id: 1, epoch: 10, ..Default::default() }.into())?;
//! let image = delta.apply(MetadataProvenance { last_offset: 2, last_epoch: 1 });
//! assert!(image.is_active(1));
//!
//! // A record with a stale broker epoch is refused.
//! let mut delta = MetadataDelta::new(&image);
//! assert!(delta.replay(&FenceBrokerRecord { id: 1, epoch: 9, ..Default::default() }.into()).is_err());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

mod broker;
mod delta;
mod error;
mod image;
mod local;
mod partition;
mod record;

pub use broker::{BrokerRegistration, ControllerRegistration, Endpoint, FeatureRange};
pub use delta::MetadataDelta;
pub use error::{MetadataError, RecordDecodeError};
pub use image::{
    ConfigResource, MetadataImage, MetadataProvenance, QuotaEntity, TopicImage, BROKER_RESOURCE,
    METADATA_VERSION_FEATURE, TOPIC_RESOURCE,
};
pub use local::{LocalDelete, LocalPartition, LocalReplicaChanges};
pub use partition::{
    LeaderRecoveryState, PartitionRegistration, DIRECTORY_UNASSIGNED, NO_LEADER, NO_LEADER_CHANGE,
};
pub use record::{ClusterIdRecord, MetadataRecord, FRAME_VERSION};

/// The README's example, run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
