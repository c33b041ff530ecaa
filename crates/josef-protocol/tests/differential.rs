//! Differential tests against the `kafka-protocol` crate (0.18): for every API key and version both
//! support, bytes encoded by one side decode in the other to the same value, which we check by
//! re-encoding and comparing bytes, in both directions.
//!
//! Direction 1: our random values → our bytes → kafka-protocol decodes and re-encodes → same bytes.
//! Direction 2: kafka-protocol's values (its defaults, and its decodings of direction 1) → its bytes →
//! we decode and re-encode → same bytes.

#[path = "generated/values.rs"]
mod values;

use bytes::{Bytes, BytesMut};
use josef_protocol::*;
use kafka_protocol::messages::{ApiKey as KpApiKey, RequestKind, ResponseKind};
use proptest::prelude::*;
use values::*;

/// APIs both crates know under the same key, with the version range both support.
fn common_versions(k: ApiKey) -> Option<(KpApiKey, i16, i16)> {
    let kp = KpApiKey::try_from(k as i16).ok()?;
    // Key 74 is ListClientMetricsResources in our specs and ListConfigResources in kafka-protocol's
    // newer specs: a renamed, extended API, compared anyway for the versions both have.
    let r = kp.valid_versions();
    let (lo, hi) = k.valid_versions();
    let (lo, hi) = (lo.max(r.min), hi.min(r.max));
    (lo <= hi).then_some((kp, lo, hi))
}

/// Versions where the two spec snapshots legitimately differ (unstable latest versions that Kafka
/// changed after our snapshot); they are reported, not compared.
fn known_spec_difference(k: ApiKey, v: i16) -> bool {
    matches!(
        (k, v),
        // Kafka added LeaderEpoch to v0 of this then-unstable response after our spec snapshot.
        (ApiKey::ReadShareGroupStateSummary, 0)
    )
}

fn ours_to_theirs_request(k: ApiKey, kp: KpApiKey, v: i16, m: &RequestBody) -> Result<(), String> {
    let mut a = BytesMut::new();
    m.encode(&mut a, v).map_err(|e| e.to_string())?;
    let a = a.freeze();
    let theirs = RequestKind::decode(kp, &mut a.clone(), v)
        .map_err(|e| format!("kafka-protocol decode: {e}"))?;
    let mut b = BytesMut::new();
    theirs
        .encode(&mut b, v)
        .map_err(|e| format!("kafka-protocol encode: {e}"))?;
    if b.freeze() != a {
        return Err(format!(
            "{} v{v}: kafka-protocol re-encoded our request differently\n{m:?}\n{theirs:?}",
            k.name()
        ));
    }
    Ok(())
}

fn ours_to_theirs_response(
    k: ApiKey,
    kp: KpApiKey,
    v: i16,
    m: &ResponseBody,
) -> Result<(), String> {
    let mut a = BytesMut::new();
    m.encode(&mut a, v).map_err(|e| e.to_string())?;
    let a = a.freeze();
    let theirs = ResponseKind::decode(kp, &mut a.clone(), v)
        .map_err(|e| format!("kafka-protocol decode: {e}"))?;
    let mut b = BytesMut::new();
    theirs
        .encode(&mut b, v)
        .map_err(|e| format!("kafka-protocol encode: {e}"))?;
    if b.freeze() != a {
        return Err(format!(
            "{} v{v}: kafka-protocol re-encoded our response differently\n{m:?}\n{theirs:?}",
            k.name()
        ));
    }
    Ok(())
}

fn theirs_bytes_through_ours(
    k: ApiKey,
    v: i16,
    theirs: Bytes,
    request: bool,
) -> Result<(), String> {
    let what = if request { "request" } else { "response" };
    let mut rest = theirs.clone();
    let mut out = BytesMut::new();
    if request {
        let ours = RequestBody::decode(k, v, &mut rest)
            .map_err(|e| format!("{} v{v} {what}: our decode: {e}", k.name()))?;
        ours.encode(&mut out, v).map_err(|e| e.to_string())?;
    } else {
        let ours = ResponseBody::decode(k, v, &mut rest)
            .map_err(|e| format!("{} v{v} {what}: our decode: {e}", k.name()))?;
        ours.encode(&mut out, v).map_err(|e| e.to_string())?;
    }
    if !rest.is_empty() || out.freeze() != theirs {
        return Err(format!(
            "{} v{v}: we re-encoded kafka-protocol's {what} differently",
            k.name()
        ));
    }
    Ok(())
}

macro_rules! their_defaults {
    ($($name:ident),* $(,)?) => {
        fn their_default_request(kp: KpApiKey) -> Option<RequestKind> {
            match kp {
                $(KpApiKey::$name => Some(RequestKind::$name(Default::default())),)*
                _ => None,
            }
        }
        fn their_default_response(kp: KpApiKey) -> Option<ResponseKind> {
            match kp {
                $(KpApiKey::$name => Some(ResponseKind::$name(Default::default())),)*
                _ => None,
            }
        }
    };
}

