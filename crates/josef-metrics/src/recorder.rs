//! The process-wide Prometheus recorder.

use std::sync::OnceLock;
use std::time::Duration;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

use crate::{requests, CONNECTION_COUNT, CONNECTION_CREATION, PURGATORY_SIZE};

/// How often [`Recorder::spawn_upkeep`] drains the histograms into their buckets (they grow
/// until then, scraped or not).
const UPKEEP_EVERY: Duration = Duration::from_secs(5);

/// Histogram buckets of the request times, in ms (Kafka's RequestMetrics are in ms).
const TIME_BUCKETS_MS: &[f64] = &[
    0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2500.0, 5000.0,
    10000.0, 30000.0,
];

/// The Prometheus recorder of this process: where every `metrics` facade handle records once it
/// is installed.
pub struct Recorder {
    handle: PrometheusHandle,
}

static RECORDER: OnceLock<Recorder> = OnceLock::new();

/// Whether the recorder is installed (metrics are on in this process).
pub fn enabled() -> bool {
    RECORDER.get().is_some()
}

impl Recorder {
    /// Installs the Prometheus recorder as the process's `metrics` recorder (once; later calls
    /// return the same one). Run it before creating long-lived handles elsewhere (a library's
    /// per-partition counters): a handle looked up before it is a no-op for good.
    pub fn install() -> &'static Recorder {
        RECORDER.get_or_init(|| {
            let recorder = PrometheusBuilder::new()
                .set_buckets_for_metric(
                    Matcher::Prefix(requests::PREFIX.to_string()),
                    TIME_BUCKETS_MS,
                )
                .expect("the bucket list is not empty")
                .build_recorder();
            let handle = recorder.handle();
            if metrics::set_global_recorder(recorder).is_err() {
                tracing::warn!(
                    "a metrics recorder was installed before Josef's: /metrics shows only the \
                     gauges computed when it is read"
                );
            }
            describe();
            Recorder { handle }
        })
    }

    /// Drains the histograms into their buckets.
    pub fn run_upkeep(&self) {
        self.handle.run_upkeep();
    }

    /// The recorder's series in Prometheus's text format (after an upkeep, so recent samples
    /// are in).
    pub fn render(&self) -> String {
        self.handle.run_upkeep();
        self.handle.render()
    }

    /// Drains the histograms every few seconds, so an unscraped process's memory stays bounded.
    pub fn spawn_upkeep(&'static self) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(UPKEEP_EVERY);
            loop {
                tick.tick().await;
                self.run_upkeep();
            }
        })
    }
}

/// `# HELP` lines naming each series' Kafka MBean.
fn describe() {
    metrics::describe_counter!(
        requests::REQUESTS,
        "kafka.network:type=RequestMetrics,name=RequestsPerSec"
    );
    metrics::describe_counter!(
        CONNECTION_CREATION,
        "kafka.server:type=socket-server-metrics,connection-creation-total"
    );
    metrics::describe_gauge!(
        PURGATORY_SIZE,
        "kafka.server:type=DelayedOperationPurgatory,name=PurgatorySize"
    );
    metrics::describe_gauge!(
        CONNECTION_COUNT,
        "kafka.server:type=socket-server-metrics,connection-count"
    );
    for (name, mbean) in requests::HISTOGRAMS {
        metrics::describe_histogram!(
            name,
            metrics::Unit::Milliseconds,
            format!("kafka.network:type=RequestMetrics,name={mbean}")
        );
    }
}
