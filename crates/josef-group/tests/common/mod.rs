//! A test harness: a coordinator, an in-memory `__consumer_offsets` log it appends to and
//! replays from, a manual clock, and the responses of parked requests.
#![allow(dead_code)]

use std::collections::BTreeMap;

use bytes::Bytes;
use josef_group::api::*;
use josef_group::consumer_protocol::Subscription;
use josef_group::record::GroupRecord;
use josef_group::{
    GroupConfig, GroupCoordinator, GroupResult, NoopTimer, SeededMemberIds, NO_PRODUCER_ID,
};

pub type Coordinator = GroupCoordinator<NoopTimer, SeededMemberIds>;

pub struct LogEntry {
    pub offset: i64,
    pub producer_id: i64,
    pub record: GroupRecord,
}

pub struct Harness {
    pub c: Coordinator,
    pub log: Vec<LogEntry>,
    /// Transaction markers as (log position, producer id, committed).
    pub markers: Vec<(usize, i64, bool)>,
    pub now: i64,
    pub next_request: RequestId,
    pub responses: BTreeMap<RequestId, GroupResponse>,
    /// Requests answered since the last drain (in completion order).
    pub fresh: Vec<RequestId>,
    pub config: GroupConfig,
    pub seed: u64,
}

pub fn protocols(names: &[&str], topics: &[&str]) -> Vec<JoinProtocol> {
    let sub = Subscription {
        topics: topics.iter().map(|t| t.to_string()).collect(),
        ..Subscription::default()
    };
    names
        .iter()
        .map(|n| JoinProtocol {
            name: n.to_string(),
            metadata: sub.encode(1),
        })
        .collect()
}

pub fn ctx(client: &str, version: i16) -> RequestContext {
    RequestContext {
        client_id: client.to_string(),
        client_host: "/127.0.0.1".to_string(),
        api_version: version,
    }
}

pub fn join_req(group: &str, member_id: &str, instance: Option<&str>) -> JoinGroupRequest {
    JoinGroupRequest {
        group_id: group.to_string(),
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 30_000,
        member_id: member_id.to_string(),
        group_instance_id: instance.map(str::to_string),
        protocol_type: "consumer".to_string(),
        protocols: protocols(&["range"], &["t"]),
        reason: None,
    }
}

impl Harness {
    pub fn new() -> Self {
        Self::with_config(GroupConfig::default())
    }

    pub fn with_config(config: GroupConfig) -> Self {
        Self::with_config_seed(config, 1)
    }

    pub fn with_config_seed(config: GroupConfig, seed: u64) -> Self {
        Harness {
            c: GroupCoordinator::new(config.clone(), NoopTimer, SeededMemberIds::new(seed)),
            log: Vec::new(),
            markers: Vec::new(),
            now: 0,
            next_request: 1,
            responses: BTreeMap::new(),
            fresh: Vec::new(),
            config,
            seed,
        }
    }

    /// Appends the result's records to the log, replays them, collects completions.
    pub fn apply<T>(&mut self, r: GroupResult<T>) -> T {
        let producer_id = r.transaction.map(|(p, _)| p).unwrap_or(NO_PRODUCER_ID);
        let epoch = r.transaction.map(|(_, e)| e).unwrap_or(-1);
        for record in r.records {
            let offset = self.log.len() as i64;
            self.c.replay(offset, producer_id, epoch, &record);
            self.log.push(LogEntry {
                offset,
                producer_id,
                record,
            });
        }
        for comp in r.completions {
            self.fresh.push(comp.request);
            let prev = self.responses.insert(comp.request, comp.response);
            assert!(prev.is_none(), "request {} completed twice", comp.request);
        }
        r.response
    }

    pub fn request_id(&mut self) -> RequestId {
        let id = self.next_request;
        self.next_request += 1;
        id
    }

    pub fn join(&mut self, version: i16, client: &str, req: JoinGroupRequest) -> RequestId {
        let id = self.request_id();
        let r = self.c.join_group(self.now, id, &ctx(client, version), req);
        self.apply(r);
        id
    }

    pub fn sync(&mut self, req: SyncGroupRequest) -> RequestId {
        let id = self.request_id();
        let r = self.c.sync_group(self.now, id, req);
        self.apply(r);
        id
    }

    pub fn join_response(&self, id: RequestId) -> Option<&JoinGroupResponse> {
        match self.responses.get(&id) {
            Some(GroupResponse::Join(j)) => Some(j),
            Some(other) => panic!("request {id} answered with {other:?}"),
            None => None,
        }
    }

    pub fn sync_response(&self, id: RequestId) -> Option<&SyncGroupResponse> {
        match self.responses.get(&id) {
            Some(GroupResponse::Sync(s)) => Some(s),
            Some(other) => panic!("request {id} answered with {other:?}"),
            None => None,
        }
    }

    /// Moves the clock and fires due timers.
    pub fn advance(&mut self, ms: i64) {
        self.now += ms;
        while let Some(r) = self.c.fire_next_due(self.now) {
            self.apply(r);
        }
    }

    pub fn heartbeat(&mut self, group: &str, member: &str, generation: i32) -> josef_group::Errors {
        let r = self.c.heartbeat(
            self.now,
            HeartbeatRequest {
                group_id: group.to_string(),
                generation_id: generation,
                member_id: member.to_string(),
                group_instance_id: None,
            },
        );
        self.apply(r).error
    }

    /// Full v4+ join of a new dynamic member: MEMBER_ID_REQUIRED, then join with the id.
    /// Returns (member id, parked join request id).
    pub fn join_new(&mut self, group: &str, client: &str) -> (String, RequestId) {
        let first = self.join(9, client, join_req(group, "", None));
        let resp = self.join_response(first).expect("answered at once").clone();
        assert_eq!(resp.error, josef_group::Errors::MemberIdRequired);
        let second = self.join(9, client, join_req(group, &resp.member_id, None));
        (resp.member_id, second)
    }

    /// A coordinator restart: a fresh shard replays the log (and markers) and resumes.
    pub fn restart(&mut self) {
        let mut c = GroupCoordinator::new(
            self.config.clone(),
            NoopTimer,
            SeededMemberIds::new(self.seed + 1000),
        );
        let mut marker_iter = self.markers.iter().peekable();
        for (i, e) in self.log.iter().enumerate() {
            while let Some((pos, pid, committed)) = marker_iter.peek() {
                if *pos <= i {
                    c.complete_transaction(*pid, *committed);
                    marker_iter.next();
                } else {
                    break;
                }
            }
            c.replay(e.offset, e.producer_id, -1, &e.record);
        }
        for (_, pid, committed) in marker_iter {
            c.complete_transaction(*pid, *committed);
        }
        self.c = c;
    }

    pub fn end_transaction(&mut self, producer_id: i64, committed: bool) {
        self.markers.push((self.log.len(), producer_id, committed));
        self.c.complete_transaction(producer_id, committed);
    }

    pub fn sync_req(
        group: &str,
        member: &str,
        generation: i32,
        assignments: Vec<(String, Bytes)>,
    ) -> SyncGroupRequest {
        SyncGroupRequest {
            group_id: group.to_string(),
            generation_id: generation,
            member_id: member.to_string(),
            group_instance_id: None,
            protocol_type: Some("consumer".to_string()),
            protocol_name: Some("range".to_string()),
            assignments,
        }
    }
}
