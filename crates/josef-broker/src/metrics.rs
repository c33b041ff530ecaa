//! The Prometheus endpoint (`prometheus.listener=HOST:PORT`, Josef's own setting, off unless set)
//! and the broker's metrics, named after Kafka's MBeans in Prometheus style: the MBean
//! `kafka.<domain>:type=<Type>,name=<Name>[,tag=...]` becomes `kafka_<domain>_<type>_<name>`
//! lower-cased, a `...PerSec` meter becomes a `_total` counter (the rate is the scraper's job),
//! and the tags stay labels with Kafka's names (`topic`, `partition`, `request`, `version`,
//! `delayedOperation`, `listener`). docs/operations.md lists every series with its MBean.
//!
//! Libraries count through the `metrics` facade (josef-partition: bytes and messages per topic,
//! ISR changes); this module installs the process-wide recorder those counts land in and
//! serves its rendering. Without `prometheus.listener` no recorder is installed and every
//! handle, here and in the libraries, is a no-op: the request path then only checks one
//! `OnceLock`.
//!
//! What is kept where:
//! - counters and histograms of events (requests, latencies, bytes, ISR changes, connections,
//!   purgatory sizes): the recorder, updated where the event happens ([`requests`],
//!   [`ConnectionGauge`], [`InPurgatory`], josef-partition);
//! - state (partition and leader counts, under-replicated and offline partitions, log sizes,
//!   active controller, group and transactional id counts): computed from the broker's state
//!   when `/metrics` is read ([`gauges`]), as Kafka's JMX gauges are computed when read, so an
//!   unscraped broker pays nothing for them and a deleted partition's series goes away.
//!
//! The recorder is global to the process: one per process, shared by every broker started in it
//! (tests). The first broker with `prometheus.listener` installs it; a recorder installed by an
//! embedding program first is left alone (this endpoint then shows only the state gauges).

pub mod gauges;
pub mod http;
pub mod requests;
pub mod route;

use std::sync::OnceLock;
use std::time::Duration;

use ::metrics::Gauge;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

/// `kafka.server:type=DelayedOperationPurgatory,name=PurgatorySize,delayedOperation=Fetch|Produce`:
/// operations waiting in the purgatory (Kafka's gauge also counts completed operations not yet
/// purged from the watch lists; this one counts the waiting ones).
pub const PURGATORY_SIZE: &str = "kafka_server_delayedoperationpurgatory_purgatorysize";
/// `kafka.server:type=socket-server-metrics,listener=L,networkProcessor=N` attribute
/// `connection-count`: open client connections per listener (one series per listener: Josef has
/// no network processors).
pub const CONNECTION_COUNT: &str = "kafka_server_socketservermetrics_connection_count";
/// The same MBean's `connection-creation-total`: connections accepted per listener.
pub const CONNECTION_CREATION: &str = "kafka_server_socketservermetrics_connection_creation_total";

/// How often the recorder's histograms are drained into their buckets (they grow until then,
/// scraped or not).
const UPKEEP_EVERY: Duration = Duration::from_secs(5);

/// Histogram buckets of the request times, in ms (Kafka's RequestMetrics are in ms).
const TIME_BUCKETS_MS: &[f64] = &[
    0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2500.0, 5000.0,
    10000.0, 30000.0,
];

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// Whether the recorder is installed (metrics are on in this process).
pub fn enabled() -> bool {
    HANDLE.get().is_some()
}

/// Installs the Prometheus recorder as the process's `metrics` recorder (once; later calls return
/// the same handle). Must run before the partitions are opened: their handles are looked up then.
pub fn install() -> &'static PrometheusHandle {
    HANDLE.get_or_init(|| {
        let recorder = PrometheusBuilder::new()
            .set_buckets_for_metric(
                Matcher::Prefix(requests::PREFIX.to_string()),
                TIME_BUCKETS_MS,
            )
            .expect("the bucket list is not empty")
            .build_recorder();
        let handle = recorder.handle();
        if ::metrics::set_global_recorder(recorder).is_err() {
            tracing::warn!(
                "a metrics recorder was installed before the broker's: /metrics shows only \
                 the state gauges"
            );
        }
        describe();
        handle
    })
}

