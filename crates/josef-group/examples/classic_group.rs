//! A classic consumer group on the coordinator of its `__consumer_offsets` partition: two members
//! join (MEMBER_ID_REQUIRED, then parked until the initial rebalance delay ends), the leader
//! assigns `orders` with the range assignor and both sync, one commits offsets, the other leaves,
//! and the survivor rebalances to generation 2 and gets every partition. The records are applied
//! at once (a single-node broker whose appends commit immediately).
//!
//! ```text
//! cargo run -p josef-group --example classic_group
//! ```

use std::collections::BTreeMap;
use std::io::{self, Write};

use josef_group::api::*;
use josef_group::assignor::leader_assign;
use josef_group::consumer_protocol::{Assignment, Subscription};
use josef_group::{GroupConfig, GroupCoordinator, GroupResult, NoopTimer, SeededMemberIds};

const GROUP: &str = "billing";

/// The coordinator plus what the broker keeps around it: answers of parked requests, the clock.
struct Broker {
    coordinator: GroupCoordinator<NoopTimer, SeededMemberIds>,
    records: i64,
    answers: BTreeMap<RequestId, GroupResponse>,
    now_ms: i64,
    next_request: RequestId,
}

impl Broker {
    /// Appends and replays the result's records, keeps its completions, returns its response.
    fn apply<T>(&mut self, r: GroupResult<T>) -> T {
        for record in &r.records {
            self.coordinator.replay(self.records, -1, -1, record);
            self.records += 1;
        }
        self.answers
            .extend(r.completions.into_iter().map(|c| (c.request, c.response)));
        r.response
    }

    fn join(&mut self, client: &str, member_id: &str) -> RequestId {
        let ctx = RequestContext {
            client_id: client.into(),
            client_host: "/10.0.0.1".into(),
            api_version: 9,
        };
        let sub = Subscription {
            topics: vec!["orders".into()],
            ..Subscription::default()
        };
        let req = JoinGroupRequest {
            group_id: GROUP.into(),
            session_timeout_ms: 45_000,
            rebalance_timeout_ms: 60_000,
            member_id: member_id.into(),
            group_instance_id: None,
            protocol_type: "consumer".into(),
            protocols: vec![JoinProtocol {
                name: "range".into(),
                metadata: sub.encode(3),
            }],
            reason: None,
        };
        self.next_request += 1;
        let r = self
            .coordinator
            .join_group(self.now_ms, self.next_request, &ctx, req);
        self.apply(r);
        self.next_request
    }

    fn joined(&self, request: RequestId) -> Option<JoinGroupResponse> {
        match self.answers.get(&request) {
            Some(GroupResponse::Join(j)) => Some(j.clone()),
            _ => None,
        }
    }

    fn sync(
        &mut self,
        join: &JoinGroupResponse,
        assignments: Vec<(String, bytes::Bytes)>,
    ) -> RequestId {
        let req = SyncGroupRequest {
            group_id: GROUP.into(),
            generation_id: join.generation_id,
            member_id: join.member_id.clone(),
            group_instance_id: None,
            protocol_type: Some("consumer".into()),
            protocol_name: join.protocol_name.clone(),
            assignments,
        };
        self.next_request += 1;
        let r = self
            .coordinator
            .sync_group(self.now_ms, self.next_request, req);
        self.apply(r);
        self.next_request
    }

    /// The member's partitions from its SyncGroup answer.
    fn assigned(&self, request: RequestId) -> Result<Vec<String>, Box<dyn std::error::Error>> {
        let Some(GroupResponse::Sync(s)) = self.answers.get(&request) else {
            return Err("sync not answered".into());
        };
        let (_, a) = Assignment::decode(&s.assignment)?;
        Ok(a.topic_partitions()
            .map(|(t, p)| format!("{t}-{p}"))
            .collect())
    }

    fn advance(&mut self, ms: i64) {
        self.now_ms += ms;
        while let Some(r) = self.coordinator.fire_next_due(self.now_ms) {
            self.apply(r);
        }
    }
}

/// The leader's SyncGroup assignments: the range assignor over `orders` (4 partitions).
fn assign(
    leader: &JoinGroupResponse,
) -> Result<Vec<(String, bytes::Bytes)>, Box<dyn std::error::Error>> {
    let members: Vec<_> = leader
        .members
        .iter()
        .map(|m| (m.member_id.clone(), None, m.metadata.clone()))
        .collect();
    let topics = BTreeMap::from([("orders".to_string(), 4)]);
    Ok(leader_assign("range", &topics, &members, 3)?)
}

