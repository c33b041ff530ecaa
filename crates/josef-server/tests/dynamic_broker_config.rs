//! Kafka's dynamic broker configs (KIP-226) on a single node: IncrementalAlterConfigs on a BROKER
//! resource changes, without a restart, the defaults of every topic that does not override them,
//! with Kafka's precedence (topic override > per-broker > cluster default > static), refuses what
//! Kafka cannot change at runtime, honours validateOnly, and reloads a TLS listener's keystore.

mod common;

use std::sync::Arc;

use bytes::Bytes;
use josef_protocol::messages::describe_configs_request::DescribeConfigsResource;
use josef_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use josef_protocol::messages::*;
use josef_protocol::{ErrorCode, ResponseBody};
use josef_records::RecordBatchBuilder;
use josef_server::Broker;
use tokio::io::AsyncWriteExt;

use common::{create_topic_with, produce_records, start_with, Client};

const BROKER: i8 = 4;
const MESSAGE_TOO_LARGE: i16 = 10;

/// IncrementalAlterConfigs of one resource; returns its (error code, message).
async fn alter(
    c: &mut Client,
    resource_type: i8,
    name: &str,
    ops: &[(&str, i8, Option<&str>)],
    validate_only: bool,
) -> (i16, Option<String>) {
    let req = IncrementalAlterConfigsRequest {
        resources: vec![AlterConfigsResource {
            resource_type,
            resource_name: name.to_string().into(),
            configs: ops
                .iter()
                .map(|(k, op, v)| AlterableConfig {
                    name: (*k).into(),
                    config_operation: *op,
                    value: v.map(|v| v.to_string().into()),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }],
        validate_only,
        ..Default::default()
    };
    let ResponseBody::IncrementalAlterConfigs(r) = c.call(1, req).await else {
        panic!("not an IncrementalAlterConfigs response")
    };
    let x = &r.responses[0];
    (
        x.error_code,
        x.error_message.as_ref().map(|m| m.to_string()),
    )
}

async fn set(c: &mut Client, broker: &str, key: &str, value: &str) {
    let r = alter(c, BROKER, broker, &[(key, 0, Some(value))], false).await;
    assert_eq!(r, (0, None), "{broker}: {key}={value}");
}

async fn delete(c: &mut Client, broker: &str, key: &str) {
    let r = alter(c, BROKER, broker, &[(key, 1, None)], false).await;
    assert_eq!(r, (0, None), "{broker}: delete {key}");
}

/// The produce error code of one record of `size` bytes to `topic`.
async fn produce(c: &mut Client, topic: &str, size: usize) -> i16 {
    let value = vec![b'x'; size];
    // Stamped now: time-based retention (7 days by default) keeps it.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let batch: Bytes = RecordBatchBuilder::new()
        .record(now, None, Some(&value))
        .build_bytes()
        .unwrap();
    produce_records(c, 9, topic, batch).await.error_code
}

/// A topic config as DescribeConfigs reports it: (value, source).
async fn describe_topic(c: &mut Client, topic: &str, key: &str) -> (String, i8) {
    let ResponseBody::DescribeConfigs(r) = c
        .call(
            4,
            DescribeConfigsRequest {
                resources: vec![DescribeConfigsResource {
                    resource_type: 2,
                    resource_name: topic.into(),
                    configuration_keys: Some(vec![key.into()]),
                    ..Default::default()
                }],
                include_synonyms: true,
                ..Default::default()
            },
        )
        .await
    else {
        panic!("not a DescribeConfigs response")
    };
    let e = &r.results[0].configs[0];
    (e.value.as_ref().unwrap().to_string(), e.config_source)
}

#[tokio::test]
async fn a_broker_default_rules_every_topic_that_does_not_override_it() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start_with(dir.path(), &[("message.max.bytes", "100000")]).await;
    let mut c = Client::connect(&broker).await;
    create_topic_with(&mut c, "plain", 1, &[]).await;
    create_topic_with(&mut c, "own", 1, &[("max.message.bytes", "50000")]).await;
    assert_eq!(produce(&mut c, "plain", 20_000).await, 0);

    // The cluster default lowers the limit of the topic without an override, at once.
    set(&mut c, "", "message.max.bytes", "10000").await;
    assert_eq!(produce(&mut c, "plain", 20_000).await, MESSAGE_TOO_LARGE);
    assert_eq!(
        describe_topic(&mut c, "plain", "max.message.bytes").await,
        ("10000".into(), 3)
    );
    // The topic's own override still wins.
    assert_eq!(produce(&mut c, "own", 20_000).await, 0);
    assert_eq!(
        describe_topic(&mut c, "own", "max.message.bytes").await,
        ("50000".into(), 1)
    );

    // This broker's own value beats the cluster default.
    set(&mut c, "1", "message.max.bytes", "30000").await;
    assert_eq!(produce(&mut c, "plain", 20_000).await, 0);
    assert_eq!(
        describe_topic(&mut c, "plain", "max.message.bytes").await,
        ("30000".into(), 2)
    );

    // Deleting it brings the cluster default back; deleting that, the static setting.
    delete(&mut c, "1", "message.max.bytes").await;
    assert_eq!(produce(&mut c, "plain", 20_000).await, MESSAGE_TOO_LARGE);
    delete(&mut c, "", "message.max.bytes").await;
    assert_eq!(produce(&mut c, "plain", 20_000).await, 0);
    assert_eq!(
        describe_topic(&mut c, "plain", "max.message.bytes").await,
        ("100000".into(), 5)
    );
    broker.shutdown().await;
}

/// Waits (bounded) until the broker's log cleaner runs `n` workers.
async fn cleaner_workers(broker: &josef_server::Broker, n: usize) {
    let cleaner = broker
        .log_cleaner()
        .expect("log.cleaner.enable is on by default");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while cleaner.running_workers() != n {
        assert!(
            std::time::Instant::now() < deadline,
            "{} cleaner workers, not {n}",
            cleaner.running_workers()
        );
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
}

/// `log.cleaner.threads` is dynamic in Kafka (`LogCleaner.reconfigure`): the worker count follows
/// this broker's value, else the cluster default, else the static one, without a restart; below 1
/// is refused.
#[tokio::test]
async fn log_cleaner_threads_change_without_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start_with(dir.path(), &[("log.cleaner.threads", "1")]).await;
    let mut c = Client::connect(&broker).await;
    cleaner_workers(&broker, 1).await;
    set(&mut c, "", "log.cleaner.threads", "2").await;
    cleaner_workers(&broker, 2).await;
    set(&mut c, "1", "log.cleaner.threads", "3").await;
    cleaner_workers(&broker, 3).await;
    delete(&mut c, "1", "log.cleaner.threads").await;
    cleaner_workers(&broker, 2).await;
    delete(&mut c, "", "log.cleaner.threads").await;
    cleaner_workers(&broker, 1).await;
    let (code, _) = alter(
        &mut c,
        BROKER,
        "1",
        &[("log.cleaner.threads", 0, Some("0"))],
        false,
    )
    .await;
    assert_eq!(code, ErrorCode::InvalidRequest.code());
    cleaner_workers(&broker, 1).await;
    broker.shutdown().await;
}

#[tokio::test]
async fn retention_and_min_insync_follow_the_broker_default_and_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start_with(dir.path(), &[]).await;
    let mut c = Client::connect(&broker).await;
    create_topic_with(&mut c, "t", 1, &[]).await;
    set(&mut c, "", "min.insync.replicas", "2").await;
    let p = broker.state().topics.partition("t", 0).unwrap();
    assert_eq!(p.min_insync_replicas(), 2);
    // Small segments, then a byte limit on retention: the old segments go at the next pass.
    set(&mut c, "1", "log.segment.bytes", "1024").await;
    for _ in 0..10 {
        assert_eq!(produce(&mut c, "t", 600).await, 0);
    }
    let start = p.log_start_offset();
    set(&mut c, "1", "log.retention.bytes", "2000").await;
    broker.state().topics.run_retention();
    assert!(
        p.log_start_offset() > start,
        "retention did not run with the new default"
    );
    drop(c);
    drop(p);
    broker.shutdown().await;

    // Kept in the node's metadata store: a restart applies them again.
    let broker = start_with(dir.path(), &[]).await;
    let p = broker.state().topics.partition("t", 0).unwrap();
    assert_eq!(p.min_insync_replicas(), 2);
    drop(p);
    broker.shutdown().await;
}

