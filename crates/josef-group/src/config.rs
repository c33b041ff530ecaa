//! Group coordinator configuration (Kafka's `GroupCoordinatorConfig` names and defaults).

/// Configuration of one group coordinator shard.
///
/// ```
/// use josef_group::GroupConfig;
/// let c = GroupConfig::default();
/// assert_eq!(c.initial_rebalance_delay_ms, 3000);
/// assert_eq!(c.offsets_retention_ms, 7 * 24 * 60 * 60 * 1000);
/// assert_eq!(c.consumer_session_timeout_ms, 45_000);
/// assert_eq!(c.consumer_assignors[0], "uniform");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupConfig {
    /// `group.initial.rebalance.delay.ms`.
    pub initial_rebalance_delay_ms: i32,
    /// `group.min.session.timeout.ms`.
    pub min_session_timeout_ms: i32,
    /// `group.max.session.timeout.ms`.
    pub max_session_timeout_ms: i32,
    /// `group.max.size`.
    pub max_group_size: usize,
    /// How long a new member's parked JoinGroup may wait (`classicGroupNewMemberJoinTimeoutMs`, 5 min).
    pub new_member_join_timeout_ms: i32,
    /// `offsets.retention.minutes` in milliseconds.
    pub offsets_retention_ms: i64,
    /// `offsets.retention.check.interval.ms`.
    pub offsets_retention_check_interval_ms: i64,
    /// `offset.metadata.max.bytes`.
    pub offset_metadata_max_bytes: usize,
    /// Version of `OffsetCommitValue` records written (1 when an expire timestamp is set, else
    /// this; Kafka 3.x writes 3).
    pub offset_commit_value_version: i16,
    /// Version of `GroupMetadataValue` records written (Kafka 3.x writes 3).
    pub group_metadata_value_version: i16,
    /// `group.consumer.session.timeout.ms`.
    pub consumer_session_timeout_ms: i32,
    /// `group.consumer.min.session.timeout.ms`.
    pub consumer_min_session_timeout_ms: i32,
    /// `group.consumer.max.session.timeout.ms`.
    pub consumer_max_session_timeout_ms: i32,
    /// `group.consumer.heartbeat.interval.ms`.
    pub consumer_heartbeat_interval_ms: i32,
    /// `group.consumer.min.heartbeat.interval.ms`.
    pub consumer_min_heartbeat_interval_ms: i32,
    /// `group.consumer.max.heartbeat.interval.ms`.
    pub consumer_max_heartbeat_interval_ms: i32,
    /// `group.consumer.max.size`.
    pub consumer_max_size: usize,
    /// `group.consumer.assignors`: the server assignors offered; the first is the default.
    pub consumer_assignors: Vec<String>,
    /// `group.consumer.migration.policy`: which online conversions between a classic group and a
    /// consumer group are allowed.
    pub consumer_migration_policy: MigrationPolicy,
}

/// `group.consumer.migration.policy` (Kafka's `ConsumerGroupMigrationPolicy`). Kafka 4's default
/// is `bidirectional`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MigrationPolicy {
    /// A non-empty group never changes protocol.
    Disabled,
    /// A consumer-protocol member joining a non-empty classic group converts it.
    Upgrade,
    /// A consumer group left with classic members only becomes a classic group.
    Downgrade,
    /// Both conversions.
    #[default]
    Bidirectional,
}

impl MigrationPolicy {
    /// The policy named by the config value (case-insensitive), if any.
    pub fn parse(value: &str) -> Option<MigrationPolicy> {
        match value.trim().to_ascii_lowercase().as_str() {
            "disabled" => Some(MigrationPolicy::Disabled),
            "upgrade" => Some(MigrationPolicy::Upgrade),
            "downgrade" => Some(MigrationPolicy::Downgrade),
            "bidirectional" => Some(MigrationPolicy::Bidirectional),
            _ => None,
        }
    }

    /// A classic group may become a consumer group.
    pub fn upgrade_enabled(self) -> bool {
        matches!(
            self,
            MigrationPolicy::Upgrade | MigrationPolicy::Bidirectional
        )
    }

    /// A consumer group may become a classic group.
    pub fn downgrade_enabled(self) -> bool {
        matches!(
            self,
            MigrationPolicy::Downgrade | MigrationPolicy::Bidirectional
        )
    }
}

