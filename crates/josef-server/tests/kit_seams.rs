//! The kit's seams are real: a second implementation of each trait, plugged into a broker's
//! state, is what the handlers answer from. Requests go through the codec over an in-memory pipe,
//! as a client's would; a handler that went around the trait (to the topics directly) would
//! answer from the broker's own topics and fail these tests.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use common::{create_topic, fetch_partition, produce_records, Client};
use josef_protocol::messages::fetch_request::FetchTopic;
use josef_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use josef_protocol::messages::metadata_request::MetadataRequestTopic;
use josef_protocol::messages::{
    FetchRequest, ListOffsetsRequest, MetadataRequest, MetadataResponse,
};
use josef_protocol::{ErrorCode, ResponseBody, Uuid};
use josef_records::{BatchHeader, RecordBatchBuilder};
use josef_server::config::BrokerConfig;
use josef_server::connection::{serve_connection, ConnectionInfo, ConnectionLimits};
use josef_server::kit::metadata_view::{BrokerEndpoint, PartitionMetadata, TopicMetadata};
use josef_server::kit::partition_store::{ProduceSettings, TopicPartition};
use josef_server::kit::{MetadataView, PartitionStore};
use josef_server::log_storage::LogStorage;
use josef_server::partition::{
    ClientBatch, FetchIsolation, Partition, PartitionError, ProduceResult, ReadParams, ReadResult,
};
use josef_server::state::BrokerState;
use tokio::io::DuplexStream;
use tokio_util::sync::CancellationToken;

/// A broker's state on in-memory logs in `dir`, not yet serving.
fn open_state(dir: &std::path::Path) -> BrokerState {
    let config = BrokerConfig {
        log_dirs: vec![dir.to_path_buf()],
        log_storage: LogStorage::Memory,
        ..BrokerConfig::default()
    };
    BrokerState::open(Arc::new(config), "kit-cluster".into(), None).unwrap()
}

/// Serves `state` over one end of a pipe; a client on the other.
fn serve(state: BrokerState) -> (Client<DuplexStream>, CancellationToken) {
    let (client, server_end) = tokio::io::duplex(1 << 20);
    let stop = CancellationToken::new();
    let info = ConnectionInfo::new("PLAINTEXT", 9092, "127.0.0.1:40000".parse().unwrap());
    tokio::spawn(serve_connection(
        server_end,
        info,
        Arc::new(state),
        ConnectionLimits::default(),
        stop.clone(),
    ));
    (Client::over(client), stop)
}

const FIXED_ID: Uuid = Uuid::from_u128(0x5eed);

/// A cluster this node knows nothing of: broker 42 (and an offline 43) leading "fixed".
struct FixedImage;

impl MetadataView for FixedImage {
    fn brokers(&self, _conn: &ConnectionInfo) -> Vec<BrokerEndpoint> {
        vec![BrokerEndpoint {
            node_id: 42,
            host: "fixed.example".into(),
            port: 19092,
            rack: Some("r1".into()),
        }]
    }

    fn controller_id(&self, _conn: &ConnectionInfo) -> i32 {
        42
    }

    fn topics(&self, conn: &ConnectionInfo) -> Vec<TopicMetadata> {
        self.topic("fixed", conn).into_iter().collect()
    }

    fn topic(&self, name: &str, _conn: &ConnectionInfo) -> Option<TopicMetadata> {
        (name == "fixed").then(|| TopicMetadata {
            name: "fixed".into(),
            topic_id: FIXED_ID,
            is_internal: false,
            partitions: (0..2)
                .map(|i| PartitionMetadata {
                    partition_index: i,
                    error: ErrorCode::None,
                    leader_id: 42,
                    leader_epoch: 9,
                    replica_nodes: vec![42, 43],
                    isr_nodes: vec![42],
                    offline_replicas: vec![43],
                })
                .collect(),
        })
    }

    fn topic_by_id(&self, id: Uuid, conn: &ConnectionInfo) -> Option<TopicMetadata> {
        self.topics(conn).into_iter().find(|t| t.topic_id == id)
    }
}

async fn metadata(c: &mut Client<DuplexStream>, req: MetadataRequest) -> MetadataResponse {
    let ResponseBody::Metadata(r) = c.call(12, req).await else {
        panic!("not a Metadata response")
    };
    r
}

fn named(name: &str) -> MetadataRequestTopic {
    MetadataRequestTopic {
        name: Some(name.into()),
        ..Default::default()
    }
}

