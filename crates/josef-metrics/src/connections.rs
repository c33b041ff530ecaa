//! Kafka's `socket-server-metrics` per listener.

use metrics::Gauge;

/// `kafka.server:type=socket-server-metrics,listener=L,networkProcessor=N` attribute
/// `connection-count`: open client connections per listener (one series per listener: Josef has
/// no network processors).
pub const CONNECTION_COUNT: &str = "kafka_server_socketservermetrics_connection_count";
/// The same MBean's `connection-creation-total`: connections accepted per listener.
pub const CONNECTION_CREATION: &str = "kafka_server_socketservermetrics_connection_creation_total";

/// One open connection in `connection-count` (decremented when dropped); also counts the
/// connection in `connection-creation-total`. A no-op with metrics off.
pub struct ConnectionGauge(Option<Gauge>);

impl ConnectionGauge {
    /// A connection accepted on `listener`.
    pub fn open(listener: &str) -> Self {
        if !crate::enabled() {
            return ConnectionGauge(None);
        }
        let labels = [("listener", listener.to_string())];
        metrics::counter!(CONNECTION_CREATION, &labels).increment(1);
        let gauge = metrics::gauge!(CONNECTION_COUNT, &labels);
        gauge.increment(1.0);
        ConnectionGauge(Some(gauge))
    }
}

impl Drop for ConnectionGauge {
    fn drop(&mut self) {
        if let Some(g) = &self.0 {
            g.decrement(1.0);
        }
    }
}
