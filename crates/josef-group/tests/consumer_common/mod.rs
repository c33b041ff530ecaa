//! Harness for consumer-group tests: a coordinator, its `__consumer_offsets` log kept as
//! Kafka's key/value bytes, a manual clock, and a check that replaying the log rebuilds the
//! same groups.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};

use josef_coordinator::RecordSerde;
use josef_group::api::RequestContext;
use josef_group::consumer::api::{ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse};
use josef_group::consumer::{Assignment, TopicImage, TopicInfo};
use josef_group::serde::GroupRecordSerde;
use josef_group::{GroupConfig, GroupCoordinator, GroupResult, NoopTimer, SeededMemberIds};
use josef_protocol::Uuid;

pub type Coordinator = GroupCoordinator<NoopTimer, SeededMemberIds>;

pub struct H {
    pub c: Coordinator,
    pub log: Vec<(Option<bytes::Bytes>, Option<bytes::Bytes>)>,
    pub now: i64,
    pub config: GroupConfig,
}

pub fn topic_id(name: &str) -> Uuid {
    let mut h: u64 = 1469598103934665603;
    for b in name.bytes() {
        h = (h ^ b as u64).wrapping_mul(1099511628211);
    }
    Uuid::from_u64_pair(h, 1)
}

pub fn image(topics: &[(&str, i32)]) -> TopicImage {
    topics
        .iter()
        .map(|(n, p)| (n.to_string(), TopicInfo::new(topic_id(n), *p)))
        .collect()
}

pub fn parts(topic: &str, ps: &[i32]) -> Assignment {
    let mut a = Assignment::new();
    if !ps.is_empty() {
        a.insert(
            topic_id(topic),
            ps.iter().copied().collect::<BTreeSet<i32>>(),
        );
    }
    a
}

pub fn ctx(version: i16) -> RequestContext {
    RequestContext {
        client_id: "client".into(),
        client_host: "/127.0.0.1".into(),
        api_version: version,
    }
}

/// A first heartbeat (epoch 0) subscribing to `topics`.
pub fn join(group: &str, member: &str, topics: &[&str]) -> ConsumerGroupHeartbeatRequest {
    ConsumerGroupHeartbeatRequest {
        group_id: group.into(),
        member_id: member.into(),
        member_epoch: 0,
        rebalance_timeout_ms: 300_000,
        subscribed_topic_names: Some(topics.iter().map(|t| t.to_string()).collect()),
        topic_partitions: Some(Assignment::new()),
        ..Default::default()
    }
}

/// A later heartbeat at `epoch` reporting `owned` (None: not reported).
pub fn beat(
    group: &str,
    member: &str,
    epoch: i32,
    owned: Option<Assignment>,
) -> ConsumerGroupHeartbeatRequest {
    ConsumerGroupHeartbeatRequest {
        group_id: group.into(),
        member_id: member.into(),
        member_epoch: epoch,
        topic_partitions: owned,
        ..Default::default()
    }
}

impl H {
    pub fn new(config: GroupConfig, topics: &[(&str, i32)]) -> H {
        let mut h = H {
            c: GroupCoordinator::new(config.clone(), NoopTimer, SeededMemberIds::new(1)),
            log: Vec::new(),
            now: 1_000,
            config,
        };
        let r = h.c.on_topics_changed(h.now, image(topics));
        h.apply(r);
        h
    }

    /// Appends a result's records (as bytes) and replays them, as the broker does.
    pub fn apply<R>(&mut self, r: GroupResult<R>) -> R {
        let serde = GroupRecordSerde::default();
        for rec in &r.records {
            let (k, v) = serde.serialize(rec);
            let back = serde
                .deserialize(k.as_deref().unwrap(), v.as_deref())
                .unwrap();
            assert_eq!(&back, rec, "record survives its bytes");
            let offset = self.log.len() as i64;
            self.c.replay(offset, -1, -1, &back);
            self.log.push((k, v));
        }
        r.response
    }

    pub fn hb(&mut self, req: ConsumerGroupHeartbeatRequest) -> ConsumerGroupHeartbeatResponse {
        let r = self.c.consumer_group_heartbeat(self.now, &ctx(1), req);
        self.apply(r)
    }

    pub fn topics(&mut self, topics: &[(&str, i32)]) {
        let r = self.c.on_topics_changed(self.now, image(topics));
        self.apply(r);
    }

    /// Advances the clock, firing due timers.
    pub fn advance(&mut self, ms: i64) {
        self.now += ms;
        while let Some(r) = self.c.fire_next_due(self.now) {
            self.apply(r);
        }
    }

    /// A coordinator rebuilt from the log alone.
    pub fn replayed(&self) -> Coordinator {
        let serde = GroupRecordSerde::default();
        let mut c = GroupCoordinator::new(self.config.clone(), NoopTimer, SeededMemberIds::new(2));
        for (i, (k, v)) in self.log.iter().enumerate() {
            let rec = serde
                .deserialize(k.as_deref().unwrap(), v.as_deref())
                .unwrap();
            c.replay(i as i64, -1, -1, &rec);
        }
        c
    }

    /// Replaying the log gives the same consumer groups.
    pub fn assert_replay_rebuilds(&self) {
        let replayed = self.replayed();
        let a: BTreeMap<_, _> = self
            .c
            .consumer_groups()
            .map(|g| (g.group_id.clone(), g.clone()))
            .collect();
        let b: BTreeMap<_, _> = replayed
            .consumer_groups()
            .map(|g| (g.group_id.clone(), g.clone()))
            .collect();
        assert_eq!(a, b, "replay rebuilds the groups");
    }

    /// No partition in two members' (assigned ∪ pending revocation); member epochs ≤ group epoch.
    pub fn assert_invariants(&self) {
        for g in self.c.consumer_groups() {
            let mut seen: BTreeMap<(Uuid, i32), &str> = BTreeMap::new();
            for m in g.members.values() {
                assert!(
                    m.member_epoch <= g.group_epoch,
                    "member epoch above group epoch"
                );
                for a in [&m.assigned, &m.pending_revocation] {
                    for (t, ps) in a {
                        for p in ps {
                            if let Some(other) = seen.insert((*t, *p), &m.member_id) {
                                assert_eq!(other, m.member_id, "partition {t}-{p} owned twice");
                            }
                        }
                    }
                }
            }
            assert!(g.assignment_epoch <= g.group_epoch);
        }
    }
}
