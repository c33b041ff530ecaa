//! AlterClientQuotas and DescribeClientQuotas bodies from arbitrary bytes, run against a
//! `QuotaManagers` whose state carries from step to step: nothing may panic, every record an
//! alteration returns must replay, and the store must rebuild from its own snapshot records.
//!
//! Input: steps of `kind: u8 | version: u8 | length: u16 BE | body`; kind even = Alter (v0–1),
//! odd = Describe (v0–1); the clock moves 100 ms a step and each step also charges the managers.
#![no_main]

use bytes::Bytes;
use josef_protocol::messages::{AlterClientQuotasRequest, DescribeClientQuotasRequest};
use josef_protocol::Decode;
use josef_quota::{QuotaManagers, QuotaManagersConfig, QuotaStore};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let mut m = QuotaManagers::new(QuotaManagersConfig::default());
    let mut data = input;
    let mut now = 1_700_000_000_000u64;
    let mut steps = 0;
    while data.len() >= 4 && steps < 32 {
        steps += 1;
        let kind = data[0];
        let version = i16::from(data[1] % 2);
        let len = usize::from(u16::from_be_bytes([data[2], data[3]])).min(data.len() - 4);
        let mut body = Bytes::copy_from_slice(&data[4..4 + len]);
        data = &data[4 + len..];
        now += 100;
        if kind % 2 == 0 {
            if let Ok(request) = AlterClientQuotasRequest::decode(&mut body, version) {
                let outcome = m.store.alter_client_quotas(&request);
                assert!(outcome.response.entries.len() <= request.entries.len());
                for record in &outcome.records {
                    m.replay(record).expect("a record the store wrote must replay");
                }
            }
        } else if let Ok(request) = DescribeClientQuotasRequest::decode(&mut body, version) {
            let response = m.store.describe_client_quotas(&request);
            assert_eq!(response.error_code == 0, response.entries.is_some());
        }
        let value = f64::from(kind) * 1_000.0;
        let t = m.produce.record_and_get_throttle_time_ms("user", "client", value, now);
        assert!(t <= josef_quota::MAX_THROTTLE_TIME_MS);
        let r = m.request.record_and_get_throttle_time_ms("user", "client", value, now);
        assert!(r <= 1_000);
        let _ = m.controller_mutation.record_and_get_throttle_time_ms("user", "client", 1.0, now);
        let _ = m.ip_connections.record_connection([127, 0, 0, 1].into(), now);
    }
    let mut copy = QuotaStore::new();
    for record in m.store.to_records() {
        copy.replay(&record).expect("snapshot records replay");
    }
    assert_eq!(copy, m.store);
});
