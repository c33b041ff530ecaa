//! Writes the seed corpora of the cluster targets (metadata_record, quorum_storage, quorum_frame,
//! controller_requests) under `corpus/<target>/seed-*`: a handful of valid inputs each, made with the
//! crates' own encoders (and checked with their decoders). Run from `fuzz/`:
//! `cargo run --example seed_corpus`.

use std::fs;
use std::path::Path;

use bytes::BytesMut;
use josef_metadata::{ClusterIdRecord, MetadataRecord};
use josef_protocol::messages::*;
use josef_protocol::metadata_records::*;
use josef_protocol::{encode_request_frame, RequestBody, Uuid};
use josef_quorum::fuzzing;

#[path = "../common/controller_harness.rs"]
mod controller_harness;

use controller_harness::{Harness, BROKERS, CLUSTER_ID};

fn write(target: &str, name: &str, bytes: &[u8]) {
    let dir = Path::new("corpus").join(target);
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join(format!("seed-{name}")), bytes).unwrap();
}

// ---- metadata_record: u16 BE length-prefixed records.

fn chunks(records: &[MetadataRecord], oldest: bool) -> Vec<u8> {
    let mut out = Vec::new();
    for r in records {
        let mut buf = BytesMut::new();
        let version = if oldest {
            MetadataRecord::versions_of(r.api_key()).unwrap().0
        } else {
            r.latest_version()
        };
        r.encode_at(version, &mut buf).unwrap();
        out.extend_from_slice(&(buf.len() as u16).to_be_bytes());
        out.extend_from_slice(&buf);
    }
    out
}

fn metadata_seeds() {
    let topic = Uuid::from_u128(0x7070);
    let broker = |id: i32| RegisterBrokerRecord {
        broker_id: id,
        broker_epoch: 10 + i64::from(id),
        incarnation_id: Uuid::from_u128(id as u128),
        fenced: true,
        rack: Some("r1".into()),
        ..Default::default()
    };
    let cluster: Vec<MetadataRecord> = vec![
        FeatureLevelRecord {
            name: "metadata.version".into(),
            feature_level: 21,
            ..Default::default()
        }
        .into(),
        ClusterIdRecord {
            cluster_id: "seed".into(),
        }
        .into(),
        RegisterControllerRecord {
            controller_id: 1000,
            incarnation_id: Uuid::from_u128(5),
            ..Default::default()
        }
        .into(),
        broker(1).into(),
        broker(2).into(),
        UnfenceBrokerRecord {
            id: 1,
            epoch: 11,
            ..Default::default()
        }
        .into(),
        UnfenceBrokerRecord {
            id: 2,
            epoch: 12,
            ..Default::default()
        }
        .into(),
    ];
    let topics: Vec<MetadataRecord> = vec![
        TopicRecord {
            name: "orders".into(),
            topic_id: topic,
            ..Default::default()
        }
        .into(),
        PartitionRecord {
            topic_id: topic,
            partition_id: 0,
            replicas: vec![1, 2].into(),
            isr: vec![1, 2].into(),
            leader: 1,
            leader_epoch: 0,
            partition_epoch: 0,
            ..Default::default()
        }
        .into(),
        PartitionRecord {
            topic_id: topic,
            partition_id: 1,
            replicas: vec![2, 1].into(),
            isr: vec![2].into(),
            leader: 2,
            ..Default::default()
        }
        .into(),
        PartitionChangeRecord {
            topic_id: topic,
            partition_id: 0,
            isr: Some(vec![1].into()),
            ..Default::default()
        }
        .into(),
        PartitionChangeRecord {
            topic_id: topic,
            partition_id: 1,
            leader: 1,
            ..Default::default()
        }
        .into(),
        ConfigRecord {
            resource_type: 2,
            resource_name: "orders".into(),
            name: "retention.ms".into(),
            value: Some("1000".into()),
            ..Default::default()
        }
        .into(),
    ];
    let rest: Vec<MetadataRecord> = vec![
        ProducerIdsRecord {
            broker_id: 1,
            broker_epoch: 11,
            next_producer_id: 1000,
            ..Default::default()
        }
        .into(),
        ClientQuotaRecord {
            entity: vec![client_quota_record::EntityData {
                entity_type: "user".into(),
                entity_name: Some("alice".into()),
                ..Default::default()
            }],
            key: "producer_byte_rate".into(),
            value: 1024.0,
            ..Default::default()
        }
        .into(),
        AccessControlEntryRecord {
            id: Uuid::from_u128(77),
            resource_type: 2,
            resource_name: "orders".into(),
            principal: "User:alice".into(),
            host: "*".into(),
            operation: 3,
            permission_type: 3,
            pattern_type: 3,
            ..Default::default()
        }
        .into(),
        UserScramCredentialRecord {
            name: "alice".into(),
            mechanism: 1,
            iterations: 4096,
            ..Default::default()
        }
        .into(),
        DelegationTokenRecord {
            token_id: "tok".into(),
            owner: "User:alice".into(),
            ..Default::default()
        }
        .into(),
        BrokerRegistrationChangeRecord {
            broker_id: 2,
            broker_epoch: 12,
            fenced: 1,
            ..Default::default()
        }
        .into(),
        NoOpRecord::default().into(),
    ];
    let removal: Vec<MetadataRecord> = vec![
        FenceBrokerRecord {
            id: 1,
            epoch: 11,
            ..Default::default()
        }
        .into(),
        RemoveTopicRecord {
            topic_id: topic,
            ..Default::default()
        }
        .into(),
        RemoveAccessControlEntryRecord {
            id: Uuid::from_u128(77),
            ..Default::default()
        }
        .into(),
        RemoveUserScramCredentialRecord {
            name: "alice".into(),
            mechanism: 1,
            ..Default::default()
        }
        .into(),
        RemoveDelegationTokenRecord {
            token_id: "tok".into(),
            ..Default::default()
        }
        .into(),
        UnregisterBrokerRecord {
            broker_id: 2,
            broker_epoch: 12,
            ..Default::default()
        }
        .into(),
    ];
    let all: Vec<MetadataRecord> = [&cluster[..], &topics, &rest].concat();
    write("metadata_record", "cluster", &chunks(&cluster, false));
    write(
        "metadata_record",
        "topics",
        &chunks(&[&cluster[..], &topics].concat(), false),
    );
    write("metadata_record", "all", &chunks(&all, false));
    write(
        "metadata_record",
        "all-oldest-versions",
        &chunks(&all, true),
    );
    // An undecodable chunk (empty) between: the image is applied and a new delta starts on it.
    let mut two = chunks(&all, false);
    two.extend_from_slice(&[0, 0]);
    two.extend(chunks(&removal, false));
    write("metadata_record", "then-removals", &two);
    for r in [&all[0], &all[8], &all[14]] {
        write(
            "metadata_record",
            &format!("one-{}", r.type_name()),
            &chunks(std::slice::from_ref(r), false),
        );
    }
}

