//! The kit's seams are real: a second implementation of each trait, plugged into a broker's
//! state, is what the handlers answer from. Requests go through the codec over an in-memory pipe,
//! as a client's would; a handler that went around the trait (to the topics directly) would
//! answer from the broker's own topics and fail these tests: Metadata and DescribeCluster from
//! a fixed view (and from its snapshot), and every partition API (Produce, ListOffsets, Fetch,
//! OffsetForLeaderEpoch, DescribeProducers, WriteTxnMarkers, DeleteRecords) through a store that
//! counts its calls and refuses one topic; and every group and transaction API through the
//! coordinators plugged in, whose background work (loading, timers) is theirs too.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use common::{create_topic, fetch_partition, produce_records, Client};
use josef_protocol::messages::fetch_request::FetchTopic;
use josef_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use josef_protocol::messages::metadata_request::MetadataRequestTopic;
use josef_protocol::messages::*;
use josef_protocol::{ErrorCode, RequestBody, ResponseBody, Uuid};
use josef_records::{BatchHeader, RecordBatchBuilder};
use josef_sequencer::EndTxnMarker;
use josef_server::config::BrokerConfig;
use josef_server::connection::{serve_connection, ConnectionInfo, ConnectionLimits};
use josef_server::kit::coordinators::{CoordinatorFuture, CoordinatorRequest};
use josef_server::kit::metadata_view::{BrokerEndpoint, PartitionMetadata, TopicMetadata};
use josef_server::kit::partition_store::{MarkerAppended, ProduceSettings, TopicPartition};
use josef_server::kit::{GroupCoordinator, MetadataView, PartitionStore, TxnCoordinator};
use josef_server::log_storage::LogStorage;
use josef_server::partition::{
    ActiveProducer, ClientBatch, DeleteRecordsOutcome, EpochEndOffset, FetchIsolation, Partition,
    PartitionError, ProduceResult, ReadParams, ReadResult,
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

    let ResponseBody::DescribeCluster(dc) = c
        .call(
            0,
            DescribeClusterRequest {
                endpoint_type: 1,
                ..Default::default()
            },
        )
        .await
    else {
        panic!("not a DescribeCluster response")
    };
    let brokers: Vec<_> = dc
        .brokers
        .iter()
        .map(|b| (b.broker_id, b.host.to_string(), b.port, b.rack.clone()))
        .collect();
    assert_eq!(
        (dc.controller_id, brokers),
        (
            42,
            vec![(42, "fixed.example".to_string(), 19092, Some("r1".into()))]
        )
    );
    stop.cancel();
}

/// A view whose answers move between calls (a cluster's newest image): its own answers name a
/// broker that the moment in its snapshot does not have. One response must come from one
/// moment, the snapshot.
struct Moving;

impl MetadataView for Moving {
    fn brokers(&self, _conn: &ConnectionInfo) -> Vec<BrokerEndpoint> {
        vec![BrokerEndpoint {
            node_id: 7,
            host: "later.example".into(),
            port: 7,
            rack: None,
        }]
    }

    fn controller_id(&self, _conn: &ConnectionInfo) -> i32 {
        7
    }

    fn topics(&self, _conn: &ConnectionInfo) -> Vec<TopicMetadata> {
        vec![]
    }

    fn topic(&self, _name: &str, _conn: &ConnectionInfo) -> Option<TopicMetadata> {
        None
    }

    fn topic_by_id(&self, _id: Uuid, _conn: &ConnectionInfo) -> Option<TopicMetadata> {
        None
    }

    fn snapshot(&self) -> Option<Arc<dyn MetadataView>> {
        Some(Arc::new(FixedImage))
    }
}

#[tokio::test]
async fn one_metadata_response_comes_from_the_views_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let (mut c, stop) = serve(open_state(dir.path()).with_metadata_view(Arc::new(Moving)));
    let r = metadata(
        &mut c,
        MetadataRequest {
            topics: Some(vec![named("fixed")]),
            ..Default::default()
        },
    )
    .await;
    let brokers: Vec<_> = r.brokers.iter().map(|b| b.node_id).collect();
    assert_eq!((r.controller_id, brokers), (42, vec![42]));
    assert_eq!(r.topics[0].error_code, 0);
    assert_eq!(r.topics[0].partitions[0].leader_id, 42);
    stop.cancel();
}

