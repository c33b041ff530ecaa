//! How many connections a broker takes, and how fast (Kafka's `SocketServer.ConnectionQuotas`):
//! `max.connections` (broker-wide) and `listener.name.<l>.max.connections`, `max.connections.per.ip`
//! with `max.connections.per.ip.overrides`, and `max.connection.creation.rate` (broker-wide and per
//! listener, KIP-612; the rate itself is josef-quota's [`ConnectionCreationRate`]).
//!
//! Kafka's rules, kept here:
//! - a listener at its limit, or the broker at its limit, stops accepting until a connection
//!   closes (the connection waits in the kernel's backlog); the inter-broker listener is not held
//!   back by the broker-wide limit, only by its own;
//! - a connection from an address already holding its per-ip limit is closed at once;
//! - over a creation rate, the acceptor waits the throttle time before taking the next connection
//!   (the broker-wide rate does not apply to the inter-broker listener).
//!
//! - a connection from an address over its `connection_creation_rate` client quota (KIP-612) is
//!   closed after the throttle time (the check is given by the broker:
//!   [`ConnectionQuotas::set_ip_rate_check`], over josef-quota's `IpConnectionQuotas`).
//!
//! Not done: Kafka also closes the least recently used connection of another listener when the
//! inter-broker listener needs a slot at the broker-wide limit.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use josef_config::settings::{ConfigError, Props};
use josef_quota::{ConnectionCreationRate, QuotaWindow};
use parking_lot::Mutex;
use tokio::sync::Notify;

/// The connection limits of a broker, as configured.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConnectionQuotaConfig {
    /// `max.connections` (`None`: Kafka's default, `Int.MaxValue`).
    pub max_connections: Option<u32>,
    /// `listener.name.<listener>.max.connections`, by listener name (upper case).
    pub listener_max_connections: BTreeMap<String, u32>,
    /// `max.connections.per.ip`.
    pub max_connections_per_ip: Option<u32>,
    /// `max.connections.per.ip.overrides` (`ip:count`, comma-separated).
    pub max_connections_per_ip_overrides: HashMap<IpAddr, u32>,
    /// `max.connection.creation.rate`, connections per second.
    pub max_connection_creation_rate: Option<u32>,
    /// `listener.name.<listener>.max.connection.creation.rate`.
    pub listener_max_connection_creation_rate: BTreeMap<String, u32>,
    /// The listener the broker-wide limit and rate do not hold back
    /// (`inter.broker.listener.name` on a cluster node).
    pub inter_broker_listener: Option<String>,
}

/// `Int.MaxValue`, Kafka's "unlimited".
fn limited(v: i32) -> Option<u32> {
    (v != i32::MAX).then_some(v as u32)
}

impl ConnectionQuotaConfig {
    /// Reads the settings of `listeners` (names as configured) from `p`.
    pub fn from_props(
        p: &mut Props,
        listeners: &[String],
        inter_broker_listener: Option<String>,
    ) -> Result<Self, ConfigError> {
        let max_connections = limited(p.num("max.connections", i32::MAX, 0)?);
        let max_connections_per_ip = limited(p.num("max.connections.per.ip", i32::MAX, 0)?);
        let max_connection_creation_rate =
            limited(p.num("max.connection.creation.rate", i32::MAX, 0)?);
        let mut overrides = HashMap::new();
        if let Some(raw) = p.take("max.connections.per.ip.overrides") {
            for item in josef_config::listener::list(&raw) {
                let bad = |why: &str| {
                    Props::invalid(
                        "max.connections.per.ip.overrides",
                        &raw,
                        format!("{item}: {why}"),
                    )
                };
                let (host, count) = item.rsplit_once(':').ok_or_else(|| bad("not host:count"))?;
                let ip: IpAddr = host
                    .trim()
                    .trim_start_matches('[')
                    .trim_end_matches(']')
                    .parse()
                    .map_err(|_| bad("Josef takes IP addresses here, not host names"))?;
                let count: u32 = count.trim().parse().map_err(|_| bad("not a count"))?;
                overrides.insert(ip, count);
            }
        }
        if max_connections_per_ip == Some(0) && overrides.is_empty() {
            return Err(Props::invalid(
                "max.connections.per.ip",
                "0",
                "0 needs max.connections.per.ip.overrides (Kafka's rule)",
            ));
        }
        let mut listener_max_connections = BTreeMap::new();
        let mut listener_max_connection_creation_rate = BTreeMap::new();
        for l in listeners {
            if let Some(s) = p.take_listener(l, "max.connections") {
                if let Some(n) = limited(s.num(0)?) {
                    listener_max_connections.insert(l.to_ascii_uppercase(), n);
                }
            }
            if let Some(s) = p.take_listener(l, "max.connection.creation.rate") {
                if let Some(n) = limited(s.num(0)?) {
                    listener_max_connection_creation_rate.insert(l.to_ascii_uppercase(), n);
                }
            }
        }
        Ok(ConnectionQuotaConfig {
            max_connections,
            listener_max_connections,
            max_connections_per_ip,
            max_connections_per_ip_overrides: overrides,
            max_connection_creation_rate,
            listener_max_connection_creation_rate,
            inter_broker_listener: inter_broker_listener.map(|l| l.to_ascii_uppercase()),
        })
    }

