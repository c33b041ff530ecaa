//! Connection creation rates (KIP-612): `connection_creation_rate` per ip, and the broker-wide or
//! per-listener `max.connection.creation.rate` (Kafka's `ConnectionQuotas`).

use std::collections::HashMap;
use std::net::IpAddr;

use crate::config::QuotaWindow;
use crate::rate::{RateKind, SampledRate};
use crate::sensors::SensorMap;
use crate::throttle::bounded_throttle_time_ms;

/// What to do with a connection an ip just opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IpConnectionDecision {
    /// Within the ip's rate: keep it.
    Accept,
    /// Over the ip's rate: the connection was not counted; close it after `throttle_time_ms`
    /// (Kafka accepts the socket and closes it once the delay has passed).
    CloseAfter {
        /// The delay before closing, at most one window.
        throttle_time_ms: u64,
    },
}

/// `connection_creation_rate` per ip with a default (`ip` entity `<default>`).
#[derive(Debug, Clone)]
pub struct IpConnectionQuotas {
    window: QuotaWindow,
    default_rate: Option<u32>,
    per_ip: HashMap<IpAddr, u32>,
    sensors: SensorMap<IpAddr, SampledRate>,
}

fn limited(rate: Option<u32>) -> Option<u32> {
    // Kafka's unlimited value is Int.MaxValue: a quota of that size is no quota.
    rate.filter(|r| *r < i32::MAX as u32)
}

impl IpConnectionQuotas {
    /// No ip limits, sampling over `window` (`quota.window.num`, `quota.window.size.seconds`).
    pub fn new(window: QuotaWindow) -> Self {
        IpConnectionQuotas {
            window,
            default_rate: None,
            per_ip: HashMap::new(),
            sensors: SensorMap::new(),
        }
    }

    /// Sets (`Some`) or removes (`None`) the rate of `ip`, or the default with `ip` `None`.
    pub fn update_ip_connection_rate_quota(&mut self, ip: Option<IpAddr>, rate: Option<u32>) {
        match (ip, rate) {
            (Some(ip), Some(r)) => {
                self.per_ip.insert(ip, r);
            }
            (Some(ip), None) => {
                self.per_ip.remove(&ip);
            }
            (None, r) => self.default_rate = r,
        }
    }

    /// The rate that applies to `ip`: its own, else the default; `None` for unlimited.
    pub fn connection_rate_for_ip(&self, ip: IpAddr) -> Option<u32> {
        limited(self.per_ip.get(&ip).copied().or(self.default_rate))
    }

    /// Counts a connection `ip` opened at `now_ms`. Over the rate the connection is taken back
    /// out of the count and is to be closed after the throttle time.
    pub fn record_connection(&mut self, ip: IpAddr, now_ms: u64) -> IpConnectionDecision {
        let Some(rate) = self.connection_rate_for_ip(ip) else {
            return IpConnectionDecision::Accept;
        };
        let window = self.window;
        let sensor = self
            .sensors
            .get_or_create(&ip, now_ms, || SampledRate::new(window, RateKind::Rate));
        let throttle_time_ms = record_and_get_throttle(sensor, window, f64::from(rate), now_ms);
        if throttle_time_ms > 0 {
            sensor.record(-1.0, now_ms);
        }
        self.sensors.touch(&ip, now_ms);
        if throttle_time_ms > 0 {
            IpConnectionDecision::CloseAfter { throttle_time_ms }
        } else {
            IpConnectionDecision::Accept
        }
    }

    /// The number of live ip sensors.
    pub fn sensor_count(&self) -> usize {
        self.sensors.len()
    }

    /// Drops the ip sensors without a connection for an hour; returns how many.
    pub fn expire_sensors(&mut self, now_ms: u64) -> usize {
        self.sensors.expire(now_ms)
    }
}

fn record_and_get_throttle(
    sensor: &mut SampledRate,
    window: QuotaWindow,
    bound: f64,
    now_ms: u64,
) -> u64 {
    sensor.record(1.0, now_ms);
    let observed = sensor.measure(now_ms);
    if observed > bound {
        let window_ms = sensor.window_size_ms(now_ms);
        bounded_throttle_time_ms(observed, bound, window_ms, window.size_ms())
    } else {
        0
    }
}

/// `max.connection.creation.rate` of the broker or of one listener: an acceptor over the rate waits
/// before accepting (the connection is kept and counted).
#[derive(Debug, Clone)]
pub struct ConnectionCreationRate {
    window: QuotaWindow,
    rate: Option<u32>,
    sensor: SampledRate,
}

impl ConnectionCreationRate {
    /// A limit of `rate` connections per second (`None` or `i32::MAX` for unlimited).
    pub fn new(window: QuotaWindow, rate: Option<u32>) -> Self {
        ConnectionCreationRate {
            window,
            rate: limited(rate),
            sensor: SampledRate::new(window, RateKind::Rate),
        }
    }

    /// Changes the limit; the observed rate is kept.
    pub fn set_rate(&mut self, rate: Option<u32>) {
        self.rate = limited(rate);
    }

    /// Counts a connection at `now_ms` and returns how long the acceptor waits before taking the
    /// next one (at most one window).
    pub fn record_connection(&mut self, now_ms: u64) -> u64 {
        match self.rate {
            Some(rate) => {
                record_and_get_throttle(&mut self.sensor, self.window, f64::from(rate), now_ms)
            }
            None => {
                self.sensor.record(1.0, now_ms);
                0
            }
        }
    }

    /// Takes a connection back out of the count (an ip quota closed it).
    pub fn unrecord(&mut self, now_ms: u64) {
        self.sensor.record(-1.0, now_ms);
    }
}
