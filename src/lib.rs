//! Josef: a kit of reusable libraries for building Apache-Kafka-compatible brokers.
//!
//! This umbrella package only re-exports the crates so that the top-level `examples/` and `benches/`
//! can use them; depend on the individual crates instead.
#![deny(missing_docs)]

pub use josef_coordinator as coordinator;
pub use josef_group as group;
pub use josef_log as log;
pub use josef_protocol as protocol;
pub use josef_records as records;
pub use josef_sequencer as sequencer;
pub use josef_timer as timer;
pub use josef_txn as txn;