/// Josef's store with appends counted and the topic "closed" refused everywhere.
struct Guarded {
    inner: Arc<dyn PartitionStore>,
    appends: Arc<AtomicU64>,
    reads: Arc<AtomicU64>,
    /// Calls of the other partition operations (epochs, producers, markers, deletions) that
    /// reached Josef's store.
    others: Arc<AtomicU64>,
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

    fn end_offset_for_leader_epoch(
        &self,
        tp: TopicPartition<'_>,
        current_leader_epoch: i32,
        leader_epoch: i32,
    ) -> Result<EpochEndOffset, ErrorCode> {
        Self::check(tp)?;
        self.others.fetch_add(1, Ordering::SeqCst);
        self.inner
            .end_offset_for_leader_epoch(tp, current_leader_epoch, leader_epoch)
    }

    fn active_producers(&self, tp: TopicPartition<'_>) -> Result<Vec<ActiveProducer>, ErrorCode> {
        Self::check(tp)?;
        self.others.fetch_add(1, Ordering::SeqCst);
        self.inner.active_producers(tp)
    }

    fn append_txn_marker(
        &self,
        tp: TopicPartition<'_>,
        marker: &EndTxnMarker,
        now_ms: i64,
    ) -> Result<MarkerAppended, PartitionError> {
        Self::check(tp)?;
        self.others.fetch_add(1, Ordering::SeqCst);
        self.inner.append_txn_marker(tp, marker, now_ms)
    }

