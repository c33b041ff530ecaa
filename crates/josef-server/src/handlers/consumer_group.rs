//! The consumer group protocol (KIP-848): ConsumerGroupHeartbeat (68) and
//! ConsumerGroupDescribe (69), run on the group's coordinator shard like the classic APIs.
//! Each call first hands the shard the current topic image, so subscriptions (names and
//! regular expressions) and OffsetCommit's partition check see the topics as they are now.

use josef_group::consumer::{api as c, wire, TopicImage, TopicInfo};
use josef_group::{wire::ALL_GROUP_OPERATIONS, Errors, GroupResult};
use josef_protocol::messages::{
    ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
};
use josef_protocol::RequestHeader;

use crate::connection::ConnectionInfo;
use crate::groups::ShardError;
use crate::state::BrokerState;
use crate::topics::TopicManager;

/// The topics consumer groups subscribe to: the cluster's image on a cluster node, the local
/// topics on one node (internal topics left out).
pub fn topic_image(state: &BrokerState) -> TopicImage {
    match state.cluster.as_deref() {
        Some(node) => cluster_topic_image(&node.log.image()),
        None => local_topic_image(&state.topics, state.config.broker_rack.as_deref()),
    }
}

/// A number that changes whenever [`topic_image`] may: the metadata offset the cluster's image
/// is at, or the single node's topic generation (bumped on every topic create, delete and
/// change).
pub fn topic_image_version(state: &BrokerState) -> u64 {
    match state.cluster.as_deref() {
        Some(node) => node.log.image().provenance().last_offset,
        None => state.topics.generation(),
    }
}

/// The cluster's topics, each partition with the racks of its replicas' brokers (the
/// `broker.rack` they registered with; none when no replica's broker has one).
fn cluster_topic_image(image: &josef_metadata::MetadataImage) -> TopicImage {
    image
        .topics()
        .filter(|t| !crate::topics::INTERNAL_TOPICS.contains(&t.name.as_str()))
        .map(|t| {
            let count = t.partitions.len() as i32;
            let mut info = TopicInfo::new(t.id, count);
            let racks: Vec<Vec<String>> = (0..count)
                .map(|p| {
                    let mut racks: Vec<String> = t
                        .partitions
                        .get(&p)
                        .map(|r| r.replicas.as_slice())
                        .unwrap_or_default()
                        .iter()
                        .filter_map(|b| image.broker(*b).and_then(|b| b.rack.clone()))
                        .collect();
                    racks.sort();
                    racks.dedup();
                    racks
                })
                .collect();
            if racks.iter().any(|r| !r.is_empty()) {
                info.racks = racks;
            }
            (t.name.clone(), info)
        })
        .collect()
}

/// The single node's topics; with `broker.rack` every partition's only replica is in that rack,
/// as in the topic image Kafka builds from its one broker's registration.
fn local_topic_image(topics: &TopicManager, rack: Option<&str>) -> TopicImage {
    topics
        .all()
        .into_iter()
        .filter(|t| !t.is_internal())
        .map(|t| {
            let count = t.partitions.len() as i32;
            let mut info = TopicInfo::new(t.id, count);
            if let Some(rack) = rack {
                info.racks = vec![vec![rack.to_string()]; t.partitions.len()];
            }
            (t.name.clone(), info)
        })
        .collect()
}

/// Runs `f` after the shard has seen the current topic image; both results' records are
/// written together.
pub fn with_image<R>(
    coord: &mut crate::groups::Coordinator,
    now: i64,
    image: TopicImage,
    f: impl FnOnce(&mut crate::groups::Coordinator, i64) -> GroupResult<R>,
) -> GroupResult<R> {
    let first = coord.on_topics_changed(now, image);
    let mut second = f(coord, now);
    let mut records = first.records;
    records.append(&mut second.records);
    second.records = records;
    second
}

fn shard_error(e: ShardError) -> Errors {
    match e {
        ShardError::NotAvailable => Errors::CoordinatorNotAvailable,
        ShardError::NotCoordinator => Errors::NotCoordinator,
        ShardError::ProducerFenced => Errors::InvalidProducerEpoch,
        ShardError::LoadInProgress => Errors::CoordinatorLoadInProgress,
    }
}

/// ConsumerGroupHeartbeat (68).
pub async fn heartbeat(
    state: &BrokerState,
    conn: &ConnectionInfo,
    header: &RequestHeader,
    r: ConsumerGroupHeartbeatRequest,
) -> ConsumerGroupHeartbeatResponse {
    let req = wire::heartbeat_request(&r);
    let ctx = super::groups::ctx(header, conn);
    let image = topic_image(state);
    let shard = state
        .groups
        .shard(&state.topics, state.cluster.as_deref(), &req.group_id);
    let answer = match shard {
        Ok(shard) => {
            state
                .groups
                .run(&shard, |coord, now| {
                    with_image(coord, now, image, |coord, now| {
                        coord.consumer_group_heartbeat(now, &ctx, req)
                    })
                })
                .await
        }
        Err(e) => Err(e),
    };
    wire::heartbeat_response(
        &answer.unwrap_or_else(|e| c::ConsumerGroupHeartbeatResponse::error(shard_error(e), None)),
    )
}

