//! Kafka group coordinator (classic rebalance protocol), offsets and partition assignors.
#![deny(missing_docs)]