/// The text `/metrics` answers: the recorder's series, then the state gauges of `state`.
pub fn render(handle: &PrometheusHandle, state: &crate::state::BrokerState) -> String {
    handle.run_upkeep();
    let mut out = handle.render();
    gauges::render(state, &mut out);
    out
}

/// Drains the histograms every few seconds, so an unscraped broker's memory stays bounded.
pub fn spawn_upkeep(handle: &'static PrometheusHandle) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(UPKEEP_EVERY);
        loop {
            tick.tick().await;
            handle.run_upkeep();
        }
    })
}

/// `# HELP` lines naming each series' Kafka MBean.
fn describe() {
    use josef_partition::metrics as pm;
    let counters = [
        (
            pm::BYTES_IN,
            "kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec",
        ),
        (
            pm::BYTES_OUT,
            "kafka.server:type=BrokerTopicMetrics,name=BytesOutPerSec",
        ),
        (
            pm::MESSAGES_IN,
            "kafka.server:type=BrokerTopicMetrics,name=MessagesInPerSec",
        ),
        (
            pm::ISR_SHRINKS,
            "kafka.server:type=ReplicaManager,name=IsrShrinksPerSec",
        ),
        (
            pm::ISR_EXPANDS,
            "kafka.server:type=ReplicaManager,name=IsrExpandsPerSec",
        ),
        (
            requests::REQUESTS,
            "kafka.network:type=RequestMetrics,name=RequestsPerSec",
        ),
        (
            CONNECTION_CREATION,
            "kafka.server:type=socket-server-metrics,connection-creation-total",
        ),
    ];
    for (name, mbean) in counters {
        ::metrics::describe_counter!(name, mbean);
    }
    ::metrics::describe_gauge!(
        PURGATORY_SIZE,
        "kafka.server:type=DelayedOperationPurgatory,name=PurgatorySize"
    );
    ::metrics::describe_gauge!(
        CONNECTION_COUNT,
        "kafka.server:type=socket-server-metrics,connection-count"
    );
    for (name, mbean) in requests::HISTOGRAMS {
        ::metrics::describe_histogram!(
            name,
            ::metrics::Unit::Milliseconds,
            format!("kafka.network:type=RequestMetrics,name={mbean}")
        );
    }
}

/// One open connection in `connection-count` (decremented when dropped); also counts the
/// connection in `connection-creation-total`. A no-op with metrics off.
pub struct ConnectionGauge(Option<Gauge>);

impl ConnectionGauge {
    /// A connection accepted on `listener`.
    pub fn open(listener: &str) -> Self {
        if !enabled() {
            return ConnectionGauge(None);
        }
        let labels = [("listener", listener.to_string())];
        ::metrics::counter!(CONNECTION_CREATION, &labels).increment(1);
        let gauge = ::metrics::gauge!(CONNECTION_COUNT, &labels);
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

/// One operation waiting in a purgatory, in `PurgatorySize{delayedOperation}` until it completes
/// (or is dropped unanswered at shutdown). A no-op with metrics off.
pub struct InPurgatory(Option<Gauge>);

static FETCH_PURGATORY: OnceLock<Gauge> = OnceLock::new();
static PRODUCE_PURGATORY: OnceLock<Gauge> = OnceLock::new();

impl InPurgatory {
    fn new(cell: &'static OnceLock<Gauge>, kind: &'static str) -> Self {
        if !enabled() {
            return InPurgatory(None);
        }
        let g = cell
            .get_or_init(|| ::metrics::gauge!(PURGATORY_SIZE, "delayedOperation" => kind))
            .clone();
        g.increment(1.0);
        InPurgatory(Some(g))
    }

    /// A delayed fetch.
    pub fn fetch() -> Self {
        Self::new(&FETCH_PURGATORY, "Fetch")
    }

    /// A delayed (acks=−1) produce.
    pub fn produce() -> Self {
        Self::new(&PRODUCE_PURGATORY, "Produce")
    }
}

impl Drop for InPurgatory {
    fn drop(&mut self) {
        if let Some(g) = &self.0 {
            g.decrement(1.0);
        }
    }
}
