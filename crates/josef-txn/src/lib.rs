//! Kafka transaction coordinator as a deterministic state machine.
#![deny(missing_docs)]