// ---- quorum_storage: mode, a, b, split (u16 BE), bytes.

fn storage_input(mode: u8, a: u8, b: u8, split: u16, data: &[u8]) -> Vec<u8> {
    let mut v = vec![mode, a, b];
    v.extend_from_slice(&split.to_be_bytes());
    v.extend_from_slice(data);
    v
}

fn quorum_storage_seeds() {
    let mut seg = fuzzing::membership_record(1, 1, 1, &[1, 2, 3]);
    seg.extend(fuzzing::log_record(2, 1, 1, None));
    let first_len = seg.len();
    seg.extend(fuzzing::log_record(
        3,
        1,
        1,
        Some(&[b"a record", b"another"]),
    ));
    seg.extend(fuzzing::log_record(4, 2, 2, None));
    seg.extend(fuzzing::log_record(5, 2, 2, Some(&[b""])));
    write(
        "quorum_storage",
        "segment",
        &storage_input(0, 1, 0, 0, &seg),
    );
    write(
        "quorum_storage",
        "segment-fix-crcs",
        &storage_input(4, 1, 0, 0, &seg),
    );
    // Two segments: log-1 with entries 1..=2, log-3 with 3..=5 (3 = 1 + 1 + 1).
    write(
        "quorum_storage",
        "two-segments",
        &storage_input(1, 1, 1, first_len as u16, &seg),
    );
    let torn = &seg[..seg.len() - 3];
    write(
        "quorum_storage",
        "torn-tail",
        &storage_input(0, 1, 0, 0, torn),
    );
    let vote = br#"{"leader_id":{"term":3,"node_id":2},"committed":true}"#;
    let log_id = br#"{"leader_id":{"term":1,"node_id":1},"index":4}"#;
    write("quorum_storage", "vote", &storage_input(2, 4, 0, 0, vote));
    write(
        "quorum_storage",
        "purged",
        &storage_input(2, 4, 1, 0, log_id),
    );
    write(
        "quorum_storage",
        "committed",
        &storage_input(2, 4, 2, 0, log_id),
    );
    let snap = fuzzing::snapshot_file(9, 2, &[1, 2, 3], b"the caller's state");
    write(
        "quorum_storage",
        "snapshot",
        &storage_input(3, 9, 0, 0, &snap),
    );
    write(
        "quorum_storage",
        "snapshot-beside-older",
        &storage_input(3 | 4, 9, 1, 0, &snap),
    );

    // Check them with the same hooks.
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join(format!("log-{:020}.seg", 1)), &seg).unwrap();
    fs::write(tmp.path().join("vote.json"), vote).unwrap();
    let log = fuzzing::open_log(tmp.path(), 4096).unwrap();
    assert_eq!(log.entries.len(), 5, "{log:?}");
    assert_eq!(log.vote, Some((3, 2, true)));
    fs::write(tmp.path().join(format!("snapshot-{:020}.snap", 9)), &snap).unwrap();
    let (index, data) = fuzzing::load_snapshot(tmp.path()).unwrap().unwrap();
    assert_eq!((index, &data[..]), (Some(9), &b"the caller's state"[..]));
    fs::write(tmp.path().join("purged.json"), log_id).unwrap();
    assert_eq!(fuzzing::open_log(tmp.path(), 4096).unwrap().purged, Some(4));
}

