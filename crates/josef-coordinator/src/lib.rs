//! Deterministic runtime for Kafka coordinators: record replay, timers, deferred responses.
#![deny(missing_docs)]
