//! FindCoordinator (api 10; Kafka's `KafkaApis.handleFindCoordinatorRequest` / `getCoordinator`),
//! answered from the state's [`MetadataView`](crate::kit::MetadataView) in every mode: the
//! coordinator of a key is the **leader of its coordinator partition**, `__consumer_offsets` for
//! groups (`josef_group::placement::partition_for` over the topic's partitions),
//! `__transaction_state` for transactions (`josef_txn::partition_for` over
//! `transaction.state.log.num.partitions`, what `txns.rs` places by), at that broker's endpoint
//! for the listener the request came in on. A single node leads every partition, so it names
//! itself. The leader may still be loading the shard; it then answers
//! COORDINATOR_LOAD_IN_PROGRESS or, if it has not applied its leadership yet, NOT_COORDINATOR,
//! and the client asks again.
//!
//! No live leader, or a leader without the listener → COORDINATOR_NOT_AVAILABLE. A missing
//! internal topic is created through the view first (Kafka's auto-creation of internal topics,
//! with their own settings; on a cluster node through the controller, where fewer registered
//! brokers than the replication factor is INVALID_REPLICATION_FACTOR, so
//! COORDINATOR_NOT_AVAILABLE here until enough brokers are up).

use josef_protocol::messages::find_coordinator_response::Coordinator;
use josef_protocol::messages::{FindCoordinatorRequest, FindCoordinatorResponse};
use josef_protocol::{ErrorCode, StrBytes};

use crate::connection::ConnectionInfo;
use crate::kit::MetadataView;
use crate::state::BrokerState;
use crate::topics::{GROUP_METADATA_TOPIC, TRANSACTION_STATE_TOPIC};

const KEY_TYPE_GROUP: i8 = 0;
const KEY_TYPE_TRANSACTION: i8 = 1;

/// Where a coordinator is: node id, host, port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoordinatorAddress {
    /// The broker id.
    pub node_id: i32,
    /// Its advertised host on the listener.
    pub host: String,
    /// Its advertised port on the listener.
    pub port: i32,
}

/// The internal topic holding coordinators of `key_type` (0 group, 1 transaction).
fn coordinator_topic(key_type: i8) -> Option<&'static str> {
    match key_type {
        KEY_TYPE_GROUP => Some(GROUP_METADATA_TOPIC),
        KEY_TYPE_TRANSACTION => Some(TRANSACTION_STATE_TOPIC),
        _ => None,
    }
}

/// The coordinator of `key` as `view` shows the cluster to `conn`: the live leader of its
/// coordinator partition, at its endpoint on the client's listener.
fn locate(
    view: &dyn MetadataView,
    conn: &ConnectionInfo,
    key_type: i8,
    key: &str,
    transaction_state_partitions: i32,
) -> Result<CoordinatorAddress, ErrorCode> {
    let topic = coordinator_topic(key_type).ok_or(ErrorCode::InvalidRequest)?;
    let t = view
        .topic(topic, conn)
        .ok_or(ErrorCode::CoordinatorNotAvailable)?;
    let index = match key_type {
        KEY_TYPE_GROUP => {
            // Placed over the partitions the topic has, as groups.rs places shards.
            let count = t
                .partitions
                .iter()
                .map(|p| p.partition_index + 1)
                .max()
                .unwrap_or(0);
            josef_group::placement::partition_for(key, count)
        }
        _ => Some(josef_txn::partition_for(key, transaction_state_partitions)),
    }
    .ok_or(ErrorCode::CoordinatorNotAvailable)?;
    let p = t
        .partitions
        .iter()
        .find(|p| p.partition_index == index)
        .ok_or(ErrorCode::CoordinatorNotAvailable)?;
    if p.error != ErrorCode::None || p.leader_id < 0 {
        return Err(ErrorCode::CoordinatorNotAvailable);
    }
    let broker = view
        .brokers(conn)
        .into_iter()
        .find(|b| b.node_id == p.leader_id)
        .ok_or(ErrorCode::CoordinatorNotAvailable)?;
    Ok(CoordinatorAddress {
        node_id: broker.node_id,
        host: broker.host,
        port: broker.port,
    })
}

fn error_message(code: ErrorCode) -> Option<StrBytes> {
    (code != ErrorCode::None).then(|| StrBytes::from(code.name()))
}