    fn per_ip_limit(&self, ip: IpAddr) -> Option<u32> {
        self.max_connections_per_ip_overrides
            .get(&ip)
            .copied()
            .or(self.max_connections_per_ip)
    }

    fn protected(&self, listener: &str) -> bool {
        self.inter_broker_listener.as_deref() == Some(listener)
    }
}

/// Why a connection was closed right after it was accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("too many connections from {ip} (max.connections.per.ip {limit})")]
pub struct TooManyConnections {
    /// The address.
    pub ip: IpAddr,
    /// Its limit.
    pub limit: u32,
}

#[derive(Debug, Default)]
struct Counts {
    total: u32,
    per_listener: HashMap<String, u32>,
    per_ip: HashMap<IpAddr, u32>,
}

/// The per-address `connection_creation_rate` check: `Some(delay)` closes the connection after
/// `delay`.
pub type IpRateCheck = dyn Fn(IpAddr, u64) -> Option<Duration> + Send + Sync;

/// The live counts and rates behind a [`ConnectionQuotaConfig`], shared by every acceptor.
pub struct ConnectionQuotas {
    config: ConnectionQuotaConfig,
    ip_rate: Mutex<Option<Arc<IpRateCheck>>>,
    counts: Mutex<Counts>,
    broker_rate: Mutex<ConnectionCreationRate>,
    listener_rates: Mutex<HashMap<String, ConnectionCreationRate>>,
    window: QuotaWindow,
    released: Notify,
}

impl ConnectionQuotas {
    /// Counts from zero under `config`; rates are measured over `window` (Kafka's quota window).
    pub fn new(config: ConnectionQuotaConfig, window: QuotaWindow) -> Arc<Self> {
        Arc::new(ConnectionQuotas {
            broker_rate: Mutex::new(ConnectionCreationRate::new(
                window,
                config.max_connection_creation_rate,
            )),
            listener_rates: Mutex::new(HashMap::new()),
            ip_rate: Mutex::new(None),
            config,
            counts: Mutex::new(Counts::default()),
            window,
            released: Notify::new(),
        })
    }

    /// Sets the per-address `connection_creation_rate` check (the broker's client quotas).
    pub fn set_ip_rate_check(&self, check: Arc<IpRateCheck>) {
        *self.ip_rate.lock() = Some(check);
    }

    /// How long to keep a connection `ip` just opened before closing it, when `ip` is over its
    /// `connection_creation_rate`; `None` to keep it.
    pub fn ip_rate_throttle(&self, ip: IpAddr, now_ms: u64) -> Option<Duration> {
        let check = self.ip_rate.lock().clone()?;
        check(ip, now_ms)
    }

    /// No limit at all (Kafka's defaults).
    pub fn unlimited() -> Arc<Self> {
        Self::new(ConnectionQuotaConfig::default(), QuotaWindow::default())
    }