    fn delete_records(
        &self,
        tp: TopicPartition<'_>,
        offset: i64,
        is_alive: &dyn Fn(i32) -> bool,
    ) -> Result<DeleteRecordsOutcome, PartitionError> {
        Self::check(tp)?;
        self.others.fetch_add(1, Ordering::SeqCst);
        self.inner.delete_records(tp, offset, is_alive)
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
        others: Arc::new(AtomicU64::new(0)),
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

/// Partition 0 of `topic` as each partition API names it, sent at `version`; the answer's code.
async fn partition_api_code(c: &mut Client<DuplexStream>, api: &str, topic: &str) -> i16 {
    use josef_protocol::messages::delete_records_request::{
        DeleteRecordsPartition, DeleteRecordsTopic,
    };
    use josef_protocol::messages::describe_producers_request::TopicRequest;
    use josef_protocol::messages::offset_for_leader_epoch_request::{
        OffsetForLeaderPartition, OffsetForLeaderTopic,
    };
    use josef_protocol::messages::write_txn_markers_request::{
        WritableTxnMarker, WritableTxnMarkerTopic,
    };
    match api {
        "OffsetForLeaderEpoch" => {
            let req = OffsetForLeaderEpochRequest {
                replica_id: -1,
                topics: vec![OffsetForLeaderTopic {
                    topic: topic.into(),
                    partitions: vec![OffsetForLeaderPartition {
                        partition: 0,
                        current_leader_epoch: -1,
                        leader_epoch: 0,
                        ..Default::default()
                    }],
                    ..Default::default()
                }],
                ..Default::default()
            };
            let ResponseBody::OffsetForLeaderEpoch(r) = c.call(4, req).await else {
                panic!("not an OffsetForLeaderEpoch response")
            };
            r.topics[0].partitions[0].error_code
        }
        "DescribeProducers" => {
            let req = DescribeProducersRequest {
                topics: vec![TopicRequest {
                    name: topic.into(),
                    partition_indexes: vec![0].into(),
                    ..Default::default()
                }],
                ..Default::default()
            };
            let ResponseBody::DescribeProducers(r) = c.call(0, req).await else {
                panic!("not a DescribeProducers response")
            };
            r.topics[0].partitions[0].error_code
        }
        "WriteTxnMarkers" => {
            // An abort marker for a producer the partition never saw: the partition accepts it.
            let req = WriteTxnMarkersRequest {
                markers: vec![WritableTxnMarker {
                    producer_id: 1000,
                    producer_epoch: 0,
                    transaction_result: false,
                    coordinator_epoch: 0,
                    topics: vec![WritableTxnMarkerTopic {
                        name: topic.into(),
                        partition_indexes: vec![0].into(),
                        ..Default::default()
                    }],
                    ..Default::default()
                }],
                ..Default::default()
            };
            let ResponseBody::WriteTxnMarkers(r) = c.call(1, req).await else {
                panic!("not a WriteTxnMarkers response")
            };
            r.markers[0].topics[0].partitions[0].error_code
        }
        "DeleteRecords" => {
            let req = DeleteRecordsRequest {
                topics: vec![DeleteRecordsTopic {
                    name: topic.into(),
                    partitions: vec![DeleteRecordsPartition {
                        partition_index: 0,
                        offset: -1,
                        ..Default::default()
                    }],
                    ..Default::default()
                }],
                timeout_ms: 5_000,
                ..Default::default()
            };
            let ResponseBody::DeleteRecords(r) = c.call(2, req).await else {
                panic!("not a DeleteRecords response")
            };
            r.topics[0].partitions[0].error_code
        }
        other => panic!("no such API here: {other}"),
    }
}

#[tokio::test]
async fn epochs_producers_markers_and_deletions_go_through_the_plugged_in_store() {
    let dir = tempfile::tempdir().unwrap();
    let state = open_state(dir.path());
    let others = Arc::new(AtomicU64::new(0));
    let guarded = Guarded {
        inner: state.partition_store.clone(),
        appends: Arc::new(AtomicU64::new(0)),
        reads: Arc::new(AtomicU64::new(0)),
        others: others.clone(),
    };
    let (mut c, stop) = serve(state.with_partition_store(Arc::new(guarded)));
    create_topic(&mut c, "open", 1).await;
    create_topic(&mut c, "closed", 1).await;
    let refused = ErrorCode::TopicAuthorizationFailed.code();
    // Every API checked before the verdict, so one run names each handler that went around.
    let mut around = Vec::new();
    for api in [
        "OffsetForLeaderEpoch",
        "DescribeProducers",
        "WriteTxnMarkers",
        "DeleteRecords",
    ] {
        let before = others.load(Ordering::SeqCst);
        let open = partition_api_code(&mut c, api, "open").await;
        let counted = others.load(Ordering::SeqCst) - before;
        let closed = partition_api_code(&mut c, api, "closed").await;
        if (open, counted, closed) != (0, 1, refused) {
            around.push(format!(
                "{api}: open answered {open} with {counted} store calls, closed answered {closed}"
            ));
        }
    }
    assert!(around.is_empty(), "went around the store: {around:#?}");
    stop.cancel();
}

/// FixedImage, plus the `__consumer_offsets` it leads from broker 42.
struct WithCoordinator;

impl MetadataView for WithCoordinator {
    fn brokers(&self, conn: &ConnectionInfo) -> Vec<BrokerEndpoint> {
        FixedImage.brokers(conn)
    }

    fn controller_id(&self, conn: &ConnectionInfo) -> i32 {
        FixedImage.controller_id(conn)
    }

    fn topics(&self, conn: &ConnectionInfo) -> Vec<TopicMetadata> {
        FixedImage.topics(conn)
    }

    fn topic(&self, name: &str, conn: &ConnectionInfo) -> Option<TopicMetadata> {
        if name != "__consumer_offsets" {
            return FixedImage.topic(name, conn);
        }
        let mut t = FixedImage.topic("fixed", conn)?;
        t.name = name.into();
        t.is_internal = true;
        Some(t)
    }

    fn topic_by_id(&self, id: Uuid, conn: &ConnectionInfo) -> Option<TopicMetadata> {
        FixedImage.topic_by_id(id, conn)
    }
}

#[tokio::test]
async fn find_coordinator_names_the_leader_the_view_shows() {
    use josef_protocol::messages::{FindCoordinatorRequest, FindCoordinatorResponse};
    async fn find(c: &mut Client<DuplexStream>) -> FindCoordinatorResponse {
        let req = FindCoordinatorRequest {
            key: "a-group".into(),
            key_type: 0,
            ..Default::default()
        };
        let ResponseBody::FindCoordinator(r) = c.call(3, req).await else {
            panic!("not a FindCoordinator response")
        };
        r
    }
    let dir = tempfile::tempdir().unwrap();
    let state = open_state(dir.path());
    let own_topics = state.topics.clone();
    let (mut c, stop) = serve(state.with_metadata_view(Arc::new(WithCoordinator)));
    let r = find(&mut c).await;
    assert_eq!(
        (r.error_code, r.node_id, r.host.to_string(), r.port),
        (0, 42, "fixed.example".to_string(), 19092)
    );
    assert!(
        own_topics.get("__consumer_offsets").is_none(),
        "the view has the topic: nothing is created around it"
    );
    stop.cancel();

    // A view that has no coordinator topic and creates none: no coordinator.
    let dir = tempfile::tempdir().unwrap();
    let state = open_state(dir.path());
    let own_topics = state.topics.clone();
    let (mut c, stop) = serve(state.with_metadata_view(Arc::new(FixedImage)));
    let r = find(&mut c).await;
    assert_eq!(r.error_code, ErrorCode::CoordinatorNotAvailable.code());
    assert!(own_topics.get("__consumer_offsets").is_none());
    stop.cancel();
}

/// Josef's coordinators, with the API of every call they are reached by written down.
struct CountingCoordinators {
    groups: Arc<dyn GroupCoordinator>,
    txns: Arc<dyn TxnCoordinator>,
    seen: Arc<std::sync::Mutex<Vec<&'static str>>>,
}

impl CountingCoordinators {
    fn saw(&self, api: &'static str) {
        self.seen.lock().unwrap().push(api);
    }
}

/// One delegating method per API, each recording its name.
macro_rules! counted {
    ($inner:ident: $($method:ident($req:ty) -> $resp:ty;)*) => {
        $(
            fn $method<'a>(
                &'a self,
                rq: CoordinatorRequest<'a>,
                req: $req,
            ) -> CoordinatorFuture<'a, $resp> {
                self.saw(stringify!($method));
                self.$inner.$method(rq, req)
            }
        )*
    };
}