/// Runs the scenario.
pub fn run(out: &mut dyn Write) -> Result<(), Box<dyn std::error::Error>> {
    let coordinator =
        GroupCoordinator::new(GroupConfig::default(), NoopTimer, SeededMemberIds::new(7));
    let mut b = Broker {
        coordinator,
        records: 0,
        answers: BTreeMap::new(),
        now_ms: 0,
        next_request: 0,
    };

    let mut members = Vec::new();
    for client in ["consumer-a", "consumer-b"] {
        let first = b.join(client, "");
        let id = b.joined(first).ok_or("no answer")?;
        writeln!(
            out,
            "{client} joins: {}, member id {}",
            id.error, id.member_id
        )?;
        let parked = b.join(client, &id.member_id);
        writeln!(
            out,
            "{client} joins again: parked = {}",
            b.joined(parked).is_none()
        )?;
        members.push((client, parked));
    }
    // `group.initial.rebalance.delay.ms` (3 s) waits for more members, once more after a join.
    while members.iter().any(|(_, r)| b.joined(*r).is_none()) {
        let due = b.coordinator.next_deadline().ok_or("no timer")?;
        writeln!(out, "t={due}: a coordinator timer fires")?;
        b.advance(due - b.now_ms);
    }
    let joins: Vec<JoinGroupResponse> = members
        .iter()
        .map(|(_, r)| b.joined(*r).ok_or("no join answer"))
        .collect::<Result<_, _>>()?;
    for ((client, _), j) in members.iter().zip(&joins) {
        let role = if j.leader == j.member_id {
            "leader"
        } else {
            "follower"
        };
        writeln!(
            out,
            "{client}: generation {}, protocol {}, {role}, {} member(s) listed",
            j.generation_id,
            j.protocol_name.as_deref().unwrap_or("-"),
            j.members.len()
        )?;
    }
    let mut syncs = Vec::new();
    for j in &joins {
        let assignments = if j.leader == j.member_id {
            assign(j)?
        } else {
            Vec::new()
        };
        syncs.push(b.sync(j, assignments));
    }
    for ((client, _), s) in members.iter().zip(&syncs) {
        writeln!(out, "{client} is assigned {}", b.assigned(*s)?.join(", "))?;
    }

    let a = &joins[0];
    let partition = |p, offset| OffsetCommitPartition {
        partition_index: p,
        committed_offset: offset,
        committed_leader_epoch: -1,
        commit_timestamp: -1,
        committed_metadata: None,
    };
    let commit = OffsetCommitRequest {
        group_id: GROUP.into(),
        generation_id_or_member_epoch: a.generation_id,
        member_id: a.member_id.clone(),
        group_instance_id: None,
        retention_time_ms: -1,
        topics: vec![OffsetCommitTopic {
            name: "orders".into(),
            partitions: vec![partition(0, 42), partition(1, 17)],
        }],
    };
    let ctx = RequestContext {
        client_id: "consumer-a".into(),
        client_host: "/10.0.0.1".into(),
        api_version: 8,
    };
    let r = b.coordinator.commit_offsets(b.now_ms, &ctx, commit);
    let committed = b.apply(r);
    writeln!(
        out,
        "consumer-a commits orders-0=42, orders-1=17: {}",
        committed.topics[0]
            .partitions
            .iter()
            .map(|p| p.error.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )?;

    let leave = LeaveGroupRequest {
        group_id: GROUP.into(),
        members: vec![LeavingMember {
            member_id: joins[1].member_id.clone(),
            group_instance_id: None,
            reason: None,
        }],
    };
    let r = b.coordinator.leave_group(b.now_ms, leave);
    let left = b.apply(r);
    writeln!(out, "consumer-b leaves: {}", left.error)?;
    let hb = HeartbeatRequest {
        group_id: GROUP.into(),
        generation_id: a.generation_id,
        member_id: a.member_id.clone(),
        group_instance_id: None,
    };
    let r = b.coordinator.heartbeat(b.now_ms, hb);
    writeln!(out, "consumer-a heartbeats: {}", b.apply(r).error)?;
    let rejoin = b.join("consumer-a", &a.member_id);
    let j = b.joined(rejoin).ok_or("the rejoin is parked")?;
    writeln!(
        out,
        "consumer-a rejoins: generation {}, {} member(s) listed",
        j.generation_id,
        j.members.len()
    )?;
    let s = b.sync(&j, assign(&j)?);
    writeln!(out, "consumer-a is assigned {}", b.assigned(s)?.join(", "))?;

    let fetch = OffsetFetchRequest {
        groups: vec![OffsetFetchGroup {
            group_id: GROUP.into(),
            topics: None,
            ..Default::default()
        }],
        require_stable: true,
    };
    for t in &b.coordinator.fetch_offsets(&fetch).groups[0].topics {
        for p in &t.partitions {
            writeln!(
                out,
                "committed {}-{}: {}",
                t.name, p.partition_index, p.committed_offset
            )?;
        }
    }
    writeln!(out, "__consumer_offsets holds {} records", b.records)?;
    Ok(())
}

#[allow(dead_code)] // the tests include this file for `run`
fn main() -> Result<(), Box<dyn std::error::Error>> {
    run(&mut io::stdout())
}
