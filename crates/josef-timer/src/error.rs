//! Errors of this crate.

/// A timer or purgatory configuration value out of range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// `tick_ms` must be in `1..=u32::MAX`.
    #[error("tick_ms must be in 1..=4294967295, got {0}")]
    TickMs(u64),
    /// `wheel_size` must be in `2..=65536`.
    #[error("wheel_size must be in 2..=65536, got {0}")]
    WheelSize(u32),
    /// The purgatory needs at least one watcher shard.
    #[error("shard count must be at least 1")]
    Shards,
}