impl GroupCoordinator for CountingCoordinators {
    counted! { groups:
        join_group(JoinGroupRequest) -> JoinGroupResponse;
        sync_group(SyncGroupRequest) -> SyncGroupResponse;
        heartbeat(HeartbeatRequest) -> HeartbeatResponse;
        leave_group(LeaveGroupRequest) -> LeaveGroupResponse;
        offset_commit(OffsetCommitRequest) -> OffsetCommitResponse;
        txn_offset_commit(TxnOffsetCommitRequest) -> TxnOffsetCommitResponse;
        offset_fetch(OffsetFetchRequest) -> OffsetFetchResponse;
        list_groups(ListGroupsRequest) -> ListGroupsResponse;
        describe_groups(DescribeGroupsRequest) -> DescribeGroupsResponse;
        delete_groups(DeleteGroupsRequest) -> DeleteGroupsResponse;
        offset_delete(OffsetDeleteRequest) -> OffsetDeleteResponse;
        consumer_group_heartbeat(ConsumerGroupHeartbeatRequest) -> ConsumerGroupHeartbeatResponse;
        consumer_group_describe(ConsumerGroupDescribeRequest) -> ConsumerGroupDescribeResponse;
    }

    fn on_transaction_completed(&self, state: &BrokerState, producer_id: i64, committed: bool) {
        self.saw("on_transaction_completed");
        self.groups
            .on_transaction_completed(state, producer_id, committed);
    }
}

impl TxnCoordinator for CountingCoordinators {
    counted! { txns:
        init_producer_id(InitProducerIdRequest) -> InitProducerIdResponse;
        add_partitions_to_txn(AddPartitionsToTxnRequest) -> AddPartitionsToTxnResponse;
        add_offsets_to_txn(AddOffsetsToTxnRequest) -> AddOffsetsToTxnResponse;
        end_txn(EndTxnRequest) -> EndTxnResponse;
        describe_transactions(DescribeTransactionsRequest) -> DescribeTransactionsResponse;
        list_transactions(ListTransactionsRequest) -> ListTransactionsResponse;
    }
}

