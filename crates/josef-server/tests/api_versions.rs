//! Every version the broker advertises in ApiVersions must work: clients negotiate down to any of
//! them (librdkafka 2.0 in kcat, kafka-python pinned to old broker versions). This sends a minimal
//! request of every advertised (api, version) and requires a well-formed answer, not a closed
//! connection (which is what an encoder refusing a field of that version would cause).

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use josef_protocol::messages::ApiVersionsRequest;
use josef_protocol::{
    decode_response_frame, encode_request_frame, ApiKey, RequestBody, RequestHeader, ResponseBody,
};
use josef_server::Broker;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

mod common;

async fn start(dir: &std::path::Path) -> Broker {
    common::start_with(
        dir,
        &[
            ("offsets.topic.num.partitions", "1"),
            ("transaction.state.log.num.partitions", "1"),
        ],
    )
    .await
}

/// Sends one request on a fresh connection; the decoded answer, or why there is none.
async fn roundtrip(
    broker: &Broker,
    version: i16,
    body: RequestBody,
) -> Result<ResponseBody, String> {
    let key = body.api_key();
    let header = RequestHeader {
        request_api_key: key as i16,
        request_api_version: version,
        correlation_id: 7,
        client_id: Some("josef-versions".into()),
        ..Default::default()
    };
    let mut buf = BytesMut::new();
    encode_request_frame(&header, &body, &mut buf).map_err(|e| format!("client encode: {e}"))?;
    let mut s = TcpStream::connect(broker.listeners()[0].addr)
        .await
        .unwrap();
    s.write_all(&buf).await.unwrap();
    let mut len = [0u8; 4];
    match tokio::time::timeout(Duration::from_secs(10), s.read_exact(&mut len)).await {
        Err(_) => return Err("no answer within 10 s".into()),
        Ok(Err(e)) => return Err(format!("connection closed: {e}")),
        Ok(Ok(_)) => {}
    }
    let mut body = vec![0u8; i32::from_be_bytes(len) as usize];
    s.read_exact(&mut body).await.unwrap();
    let (_, b) = decode_response_frame(key, version, Bytes::from(body))
        .map_err(|e| format!("response does not decode: {e}"))?;
    Ok(b)
}

#[tokio::test]
async fn every_advertised_api_version_answers_a_minimal_request() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path()).await;
    let ResponseBody::ApiVersions(av) = roundtrip(
        &broker,
        3,
        ApiVersionsRequest {
            client_software_name: "josef-test".into(),
            client_software_version: "1".into(),
            ..Default::default()
        }
        .into(),
    )
    .await
    .unwrap() else {
        panic!()
    };
    let mut failures = Vec::new();
    let mut checked = 0;
    for api in &av.api_keys {
        let Some(key) = ApiKey::from_i16(api.api_key) else {
            failures.push(format!("advertised unknown api key {}", api.api_key));
            continue;
        };
        for version in api.min_version..=api.max_version {
            let mut body = RequestBody::default_for(key);
            match &mut body {
                // acks=0 has no answer by design.
                RequestBody::Produce(p) => p.acks = 1,
                RequestBody::ApiVersions(a) => {
                    a.client_software_name = "josef-test".into();
                    a.client_software_version = "1".into();
                }
                _ => {}
            }
            checked += 1;
            if let Err(e) = roundtrip(&broker, version, body).await {
                failures.push(format!("{key:?} v{version}: {e}"));
            }
        }
    }
    assert!(checked > 100, "only {checked} versions advertised?");
    assert!(failures.is_empty(), "{failures:#?}");
    broker.shutdown().await;
}