their_defaults!(
    AddOffsetsToTxn,
    AddPartitionsToTxn,
    AddRaftVoter,
    AllocateProducerIds,
    AlterClientQuotas,
    AlterConfigs,
    AlterPartition,
    AlterPartitionReassignments,
    AlterReplicaLogDirs,
    AlterUserScramCredentials,
    ApiVersions,
    AssignReplicasToDirs,
    BeginQuorumEpoch,
    BrokerHeartbeat,
    BrokerRegistration,
    ConsumerGroupDescribe,
    ConsumerGroupHeartbeat,
    ControllerRegistration,
    CreateAcls,
    CreateDelegationToken,
    CreatePartitions,
    CreateTopics,
    DeleteAcls,
    DeleteGroups,
    DeleteRecords,
    DeleteShareGroupState,
    DeleteTopics,
    DescribeAcls,
    DescribeClientQuotas,
    DescribeCluster,
    DescribeConfigs,
    DescribeDelegationToken,
    DescribeGroups,
    DescribeLogDirs,
    DescribeProducers,
    DescribeQuorum,
    DescribeTopicPartitions,
    DescribeTransactions,
    DescribeUserScramCredentials,
    ElectLeaders,
    EndQuorumEpoch,
    EndTxn,
    Envelope,
    ExpireDelegationToken,
    Fetch,
    FetchSnapshot,
    FindCoordinator,
    GetTelemetrySubscriptions,
    Heartbeat,
    IncrementalAlterConfigs,
    InitProducerId,
    InitializeShareGroupState,
    JoinGroup,
    LeaveGroup,
    ListGroups,
    ListOffsets,
    ListPartitionReassignments,
    ListTransactions,
    Metadata,
    OffsetCommit,
    OffsetDelete,
    OffsetFetch,
    OffsetForLeaderEpoch,
    Produce,
    PushTelemetry,
    ReadShareGroupState,
    ReadShareGroupStateSummary,
    RemoveRaftVoter,
    RenewDelegationToken,
    SaslAuthenticate,
    SaslHandshake,
    ShareAcknowledge,
    ShareFetch,
    ShareGroupDescribe,
    ShareGroupHeartbeat,
    SyncGroup,
    TxnOffsetCommit,
    UnregisterBroker,
    UpdateFeatures,
    UpdateRaftVoter,
    Vote,
    WriteShareGroupState,
    WriteTxnMarkers,
    ListConfigResources,
);

#[test]
fn both_crates_share_at_least_80_apis() {
    let n = ApiKey::ALL
        .iter()
        .filter(|k| common_versions(**k).is_some())
        .count();
    assert!(n >= 80, "only {n} common APIs");
}

#[test]
fn kafka_protocol_defaults_decode_and_reencode_identically_in_ours() {
    let mut failures = Vec::new();
    let mut compared = 0;
    for k in ApiKey::ALL {
        let Some((kp, lo, hi)) = common_versions(k) else {
            continue;
        };
        for v in lo..=hi {
            if known_spec_difference(k, v) {
                continue;
            }
            for request in [true, false] {
                let mut b = BytesMut::new();
                let encoded = if request {
                    their_default_request(kp).map(|m| m.encode(&mut b, v).is_ok())
                } else {
                    their_default_response(kp).map(|m| m.encode(&mut b, v).is_ok())
                };
                // kafka-protocol refuses some of its own defaults (e.g. a null in a non-nullable version).
                if encoded != Some(true) {
                    continue;
                }
                compared += 1;
                if let Err(e) = theirs_bytes_through_ours(k, v, b.freeze(), request) {
                    failures.push(e);
                }
            }
        }
    }
    assert!(compared > 500, "only {compared} comparisons");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn random_messages_agree_with_kafka_protocol_in_both_directions(seed in any::<u64>()) {
        let mut g = Gen::new(seed);
        let mut failures = Vec::new();
        for k in ApiKey::ALL {
            let Some((kp, lo, hi)) = common_versions(k) else { continue };
            for v in lo..=hi {
                if known_spec_difference(k, v) {
                    continue;
                }
                let req = random_request(k, &mut g, v);
                if let Err(e) = ours_to_theirs_request(k, kp, v, &req) {
                    failures.push(format!("{} v{v} request: {}", k.name(), e.lines().next().unwrap_or_default()));
                    continue;
                }
                let resp = random_response(k, &mut g, v);
                if let Err(e) = ours_to_theirs_response(k, kp, v, &resp) {
                    failures.push(format!("{} v{v} response: {}", k.name(), e.lines().next().unwrap_or_default()));
                    continue;
                }
                // Direction 2 with kafka-protocol's own encoding of the values it decoded.
                let mut a = BytesMut::new();
                req.encode(&mut a, v).unwrap();
                let theirs = RequestKind::decode(kp, &mut a.freeze(), v).unwrap();
                let mut b = BytesMut::new();
                theirs.encode(&mut b, v).unwrap();
                if let Err(e) = theirs_bytes_through_ours(k, v, b.freeze(), true) {
                    failures.push(e);
                }
            }
        }
        prop_assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
    }
}