#[tokio::test]
async fn every_group_and_transaction_api_goes_through_the_plugged_in_coordinators() {
    let dir = tempfile::tempdir().unwrap();
    let state = open_state(dir.path());
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let counting = Arc::new(CountingCoordinators {
        groups: state.group_coordinator.clone(),
        txns: state.txn_coordinator.clone(),
        seen: seen.clone(),
    });
    let (mut c, stop) = serve(
        state
            .with_group_coordinator(counting.clone())
            .with_txn_coordinator(counting),
    );
    let topic = "t".to_string();
    create_topic(&mut c, &topic, 1).await;
    // Requests that coordinators answer at once (unknown ids, empty lists); what they answer is
    // the coordinators' business, that they were asked is the seam's.
    let requests: Vec<(&str, i16, RequestBody)> = vec![
        ("join_group", 5, JoinGroupRequest::default().into()),
        ("sync_group", 3, SyncGroupRequest::default().into()),
        ("heartbeat", 3, HeartbeatRequest::default().into()),
        ("leave_group", 3, LeaveGroupRequest::default().into()),
        ("offset_commit", 7, OffsetCommitRequest::default().into()),
        (
            "txn_offset_commit",
            3,
            TxnOffsetCommitRequest::default().into(),
        ),
        ("offset_fetch", 7, OffsetFetchRequest::default().into()),
        ("list_groups", 4, ListGroupsRequest::default().into()),
        (
            "describe_groups",
            5,
            DescribeGroupsRequest::default().into(),
        ),
        ("delete_groups", 2, DeleteGroupsRequest::default().into()),
        ("offset_delete", 0, OffsetDeleteRequest::default().into()),
        (
            "consumer_group_heartbeat",
            0,
            ConsumerGroupHeartbeatRequest::default().into(),
        ),
        (
            "consumer_group_describe",
            0,
            ConsumerGroupDescribeRequest::default().into(),
        ),
        (
            "init_producer_id",
            4,
            InitProducerIdRequest::default().into(),
        ),
        (
            "add_partitions_to_txn",
            3,
            AddPartitionsToTxnRequest::default().into(),
        ),
        (
            "add_offsets_to_txn",
            3,
            AddOffsetsToTxnRequest::default().into(),
        ),
        ("end_txn", 3, EndTxnRequest::default().into()),
        (
            "describe_transactions",
            0,
            DescribeTransactionsRequest::default().into(),
        ),
        (
            "list_transactions",
            0,
            ListTransactionsRequest::default().into(),
        ),
    ];
    let mut around = Vec::new();
    for (api, version, body) in requests {
        let before = seen.lock().unwrap().len();
        let answered =
            tokio::time::timeout(std::time::Duration::from_secs(20), c.call(version, body)).await;
        assert!(answered.is_ok(), "{api} was not answered");
        let now = seen.lock().unwrap()[before..].to_vec();
        // A TxnOffsetCommit below v5 is verified with the transaction coordinator (KIP-890),
        // the one plugged in too.
        let expected: &[&str] = if api == "txn_offset_commit" {
            &["txn_offset_commit", "add_partitions_to_txn"]
        } else {
            &[api]
        };
        if now != expected {
            around.push(format!("{api}: the coordinators saw {now:?}"));
        }
    }
    // A commit marker on __consumer_offsets ends the producer's pending offsets there.
    let marker = josef_protocol::messages::WriteTxnMarkersRequest {
        markers: vec![
            josef_protocol::messages::write_txn_markers_request::WritableTxnMarker {
                producer_id: 1000,
                producer_epoch: 0,
                transaction_result: true,
                coordinator_epoch: 0,
                topics: vec![
                    josef_protocol::messages::write_txn_markers_request::WritableTxnMarkerTopic {
                        name: "__consumer_offsets".into(),
                        partition_indexes: vec![0].into(),
                        ..Default::default()
                    },
                ],
                ..Default::default()
            },
        ],
        ..Default::default()
    };
    let before = seen.lock().unwrap().len();
    let ResponseBody::WriteTxnMarkers(r) = c.call(1, marker).await else {
        panic!("not a WriteTxnMarkers response")
    };
    assert_eq!(r.markers[0].topics[0].partitions[0].error_code, 0);
    let now = seen.lock().unwrap()[before..].to_vec();
    if now != ["on_transaction_completed"] {
        around.push(format!("WriteTxnMarkers: the coordinators saw {now:?}"));
    }
    assert!(
        around.is_empty(),
        "went around the coordinators: {around:#?}"
    );
    stop.cancel();
}

