//! Kafka's `DelayedOperationPurgatory` size gauge.

use std::sync::OnceLock;

use metrics::Gauge;

/// `kafka.server:type=DelayedOperationPurgatory,name=PurgatorySize,delayedOperation=Fetch|Produce`:
/// operations waiting in the purgatory (Kafka's gauge also counts completed operations not yet
/// purged from the watch lists; this one counts the waiting ones).
pub const PURGATORY_SIZE: &str = "kafka_server_delayedoperationpurgatory_purgatorysize";

/// One operation waiting in a purgatory, in `PurgatorySize{delayedOperation}` until it completes
/// (or is dropped unanswered at shutdown). A no-op with metrics off.
pub struct InPurgatory(Option<Gauge>);

static FETCH_PURGATORY: OnceLock<Gauge> = OnceLock::new();
static PRODUCE_PURGATORY: OnceLock<Gauge> = OnceLock::new();

impl InPurgatory {
    fn new(cell: &'static OnceLock<Gauge>, kind: &'static str) -> Self {
        if !crate::enabled() {
            return InPurgatory(None);
        }
        let g = cell
            .get_or_init(|| metrics::gauge!(PURGATORY_SIZE, "delayedOperation" => kind))
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
