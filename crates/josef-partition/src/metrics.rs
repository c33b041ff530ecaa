//! What a partition counts, through the [`metrics`] facade: the names follow Kafka's MBeans in
//! Prometheus style (`kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec,topic=T` becomes
//! `kafka_server_brokertopicmetrics_bytesin_total{topic="T"}`: a monotonic counter, the rate is
//! the scraper's job).
//!
//! The library installs no recorder: without one (the facade's default) every handle is a no-op.
//! The handles are looked up once, when the partition is opened, so an append or a read costs one
//! atomic add per counter and no allocation; the recorder must therefore be installed before the
//! partitions are opened.
//!
//! ```
//! // No recorder installed: counting is a no-op, and the names are plain constants.
//! let m = josef_partition::metrics::PartitionMetrics::new("orders");
//! m.record_append(512, 10);
//! assert_eq!(josef_partition::metrics::BYTES_IN, "kafka_server_brokertopicmetrics_bytesin_total");
//! ```

use metrics::Counter;

/// `kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec,topic=T`: bytes of client batches
/// appended by the leader (replication and the broker's own records excluded, as in Kafka).
pub const BYTES_IN: &str = "kafka_server_brokertopicmetrics_bytesin_total";
/// `kafka.server:type=BrokerTopicMetrics,name=MessagesInPerSec,topic=T`: records in those batches.
pub const MESSAGES_IN: &str = "kafka_server_brokertopicmetrics_messagesin_total";
/// `kafka.server:type=BrokerTopicMetrics,name=BytesOutPerSec,topic=T`: bytes read for consumers
/// (follower fetches excluded, as in Kafka).
pub const BYTES_OUT: &str = "kafka_server_brokertopicmetrics_bytesout_total";
/// `kafka.server:type=ReplicaManager,name=IsrShrinksPerSec`: ISR shrinks the controller committed.
pub const ISR_SHRINKS: &str = "kafka_server_replicamanager_isrshrinks_total";
/// `kafka.server:type=ReplicaManager,name=IsrExpandsPerSec`: ISR expansions the controller
/// committed.
pub const ISR_EXPANDS: &str = "kafka_server_replicamanager_isrexpands_total";

/// The counter handles of one partition (shared with the other partitions of its topic: the
/// recorder keys them by name and `topic` label).
#[derive(Debug, Clone)]
pub struct PartitionMetrics {
    bytes_in: Counter,
    messages_in: Counter,
    bytes_out: Counter,
    isr_shrinks: Counter,
    isr_expands: Counter,
}

impl PartitionMetrics {
    /// Looks the handles up in the installed recorder (no-ops when none is installed).
    pub fn new(topic: &str) -> Self {
        let topic = topic.to_string();
        PartitionMetrics {
            bytes_in: metrics::counter!(BYTES_IN, "topic" => topic.clone()),
            messages_in: metrics::counter!(MESSAGES_IN, "topic" => topic.clone()),
            bytes_out: metrics::counter!(BYTES_OUT, "topic" => topic),
            isr_shrinks: metrics::counter!(ISR_SHRINKS),
            isr_expands: metrics::counter!(ISR_EXPANDS),
        }
    }

    /// A client batch of `bytes` holding `records` records was appended.
    pub fn record_append(&self, bytes: usize, records: i32) {
        self.bytes_in.increment(bytes as u64);
        self.messages_in
            .increment(u64::try_from(records).unwrap_or(0));
    }

    /// `bytes` were read for a consumer.
    pub fn record_read(&self, bytes: usize) {
        self.bytes_out.increment(bytes as u64);
    }

    /// The controller committed an ISR change: a shrink, or an expansion.
    pub fn record_isr_change(&self, shrink: bool) {
        if shrink {
            self.isr_shrinks.increment(1);
        } else {
            self.isr_expands.increment(1);
        }
    }
}
