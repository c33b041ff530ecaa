//! The Apache Kafka wire protocol: every API key and version, generated from Kafka's message specs.
#![deny(missing_docs)]
