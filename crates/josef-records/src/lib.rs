//! Kafka record batches (v2 and legacy v0/v1), compression and control records, zero-copy over bytes.
#![deny(missing_docs)]
