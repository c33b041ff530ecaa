//! Controller mutation quotas (KIP-599): partitions created or deleted per second, enforced with a
//! token bucket (Kafka's `ControllerMutationQuotaManager`).

use josef_protocol::ApiKey;

use crate::config::QuotaWindow;
use crate::entity::QuotaEntity;
use crate::error::ThrottlingQuotaExceeded;
use crate::precedence::{QuotaOverrides, SensorKey};
use crate::sensors::SensorMap;
use crate::throttle::token_bucket_throttle_time_ms;
use crate::token_bucket::TokenBucket;

/// The first version of `api` whose mutations are strictly limited: CreateTopics v6,
/// DeleteTopics v5, CreatePartitions v3. Earlier versions (and other APIs) are permissive.
pub fn strict_since_version(api: ApiKey) -> Option<i16> {
    match api {
        ApiKey::CreateTopics => Some(6),
        ApiKey::DeleteTopics => Some(5),
        ApiKey::CreatePartitions => Some(3),
        _ => None,
    }
}

/// True when a request of `api` at `version` gets the strict quota.
pub fn is_strict(api: ApiKey, version: i16) -> bool {
    strict_since_version(api).is_some_and(|v| version >= v)
}

/// The quota of one request, kept while the request is handled (Kafka's
/// `StrictControllerMutationQuota` / `PermissiveControllerMutationQuota` /
/// `UnboundedControllerMutationQuota`).
#[derive(Debug, Clone)]
pub struct ControllerMutationQuota {
    sensor: Option<SensorKey>,
    strict: bool,
    last_throttle_time_ms: u64,
    last_recorded_ms: u64,
}

impl ControllerMutationQuota {
    /// True for a strict quota that has rejected a mutation: the rest of the request is rejected
    /// with THROTTLING_QUOTA_EXCEEDED too.
    pub fn is_exceeded(&self) -> bool {
        self.strict && self.last_throttle_time_ms > 0
    }

    /// True for a strict quota.
    pub fn is_strict(&self) -> bool {
        self.strict
    }

    /// The response's throttle time at `now_ms`: the last throttle time less the time since it
    /// was computed (the request may have waited in between).
    pub fn throttle_time_ms(&self, now_ms: u64) -> u64 {
        self.last_throttle_time_ms
            .saturating_sub(now_ms.saturating_sub(self.last_recorded_ms))
    }
}

/// Token buckets of `controller_mutation_rate` per user / client-id sensor.
#[derive(Debug, Clone)]
pub struct ControllerMutationQuotaManager {
    window: QuotaWindow,
    overrides: QuotaOverrides,
    enabled: bool,
    sensors: SensorMap<SensorKey, TokenBucket>,
}

impl ControllerMutationQuotaManager {
    /// A manager sampling over `window` (`controller.quota.window.num`,
    /// `controller.quota.window.size.seconds`).
    pub fn new(window: QuotaWindow) -> Self {
        ControllerMutationQuotaManager {
            window,
            overrides: QuotaOverrides::default(),
            enabled: false,
            sensors: SensorMap::new(),
        }
    }

    /// Sets (`Some`) or removes (`None`) the `controller_mutation_rate` of a user / client-id
    /// entity. Returns false (and changes nothing) for an ip entity.
    pub fn update_quota(&mut self, entity: &QuotaEntity, quota: Option<f64>) -> bool {
        let applied = self.overrides.set(entity, quota);
        self.enabled |= applied;
        applied
    }

    /// The rate that applies to `user` / `client_id`, `None` for unlimited.
    pub fn quota(&self, user: &str, client_id: &str) -> Option<f64> {
        self.overrides.quota(user, client_id)
    }

    /// True once a `controller_mutation_rate` was configured.
    pub fn quotas_enabled(&self) -> bool {
        self.enabled
    }

    /// The quota of a request by `user` / `client_id`: strict when [`is_strict`] says so for the
    /// request's API and version, unbounded while no mutation quota was ever configured.
    pub fn new_quota_for(
        &self,
        user: &str,
        client_id: &str,
        strict: bool,
    ) -> ControllerMutationQuota {
        ControllerMutationQuota {
            sensor: self
                .enabled
                .then(|| self.overrides.sensor_key(user, client_id)),
            strict,
            last_throttle_time_ms: 0,
            last_recorded_ms: 0,
        }
    }

    /// Charges `permits` (a topic's partition count) to `quota` at `now_ms`.
    ///
    /// Strict: fails with the throttle time, recording nothing, when the bucket is already below
    /// zero; otherwise takes the permits even if that drives the bucket negative. Permissive:
    /// always takes them, and remembers the throttle time if the bucket went negative.
    pub fn record(
        &mut self,
        quota: &mut ControllerMutationQuota,
        permits: f64,
        now_ms: u64,
    ) -> Result<(), ThrottlingQuotaExceeded> {
        let Some(key) = &quota.sensor else {
            return Ok(());
        };
        let Some(bound) = self.overrides.limit(key) else {
            // Unlimited: Kafka's bucket for an unbounded quota never goes negative.
            return Ok(());
        };
        let window = self.window;
        let bucket = self
            .sensors
            .get_or_create(key, now_ms, || TokenBucket::new(window, bound, now_ms));
        if quota.strict {
            let tokens = bucket.measure(bound, now_ms);
            if tokens < 0.0 {
                quota.last_throttle_time_ms = token_bucket_throttle_time_ms(tokens, bound);
                quota.last_recorded_ms = now_ms;
                return Err(ThrottlingQuotaExceeded {
                    throttle_time_ms: quota.last_throttle_time_ms,
                });
            }
            bucket.record(bound, permits, now_ms);
        } else {
            bucket.record(bound, permits, now_ms);
            let tokens = bucket.measure(bound, now_ms);
            if tokens < 0.0 {
                quota.last_throttle_time_ms = token_bucket_throttle_time_ms(tokens, bound);
                quota.last_recorded_ms = now_ms;
            }
        }
        self.sensors.touch(key, now_ms);
        Ok(())
    }

    /// Charges `permits` for `user` / `client_id` with a strict check and returns the throttle
    /// time (0 when accepted): Kafka's `recordAndGetThrottleTimeMs` of this manager.
    pub fn record_and_get_throttle_time_ms(
        &mut self,
        user: &str,
        client_id: &str,
        permits: f64,
        now_ms: u64,
    ) -> u64 {
        let mut quota = self.new_quota_for(user, client_id, true);
        match self.record(&mut quota, permits, now_ms) {
            Ok(()) => 0,
            Err(e) => e.throttle_time_ms,
        }
    }

    /// The credits left in `user` / `client_id`'s bucket at `now_ms` (`None` without a bucket).
    pub fn tokens(&mut self, user: &str, client_id: &str, now_ms: u64) -> Option<f64> {
        let key = self.overrides.sensor_key(user, client_id);
        let bound = self.overrides.limit(&key)?;
        self.sensors.get_mut(&key).map(|b| b.measure(bound, now_ms))
    }

    /// The number of live buckets.
    pub fn sensor_count(&self) -> usize {
        self.sensors.len()
    }

    /// Drops the buckets without a record for an hour; returns how many.
    pub fn expire_sensors(&mut self, now_ms: u64) -> usize {
        self.sensors.expire(now_ms)
    }
}
