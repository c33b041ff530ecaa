//! Hierarchical timing wheel and a purgatory of delayed operations, after Kafka's.
#![deny(missing_docs)]
