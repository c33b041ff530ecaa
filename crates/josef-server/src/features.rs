//! The `transaction.version` feature (KIP-890): the levels this broker supports, the level the
//! cluster finalized (the metadata image on a cluster node, `transaction.version` in the config
//! on a single node), and the API versions that only a level-2 node advertises. Clients choose
//! the transaction protocol from what ApiVersions says: a producer that sees
//! `transaction.version` 2 finalized and EndTxn v5 offered runs transactions v2 (it adds no
//! partitions itself, and each EndTxn bumps its epoch); one that does not stays on v1.

use josef_protocol::ApiKey;
use josef_txn::TransactionVersion;

use crate::cluster::ClusterNode;
use crate::config::BrokerConfig;

/// The feature's name.
pub const TRANSACTION_VERSION_FEATURE: &str = "transaction.version";
/// The lowest level this broker supports.
pub const TRANSACTION_VERSION_MIN: i16 = 0;
/// The highest level this broker supports (transactions v2).
pub const TRANSACTION_VERSION_MAX: i16 = 2;

/// The finalized `transaction.version` level: from the metadata image on a cluster node (a
/// feature the log never set is at 0), else the config's.
pub fn transaction_version_level(config: &BrokerConfig, cluster: Option<&ClusterNode>) -> i16 {
    match cluster {
        Some(node) => node
            .log
            .image()
            .features()
            .get(TRANSACTION_VERSION_FEATURE)
            .copied()
            .unwrap_or(0),
        None => config.transaction_version,
    }
}

/// [`transaction_version_level`] as the coordinator's type.
pub fn transaction_version(
    config: &BrokerConfig,
    cluster: Option<&ClusterNode>,
) -> TransactionVersion {
    TransactionVersion::from_feature_level(transaction_version_level(config, cluster))
}

/// The last version of each API before transactions v2; the next one (Produce v12, EndTxn v5,
/// TxnOffsetCommit v5) tells the broker the client runs v2, so it is offered only at level 2.
fn last_version_before_v2(key: ApiKey) -> Option<i16> {
    match key {
        ApiKey::Produce => Some(11),
        ApiKey::EndTxn | ApiKey::TxnOffsetCommit => Some(4),
        _ => None,
    }
}

/// The range of `key` to advertise at the finalized `level`.
pub fn advertised_range(key: ApiKey, (min, max): (i16, i16), level: i16) -> (i16, i16) {
    match last_version_before_v2(key) {
        Some(cap) if level < 2 => (min, max.min(cap)),
        _ => (min, max),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_v2_versions_are_offered_only_at_level_2() {
        for level in [0, 1] {
            assert_eq!(advertised_range(ApiKey::EndTxn, (0, 5), level), (0, 4));
            assert_eq!(advertised_range(ApiKey::Produce, (0, 12), level), (0, 11));
            assert_eq!(
                advertised_range(ApiKey::TxnOffsetCommit, (0, 5), level),
                (0, 4)
            );
        }
        assert_eq!(advertised_range(ApiKey::EndTxn, (0, 5), 2), (0, 5));
        assert_eq!(advertised_range(ApiKey::Produce, (0, 12), 2), (0, 12));
        assert_eq!(advertised_range(ApiKey::Fetch, (0, 17), 0), (0, 17));
    }
}