#[tokio::test]
async fn metadata_answers_from_the_plugged_in_view() {
    let dir = tempfile::tempdir().unwrap();
    let state = open_state(dir.path());
    let own_topics = state.topics.clone();
    // The broker's own topics have one the fixed image lacks: it must not show.
    own_topics
        .create("own", 1, Default::default())
        .expect("create own");
    let (mut c, stop) = serve(state.with_metadata_view(Arc::new(FixedImage)));

    let every_topic = MetadataRequest {
        topics: None,
        ..Default::default()
    };
    let all = metadata(&mut c, every_topic).await;
    assert_eq!(all.controller_id, 42);
    let brokers: Vec<_> = all
        .brokers
        .iter()
        .map(|b| (b.node_id, b.host.to_string(), b.port, b.rack.clone()))
        .collect();
    assert_eq!(
        brokers,
        [(42, "fixed.example".to_string(), 19092, Some("r1".into()))]
    );
    let names: Vec<_> = all.topics.iter().map(|t| t.name.clone()).collect();
    assert_eq!(names, [Some("fixed".into())]);
    let p = &all.topics[0].partitions[1];
    assert_eq!(
        (p.leader_id, p.leader_epoch, p.offline_replicas.to_vec()),
        (42, 9, vec![43])
    );

    let by_id = metadata(
        &mut c,
        MetadataRequest {
            topics: Some(vec![MetadataRequestTopic {
                topic_id: FIXED_ID,
                ..Default::default()
            }]),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(by_id.topics[0].name, Some("fixed".into()));

    // "own" is the broker's but not the view's; "fresh" would be auto-created by the broker,
    // but this view creates nothing.
    let by_name = metadata(
        &mut c,
        MetadataRequest {
            topics: Some(vec![named("own"), named("fresh")]),
            allow_auto_topic_creation: true,
            ..Default::default()
        },
    )
    .await;
    let codes: Vec<_> = by_name.topics.iter().map(|t| t.error_code).collect();
    let unknown = ErrorCode::UnknownTopicOrPartition.code();
    assert_eq!(codes, [unknown, unknown]);
    assert!(own_topics.get("fresh").is_none(), "created around the view");
    stop.cancel();
}

/// Josef's store with appends counted and the topic "closed" refused everywhere.
struct Guarded {
    inner: Arc<dyn PartitionStore>,
    appends: Arc<AtomicU64>,
    reads: Arc<AtomicU64>,
}

impl Guarded {
    fn check(tp: TopicPartition<'_>) -> Result<(), ErrorCode> {
        match tp.topic {
            "closed" => Err(ErrorCode::TopicAuthorizationFailed),
            _ => Ok(()),
        }
    }
}

impl PartitionStore for Guarded {
    fn check_leader_epoch(
        &self,
        tp: TopicPartition<'_>,
        current_leader_epoch: i32,
        require_leader: bool,
    ) -> Result<i32, ErrorCode> {
        Self::check(tp)?;
        self.inner
            .check_leader_epoch(tp, current_leader_epoch, require_leader)
    }

    fn offset_for_timestamp(
        &self,
        tp: TopicPartition<'_>,
        timestamp: i64,
        isolation: FetchIsolation,
    ) -> Result<Option<(i64, i64)>, ErrorCode> {
        Self::check(tp)?;
        self.inner.offset_for_timestamp(tp, timestamp, isolation)
    }

    fn legacy_offsets(
        &self,
        tp: TopicPartition<'_>,
        timestamp: i64,
        max_num_offsets: i32,
        from_consumer: bool,
        now_ms: i64,
    ) -> Result<Vec<i64>, ErrorCode> {
        Self::check(tp)?;
        self.inner
            .legacy_offsets(tp, timestamp, max_num_offsets, from_consumer, now_ms)
    }

    fn produce_settings(&self, tp: TopicPartition<'_>) -> Result<ProduceSettings, ErrorCode> {
        Self::check(tp)?;
        self.inner.produce_settings(tp)
    }

    fn append(
        &self,
        tp: TopicPartition<'_>,
        batch: ClientBatch,
        header: &BatchHeader,
        acks: i16,
        min_insync_replicas: i32,
        now_ms: i64,
    ) -> Result<ProduceResult, PartitionError> {
        Self::check(tp)?;
        self.appends.fetch_add(1, Ordering::SeqCst);
        self.inner
            .append(tp, batch, header, acks, min_insync_replicas, now_ms)
    }

    fn topic_name(&self, topic_id: Uuid) -> Option<String> {
        self.inner.topic_name(topic_id)
    }

    fn topic_config(&self, topic: &str, name: &str) -> Option<String> {
        self.inner.topic_config(topic, name)
    }

    fn read(&self, tp: TopicPartition<'_>, params: &ReadParams) -> Result<ReadResult, ErrorCode> {
        Self::check(tp)?;
        self.reads.fetch_add(1, Ordering::SeqCst);
        self.inner.read(tp, params)
    }

    fn delayed_operation_target(&self, tp: TopicPartition<'_>) -> Option<Arc<Partition>> {
        self.inner.delayed_operation_target(tp)
    }
}

/// A consumer's Fetch at `version` of partition 0 of `topic` (by id from v13) from offset 0,
/// answered at once: (error code, bytes of records).
async fn fetch(c: &mut Client<DuplexStream>, version: i16, topic: &str, id: Uuid) -> (i16, usize) {
    let req = FetchRequest {
        replica_id: -1,
        max_wait_ms: 0,
        min_bytes: 1,
        max_bytes: 1 << 20,
        session_epoch: -1,
        topics: vec![FetchTopic {
            topic: if version < 13 {
                topic.into()
            } else {
                Default::default()
            },
            topic_id: if version < 13 { Uuid::ZERO } else { id },
            partitions: vec![fetch_partition(0, 0)],
            ..Default::default()
        }],
        ..Default::default()
    };
    let r = c.fetch(version, req).await;
    let p = &r.responses[0].partitions[0];
    (p.error_code, p.records.as_ref().map_or(0, |r| r.len()))
}

fn list_offsets(topic: &str, timestamp: i64, version: i16) -> ListOffsetsRequest {
    ListOffsetsRequest {
        replica_id: -1,
        topics: vec![ListOffsetsTopic {
            name: topic.into(),
            partitions: vec![ListOffsetsPartition {
                partition_index: 0,
                timestamp,
                current_leader_epoch: -1,
                // A v0-only field.
                max_num_offsets: if version == 0 { 10 } else { 1 },
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// ListOffsets at `version` for partition 0 of `topic`: (error code, offset, old-style offsets).
async fn latest(c: &mut Client<DuplexStream>, version: i16, topic: &str) -> (i16, i64, Vec<i64>) {
    let ResponseBody::ListOffsets(r) = c.call(version, list_offsets(topic, -1, version)).await
    else {
        panic!("not a ListOffsets response")
    };
    let p = &r.topics[0].partitions[0];
    (p.error_code, p.offset, p.old_style_offsets.to_vec())
}

#[tokio::test]
async fn produce_list_offsets_and_fetch_go_through_the_plugged_in_store() {
    let dir = tempfile::tempdir().unwrap();
    let state = open_state(dir.path());
    let (appends, reads) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let guarded = Guarded {
        inner: state.partition_store.clone(),
        appends: appends.clone(),
        reads: reads.clone(),
    };
    let (mut c, stop) = serve(state.with_partition_store(Arc::new(guarded)));
    let open_id = create_topic(&mut c, "open", 1).await;
    let closed_id = create_topic(&mut c, "closed", 1).await;
    let batch = || {
        RecordBatchBuilder::new()
            .record(1_700_000_000_000, Some(b"k"), Some(b"v"))
            .build_bytes()
            .unwrap()
    };

    let open = produce_records(&mut c, 9, "open", batch()).await;
    assert_eq!((open.error_code, open.base_offset), (0, 0));
    assert_eq!(
        appends.load(Ordering::SeqCst),
        1,
        "the append went around the store"
    );
    let closed = produce_records(&mut c, 9, "closed", batch()).await;
    assert_eq!(
        closed.error_code,
        ErrorCode::TopicAuthorizationFailed.code()
    );
    assert_eq!(appends.load(Ordering::SeqCst), 1);

    let refused = ErrorCode::TopicAuthorizationFailed.code();
    assert_eq!(latest(&mut c, 7, "open").await, (0, 1, vec![]));
    assert_eq!(latest(&mut c, 7, "closed").await.0, refused);
    assert_eq!(latest(&mut c, 0, "open").await, (0, -1, vec![1, 0]));
    assert_eq!(latest(&mut c, 0, "closed").await.0, refused);

    for version in [4, 12, 16] {
        let before = reads.load(Ordering::SeqCst);
        let (code, bytes) = fetch(&mut c, version, "open", open_id).await;
        assert_eq!(code, 0, "Fetch v{version}");
        assert!(bytes > 0, "Fetch v{version} read nothing");
        assert!(
            reads.load(Ordering::SeqCst) > before,
            "Fetch v{version} read around the store"
        );
        let (code, _) = fetch(&mut c, version, "closed", closed_id).await;
        assert_eq!(code, refused, "Fetch v{version}");
    }
    stop.cancel();
}

/// A follower's fetch needs the store's josef-partition partition; one the store does not host
/// is UNKNOWN_TOPIC_OR_PARTITION as in Kafka, not the NOT_LEADER_OR_FOLLOWER of a store that
/// hosts the partition without one.
#[tokio::test]
async fn a_followers_fetch_of_a_partition_not_hosted_is_unknown_topic_or_partition() {
    let dir = tempfile::tempdir().unwrap();
    let (mut c, stop) = serve(open_state(dir.path()));
    create_topic(&mut c, "one", 1).await;
    let req = FetchRequest {
        replica_id: 1,
        max_wait_ms: 0,
        min_bytes: 1,
        max_bytes: 1 << 20,
        topics: vec![FetchTopic {
            topic: "one".into(),
            partitions: vec![fetch_partition(5, 0)],
            ..Default::default()
        }],
        ..Default::default()
    };
    let r = c.fetch(12, req).await;
    assert_eq!(
        r.responses[0].partitions[0].error_code,
        ErrorCode::UnknownTopicOrPartition.code()
    );
    stop.cancel();
}
