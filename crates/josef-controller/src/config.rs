//! Controller settings, with Kafka's defaults.

/// Settings of the controller (Kafka broker/controller configs of the same names).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerConfig {
    /// `node.id` of this controller.
    pub node_id: i32,
    /// `broker.session.timeout.ms` (9000): a broker without a heartbeat for this long is fenced.
    pub broker_session_timeout_ms: i64,
    /// `default.replication.factor` (1): the replication factor of CreateTopics asking −1.
    pub default_replication_factor: i16,
    /// `num.partitions` (1): the partition count of CreateTopics asking −1.
    pub num_partitions: i32,
    /// `auto.leader.rebalance.enable` (true): [`tick`](crate::Controller::tick) runs
    /// preferred-leader elections.
    pub auto_leader_rebalance_enable: bool,
    /// `leader.imbalance.check.interval.seconds` (300) in milliseconds.
    pub leader_imbalance_check_interval_ms: i64,
    /// `leader.imbalance.per.broker.percentage` (10): the rebalance moves leaderships back to a
    /// broker only when more than this share of the partitions it is the preferred replica of
    /// are led elsewhere (the ZooKeeper-era controller's rule; KRaft has no threshold). 0 acts
    /// on any imbalance; 100 or more never.
    pub leader_imbalance_per_broker_percentage: i32,
    /// `unclean.leader.election.enable` (false): the default of the topic config.
    pub unclean_leader_election_enable: bool,
    /// `unclean.leader.election.interval.ms` (300 000): how often [`tick`](crate::Controller::tick)
    /// elects leaders uncleanly for leaderless partitions of topics that allow it.
    pub unclean_leader_election_interval_ms: i64,
    /// Producer ids per AllocateProducerIds block (1000, Kafka's fixed block size).
    pub producer_id_block_size: i32,
    /// `delete.topic.enable` (true).
    pub delete_topic_enable: bool,
    /// Seed of the controller's random numbers (placement, topic ids); mixed with the epoch and
    /// the last offset at each activation. Give each controller node its own seed.
    pub seed: u64,
    /// Features a new cluster starts with besides `metadata.version` (name → level), written in
    /// the bootstrap batch (Kafka's `kafka-storage format --feature`; Kafka 4.0 starts at
    /// `transaction.version` 2). Level 0 features are left out (0 is not finalizing them).
    pub bootstrap_features: Vec<(String, i16)>,
}

impl Default for ControllerConfig {
    fn default() -> Self {
        ControllerConfig {
            node_id: 0,
            broker_session_timeout_ms: 9000,
            default_replication_factor: 1,
            num_partitions: 1,
            auto_leader_rebalance_enable: true,
            leader_imbalance_check_interval_ms: 300_000,
            leader_imbalance_per_broker_percentage: 10,
            unclean_leader_election_enable: false,
            unclean_leader_election_interval_ms: 300_000,
            producer_id_block_size: 1000,
            delete_topic_enable: true,
            seed: 0,
            bootstrap_features: Vec::new(),
        }
    }
}
