//! Client quotas followed from a KRaft metadata image (Kafka's `ClientQuotaMetadataManager`).

use josef_metadata::{MetadataImage, MetadataRecord};

use crate::error::QuotaRecordError;
use crate::store::{AlterOutcome, QuotaStore};

impl QuotaStore {
    /// The client quotas of `image`, and the entries of it no quota entity can hold (skipped;
    /// Kafka logs and ignores them).
    pub fn from_image(image: &MetadataImage) -> (QuotaStore, Vec<QuotaRecordError>) {
        let mut store = QuotaStore::new();
        let mut ignored = Vec::new();
        for (entity, quotas) in image.client_quotas() {
            for (key, value) in quotas {
                let components = entity.iter().map(|(t, n)| (t.as_str(), n.as_deref()));
                if let Err(e) = store.insert_components(components, key, *value) {
                    ignored.push(e);
                }
            }
        }
        (store, ignored)
    }
}

impl AlterOutcome {
    /// The ClientQuotaRecords to append to the metadata log.
    pub fn metadata_records(&self) -> Vec<MetadataRecord> {
        self.records
            .iter()
            .cloned()
            .map(MetadataRecord::ClientQuota)
            .collect()
    }
}
