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

use super::replica_fetcher::FetchTarget;
use super::ClusterNode;
use crate::state::BrokerState;

/// Starts applying images as they are committed.
pub fn spawn(state: Arc<BrokerState>, node: Arc<ClusterNode>) {
    let mut rx = node.log.subscribe_image();
    tokio::spawn(async move {
        loop {
            if node.shutdown.is_cancelled() {
                return; // the node is stopping: its logs are about to close
            }
            let image = rx.borrow_and_update().clone();
            let s = state.clone();
            let n = node.clone();
            let applied = image.clone();
            if tokio::task::spawn_blocking(move || apply_image(&s, &n, &applied))
                .await
                .is_ok()
            {
                node.mark_published(image);
            }
            if rx.changed().await.is_err() {
                break;
            }
        }
    });
}

/// Makes the local topics, replica roles and replication throttles match `image`.
pub fn apply_image(state: &BrokerState, node: &ClusterNode, image: &MetadataImage) {
    // Before the roles: a restarted follower's fetchers start throttled, not after megabytes.
    state.replication_quotas.refresh(image);
    apply_topics(state, image);
    apply_roles(state, node, image);
}

/// Leader or follower per partition, with the image's epochs and ISR (Kafka's `makeLeader` /
/// `makeFollower`; repeated or stale states are ignored by the partition), and the fetchers
/// reconciled with the partitions this broker follows.
fn apply_roles(state: &BrokerState, node: &ClusterNode, image: &MetadataImage) {
    let me = node.node_id;
    let now = crate::topics::now_ms();
    let mut wanted = BTreeMap::new();
    for it in image.topics() {
        let Some(t) = state.topics.get(&it.name) else {
            continue;
        };
        if t.id != it.id {
            continue;
        }
        for (index, reg) in &it.partitions {
            let Some(p) = state.topics.partition(&it.name, *index) else {
                continue;
            };
            if reg.leader == me {
                // Parsed when `apply_topics` (just before) opened the partition or applied the
                // image's ConfigRecords to it.
                let min_isr = crate::partition::min_insync_replicas(&p);
                // Before the ISR: the HW computed with the new ISR must already skip a fenced or
                // shutting-down follower (Kafka's `isReplicaIsrEligible`), or a follower stopped
                // less than `replica.lag.time.max.ms` after it caught up holds it.
                p.set_ineligible_replicas(&ineligible_replicas(image, &reg.replicas, me), now);
                if let Err(e) = p.make_leader(
                    reg.leader_epoch,
                    reg.partition_epoch,
                    &reg.isr,
                    &reg.replicas,
                    min_isr,
                    now,
                ) {
                    tracing::error!(topic = %it.name, partition = index, error = %e, "cannot become leader");
                }
                continue;
            }
            p.make_follower(reg.leader, reg.leader_epoch, reg.partition_epoch);
            if reg.is_replica(me) && reg.leader >= 0 {
                wanted.insert(
                    (it.id, *index),
                    (
                        reg.leader,
                        FetchTarget {
                            topic: Arc::from(it.name.as_str()),
                            leader_epoch: reg.leader_epoch,
                        },
                    ),
                );
            }
        }
    }
    if let Some(f) = node.fetchers.get() {
        f.reconcile(wanted);
    }
}

/// The replicas of a partition other than `me` that may not join its ISR in `image`: not
/// registered, fenced or in controlled shutdown.
fn ineligible_replicas(image: &MetadataImage, replicas: &[i32], me: i32) -> Vec<i32> {
    replicas
        .iter()
        .copied()
        .filter(|&r| r != me && !image.is_active(r))
        .collect()
}

/// Makes the local topics match `image`.
fn apply_topics(state: &BrokerState, image: &MetadataImage) {
    for t in state.topics.all() {
        let keep = image.topic_by_name(&t.name).is_some_and(|it| it.id == t.id);
        if !keep {
            match state.topics.delete(&t.name) {
                Ok(()) => tracing::info!(topic = %t.name, "topic removed by the controller"),
                Err(e) => {
                    tracing::warn!(topic = %t.name, error = %e.message, "cannot delete topic")
                }
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
