//! Log compaction (Kafka's `LogCleaner`).
