//! Group coordinator configuration (Kafka's `GroupCoordinatorConfig` names and defaults).

/// Configuration of one group coordinator shard.
///
/// ```
/// use josef_group::GroupConfig;
/// let c = GroupConfig::default();
/// assert_eq!(c.initial_rebalance_delay_ms, 3000);
/// assert_eq!(c.offsets_retention_ms, 7 * 24 * 60 * 60 * 1000);
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
        }
    }
}
