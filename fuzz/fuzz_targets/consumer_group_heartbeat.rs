//! ConsumerGroupHeartbeat bodies from arbitrary bytes (what any client sends) driven through
//! `josef_group`'s pure coordinator with a clock and topic changes between them. Nothing may
//! panic; every record survives its `__consumer_offsets` bytes; no partition is held by two
//! members and no member epoch is above its group's; replaying the records rebuilds the same
//! groups; the response encodes at the request's version.
//!
//! Input: steps of `kind: u8 | version: u8 | length: u16 BE | body`; kind % 4: 0–1 a heartbeat
//! (body decoded at `version` modulo the version count), 2 a topic change (body[0] partitions
//! of `a`, body[1] of `b`), 3 the clock advancing by `length` × 97 ms, firing due timers.
#![no_main]

use std::collections::BTreeMap;

use bytes::{Bytes, BytesMut};
use josef_coordinator::RecordSerde;
use josef_group::api::RequestContext;
use josef_group::consumer::wire::{heartbeat_request, heartbeat_response};
use josef_group::consumer::{TopicImage, TopicInfo};
use josef_group::serde::GroupRecordSerde;
use josef_group::{GroupConfig, GroupCoordinator, GroupResult, NoopTimer, SeededMemberIds};
use josef_protocol::messages::ConsumerGroupHeartbeatRequest;
use josef_protocol::{Decode, Encode, Message, Uuid};
use libfuzzer_sys::fuzz_target;

type Coordinator = GroupCoordinator<NoopTimer, SeededMemberIds>;

fn image(a: u8, b: u8) -> TopicImage {
    [("a", 1u64, a), ("b", 2, b)]
        .into_iter()
        .filter(|(_, _, p)| p % 9 > 0)
        .map(|(n, id, p)| (n.to_string(), TopicInfo::new(Uuid::from_u64_pair(id, 1), i32::from(p % 9))))
        .collect()
}

/// Appends `r`'s records as bytes and replays them, as the broker does.
fn apply<R>(c: &mut Coordinator, log: &mut Vec<(Option<Bytes>, Option<Bytes>)>, r: GroupResult<R>) -> R {
    let serde = GroupRecordSerde::default();
    for rec in &r.records {
        let (k, v) = serde.serialize(rec);
        let back = serde
            .deserialize(k.as_deref().expect("a key"), v.as_deref())
            .expect("a record decodes from its bytes");
        assert_eq!(&back, rec, "a record survives its bytes");
        c.replay(log.len() as i64, -1, -1, &back);
        log.push((k, v));
    }
    r.response
}

fn check(c: &Coordinator, log: &[(Option<Bytes>, Option<Bytes>)]) {
    for g in c.consumer_groups() {
        let mut owner = BTreeMap::new();
        for m in g.members.values() {
            assert!(m.member_epoch <= g.group_epoch, "member epoch above the group's");
            for a in [&m.assigned, &m.pending_revocation] {
                for (t, ps) in a {
                    for p in ps {
                        if let Some(other) = owner.insert((*t, *p), &m.member_id) {
                            assert_eq!(other, &m.member_id, "{t}-{p} held twice");
                        }
                    }
                }
            }
        }
    }
    let serde = GroupRecordSerde::default();
    let mut replayed = Coordinator::new(GroupConfig::default(), NoopTimer, SeededMemberIds::new(2));
    for (i, (k, v)) in log.iter().enumerate() {
        let rec = serde.deserialize(k.as_deref().unwrap(), v.as_deref()).unwrap();
        replayed.replay(i as i64, -1, -1, &rec);
    }
    let groups = |c: &Coordinator| -> BTreeMap<String, _> {
        c.consumer_groups().map(|g| (g.group_id.clone(), g.clone())).collect()
    };
    assert_eq!(groups(c), groups(&replayed), "replay rebuilds the groups");
}

fuzz_target!(|input: &[u8]| {
    let mut c = Coordinator::new(GroupConfig::default(), NoopTimer, SeededMemberIds::new(1));
    let mut log = Vec::new();
    let mut now = 1_000i64;
    let r = c.on_topics_changed(now, image(3, 2));
    apply(&mut c, &mut log, r);
    let mut data = input;
    let mut steps = 0;
    while data.len() >= 4 && steps < 24 {
        steps += 1;
        let (kind, vb) = (data[0], data[1]);
        let length = u16::from_be_bytes([data[2], data[3]]);
        let len = usize::from(length).min(data.len() - 4);
        let body = &data[4..4 + len];
        data = &data[4 + len..];
        match kind % 4 {
            0 | 1 => {
                let range = ConsumerGroupHeartbeatRequest::VALID_VERSIONS;
                let version = range.min + i16::from(vb) % (range.max - range.min + 1);
                let Ok(wire) = ConsumerGroupHeartbeatRequest::decode(&mut Bytes::copy_from_slice(body), version) else {
                    continue;
                };
                let ctx = RequestContext {
                    client_id: "fuzz".into(),
                    client_host: "/127.0.0.1".into(),
                    api_version: version,
                };
                let r = c.consumer_group_heartbeat(now, &ctx, heartbeat_request(&wire));
                let resp = apply(&mut c, &mut log, r);
                heartbeat_response(&resp)
                    .encode(&mut BytesMut::new(), version)
                    .expect("the response encodes at the request's version");
            }
            2 => {
                let (a, b) = (body.first().copied().unwrap_or(0), body.get(1).copied().unwrap_or(0));
                let r = c.on_topics_changed(now, image(a, b));
                apply(&mut c, &mut log, r);
            }
            _ => {
                now += i64::from(length) * 97;
                while let Some(r) = c.fire_next_due(now) {
                    apply(&mut c, &mut log, r);
                }
            }
        }
    }
    check(&c, &log);
});