#[tokio::test]
async fn what_kafka_cannot_change_at_runtime_is_refused_and_validate_only_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start_with(dir.path(), &[]).await;
    let mut c = Client::connect(&broker).await;
    create_topic_with(&mut c, "t", 1, &[]).await;
    let invalid_request = ErrorCode::InvalidRequest.code();
    assert_eq!(
        alter(
            &mut c,
            BROKER,
            "1",
            &[("log.dirs", 0, Some("/elsewhere"))],
            false
        )
        .await,
        (
            invalid_request,
            Some("Cannot update these configs dynamically: Set(log.dirs)".into())
        )
    );
    assert_eq!(
        alter(&mut c, BROKER, "", &[("node.id", 0, Some("7"))], false).await,
        (
            invalid_request,
            Some("Cannot update these configs dynamically: Set(node.id)".into())
        )
    );
    assert_eq!(
        alter(
            &mut c,
            BROKER,
            "2",
            &[("message.max.bytes", 0, Some("10"))],
            false
        )
        .await,
        (
            invalid_request,
            Some("Unexpected broker id, expected 1, but received 2".into())
        )
    );
    assert_eq!(
        alter(
            &mut c,
            BROKER,
            "",
            &[("log.retention.ms", 0, Some("soon"))],
            false
        )
        .await
        .0,
        invalid_request
    );
    // validateOnly: accepted, nothing applied.
    assert_eq!(
        alter(
            &mut c,
            BROKER,
            "",
            &[("message.max.bytes", 0, Some("10"))],
            true
        )
        .await,
        (0, None)
    );
    assert_eq!(produce(&mut c, "t", 1000).await, 0);
    assert_eq!(
        describe_topic(&mut c, "t", "max.message.bytes").await.1,
        5,
        "validateOnly stored a value"
    );
    broker.shutdown().await;
}