// ---- quorum_frame: length (u32 BE) prefixed JSON.

fn quorum_frame_seeds() {
    let vote = r#"{"leader_id":{"term":2,"node_id":1},"committed":false}"#;
    let lid = |t: u64, i: u64| format!(r#"{{"leader_id":{{"term":{t},"node_id":1}},"index":{i}}}"#);
    let membership = r#"{"configs":[[1,2,3]],"nodes":{"1":{"addr":"127.0.0.1:19001"},"2":{"addr":"127.0.0.1:19002"},"3":{"addr":"127.0.0.1:19003"}}}"#;
    let requests = [
        format!(
            r#"{{"to":2,"rpc":{{"Vote":{{"vote":{vote},"last_log_id":{}}}}}}}"#,
            lid(1, 4)
        ),
        format!(r#"{{"to":2,"rpc":{{"Vote":{{"vote":{vote},"last_log_id":null}}}}}}"#),
        format!(
            r#"{{"to":3,"rpc":{{"AppendEntries":{{"vote":{vote},"prev_log_id":{},"entries":[{{"log_id":{},"payload":"Blank"}},{{"log_id":{},"payload":{{"Normal":["AQID","",  "aGVsbG8="]}}}},{{"log_id":{},"payload":{{"Membership":{membership}}}}}],"leader_commit":{}}}}}}}"#,
            lid(1, 4),
            lid(2, 5),
            lid(2, 6),
            lid(2, 7),
            lid(1, 4)
        ),
        format!(
            r#"{{"to":2,"rpc":{{"Snapshot":{{"vote":{vote},"meta":{{"last_log_id":{},"last_membership":{{"log_id":{},"membership":{membership}}},"snapshot_id":"2-9"}},"data":"c3RhdGU="}}}}}}"#,
            lid(2, 9),
            lid(0, 0)
        ),
    ];
    let responses = [
        format!(
            r#"{{"Vote":{{"Ok":{{"vote":{vote},"vote_granted":true,"last_log_id":{}}}}}}}"#,
            lid(1, 4)
        ),
        r#"{"AppendEntries":{"Ok":"Success"}}"#.to_string(),
        format!(
            r#"{{"AppendEntries":{{"Ok":{{"PartialSuccess":{}}}}}}}"#,
            lid(2, 6)
        ),
        r#"{"AppendEntries":{"Ok":"Conflict"}}"#.to_string(),
        format!(r#"{{"AppendEntries":{{"Ok":{{"HigherVote":{vote}}}}}}}"#),
        format!(r#"{{"Snapshot":{{"Ok":{{"vote":{vote}}}}}}}"#),
    ];
    let frame = |bodies: &[&String]| {
        let mut out = Vec::new();
        for b in bodies {
            out.extend_from_slice(&(b.len() as u32).to_be_bytes());
            out.extend_from_slice(b.as_bytes());
        }
        out
    };
    for (i, r) in requests.iter().enumerate() {
        assert!(
            fuzzing::decode_request(r.as_bytes()).is_some(),
            "request seed {i}: {r}"
        );
        write("quorum_frame", &format!("request-{i}"), &frame(&[r]));
    }
    for (i, r) in responses.iter().enumerate() {
        assert!(
            fuzzing::decode_response(r.as_bytes()).is_some(),
            "response seed {i}: {r}"
        );
        write("quorum_frame", &format!("response-{i}"), &frame(&[r]));
    }
    let all: Vec<&String> = requests.iter().chain(&responses).collect();
    let stream = frame(&all);
    assert_eq!(fuzzing::read_frames(&stream).0.len(), all.len());
    write("quorum_frame", "stream", &stream);
}

// ---- controller_requests: steps of advance (u8), frame length (u16 BE), request frame.

struct Steps {
    h: Harness,
    out: Vec<u8>,
    correlation: i32,
}

impl Steps {
    fn new() -> Self {
        Steps {
            h: Harness::new(),
            out: Vec::new(),
            correlation: 0,
        }
    }

    /// Appends the step to the seed and runs it on the mirror harness (for the epochs and ids the
    /// next steps use).
    fn step(&mut self, advance: u8, body: RequestBody) -> &mut Self {
        let version = body.api_key().valid_versions().1;
        self.step_at(advance, body, version)
    }

    fn step_at(&mut self, advance: u8, body: RequestBody, version: i16) -> &mut Self {
        self.correlation += 1;
        let header = RequestHeader {
            request_api_key: body.api_key() as i16,
            request_api_version: version,
            correlation_id: self.correlation,
            client_id: Some("seed".into()),
            ..Default::default()
        };
        let mut buf = BytesMut::new();
        encode_request_frame(&header, &body, &mut buf).unwrap();
        let frame = &buf[4..];
        self.out.push(advance);
        self.out
            .extend_from_slice(&(frame.len() as u16).to_be_bytes());
        self.out.extend_from_slice(frame);
        self.h.advance(advance);
        self.h.request(frame);
        self.h.c.check_consistency().unwrap();
        self
    }

    fn epoch(&self, id: i32) -> i64 {
        self.h.c.broker(id).map_or(-1, |b| b.epoch)
    }

    fn heartbeats(&mut self, advance: u8) -> &mut Self {
        for id in 1..=BROKERS + 1 {
            let req = BrokerHeartbeatRequest {
                broker_id: id,
                broker_epoch: self.epoch(id),
                current_metadata_offset: self.h.offset as i64,
                ..Default::default()
            };
            self.step(advance, RequestBody::BrokerHeartbeat(req));
        }
        self
    }
}

fn create(name: &str, partitions: i32, rf: i16) -> RequestBody {
    RequestBody::CreateTopics(CreateTopicsRequest {
        topics: vec![create_topics_request::CreatableTopic {
            name: name.into(),
            num_partitions: partitions,
            replication_factor: rf,
            ..Default::default()
        }],
        ..Default::default()
    })
}

fn controller_seeds() {
    // Topics: create, configs, more partitions, preferred election, reassignment, deletion.
    let mut s = Steps::new();
    s.step(0, create("t0", 3, 3));
    s.step(0, create("t1", 1, 2));
    s.step(
        1,
        RequestBody::IncrementalAlterConfigs(IncrementalAlterConfigsRequest {
            resources: vec![incremental_alter_configs_request::AlterConfigsResource {
                resource_type: 2,
                resource_name: "t0".into(),
                configs: vec![incremental_alter_configs_request::AlterableConfig {
                    name: "retention.ms".into(),
                    config_operation: 0,
                    value: Some("1000".into()),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }),
    );
    s.step(
        0,
        RequestBody::CreatePartitions(CreatePartitionsRequest {
            topics: vec![create_partitions_request::CreatePartitionsTopic {
                name: "t0".into(),
                count: 5,
                assignments: None,
                ..Default::default()
            }],
            ..Default::default()
        }),
    );
    s.step(
        0,
        RequestBody::AlterPartitionReassignments(AlterPartitionReassignmentsRequest {
            topics: vec![alter_partition_reassignments_request::ReassignableTopic {
                name: "t1".into(),
                partitions: vec![
                    alter_partition_reassignments_request::ReassignablePartition {
                        partition_index: 0,
                        replicas: Some(vec![3, 1].into()),
                        ..Default::default()
                    },
                ],
                ..Default::default()
            }],
            ..Default::default()
        }),
    );
    s.step(
        0,
        RequestBody::ListPartitionReassignments(ListPartitionReassignmentsRequest::default()),
    );
    s.step(
        20,
        RequestBody::ElectLeaders(ElectLeadersRequest {
            election_type: 0,
            ..Default::default()
        }),
    );
    s.heartbeats(10);
    s.step_at(
        0,
        RequestBody::DeleteTopics(DeleteTopicsRequest {
            topic_names: vec!["t1".into()],
            ..Default::default()
        }),
        3,
    );
    assert_eq!(s.h.c.topic("t0").map(|t| t.partitions.len()), Some(5));
    assert!(s.h.c.topic("t1").is_none());
    write("controller_requests", "topics", &s.out);

    // Brokers: a fourth registers and is unfenced; AlterPartition from a leader; producer ids;
    // controlled shutdown; unregistration.
    let mut s = Steps::new();
    s.step(0, create("t0", 2, 3));
    s.step(
        0,
        RequestBody::BrokerRegistration(BrokerRegistrationRequest {
            broker_id: 4,
            cluster_id: CLUSTER_ID.into(),
            incarnation_id: Uuid::from_u128(4444),
            rack: Some("r2".into()),
            ..Default::default()
        }),
    );
    s.heartbeats(1);
    let t0 = s.h.c.topic("t0").unwrap().clone();
    let p0 = t0.partitions[&0].clone();
    let leader = p0.leader;
    let isr: Vec<i32> = p0
        .isr
        .iter()
        .copied()
        .filter(|&b| b != leader)
        .take(1)
        .chain([leader])
        .collect();
    let alter = AlterPartitionRequest {
        broker_id: leader,
        broker_epoch: s.epoch(leader),
        topics: vec![alter_partition_request::TopicData {
            topic_id: t0.id,
            partitions: vec![alter_partition_request::PartitionData {
                partition_index: 0,
                leader_epoch: p0.leader_epoch,
                new_isr_with_epochs: isr
                    .iter()
                    .map(|&b| alter_partition_request::BrokerState {
                        broker_id: b,
                        broker_epoch: s.epoch(b),
                        ..Default::default()
                    })
                    .collect(),
                partition_epoch: p0.partition_epoch,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    s.step(0, RequestBody::AlterPartition(alter));
    s.step(
        0,
        RequestBody::AllocateProducerIds(AllocateProducerIdsRequest {
            broker_id: 2,
            broker_epoch: s.epoch(2),
            ..Default::default()
        }),
    );
    s.step(
        0,
        RequestBody::ControlledShutdown(ControlledShutdownRequest {
            broker_id: 3,
            broker_epoch: s.epoch(3),
            ..Default::default()
        }),
    );
    s.step(
        0,
        RequestBody::BrokerHeartbeat(BrokerHeartbeatRequest {
            broker_id: 2,
            broker_epoch: s.epoch(2),
            current_metadata_offset: s.h.offset as i64,
            want_shut_down: true,
            ..Default::default()
        }),
    );
    s.step(
        0,
        RequestBody::UnregisterBroker(UnregisterBrokerRequest {
            broker_id: 3,
            ..Default::default()
        }),
    );
    assert!(s.h.c.broker(4).is_some_and(|b| !b.fenced));
    assert!(s.h.c.broker(3).is_none());
    assert!(s.h.c.next_producer_id() > 0);
    write("controller_requests", "brokers", &s.out);

    // Sessions expire (brokers fenced one per tick), a failover, features and configs.
    let mut s = Steps::new();
    s.step(0, create("t0", 3, 2));
    s.step(
        200,
        RequestBody::ListPartitionReassignments(ListPartitionReassignmentsRequest::default()),
    );
    s.step(
        255,
        RequestBody::UpdateFeatures(UpdateFeaturesRequest::default()),
    );
    s.heartbeats(1);
    s.step(
        0,
        RequestBody::AlterConfigs(AlterConfigsRequest {
            resources: vec![alter_configs_request::AlterConfigsResource {
                resource_type: 4,
                resource_name: "".into(),
                configs: vec![alter_configs_request::AlterableConfig {
                    name: "unclean.leader.election.enable".into(),
                    value: Some("true".into()),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }),
    );
    s.step(
        30,
        RequestBody::ElectLeaders(ElectLeadersRequest {
            election_type: 1,
            ..Default::default()
        }),
    );
    write("controller_requests", "sessions-failover", &s.out);
}

fn main() {
    metadata_seeds();
    quorum_storage_seeds();
    quorum_frame_seeds();
    controller_seeds();
    println!("seeds written under corpus/");
}
