//! Which responses the client backs off on by itself (KIP-219, Kafka's
//! `AbstractResponse.shouldClientThrottle`), so the broker can answer at once and mute the channel;
//! older versions get their answer delayed by the throttle time instead.

use josef_protocol::ApiKey;

/// The first version of `api` whose client honours `throttle_time_ms` itself. `None` for the
/// inter-broker and controller APIs, which are never throttled.
pub fn client_throttles_since(api: ApiKey) -> Option<i16> {
    use ApiKey as K;
    let v = match api {
        K::Produce | K::Metadata => 6,
        K::Fetch => 8,
        K::ListOffsets | K::JoinGroup => 3,
        K::OffsetCommit | K::OffsetFetch => 4,
        K::FindCoordinator
        | K::Heartbeat
        | K::LeaveGroup
        | K::SyncGroup
        | K::DescribeGroups
        | K::ListGroups
        | K::ApiVersions
        | K::DeleteTopics
        | K::DescribeConfigs => 2,
        K::CreateTopics => 3,
        K::DeleteRecords
        | K::InitProducerId
        | K::AddPartitionsToTxn
        | K::AddOffsetsToTxn
        | K::EndTxn
        | K::TxnOffsetCommit
        | K::DescribeAcls
        | K::CreateAcls
        | K::DeleteAcls
        | K::AlterConfigs
        | K::AlterReplicaLogDirs
        | K::DescribeLogDirs
        | K::CreatePartitions
        | K::CreateDelegationToken
        | K::RenewDelegationToken
        | K::ExpireDelegationToken
        | K::DescribeDelegationToken
        | K::DeleteGroups => 1,
        K::OffsetForLeaderEpoch => 2,
        K::LeaderAndIsr
        | K::StopReplica
        | K::UpdateMetadata
        | K::ControlledShutdown
        | K::BrokerRegistration
        | K::BrokerHeartbeat
        | K::UnregisterBroker
        | K::AlterPartition
        | K::AllocateProducerIds
        | K::Vote
        | K::BeginQuorumEpoch
        | K::EndQuorumEpoch
        | K::FetchSnapshot
        | K::Envelope
        | K::WriteTxnMarkers
        | K::SaslHandshake
        | K::SaslAuthenticate => return None,
        // Every API added after KIP-219 has the client back off from its first version.
        _ => 0,
    };
    Some(v)
}

/// True when a response of `api` at `version` carrying a throttle is backed off by the client:
/// the broker sends it at once and then mutes the channel. False: the broker holds the response
/// for the throttle time (with the channel muted meanwhile, as every in-flight request).
pub fn client_throttles(api: ApiKey, version: i16) -> bool {
    client_throttles_since(api).is_some_and(|since| version >= since)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_of_kip_219() {
        assert!(!client_throttles(ApiKey::Produce, 5));
        assert!(client_throttles(ApiKey::Produce, 6));
        assert!(!client_throttles(ApiKey::Fetch, 7));
        assert!(client_throttles(ApiKey::Fetch, 8));
        assert!(client_throttles(ApiKey::DescribeClientQuotas, 0));
        assert!(!client_throttles(ApiKey::BrokerHeartbeat, 5));
        assert!(client_throttles(ApiKey::ApiVersions, 3));
        assert!(!client_throttles(ApiKey::ApiVersions, 1));
    }
}
