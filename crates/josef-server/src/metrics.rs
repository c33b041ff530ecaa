//! The Prometheus endpoint (`prometheus.listener=HOST:PORT`, Josef's own setting, off unless set):
//! the broker's glue over josef-metrics, which names the series after Kafka's MBeans, keeps the
//! recorder and serves `/metrics`. docs/operations.md lists every series with its MBean.
//!
//! Libraries count through the `metrics` facade (josef-partition: bytes and messages per topic,
//! ISR changes; josef-metrics: requests, connections, purgatory sizes); [`install`] installs the
//! process-wide recorder those counts land in. Without `prometheus.listener` no recorder is
//! installed and every handle is a no-op: the request path then only checks one `OnceLock`.
//!
//! What is kept where:
//! - counters and histograms of events (requests, latencies, bytes, ISR changes, connections,
//!   purgatory sizes): the recorder, updated where the event happens ([`requests`],
//!   [`ConnectionGauge`], [`InPurgatory`], josef-partition);
//! - state (partition and leader counts, under-replicated and offline partitions, log sizes,
//!   active controller, group and transactional id counts): computed from the broker's state
//!   when `/metrics` is read ([`gauges`]).
//!
//! The first broker of the process with `prometheus.listener` installs the recorder; every broker
//! started in the process (tests) shares it.

pub mod gauges;

use std::sync::Arc;

pub use josef_metrics::{requests, ConnectionGauge, InPurgatory, MetricsServer, Recorder};
use tokio::net::TcpListener;

use crate::state::BrokerState;

/// Installs the recorder (once) and describes josef-partition's series. Must run before the
/// partitions are opened: their handles are looked up then.
pub fn install() -> &'static Recorder {
    let recorder = Recorder::install();
    describe_partition_series();
    recorder
}

/// Serves `/metrics` on `listener` from `recorder` and `state`.
pub fn serve(
    listener: TcpListener,
    recorder: &'static Recorder,
    state: Arc<BrokerState>,
) -> std::io::Result<MetricsServer> {
    MetricsServer::start(
        listener,
        recorder,
        gauges::BrokerMetrics { recorder, state },
    )
}

/// `# HELP` lines naming the Kafka MBean of each josef-partition series.
fn describe_partition_series() {
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
    ];
    for (name, mbean) in counters {
        ::metrics::describe_counter!(name, mbean);
    }
    ::metrics::describe_counter!(
        crate::replication_quotas::HELD_BACK,
        "partition fetches held back by a replication throttle (KIP-73; no Kafka MBean)"
    );
    ::metrics::describe_counter!(
        crate::cluster::replica_fetcher::FETCH_REQUESTS,
        "follower fetch requests sent, by kind (full / incremental fetch session; no Kafka MBean)"
    );
    ::metrics::describe_counter!(
        crate::cluster::replica_fetcher::FETCH_PARTITIONS,
        "partitions listed in follower fetch requests, by kind (no Kafka MBean)"
    );
    for kind in ["full", "incremental"] {
        ::metrics::counter!(crate::cluster::replica_fetcher::FETCH_REQUESTS, "kind" => kind)
            .increment(0);
        ::metrics::counter!(crate::cluster::replica_fetcher::FETCH_PARTITIONS, "kind" => kind)
            .increment(0);
    }
    // Served from the start (at 0), not only after the first throttle.
    for d in ["leader", "follower"] {
        ::metrics::counter!(crate::replication_quotas::HELD_BACK, "direction" => d).increment(0);
    }
}
