//! The metadata records the controller writes and replays (josef-metadata's [`MetadataRecord`]).

use josef_protocol::SmallVec;

pub use josef_metadata::{ClusterIdRecord, MetadataRecord};
pub use josef_protocol::metadata_records::{
    BrokerRegistrationChangeRecord, ConfigRecord, FeatureLevelRecord, ProducerIdsRecord,
    RegisterBrokerRecord, RemoveTopicRecord, TopicRecord, UnregisterBrokerRecord,
};

pub(crate) fn ids(v: &[i32]) -> SmallVec<[i32; 4]> {
    SmallVec::from_slice(v)
}