fn none() -> CoordinatorAddress {
    CoordinatorAddress {
        node_id: -1,
        host: String::new(),
        port: -1,
    }
}

/// Handles a FindCoordinator request (v0–3 one key, v4+ batched).
pub async fn handle(
    state: &BrokerState,
    conn: &ConnectionInfo,
    req: FindCoordinatorRequest,
    version: i16,
) -> FindCoordinatorResponse {
    let key_type = if version >= 1 {
        req.key_type
    } else {
        KEY_TYPE_GROUP
    };
    let live = state.metadata_view.as_ref();
    if let Some(topic) = coordinator_topic(key_type) {
        if live.topic(topic, conn).is_none() {
            if let Err(code) = live.create_topic(topic).await {
                tracing::warn!(%topic, ?code, "cannot create internal topic");
            }
        }
    }
    // Every key of the request located in one moment of the view.
    let snapshot = live.snapshot();
    let view = snapshot.as_deref().unwrap_or(live);
    let parts = state.config.transaction_state_log_num_partitions;
    let find = |key: &str| match locate(view, conn, key_type, key, parts) {
        Ok(a) => (ErrorCode::None, a),
        Err(code) => (code, none()),
    };
    if version < 4 {
        let (code, found) = find(&req.key);
        return FindCoordinatorResponse {
            error_code: code.code(),
            error_message: error_message(code),
            node_id: found.node_id,
            host: StrBytes::from(found.host),
            port: found.port,
            ..Default::default()
        };
    }
    let coordinators = req
        .coordinator_keys
        .iter()
        .map(|k| {
            let (code, found) = find(k);
            Coordinator {
                key: k.clone(),
                node_id: found.node_id,
                host: StrBytes::from(found.host),
                port: found.port,
                error_code: code.code(),
                error_message: error_message(code),
                ..Default::default()
            }
        })
        .collect();
    FindCoordinatorResponse {
        coordinators,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kit::ImageMetadata;
    use josef_metadata::{MetadataDelta, MetadataImage, MetadataProvenance, MetadataRecord};
    use josef_protocol::metadata_records::register_broker_record::BrokerEndpoint;
    use josef_protocol::metadata_records::{
        FenceBrokerRecord, PartitionChangeRecord, PartitionRecord, RegisterBrokerRecord,
        TopicRecord,
    };
    use josef_protocol::{StrBytes, Uuid};

    const OFFSETS: Uuid = Uuid::from_u128(0x0ff5);
    const TXNS: Uuid = Uuid::from_u128(0x7a45);

    fn broker(id: i32, listeners: &[(&str, u16)]) -> MetadataRecord {
        RegisterBrokerRecord {
            broker_id: id,
            broker_epoch: i64::from(id),
            fenced: false,
            end_points: listeners
                .iter()
                .map(|(name, port)| BrokerEndpoint {
                    name: StrBytes::from(*name),
                    host: StrBytes::from(format!("host{id}")),
                    port: *port,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
        .into()
    }

    /// Three brokers; `parts` partitions of `topic`, partition i led by broker i % 3 + 1.
    fn records(topic: &str, id: Uuid, parts: i32) -> Vec<MetadataRecord> {
        let mut out = vec![
            broker(1, &[("PLAINTEXT", 9001), ("INTERNAL", 9101)]),
            broker(2, &[("PLAINTEXT", 9002), ("INTERNAL", 9102)]),
            broker(3, &[("INTERNAL", 9103)]),
            TopicRecord {
                name: topic.into(),
                topic_id: id,
                ..Default::default()
            }
            .into(),
        ];
        for i in 0..parts {
            out.push(
                PartitionRecord {
                    topic_id: id,
                    partition_id: i,
                    replicas: vec![1, 2, 3].into(),
                    isr: vec![1, 2, 3].into(),
                    leader: i % 3 + 1,
                    ..Default::default()
                }
                .into(),
            );
        }
        out
    }

    fn image(recs: &[MetadataRecord]) -> MetadataImage {
        let mut d = MetadataDelta::new(&MetadataImage::empty());
        for r in recs {
            d.replay(r).unwrap();
        }
        d.apply(MetadataProvenance::default())
    }

    /// The coordinator of `key` in `img` for a client on `listener`, through the image's view.
    fn locate(
        img: &MetadataImage,
        key_type: i8,
        key: &str,
        listener: &str,
        transaction_state_partitions: i32,
    ) -> Result<CoordinatorAddress, ErrorCode> {
        let view = ImageMetadata::new(img.clone());
        let conn = ConnectionInfo::new(listener, 9092, "127.0.0.1:40000".parse().unwrap());
        super::locate(&view, &conn, key_type, key, transaction_state_partitions)
    }

    /// A group key whose `__consumer_offsets` partition (of `parts`) is `want`.
    fn group_on(want: i32, parts: i32) -> String {
        (0..)
            .map(|i| format!("group-{i}"))
            .find(|g| josef_group::placement::partition_for(g, parts) == Some(want))
            .unwrap()
    }

    #[test]
    fn a_group_coordinator_is_the_leader_of_its_partition_at_the_request_listener() {
        let img = image(&records(GROUP_METADATA_TOPIC, OFFSETS, 6));
        for p in 0..6 {
            let g = group_on(p, 6);
            let leader = p % 3 + 1;
            let got = locate(&img, KEY_TYPE_GROUP, &g, "INTERNAL", 50).unwrap();
            assert_eq!(
                got,
                CoordinatorAddress {
                    node_id: leader,
                    host: format!("host{leader}"),
                    port: 9100 + leader,
                }
            );
        }
        // Every node computes the same answer: it only depends on the image.
        let g = group_on(1, 6);
        assert_eq!(
            locate(&img, KEY_TYPE_GROUP, &g, "PLAINTEXT", 50)
                .unwrap()
                .node_id,
            2
        );
    }

    #[test]
    fn a_leader_without_the_listener_or_no_leader_is_coordinator_not_available() {
        let mut recs = records(GROUP_METADATA_TOPIC, OFFSETS, 3);
        let img = image(&recs);
        // Partition 2 is led by broker 3, which has no PLAINTEXT listener.
        let g = group_on(2, 3);
        assert_eq!(
            locate(&img, KEY_TYPE_GROUP, &g, "PLAINTEXT", 50),
            Err(ErrorCode::CoordinatorNotAvailable)
        );
        // Partition 0 loses its leader.
        recs.push(
            PartitionChangeRecord {
                topic_id: OFFSETS,
                partition_id: 0,
                leader: -1,
                ..Default::default()
            }
            .into(),
        );
        let img = image(&recs);
        assert_eq!(
            locate(&img, KEY_TYPE_GROUP, &group_on(0, 3), "PLAINTEXT", 50),
            Err(ErrorCode::CoordinatorNotAvailable)
        );
        // A fenced leader is not live.
        recs.push(
            FenceBrokerRecord {
                id: 2,
                epoch: 2,
                ..Default::default()
            }
            .into(),
        );
        let img = image(&recs);
        assert_eq!(
            locate(&img, KEY_TYPE_GROUP, &group_on(1, 3), "PLAINTEXT", 50),
            Err(ErrorCode::CoordinatorNotAvailable)
        );
    }

    #[test]
    fn no_internal_topic_is_coordinator_not_available_and_a_bad_key_type_invalid_request() {
        let img = image(&[broker(1, &[("PLAINTEXT", 9001)])]);
        assert_eq!(
            locate(&img, KEY_TYPE_GROUP, "g", "PLAINTEXT", 50),
            Err(ErrorCode::CoordinatorNotAvailable)
        );
        assert_eq!(
            locate(&img, KEY_TYPE_TRANSACTION, "t", "PLAINTEXT", 50),
            Err(ErrorCode::CoordinatorNotAvailable)
        );
        assert_eq!(
            locate(&img, 2, "x", "PLAINTEXT", 50),
            Err(ErrorCode::InvalidRequest)
        );
    }

    #[test]
    fn a_transaction_coordinator_is_placed_as_the_txn_coordinator_places_it() {
        let img = image(&records(TRANSACTION_STATE_TOPIC, TXNS, 5));
        for id in ["txn-a", "txn-b", "txn-c", "another"] {
            let p = josef_txn::partition_for(id, 5);
            let got = locate(&img, KEY_TYPE_TRANSACTION, id, "INTERNAL", 5).unwrap();
            assert_eq!(got.node_id, p % 3 + 1, "{id} on partition {p}");
        }
    }
}