/// KIP-890 verification asks the transaction coordinator set on the state: a transactional
/// Produce (v9, transactions v1) for a partition never added to the transaction is checked with
/// the coordinator plugged in (the broker-to-broker AddPartitionsToTxn, verify only), and its
/// answer (the partition is not in the transaction) refuses the append.
#[tokio::test]
async fn produce_verification_asks_the_plugged_in_transaction_coordinator() {
    let dir = tempfile::tempdir().unwrap();
    let state = open_state(dir.path());
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let counting = Arc::new(CountingCoordinators {
        groups: state.group_coordinator.clone(),
        txns: state.txn_coordinator.clone(),
        seen: seen.clone(),
    });
    let (mut c, stop) = serve(state.with_txn_coordinator(counting));
    create_topic(&mut c, "v", 1).await;
    let r = common::init_producer_id(&mut c, 4, "tx").await;
    assert_eq!(r.error_code, 0);
    let before = seen.lock().unwrap().len();
    let batch = RecordBatchBuilder::new()
        .producer(r.producer_id, r.producer_epoch, 0)
        .transactional(true)
        .record(0, None, Some(b"never added"))
        .build_bytes()
        .unwrap();
    let mut req = common::produce_request("v", batch);
    req.transactional_id = Some("tx".into());
    let ResponseBody::Produce(p) = c.call(9, req).await else {
        panic!("not a Produce response")
    };
    let error = p.responses[0].partition_responses[0].error_code;
    assert_ne!(error, 0, "an append to a partition outside the transaction");
    assert_eq!(
        seen.lock().unwrap()[before..].to_vec(),
        ["add_partitions_to_txn"],
        "the verification went around the plugged-in coordinator"
    );
    stop.cancel();
}

/// A coordinator's background work belongs to it: the broker's tick reaches the coordinators
/// set on the state and nothing else, so with a builder's coordinators Josef's never load a
/// `__consumer_offsets` or `__transaction_state` partition (nor time anything out), and with
/// Josef's every partition led here is loaded without a request.
#[tokio::test]
async fn only_the_coordinators_set_do_background_work() {
    let mut loaded = Vec::new();
    for builders in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let mut state = open_state(dir.path());
        let offsets = state.topics.ensure_internal("__consumer_offsets").unwrap();
        let txn_state = state.topics.ensure_internal("__transaction_state").unwrap();
        let all = (offsets.partitions.len(), txn_state.partitions.len());
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        if builders {
            let counting = Arc::new(CountingCoordinators {
                groups: state.group_coordinator.clone(),
                txns: state.txn_coordinator.clone(),
                seen: seen.clone(),
            });
            state = state
                .with_group_coordinator(counting.clone())
                .with_txn_coordinator(counting);
        }
        // A second of the broker's ticks.
        let every = josef_server::kit::coordinators::COORDINATOR_TICK_MS as i64;
        for i in 0..50 {
            state.tick_coordinators(i * every);
        }
        let now = (
            state.groups.loaded_partitions().len(),
            state.txns.loaded_partitions().len(),
        );
        loaded.push((builders, now, all));
        assert!(seen.lock().unwrap().is_empty(), "no request was made");
        state.shutdown_coordinators();
    }
    let [(_, josefs, all), (_, builders, _)] = loaded[..] else {
        unreachable!()
    };
    assert_eq!(josefs, all, "Josef's coordinators load what is led here");
    assert_eq!(
        builders,
        (0, 0),
        "Josef's shards loaded under a builder's coordinators"
    );
}
