//! Byte-rate and request-time quotas per user / client-id (Kafka's `ClientQuotaManager` and
//! `ClientRequestQuotaManager`).

use crate::config::QuotaWindow;
use crate::entity::{QuotaEntity, QuotaKey};
use crate::precedence::{QuotaOverrides, SensorKey};
use crate::rate::{RateKind, SampledRate};
use crate::sensors::SensorMap;
use crate::throttle::{bounded_throttle_time_ms, throttle_time_ms};

/// The quota types a [`ClientQuotaManager`] enforces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClientQuotaType {
    /// Produced bytes (`producer_byte_rate`); the throttle time is not capped.
    Produce,
    /// Fetched bytes (`consumer_byte_rate`); the throttle time is not capped.
    Fetch,
    /// Request handler and network thread time in percent (`request_percentage`); the throttle
    /// time is capped at one window.
    Request,
}

impl ClientQuotaType {
    /// The quota key of the type.
    pub fn key(self) -> QuotaKey {
        match self {
            ClientQuotaType::Produce => QuotaKey::ProducerByteRate,
            ClientQuotaType::Fetch => QuotaKey::ConsumerByteRate,
            ClientQuotaType::Request => QuotaKey::RequestPercentage,
        }
    }
}

/// Converts thread time to the unit of `request_percentage`: percent of one second.
pub fn nanos_to_percentage(nanos: u64) -> f64 {
    nanos as f64 * (100.0 / 1e9)
}

/// One quota type's usage per sensor, and the throttle time of each request.
///
/// Until a quota of its type has been set (or removed) once, nothing is recorded and every
/// throttle time is 0, as Kafka's `quotasEnabled` (which stays on until restart).
#[derive(Debug, Clone)]
pub struct ClientQuotaManager {
    quota_type: ClientQuotaType,
    window: QuotaWindow,
    overrides: QuotaOverrides,
    enabled: bool,
    sensors: SensorMap<SensorKey, SampledRate>,
}

impl ClientQuotaManager {
    /// A manager of `quota_type` sampling over `window` (`quota.window.num`,
    /// `quota.window.size.seconds`).
    pub fn new(quota_type: ClientQuotaType, window: QuotaWindow) -> Self {
        ClientQuotaManager {
            quota_type,
            window,
            overrides: QuotaOverrides::default(),
            enabled: false,
            sensors: SensorMap::new(),
        }
    }

    /// The quota type.
    pub fn quota_type(&self) -> ClientQuotaType {
        self.quota_type
    }

    /// Sets (`Some`) or removes (`None`) the quota of a user / client-id entity. Existing sensors
    /// see the change at once. Returns false (and changes nothing) for an ip entity.
    pub fn update_quota(&mut self, entity: &QuotaEntity, quota: Option<f64>) -> bool {
        let applied = self.overrides.set(entity, quota);
        self.enabled |= applied;
        applied
    }

    /// True once a quota of this type was configured.
    pub fn quotas_enabled(&self) -> bool {
        self.enabled
    }

    /// The quota overrides.
    pub fn overrides(&self) -> &QuotaOverrides {
        &self.overrides
    }

    /// The quota that applies to `user` / `client_id`, `None` for unlimited.
    pub fn quota(&self, user: &str, client_id: &str) -> Option<f64> {
        self.overrides.quota(user, client_id)
    }

    /// The sensor `user` / `client_id` counts on.
    pub fn sensor_key(&self, user: &str, client_id: &str) -> SensorKey {
        self.overrides.sensor_key(user, client_id)
    }

    /// Records `value` for `user` (the principal name) and `client_id` at `now_ms` and returns how
    /// long to throttle the client: 0 while the rate is within the quota, else
    /// `(rate − quota) ÷ quota × window` (capped at one window for [`ClientQuotaType::Request`]).
    pub fn record_and_get_throttle_time_ms(
        &mut self,
        user: &str,
        client_id: &str,
        value: f64,
        now_ms: u64,
    ) -> u64 {
        if !self.enabled {
            return 0;
        }
        let key = self.overrides.sensor_key(user, client_id);
        let limit = self.overrides.limit(&key);
        let window = self.window;
        let rate = self
            .sensors
            .get_or_create(&key, now_ms, || SampledRate::new(window, RateKind::Rate));
        rate.record(value, now_ms);
        let throttle = match limit {
            Some(bound) => {
                let observed = rate.measure(now_ms);
                if observed > bound {
                    let window_ms = rate.window_size_ms(now_ms);
                    match self.quota_type {
                        ClientQuotaType::Request => {
                            bounded_throttle_time_ms(observed, bound, window_ms, window.size_ms())
                        }
                        ClientQuotaType::Produce | ClientQuotaType::Fetch => {
                            throttle_time_ms(observed, bound, window_ms)
                        }
                    }
                } else {
                    0
                }
            }
            None => 0,
        };
        self.sensors.touch(&key, now_ms);
        throttle
    }

    /// Records `value` without checking the quota (network thread time); the next request pays
    /// for it.
    pub fn record_no_throttle(&mut self, user: &str, client_id: &str, value: f64, now_ms: u64) {
        if !self.enabled {
            return;
        }
        let key = self.overrides.sensor_key(user, client_id);
        let window = self.window;
        self.sensors
            .get_or_create(&key, now_ms, || SampledRate::new(window, RateKind::Rate))
            .record(value, now_ms);
        self.sensors.touch(&key, now_ms);
    }

    /// Takes back a recorded `value`: a throttled fetch returns no data, so its bytes do not count.
    pub fn unrecord(&mut self, user: &str, client_id: &str, value: f64, now_ms: u64) {
        self.record_no_throttle(user, client_id, -value, now_ms);
    }

    /// The most that can be recorded at once without a certain throttle:
    /// `quota × (num − 1) × size`, used to cap a consumer's fetch `max_bytes`. `f64::MAX` when
    /// unlimited.
    pub fn max_value_in_quota_window(&self, user: &str, client_id: &str) -> f64 {
        if !self.enabled {
            return f64::MAX;
        }
        match self.quota(user, client_id) {
            Some(q) => q * f64::from(self.window.num() - 1) * f64::from(self.window.size_seconds()),
            None => f64::MAX,
        }
    }

    /// The rate `user` / `client_id`'s sensor observes at `now_ms` (0 without a sensor).
    pub fn measure(&mut self, user: &str, client_id: &str, now_ms: u64) -> f64 {
        let key = self.overrides.sensor_key(user, client_id);
        self.sensors
            .get_mut(&key)
            .map_or(0.0, |r| r.measure(now_ms))
    }

    /// The number of live sensors.
    pub fn sensor_count(&self) -> usize {
        self.sensors.len()
    }

    /// True when a sensor with `key` is live.
    pub fn has_sensor(&self, key: &SensorKey) -> bool {
        self.sensors.contains(key)
    }

    /// Drops the sensors without a record for an hour; returns how many. Recording does this
    /// by itself every 30 s; call it to sweep sooner.
    pub fn expire_sensors(&mut self, now_ms: u64) -> usize {
        self.sensors.expire(now_ms)
    }
}