impl Default for GroupConfig {
    fn default() -> Self {
        GroupConfig {
            initial_rebalance_delay_ms: 3000,
            min_session_timeout_ms: 6000,
            max_session_timeout_ms: 1_800_000,
            max_group_size: i32::MAX as usize,
            new_member_join_timeout_ms: 5 * 60 * 1000,
            offsets_retention_ms: 10_080 * 60 * 1000,
            offsets_retention_check_interval_ms: 600_000,
            offset_metadata_max_bytes: 4096,
            offset_commit_value_version: 3,
            group_metadata_value_version: 3,
            consumer_session_timeout_ms: 45_000,
            consumer_min_session_timeout_ms: 45_000,
            consumer_max_session_timeout_ms: 60_000,
            consumer_heartbeat_interval_ms: 5_000,
            consumer_min_heartbeat_interval_ms: 5_000,
            consumer_max_heartbeat_interval_ms: 15_000,
            consumer_max_size: i32::MAX as usize,
            consumer_assignors: vec!["uniform".to_string(), "range".to_string()],
            consumer_migration_policy: MigrationPolicy::default(),
        }
    }
}

/// Why a consumer-protocol setting is rejected (Kafka's `GroupCoordinatorConfig` checks).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GroupConfigError {
    /// A value is outside its `min`/`max` bounds, or the interval is not below the timeout.
    #[error("{0}")]
    Invalid(&'static str),
    /// `group.consumer.assignors` names an assignor this crate does not have.
    #[error("unknown assignor {0}")]
    UnknownAssignor(String),
}

impl GroupConfig {
    /// Checks the consumer-protocol settings as Kafka does at start-up.
    pub fn validate(&self) -> Result<(), GroupConfigError> {
        let in_bounds = |v: i32, lo: i32, hi: i32| lo <= v && v <= hi;
        if !in_bounds(
            self.consumer_session_timeout_ms,
            self.consumer_min_session_timeout_ms,
            self.consumer_max_session_timeout_ms,
        ) {
            return Err(GroupConfigError::Invalid(
                "group.consumer.session.timeout.ms must be within the min and max session timeouts",
            ));
        }
        if !in_bounds(
            self.consumer_heartbeat_interval_ms,
            self.consumer_min_heartbeat_interval_ms,
            self.consumer_max_heartbeat_interval_ms,
        ) {
            return Err(GroupConfigError::Invalid(
                "group.consumer.heartbeat.interval.ms must be within the min and max intervals",
            ));
        }
        if self.consumer_heartbeat_interval_ms >= self.consumer_session_timeout_ms {
            return Err(GroupConfigError::Invalid(
                "group.consumer.heartbeat.interval.ms must be below group.consumer.session.timeout.ms",
            ));
        }
        if self.consumer_assignors.is_empty() {
            return Err(GroupConfigError::Invalid(
                "group.consumer.assignors is empty",
            ));
        }
        if let Some(a) = self
            .consumer_assignors
            .iter()
            .find(|a| crate::assignor::server::server_assignor(a).is_none())
        {
            return Err(GroupConfigError::UnknownAssignor(a.clone()));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migration_policies_parse_and_say_which_conversions_are_allowed() {
        use MigrationPolicy::*;
        assert_eq!(
            GroupConfig::default().consumer_migration_policy,
            Bidirectional
        );
        for (name, p, up, down) in [
            ("disabled", Disabled, false, false),
            ("upgrade", Upgrade, true, false),
            ("downgrade", Downgrade, false, true),
            ("Bidirectional", Bidirectional, true, true),
        ] {
            assert_eq!(MigrationPolicy::parse(name), Some(p));
            assert_eq!((p.upgrade_enabled(), p.downgrade_enabled()), (up, down));
        }
        assert_eq!(MigrationPolicy::parse("both"), None);
    }

    #[test]
    fn defaults_are_valid_and_bounds_are_checked() {
        assert_eq!(GroupConfig::default().validate(), Ok(()));
        let c = GroupConfig {
            consumer_session_timeout_ms: 30_000,
            ..GroupConfig::default()
        };
        assert!(matches!(c.validate(), Err(GroupConfigError::Invalid(_))));
        let c = GroupConfig {
            consumer_heartbeat_interval_ms: 45_000,
            consumer_max_heartbeat_interval_ms: 60_000,
            ..GroupConfig::default()
        };
        assert!(matches!(c.validate(), Err(GroupConfigError::Invalid(_))));
        let c = GroupConfig {
            consumer_assignors: vec!["sticky".into()],
            ..GroupConfig::default()
        };
        assert_eq!(
            c.validate(),
            Err(GroupConfigError::UnknownAssignor("sticky".into()))
        );
    }
}
