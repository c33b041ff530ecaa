//! Producer ids, epochs and sequence checks for idempotent and transactional Kafka writes.
#![deny(missing_docs)]