/// The data-path APIs with real content (a topic, a partition, records) at every advertised
/// version: what a negotiated-down client actually sends.
#[tokio::test]
async fn produce_fetch_metadata_and_list_offsets_work_with_content_at_every_advertised_version() {
    use josef_protocol::messages::create_topics_request::CreatableTopic;
    use josef_protocol::messages::fetch_request::FetchTopic;
    use josef_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
    use josef_protocol::messages::metadata_request::MetadataRequestTopic;
    use josef_protocol::messages::*;
    use josef_records::{LegacySetBuilder, RecordBatchBuilder};

    let dir = tempfile::tempdir().unwrap();
    let broker = start(dir.path()).await;
    let created = roundtrip(
        &broker,
        5,
        CreateTopicsRequest {
            topics: vec![CreatableTopic {
                name: "t".into(),
                num_partitions: 1,
                replication_factor: 1,
                ..Default::default()
            }],
            timeout_ms: 5000,
            ..Default::default()
        }
        .into(),
    )
    .await
    .unwrap();
    let ResponseBody::CreateTopics(c) = created else {
        panic!()
    };
    assert_eq!(c.topics[0].error_code, 0);
    let ResponseBody::Metadata(m) = roundtrip(
        &broker,
        12,
        MetadataRequest {
            topics: Some(vec![MetadataRequestTopic {
                name: Some("t".into()),
                ..Default::default()
            }]),
            ..Default::default()
        }
        .into(),
    )
    .await
    .unwrap() else {
        panic!()
    };
    let topic_id = m.topics[0].topic_id;
    let mut failures = Vec::new();
    let mut produced = 0i64;
    for (key, (min, max)) in [
        ApiKey::Produce,
        ApiKey::Fetch,
        ApiKey::Metadata,
        ApiKey::ListOffsets,
    ]
    .into_iter()
    .filter_map(|k| josef_server::dispatch::served_versions(k).map(|r| (k, r)))
    {
        for v in min..=max {
            let body: RequestBody = match key {
                ApiKey::Produce => {
                    let records = if v < 3 {
                        LegacySetBuilder::new(if v < 2 { 0 } else { 1 })
                            .record(1_700_000_000_000, Some(b"k"), Some(b"v"))
                            .build()
                            .unwrap()
                            .freeze()
                    } else {
                        RecordBatchBuilder::new()
                            .record(1_700_000_000_000, Some(b"k"), Some(b"v"))
                            .build_bytes()
                            .unwrap()
                    };
                    common::produce_request("t", records).into()
                }
                ApiKey::Fetch => FetchRequest {
                    replica_id: -1,
                    max_wait_ms: 0,
                    max_bytes: 1 << 20,
                    session_epoch: -1,
                    topics: vec![FetchTopic {
                        topic: if v < 13 { "t".into() } else { "".into() },
                        topic_id: if v >= 13 {
                            topic_id
                        } else {
                            Default::default()
                        },
                        partitions: vec![common::fetch_partition(0, 0)],
                        ..Default::default()
                    }],
                    ..Default::default()
                }
                .into(),
                ApiKey::Metadata => MetadataRequest {
                    topics: Some(vec![MetadataRequestTopic {
                        name: Some("t".into()),
                        ..Default::default()
                    }]),
                    ..Default::default()
                }
                .into(),
                _ => ListOffsetsRequest {
                    replica_id: -1,
                    topics: vec![ListOffsetsTopic {
                        name: "t".into(),
                        partitions: vec![ListOffsetsPartition {
                            partition_index: 0,
                            timestamp: -1,
                            current_leader_epoch: -1,
                            max_num_offsets: 1,
                            ..Default::default()
                        }],
                        ..Default::default()
                    }],
                    ..Default::default()
                }
                .into(),
            };
            match roundtrip(&broker, v, body).await {
                Err(e) => failures.push(format!("{key:?} v{v}: {e}")),
                Ok(ResponseBody::Produce(r)) => {
                    let p = &r.responses[0].partition_responses[0];
                    if p.error_code != 0 || p.base_offset != produced {
                        failures.push(format!("Produce v{v}: {p:?}"));
                    }
                    produced += 1;
                }
                Ok(ResponseBody::Fetch(r)) => {
                    let p = &r.responses[0].partitions[0];
                    if p.error_code != 0 || p.records.as_ref().is_none_or(|r| r.is_empty()) {
                        failures.push(format!("Fetch v{v}: error {}", p.error_code));
                    }
                }
                Ok(ResponseBody::Metadata(r)) => {
                    if r.topics.len() != 1 || r.topics[0].error_code != 0 {
                        failures.push(format!("Metadata v{v}: {:?}", r.topics));
                    }
                }
                Ok(ResponseBody::ListOffsets(r)) => {
                    let p = &r.topics[0].partitions[0];
                    if p.error_code != 0 {
                        failures.push(format!("ListOffsets v{v}: error {}", p.error_code));
                    }
                }
                Ok(other) => failures.push(format!("{key:?} v{v}: unexpected {other:?}")),
            }
        }
    }
    assert!(produced > 10);
    assert!(failures.is_empty(), "{failures:#?}");
    broker.shutdown().await;
}