    fn has_room(&self, listener: &str) -> bool {
        let c = self.counts.lock();
        let listener_ok = self
            .config
            .listener_max_connections
            .get(listener)
            .map_or(true, |&max| {
                c.per_listener.get(listener).copied().unwrap_or(0) < max
            });
        let broker_ok = self.config.protected(listener)
            || self
                .config
                .max_connections
                .map_or(true, |max| c.total < max);
        listener_ok && broker_ok
    }

    /// Waits until `listener` may take one more connection (its own limit and the broker's).
    pub async fn wait_for_room(&self, listener: &str) {
        loop {
            let released = self.released.notified();
            if self.has_room(listener) {
                return;
            }
            released.await;
        }
    }

    /// Counts a connection accepted on `listener` from `ip` at `now_ms`: the slot it holds until
    /// dropped, and how long the acceptor waits before taking the next one (the creation rates);
    /// or [`TooManyConnections`] when `ip` is at its limit (the caller closes the connection).
    pub fn admit(
        self: &Arc<Self>,
        listener: &str,
        ip: IpAddr,
        now_ms: u64,
    ) -> Result<(ConnectionSlot, Duration), TooManyConnections> {
        {
            let mut c = self.counts.lock();
            let from_ip = c.per_ip.get(&ip).copied().unwrap_or(0);
            if let Some(limit) = self.config.per_ip_limit(ip) {
                if from_ip >= limit {
                    return Err(TooManyConnections { ip, limit });
                }
            }
            c.total += 1;
            *c.per_listener.entry(listener.to_string()).or_default() += 1;
            *c.per_ip.entry(ip).or_default() += 1;
        }
        let mut wait_ms = 0;
        if let Some(&rate) = self
            .config
            .listener_max_connection_creation_rate
            .get(listener)
        {
            let mut rates = self.listener_rates.lock();
            let r = rates
                .entry(listener.to_string())
                .or_insert_with(|| ConnectionCreationRate::new(self.window, Some(rate)));
            wait_ms = wait_ms.max(r.record_connection(now_ms));
        }
        if !self.config.protected(listener) {
            wait_ms = wait_ms.max(self.broker_rate.lock().record_connection(now_ms));
        }
        Ok((
            ConnectionSlot {
                quotas: self.clone(),
                listener: listener.to_string(),
                ip,
            },
            Duration::from_millis(wait_ms),
        ))
    }

    /// Connections open now: (all, on `listener`, from `ip`).
    pub fn open(&self, listener: &str, ip: IpAddr) -> (u32, u32, u32) {
        let c = self.counts.lock();
        (
            c.total,
            c.per_listener.get(listener).copied().unwrap_or(0),
            c.per_ip.get(&ip).copied().unwrap_or(0),
        )
    }
}

impl std::fmt::Debug for ConnectionQuotas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectionQuotas")
            .field("config", &self.config)
            .field("counts", &*self.counts.lock())
            .finish_non_exhaustive()
    }
}

