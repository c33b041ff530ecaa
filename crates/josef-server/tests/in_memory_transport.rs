//! josef-server's connection layer over a transport that is not TCP: an in-memory pipe
//! (`tokio::io::duplex`) served by `serve_connection` with the assembled broker state, the way a
//! builder would plug in their own transport.

use std::sync::Arc;
use std::time::Duration;

use josef_protocol::messages::fetch_request::FetchTopic;
use josef_protocol::messages::FetchRequest;
use josef_protocol::ApiKey;
use josef_server::connection::{serve_connection, ConnectionInfo, ConnectionLimits};
use josef_server::Broker;
use tokio::io::{AsyncWriteExt, DuplexStream};
use tokio_util::sync::CancellationToken;

mod common;
use common::{create_topic, fetch_partition, produce_records, start_with, Client};

/// A connection to `broker` over an in-memory pipe, served until `stop` fires.
fn pipe_to(
    broker: &Broker,
    limits: ConnectionLimits,
    stop: &CancellationToken,
) -> Client<DuplexStream> {
    let (client_end, server_end) = tokio::io::duplex(64 * 1024);
    let l = &broker.listeners()[0];
    let info = ConnectionInfo::new(
        l.name.clone(),
        l.addr.port(),
        "127.0.0.1:1".parse().unwrap(),
    );
    tokio::spawn(serve_connection(
        server_end,
        info,
        Arc::clone(broker.state()),
        limits,
        stop.clone(),
    ));
    Client::over(client_end)
}

/// Partition 0 of `topic` from offset 0, without waiting.
fn from_the_start(topic: &str) -> FetchRequest {
    FetchRequest {
        replica_id: -1,
        max_wait_ms: 0,
        max_bytes: 1 << 20,
        topics: vec![FetchTopic {
            topic: topic.into(),
            partitions: vec![fetch_partition(0, 0)],
            ..Default::default()
        }],
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_topic_is_created_produced_to_and_fetched_over_an_in_memory_pipe() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start_with(dir.path(), &[]).await;
    let stop = CancellationToken::new();
    let mut c = pipe_to(&broker, ConnectionLimits::default(), &stop);

    create_topic(&mut c, "piped", 1).await;
    let batch = josef_log::testing::batch(0, 1_700_000_000_000, &[(None, Some(b"over a pipe"))]);
    let p = produce_records(&mut c, 9, "piped", batch.freeze()).await;
    assert_eq!((p.error_code, p.base_offset), (0, 0));

    let r = c.fetch(12, from_the_start("piped")).await;
    let part = &r.responses[0].partitions[0];
    assert_eq!((part.error_code, part.high_watermark), (0, 1));
    let records = part.records.as_ref().expect("the produced batch");
    assert!(
        records.windows(11).any(|w| w == b"over a pipe"),
        "the fetched bytes hold the produced value"
    );

    // The same partition is seen over TCP: one broker state behind both transports.
    let mut tcp = Client::connect(&broker).await;
    let r = tcp.fetch(12, from_the_start("piped")).await;
    assert_eq!(r.responses[0].partitions[0].high_watermark, 1);

    stop.cancel();
    broker.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frame_over_the_request_limit_closes_the_pipe() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start_with(dir.path(), &[]).await;
    let stop = CancellationToken::new();
    let limits = ConnectionLimits {
        max_request_bytes: 1024,
        idle_timeout: None,
    };
    let mut c = pipe_to(&broker, limits, &stop);
    // ApiVersions still works under the limit...
    c.send(
        3,
        josef_protocol::messages::ApiVersionsRequest::default().into(),
    )
    .await;
    let answered = tokio::time::timeout(Duration::from_secs(10), c.recv(ApiKey::ApiVersions, 3))
        .await
        .expect("an answer within 10 s");
    assert!(answered.is_some());
    // ...and a size prefix over it closes the connection before anything is allocated.
    c.stream
        .write_all(&(1_i32 << 30).to_be_bytes())
        .await
        .unwrap();
    assert!(c.closed().await, "the server end closed the pipe");
    stop.cancel();
    broker.shutdown().await;
}