/// ConsumerGroupDescribe (69): each group from its own shard, once its writes are committed.
pub async fn describe(
    state: &BrokerState,
    r: ConsumerGroupDescribeRequest,
) -> ConsumerGroupDescribeResponse {
    let mut groups = Vec::with_capacity(r.group_ids.len());
    for id in &r.group_ids {
        let id = id.to_string();
        let answer = match state
            .groups
            .shard(&state.topics, state.cluster.as_deref(), &id)
        {
            Ok(shard) => {
                state
                    .groups
                    .read_committed(&shard, |coord| {
                        coord.consumer_group_describe(std::slice::from_ref(&id))
                    })
                    .await
            }
            Err(e) => Err(e),
        };
        match answer {
            Ok(d) => groups.extend(d),
            Err(e) => groups.push(c::DescribedConsumerGroup::error(&id, shard_error(e), None)),
        }
    }
    let ops = r
        .include_authorized_operations
        .then_some(ALL_GROUP_OPERATIONS);
    wire::describe_response(&groups, ops)
}

#[cfg(test)]
mod tests {
    use josef_metadata::{MetadataDelta, MetadataImage, MetadataProvenance, MetadataRecord};
    use josef_protocol::metadata_records::{PartitionRecord, RegisterBrokerRecord, TopicRecord};
    use josef_protocol::{StrBytes, Uuid};

    use super::{cluster_topic_image, local_topic_image};

    fn image(topics: &[(&str, &[&[i32]])]) -> MetadataImage {
        let mut delta = MetadataDelta::new(&MetadataImage::empty());
        for (id, rack) in [
            (1, Some("r-a")),
            (2, Some("r-b")),
            (3, None),
            (4, Some("r-a")),
        ] {
            delta
                .replay(&MetadataRecord::RegisterBroker(RegisterBrokerRecord {
                    broker_id: id,
                    rack: rack.map(StrBytes::from_static_str),
                    fenced: false,
                    ..Default::default()
                }))
                .unwrap();
        }
        for (i, (name, partitions)) in topics.iter().enumerate() {
            let topic_id = Uuid::from_u128(i as u128 + 1);
            delta
                .replay(&MetadataRecord::Topic(TopicRecord {
                    name: name.to_string().into(),
                    topic_id,
                    ..Default::default()
                }))
                .unwrap();
            for (p, replicas) in partitions.iter().enumerate() {
                delta
                    .replay(&MetadataRecord::Partition(PartitionRecord {
                        topic_id,
                        partition_id: p as i32,
                        replicas: replicas.to_vec().into(),
                        isr: replicas.to_vec().into(),
                        leader: replicas[0],
                        ..Default::default()
                    }))
                    .unwrap();
            }
        }
        delta.apply(MetadataProvenance {
            last_offset: 1,
            last_epoch: 1,
        })
    }

    #[test]
    fn each_partition_gets_the_racks_of_its_replicas_brokers() {
        let img = cluster_topic_image(&image(&[
            ("t", &[&[1, 2], &[3], &[4, 1, 3]]),
            ("norack", &[&[3]]),
            ("__consumer_offsets", &[&[1]]),
        ]));
        let t = &img["t"];
        assert_eq!(t.partitions, 3);
        assert_eq!(t.partition_racks(0), ["r-a", "r-b"]);
        assert!(t.partition_racks(1).is_empty(), "broker 3 has no rack");
        assert_eq!(t.partition_racks(2), ["r-a"], "one entry per rack");
        assert!(img["norack"].racks.is_empty());
        assert!(!img.contains_key("__consumer_offsets"));
    }

    #[test]
    fn a_single_nodes_partitions_are_all_in_its_rack() {
        use std::collections::BTreeMap;
        use std::sync::Arc;

        let config = Arc::new(crate::config::BrokerConfig {
            log_dirs: vec!["/josef/a".into()],
            log_storage: crate::log_storage::LogStorage::Custom(Arc::new(
                josef_log::storage::MemoryStorage::new(),
            )),
            ..Default::default()
        });
        let topics = crate::topics::TopicManager::load(config, None).unwrap();
        topics.create("t", 3, BTreeMap::new()).unwrap();
        let img = local_topic_image(&topics, Some("r1"));
        for p in 0..3 {
            assert_eq!(img["t"].partition_racks(p), ["r1"]);
        }
        assert!(local_topic_image(&topics, None)["t"].racks.is_empty());
    }
}
