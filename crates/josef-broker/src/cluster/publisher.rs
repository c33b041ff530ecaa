//! From the metadata image to this broker's logs (Kafka's `BrokerMetadataPublisher` and
//! `ReplicaManager.applyDelta`): topics the image has are opened here with the controller's topic
//! id, partitions added, configs applied; topics it no longer has (or that came back with another
//! id) are deleted here.
//!
//! Every image is applied whole, in order, on one task; an image that arrives while the previous
//! one is being applied is coalesced with later ones (only the newest matters).

use std::collections::BTreeMap;
use std::sync::Arc;

use josef_metadata::MetadataImage;

use super::ClusterNode;
use crate::state::BrokerState;

/// Starts applying images as they are committed.
pub fn spawn(state: Arc<BrokerState>, node: Arc<ClusterNode>) {
    let mut rx = node.log.subscribe_image();
    tokio::spawn(async move {
        loop {
            let image = rx.borrow_and_update().clone();
            let s = state.clone();
            let _ = tokio::task::spawn_blocking(move || apply_image(&s, &image)).await;
            if rx.changed().await.is_err() {
                break;
            }
        }
    });
}

/// Makes the local topics match `image`.
pub fn apply_image(state: &BrokerState, image: &MetadataImage) {
    for t in state.topics.all() {
        let keep = image.topic_by_name(&t.name).is_some_and(|it| it.id == t.id);
        if !keep {
            match state.topics.delete(&t.name) {
                Ok(()) => tracing::info!(topic = %t.name, "topic removed by the controller"),
                Err(e) => tracing::warn!(topic = %t.name, error = %e.message, "cannot delete topic"),
            }
        }
    }
    for it in image.topics() {
        let configs: BTreeMap<String, String> =
            image.topic_config(&it.name).cloned().unwrap_or_default();
        let count = it.partitions.keys().next_back().map_or(0, |last| last + 1);
        if count == 0 {
            continue;
        }
        match state.topics.get(&it.name) {
            None => {
                if let Err(e) = state.topics.create_with_id(&it.name, it.id, count, configs) {
                    tracing::error!(topic = %it.name, error = %e.message, "cannot open topic");
                }
            }
            Some(t) => {
                if (t.partitions.len() as i32) < count {
                    if let Err(e) = state.topics.add_partitions(&it.name, count, false) {
                        tracing::error!(topic = %it.name, error = %e.message, "cannot add partitions");
                    }
                }
                if t.configs != configs {
                    if let Err(e) = state.topics.set_configs(&it.name, configs) {
                        tracing::warn!(topic = %it.name, error = %e.message, "cannot apply configs");
                    }
                }
            }
        }
    }
}
