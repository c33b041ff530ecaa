//! `ResponseBody::set_throttle_time_ms` reaches the top-level field of every response that has one.

use josef_protocol::messages::{ProduceResponse, SaslHandshakeResponse};
use josef_protocol::{ApiKey, ResponseBody};

#[test]
fn throttle_time_is_set_on_responses_that_carry_it() {
    let mut r = ResponseBody::Produce(ProduceResponse::default());
    assert!(r.set_throttle_time_ms(42));
    let ResponseBody::Produce(p) = r else {
        unreachable!()
    };
    assert_eq!(p.throttle_time_ms, 42);
}

#[test]
fn a_response_without_throttle_time_is_left_alone() {
    let mut r = ResponseBody::SaslHandshake(SaslHandshakeResponse::default());
    assert!(!r.set_throttle_time_ms(42));
    assert_eq!(
        r,
        ResponseBody::SaslHandshake(SaslHandshakeResponse::default())
    );
}

#[test]
fn every_client_facing_response_with_the_field_takes_it() {
    // The APIs a client quota can throttle that have carried throttle_time_ms since KIP-219.
    for api in [
        ApiKey::Fetch,
        ApiKey::Metadata,
        ApiKey::CreateTopics,
        ApiKey::DeleteTopics,
        ApiKey::CreatePartitions,
        ApiKey::AlterClientQuotas,
        ApiKey::DescribeClientQuotas,
        ApiKey::ApiVersions,
    ] {
        let mut r = ResponseBody::default_for(api);
        assert!(r.set_throttle_time_ms(7), "{api:?}");
        assert_ne!(r, ResponseBody::default_for(api), "{api:?}");
    }
}
