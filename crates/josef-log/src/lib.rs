//! A Kafka-compatible segmented partition log with offset, time and transaction indexes.
#![deny(missing_docs)]
