//! AlterUserScramCredentials and DescribeUserScramCredentials bodies from arbitrary bytes, run
//! through `josef_sasl::scram::admin` against a store that carries from step to step (what the
//! controller and a single-node broker do). Nothing may panic; every user gets exactly one result,
//! in first-appearance order; only users answered NONE get records, and the records of one user
//! are for that user; applied, they make describe report exactly the stored (mechanism,
//! iterations); the responses encode at the request's version.
//!
//! Input: steps of `kind: u8 | version: u8 | length: u16 BE | body`; kind even = Alter, odd =
//! Describe, at `version` modulo the message's version count.
#![no_main]

use std::collections::BTreeSet;

use bytes::{Bytes, BytesMut};
use josef_protocol::messages::{
    AlterUserScramCredentialsRequest, DescribeUserScramCredentialsRequest,
};
use josef_protocol::{Decode, Encode, Message};
use josef_sasl::scram::admin::{
    alter_user_scram_credentials, describe_user_scram_credentials, ScramRecord, StoredCredentials,
};
use libfuzzer_sys::fuzz_target;

fn version_of<M: Message>(b: u8) -> i16 {
    let r = M::VALID_VERSIONS;
    r.min + (b as i16) % (r.max - r.min + 1)
}

fn first_appearance<'a>(names: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut seen = BTreeSet::new();
    names.filter(|n| seen.insert(*n)).collect()
}

fuzz_target!(|input: &[u8]| {
    let mut stored = StoredCredentials::new();
    let mut data = input;
    let mut steps = 0;
    while data.len() >= 4 && steps < 16 {
        steps += 1;
        let (kind, vb) = (data[0], data[1]);
        let len = usize::from(u16::from_be_bytes([data[2], data[3]])).min(data.len() - 4);
        let mut body = Bytes::copy_from_slice(&data[4..4 + len]);
        data = &data[4 + len..];
        if kind % 2 == 0 {
            let version = version_of::<AlterUserScramCredentialsRequest>(vb);
            let Ok(req) = AlterUserScramCredentialsRequest::decode(&mut body, version) else {
                continue;
            };
            let (resp, records) = alter_user_scram_credentials(&req, &stored);
            let users = first_appearance(
                req.deletions
                    .iter()
                    .map(|d| d.name.as_str())
                    .chain(req.upsertions.iter().map(|u| u.name.as_str())),
            );
            let answered: Vec<&str> = resp.results.iter().map(|r| r.user.as_str()).collect();
            assert_eq!(answered, users, "one result per user, in order");
            let ok: BTreeSet<&str> = resp
                .results
                .iter()
                .filter(|r| r.error_code == 0)
                .map(|r| r.user.as_str())
                .collect();
            for r in &records {
                let user = match r {
                    ScramRecord::Upsert(u) => {
                        assert!((4096..=16384).contains(&u.iterations));
                        assert!(!u.salt.is_empty());
                        u.name.as_str()
                    }
                    ScramRecord::Remove(r) => {
                        assert!(stored.contains_key(&(r.name.to_string(), r.mechanism)));
                        r.name.as_str()
                    }
                };
                assert!(ok.contains(user), "a record for {user:?}, which failed");
            }
            for r in records {
                match r {
                    ScramRecord::Upsert(u) => {
                        stored.insert((u.name.to_string(), u.mechanism), u);
                    }
                    ScramRecord::Remove(r) => {
                        stored.remove(&(r.name.to_string(), r.mechanism));
                    }
                }
            }
            resp.encode(&mut BytesMut::new(), version)
                .expect("AlterUserScramCredentials response encodes");
        } else {
            let version = version_of::<DescribeUserScramCredentialsRequest>(vb);
            let Ok(req) = DescribeUserScramCredentialsRequest::decode(&mut body, version) else {
                continue;
            };
            let resp = describe_user_scram_credentials(&req, &stored);
            for r in &resp.results {
                let want: Vec<(i8, i32)> = stored
                    .iter()
                    .filter(|((u, _), _)| u == r.user.as_str())
                    .map(|((_, m), c)| (*m, c.iterations))
                    .collect();
                let got: Vec<(i8, i32)> = r
                    .credential_infos
                    .iter()
                    .map(|c| (c.mechanism, c.iterations))
                    .collect();
                match r.error_code {
                    0 => assert!(!got.is_empty() && got == want, "{got:?} != {want:?}"),
                    _ => assert!(got.is_empty(), "an error with credentials: {r:?}"),
                }
            }
            resp.encode(&mut BytesMut::new(), version)
                .expect("DescribeUserScramCredentials response encodes");
        }
    }
});
