//! Generator of josef-protocol's Rust code from Apache Kafka's JSON message specs.
fn main() {}
