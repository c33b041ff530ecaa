//! The state gauges, computed from the broker's state each time `/metrics` is read and written
//! in Prometheus's text format after the recorder's series.

use std::fmt::Write;
use std::sync::Arc;

use josef_metrics::text::{
    escape_label_value as escape, write_gauge as gauge, write_header as header,
};
use josef_metrics::{MetricsSource, Recorder};

use crate::replication_quotas::Direction;
use crate::state::BrokerState;

/// What the broker's `/metrics` answers: the recorder's series, then the state gauges.
pub struct BrokerMetrics {
    /// The process's recorder.
    pub recorder: &'static Recorder,
    /// The broker whose state the gauges read.
    pub state: Arc<BrokerState>,
}

impl MetricsSource for BrokerMetrics {
    fn render(&self) -> String {
        let mut out = self.recorder.render();
        render(&self.state, &mut out);
        out
    }
}

/// `kafka.server:type=ReplicaManager,name=PartitionCount`: replicas hosted here.
pub const PARTITION_COUNT: &str = "kafka_server_replicamanager_partitioncount";
/// `kafka.server:type=ReplicaManager,name=LeaderCount`: partitions led here.
pub const LEADER_COUNT: &str = "kafka_server_replicamanager_leadercount";
/// `kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions`: partitions led here whose
/// ISR is smaller than their replica set.
pub const UNDER_REPLICATED: &str = "kafka_server_replicamanager_underreplicatedpartitions";
/// `kafka.controller:type=KafkaController,name=ActiveControllerCount`: 1 on the active
/// controller (a single node is its own controller: 1).
pub const ACTIVE_CONTROLLER: &str = "kafka_controller_kafkacontroller_activecontrollercount";
/// `kafka.controller:type=KafkaController,name=OfflinePartitionsCount`: on the active controller,
/// partitions of the metadata image without a leader (0 elsewhere, as in Kafka).
pub const OFFLINE_PARTITIONS: &str = "kafka_controller_kafkacontroller_offlinepartitionscount";
/// `kafka.log:type=Log,name=Size,topic=T,partition=P`: bytes of the partition's log segments.
pub const LOG_SIZE: &str = "kafka_log_log_size";
/// `kafka.log:type=Log,name=LogEndOffset,topic=T,partition=P`.
pub const LOG_END_OFFSET: &str = "kafka_log_log_logendoffset";
/// `kafka.log:type=Log,name=LogStartOffset,topic=T,partition=P`.
pub const LOG_START_OFFSET: &str = "kafka_log_log_logstartoffset";
/// `kafka.coordinator.group:type=GroupMetadataManager,name=NumGroups`: groups of the
/// `__consumer_offsets` partitions led (and loaded) here.
pub const NUM_GROUPS: &str = "kafka_coordinator_group_groupmetadatamanager_numgroups";
/// Transactional ids of the `__transaction_state` partitions led (and loaded) here. Kafka has
/// no MBean for it: a Josef series.
pub const NUM_TRANSACTIONAL_IDS: &str = "josef_coordinator_transaction_transactionalids";

/// One partition as the gauges see it.
struct PartitionSample {
    leader: bool,
    under_replicated: bool,
    size: u64,
    log_start: i64,
    log_end: i64,
}

/// Appends every state gauge of `state` to `out`.
pub fn render(state: &BrokerState, out: &mut String) {
    let mut samples = Vec::new();
    for t in state.topics.all() {
        for p in &t.partitions {
            let s = p.replica_summary();
            samples.push((
                t.name.clone(),
                p.index,
                PartitionSample {
                    leader: s.is_leader,
                    under_replicated: s.under_replicated,
                    size: s.size_in_bytes,
                    log_start: s.log_start_offset,
                    log_end: s.log_end_offset,
                },
            ));
        }
    }
    let count = |f: fn(&PartitionSample) -> bool| samples.iter().filter(|(_, _, s)| f(s)).count();
    gauge(
        out,
        PARTITION_COUNT,
        "kafka.server:type=ReplicaManager,name=PartitionCount",
        samples.len(),
    );
    gauge(
        out,
        LEADER_COUNT,
        "kafka.server:type=ReplicaManager,name=LeaderCount",
        count(|s| s.leader),
    );
    gauge(
        out,
        UNDER_REPLICATED,
        "kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions",
        count(|s| s.under_replicated),
    );
    let (active, offline) = controller(state);
    gauge(
        out,
        ACTIVE_CONTROLLER,
        "kafka.controller:type=KafkaController,name=ActiveControllerCount",
        active,
    );
    gauge(
        out,
        OFFLINE_PARTITIONS,
        "kafka.controller:type=KafkaController,name=OfflinePartitionsCount",
        offline,
    );
    type Field = fn(&PartitionSample) -> String;
    let per_partition: [(&str, &str, Field); 3] = [
        (LOG_SIZE, "kafka.log:type=Log,name=Size", |s| {
            s.size.to_string()
        }),
        (
            LOG_END_OFFSET,
            "kafka.log:type=Log,name=LogEndOffset",
            |s| s.log_end.to_string(),
        ),
        (
            LOG_START_OFFSET,
            "kafka.log:type=Log,name=LogStartOffset",
            |s| s.log_start.to_string(),
        ),
    ];
    for (name, help, value) in per_partition {
        header(out, name, help);
        for (topic, index, s) in &samples {
            let _ = writeln!(
                out,
                "{name}{{topic=\"{}\",partition=\"{index}\"}} {}",
                escape(topic),
                value(s)
            );
        }
    }
    let now = crate::topics::now_ms() as u64;
    let rq = &state.replication_quotas;
    gauge(
        out,
        crate::replication_quotas::LEADER_BYTE_RATE,
        "kafka.server:type=LeaderReplication,name=byte-rate",
        rq.byte_rate(Direction::Leader, now),
    );
    gauge(
        out,
        crate::replication_quotas::FOLLOWER_BYTE_RATE,
        "kafka.server:type=FollowerReplication,name=byte-rate",
        rq.byte_rate(Direction::Follower, now),
    );
    gauge(
        out,
        NUM_GROUPS,
        "kafka.coordinator.group:type=GroupMetadataManager,name=NumGroups",
        state.groups.num_groups(),
    );
    gauge(
        out,
        NUM_TRANSACTIONAL_IDS,
        "transactional ids of the transaction coordinator partitions led here (no Kafka MBean)",
        state.txns.num_transactional_ids(),
    );
}

/// ActiveControllerCount and OfflinePartitionsCount: a single node is its own controller and
/// leads every partition it has; a cluster node counts only while its controller is active.
fn controller(state: &BrokerState) -> (u8, usize) {
    let Some(node) = &state.cluster else {
        return (1, 0);
    };
    match &node.driver {
        Some(d) if d.is_active() => {
            let image = node.log.image();
            let offline = image
                .topics()
                .flat_map(|t| t.partitions.values())
                .filter(|p| p.leader < 0)
                .count();
            (1, offline)
        }
        _ => (0, 0),
    }
}
