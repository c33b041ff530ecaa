//! josef-broker: a thin single-node Kafka-compatible broker composed from the Josef crates.
fn main() {}
