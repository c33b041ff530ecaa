//! Kafka's quota configuration names, defaults and the sample window.

use crate::error::QuotaConfigError;

/// `quota.window.num`: samples kept for client quotas (default 11).
pub const QUOTA_WINDOW_NUM_CONFIG: &str = "quota.window.num";
/// `quota.window.size.seconds`: length of one client-quota sample (default 1).
pub const QUOTA_WINDOW_SIZE_SECONDS_CONFIG: &str = "quota.window.size.seconds";
/// `controller.quota.window.num`: samples kept for controller mutation quotas (default 11).
pub const CONTROLLER_QUOTA_WINDOW_NUM_CONFIG: &str = "controller.quota.window.num";
/// `controller.quota.window.size.seconds`: length of one controller-mutation sample (default 1).
pub const CONTROLLER_QUOTA_WINDOW_SIZE_SECONDS_CONFIG: &str =
    "controller.quota.window.size.seconds";
/// `replication.quota.window.num`: samples kept for replication quotas (default 11).
pub const REPLICATION_QUOTA_WINDOW_NUM_CONFIG: &str = "replication.quota.window.num";
/// `replication.quota.window.size.seconds`: length of one replication sample (default 1).
pub const REPLICATION_QUOTA_WINDOW_SIZE_SECONDS_CONFIG: &str =
    "replication.quota.window.size.seconds";
/// `max.connection.creation.rate`: broker-wide (or per listener) accepted connections per second.
pub const MAX_CONNECTION_CREATION_RATE_CONFIG: &str = "max.connection.creation.rate";

/// Default of every `*.window.num` setting.
pub const DEFAULT_QUOTA_WINDOW_NUM: u32 = 11;
/// Default of every `*.window.size.seconds` setting.
pub const DEFAULT_QUOTA_WINDOW_SIZE_SECONDS: u32 = 1;

/// A quota sensor idle this long is dropped (Kafka's `InactiveSensorExpirationTimeSeconds`, 1 hour).
pub const INACTIVE_SENSOR_EXPIRATION_MS: u64 = 3_600_000;

/// How often idle sensors are looked for (Kafka's metrics expiry task runs every 30 s).
pub const SENSOR_EXPIRY_CHECK_INTERVAL_MS: u64 = 30_000;

/// The sampling of a rate: `num` samples of `size_seconds` each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuotaWindow {
    num: u32,
    size_seconds: u32,
}

impl QuotaWindow {
    /// A window of `num` samples of `size_seconds` seconds. Kafka requires both to be at least 1.
    pub fn new(num: u32, size_seconds: u32) -> Result<Self, QuotaConfigError> {
        if num == 0 {
            return Err(QuotaConfigError::AtLeastOne {
                name: QUOTA_WINDOW_NUM_CONFIG,
            });
        }
        if size_seconds == 0 {
            return Err(QuotaConfigError::AtLeastOne {
                name: QUOTA_WINDOW_SIZE_SECONDS_CONFIG,
            });
        }
        Ok(QuotaWindow { num, size_seconds })
    }

    /// The number of samples (`quota.window.num`).
    pub fn num(&self) -> u32 {
        self.num
    }

    /// The length of one sample in seconds (`quota.window.size.seconds`).
    pub fn size_seconds(&self) -> u32 {
        self.size_seconds
    }

    /// The length of one sample in milliseconds.
    pub fn size_ms(&self) -> u64 {
        u64::from(self.size_seconds) * 1000
    }

    /// All samples together in milliseconds (`num × size`): how long an idle sample survives, and
    /// the token bucket's burst in seconds of quota.
    pub fn span_ms(&self) -> u64 {
        u64::from(self.num) * self.size_ms()
    }
}

impl Default for QuotaWindow {
    fn default() -> Self {
        QuotaWindow {
            num: DEFAULT_QUOTA_WINDOW_NUM,
            size_seconds: DEFAULT_QUOTA_WINDOW_SIZE_SECONDS,
        }
    }
}