/// One counted connection; dropping it frees its slot and wakes a waiting acceptor.
#[derive(Debug)]
pub struct ConnectionSlot {
    quotas: Arc<ConnectionQuotas>,
    listener: String,
    ip: IpAddr,
}

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        {
            let mut c = self.quotas.counts.lock();
            c.total = c.total.saturating_sub(1);
            if let Some(n) = c.per_listener.get_mut(&self.listener) {
                *n = n.saturating_sub(1);
            }
            if let Some(n) = c.per_ip.get_mut(&self.ip) {
                *n -= 1;
                if *n == 0 {
                    c.per_ip.remove(&self.ip);
                }
            }
        }
        self.quotas.released.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(kv: &[(&str, &str)]) -> Props {
        Props::new(
            kv.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }

    fn quotas(kv: &[(&str, &str)]) -> Arc<ConnectionQuotas> {
        let mut p = props(kv);
        let cfg = ConnectionQuotaConfig::from_props(
            &mut p,
            &["PLAINTEXT".into(), "INTERNAL".into()],
            Some("INTERNAL".into()),
        )
        .unwrap();
        ConnectionQuotas::new(cfg, QuotaWindow::default())
    }

    const A: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 1));
    const B: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 2));

    #[test]
    fn an_address_at_its_limit_is_refused_and_an_override_raises_it() {
        let q = quotas(&[
            ("max.connections.per.ip", "2"),
            ("max.connections.per.ip.overrides", "10.0.0.2:3"),
        ]);
        let a1 = q.admit("PLAINTEXT", A, 0).unwrap();
        let _a2 = q.admit("PLAINTEXT", A, 0).unwrap();
        assert_eq!(
            q.admit("PLAINTEXT", A, 0).unwrap_err(),
            TooManyConnections { ip: A, limit: 2 }
        );
        let b: Vec<_> = (0..3)
            .map(|_| q.admit("PLAINTEXT", B, 0).unwrap())
            .collect();
        assert!(q.admit("PLAINTEXT", B, 0).is_err());
        // A closed connection frees its address's slot.
        drop(a1);
        assert!(q.admit("PLAINTEXT", A, 0).is_ok());
        assert_eq!(q.open("PLAINTEXT", B), (4, 4, 3));
        drop(b);
        assert_eq!(q.open("PLAINTEXT", B), (1, 1, 0));
    }

    #[tokio::test]
    async fn a_listener_at_its_limit_waits_for_a_close_and_the_inter_broker_one_passes_the_broker_limit(
    ) {
        let q = quotas(&[
            ("max.connections", "2"),
            ("listener.name.plaintext.max.connections", "1"),
        ]);
        q.wait_for_room("PLAINTEXT").await;
        let first = q.admit("PLAINTEXT", A, 0).unwrap();
        let waiting = {
            let q = q.clone();
            tokio::spawn(async move { q.wait_for_room("PLAINTEXT").await })
        };
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        assert!(!waiting.is_finished(), "the listener is at its limit");
        drop(first);
        tokio::time::timeout(Duration::from_secs(10), waiting)
            .await
            .expect("woken by the close")
            .unwrap();
        // At the broker-wide limit PLAINTEXT waits, INTERNAL (the inter-broker listener) not.
        let _internal = q.admit("INTERNAL", B, 0).unwrap();
        let _internal2 = q.admit("INTERNAL", B, 0).unwrap();
        assert!(!q.has_room("PLAINTEXT"));
        assert!(q.has_room("INTERNAL"));
    }

    #[test]
    fn over_the_creation_rate_the_acceptor_waits() {
        let q = quotas(&[("max.connection.creation.rate", "2")]);
        let mut slots = Vec::new();
        let mut waited = Duration::ZERO;
        for _ in 0..50 {
            let (slot, wait) = q.admit("PLAINTEXT", A, 1_000).unwrap();
            slots.push(slot);
            waited = waited.max(wait);
        }
        assert!(
            waited > Duration::ZERO,
            "fifty connections in one instant at 2/s"
        );
        // The inter-broker listener is not held back by the broker-wide rate.
        let (_s, wait) = q.admit("INTERNAL", B, 1_000).unwrap();
        assert_eq!(wait, Duration::ZERO);
        // Unlimited by default.
        let free = ConnectionQuotas::unlimited();
        for _ in 0..100 {
            assert_eq!(free.admit("PLAINTEXT", A, 1_000).unwrap().1, Duration::ZERO);
        }
    }

    #[test]
    fn settings_are_checked() {
        let mut p = props(&[("max.connections.per.ip.overrides", "example.com:3")]);
        assert!(ConnectionQuotaConfig::from_props(&mut p, &[], None).is_err());
        let mut p = props(&[("max.connections.per.ip", "0")]);
        assert!(ConnectionQuotaConfig::from_props(&mut p, &[], None).is_err());
        let mut p = props(&[("max.connections", "-1")]);
        assert!(ConnectionQuotaConfig::from_props(&mut p, &[], None).is_err());
        let mut p = props(&[("max.connections.per.ip.overrides", "127.0.0.1:5, [::1]:7")]);
        let c = ConnectionQuotaConfig::from_props(&mut p, &[], None).unwrap();
        assert_eq!(c.max_connections_per_ip_overrides.len(), 2);
    }
}