/// A self-signed certificate for localhost, as one PEM (key and chain).
fn keystore() -> (rustls_pki_types::CertificateDer<'static>, String) {
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["localhost".into()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    (
        cert.der().clone(),
        format!("{}{}", key.serialize_pem(), cert.pem()),
    )
}

/// The certificate a new TLS connection to `addr` is shown, and the connection.
async fn handshake(
    addr: std::net::SocketAddr,
    trusted: &[&rustls_pki_types::CertificateDer<'static>],
) -> (
    rustls_pki_types::CertificateDer<'static>,
    tokio_rustls::client::TlsStream<tokio::net::TcpStream>,
) {
    let mut roots = rustls::RootCertStore::empty();
    for c in trusted {
        roots.add((*c).clone()).unwrap();
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
    let mut s = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .unwrap();
    s.flush().await.unwrap();
    let cert = s.get_ref().1.peer_certificates().unwrap()[0].clone();
    (cert, s)
}

#[tokio::test]
async fn a_listener_keystore_altered_dynamically_serves_new_handshakes() {
    let dir = tempfile::tempdir().unwrap();
    let (cert_a, pem_a) = keystore();
    let (cert_b, pem_b) = keystore();
    let (path_a, path_b, junk) = (
        dir.path().join("a.pem"),
        dir.path().join("b.pem"),
        dir.path().join("junk.pem"),
    );
    std::fs::write(&path_a, pem_a).unwrap();
    std::fs::write(&path_b, pem_b).unwrap();
    std::fs::write(&junk, "not a keystore").unwrap();
    let data = dir.path().join("data");
    let broker: Broker = start_with(
        &data,
        &[
            ("listeners", "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0"),
            ("ssl.keystore.type", "PEM"),
            ("ssl.keystore.location", path_a.to_str().unwrap()),
        ],
    )
    .await;
    let ssl = broker
        .listeners()
        .iter()
        .find(|l| l.name == "SSL")
        .unwrap()
        .addr;
    let mut c = Client::connect(&broker).await;
    let (before, old_connection) = handshake(ssl, &[&cert_a, &cert_b]).await;
    assert_eq!(before, cert_a);

    let key = "listener.name.ssl.ssl.keystore.location";
    // Without the listener prefix, or at the cluster level, Kafka refuses it.
    let unprefixed = alter(
        &mut c,
        BROKER,
        "1",
        &[("ssl.keystore.location", 0, path_b.to_str())],
        false,
    )
    .await;
    assert_eq!(unprefixed.0, ErrorCode::InvalidRequest.code());
    assert_eq!(
        alter(&mut c, BROKER, "", &[(key, 0, path_b.to_str())], false)
            .await
            .0,
        ErrorCode::InvalidRequest.code()
    );
    // A keystore that does not load is refused and the old one stays.
    assert_eq!(
        alter(&mut c, BROKER, "1", &[(key, 0, junk.to_str())], false).await,
        (
            ErrorCode::InvalidRequest.code(),
            Some("Invalid dynamic configuration".into())
        )
    );
    assert_eq!(handshake(ssl, &[&cert_a, &cert_b]).await.0, cert_a);

    set(&mut c, "1", key, path_b.to_str().unwrap()).await;
    assert_eq!(handshake(ssl, &[&cert_a, &cert_b]).await.0, cert_b);
    // The connection opened before keeps its session.
    let mut old = Client::over(old_connection);
    assert!(matches!(
        old.call(3, ApiVersionsRequest::default()).await,
        ResponseBody::ApiVersions(r) if r.error_code == 0
    ));
    drop(old);
    broker.shutdown().await;
}

#[tokio::test]
async fn log_levels_change_through_the_broker_logger_resource() {
    const BROKER_LOGGER: i8 = 8;
    let dir = tempfile::tempdir().unwrap();
    let broker = start_with(dir.path(), &[]).await;
    let mut c = Client::connect(&broker).await;
    let applied = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = applied.clone();
    broker
        .state()
        .loggers
        .set_filter_reload(Arc::new(move |d: &str| {
            seen.lock().unwrap().push(d.to_string());
            Ok(())
        }));
    let op = |logger: &'static str, level: &'static str| (logger, 0i8, Some(level));
    assert_eq!(
        alter(
            &mut c,
            BROKER_LOGGER,
            "1",
            &[op("josef_server::topics", "DEBUG")],
            false
        )
        .await,
        (0, None)
    );
    assert_eq!(
        *applied.lock().unwrap(),
        ["info,josef_server::topics=debug"]
    );
    assert_eq!(
        alter(&mut c, BROKER_LOGGER, "1", &[op("root", "LOUD")], false)
            .await
            .0,
        ErrorCode::InvalidConfig.code()
    );
    let ResponseBody::DescribeConfigs(r) = c
        .call(
            4,
            DescribeConfigsRequest {
                resources: vec![DescribeConfigsResource {
                    resource_type: BROKER_LOGGER,
                    resource_name: "1".into(),
                    ..Default::default()
                }],
                ..Default::default()
            },
        )
        .await
    else {
        panic!("not a DescribeConfigs response")
    };
    let levels: Vec<(String, String)> = r.results[0]
        .configs
        .iter()
        .map(|e| (e.name.to_string(), e.value.as_ref().unwrap().to_string()))
        .collect();
    assert_eq!(
        levels,
        [
            ("root".to_string(), "INFO".to_string()),
            ("josef_server::topics".to_string(), "DEBUG".to_string())
        ]
    );
    broker.shutdown().await;
}
