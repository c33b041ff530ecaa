//! DescribeAcls and DeleteAcls request bodies from arbitrary bytes, turned into `AclBindingFilter`s
//! and run against a fixed `StandardAuthorizer` (literal, prefixed and wildcard ACLs of several
//! types). Nothing may panic; describe must return exactly the ACLs the filter matches (a scan
//! checks the index); delete must remove exactly the ACLs some filter matched; the responses must
//! encode at the request's version.
//!
//! Input: `selector: u8 | version: u8 | body`; an even selector decodes a DescribeAclsRequest, an
//! odd one a DeleteAclsRequest, at `version` modulo the message's version count.
#![no_main]

use bytes::{Bytes, BytesMut};
use josef_authorizer::convert::{
    delete_acls_filter_result, describe_acls_response, filter_from_describe_request,
    filters_from_delete_request,
};
use josef_authorizer::*;
use josef_protocol::messages::{DeleteAclsRequest, DeleteAclsResponse, DescribeAclsRequest};
use josef_protocol::{Decode, Encode, Message, Uuid};
use libfuzzer_sys::fuzz_target;

fn authorizer() -> StandardAuthorizer {
    use AclOperation::*;
    use ResourceType::*;
    let acls = [
        (ResourcePattern::literal(Topic, "orders"), AccessControlEntry::allow("User:alice", "*", Read)),
        (ResourcePattern::literal(Topic, "*"), AccessControlEntry::deny("User:*", "10.0.0.1", Write)),
        (ResourcePattern::prefixed(Topic, "ord"), AccessControlEntry::allow("User:bob", "*", All)),
        (ResourcePattern::prefixed(Topic, "orders-"), AccessControlEntry::allow("User:bob", "*", Describe)),
        (ResourcePattern::prefixed(Group, "g"), AccessControlEntry::allow("User:*", "*", Read)),
        (ResourcePattern::literal(Group, "g1"), AccessControlEntry::deny("User:carol", "*", Read)),
        (ResourcePattern::cluster(), AccessControlEntry::allow("User:admin", "*", Alter)),
        (ResourcePattern::literal(TransactionalId, "tx"), AccessControlEntry::allow("User:alice", "*", Write)),
    ];
    let mut a = StandardAuthorizer::default();
    for (i, (p, e)) in acls.into_iter().enumerate() {
        a.add_acl(Uuid::from_u128(i as u128 + 1), AclBinding::new(p, e)).unwrap();
    }
    a
}

fn version_of<M: Message>(b: u8) -> i16 {
    let r = M::VALID_VERSIONS;
    r.min + (b as i16) % (r.max - r.min + 1)
}

fn check_describe(a: &StandardAuthorizer, f: &AclBindingFilter) -> Result<Vec<AclBinding>, AclError> {
    let got = a.describe(f);
    match &got {
        Ok(found) => {
            let mut want: Vec<AclBinding> = a.acls().map(|(_, b)| b.clone()).filter(|b| f.matches(b)).collect();
            want.sort();
            let mut found = found.clone();
            found.sort();
            assert_eq!(found, want, "describe disagrees with a scan for {f:?}");
        }
        Err(e) => assert!(f.is_unknown(), "only filters with UNKNOWN fields fail, not {f:?}: {e}"),
    }
    got
}

fuzz_target!(|input: &[u8]| {
    if input.len() < 2 {
        return;
    }
    let mut body = Bytes::copy_from_slice(&input[2..]);
    let mut a = authorizer();
    if input[0] % 2 == 0 {
        let version = version_of::<DescribeAclsRequest>(input[1]);
        let Ok(req) = DescribeAclsRequest::decode(&mut body, version) else {
            return;
        };
        let filter = filter_from_describe_request(&req);
        let result = check_describe(&a, &filter);
        let response = describe_acls_response(&result);
        response.encode(&mut BytesMut::new(), version).expect("DescribeAcls response encodes");
    } else {
        let version = version_of::<DeleteAclsRequest>(input[1]);
        let Ok(req) = DeleteAclsRequest::decode(&mut body, version) else {
            return;
        };
        let filters = filters_from_delete_request(&req);
        for f in &filters {
            let _ = check_describe(&a, f);
        }
        let before: Vec<AclBinding> = a.acls().map(|(_, b)| b.clone()).collect();
        let results = a.delete_acls(&filters);
        assert_eq!(results.len(), filters.len());
        let left: Vec<AclBinding> = a.acls().map(|(_, b)| b.clone()).collect();
        let valid: Vec<&AclBindingFilter> = filters.iter().filter(|f| !f.is_unknown()).collect();
        let want: Vec<AclBinding> = before.into_iter().filter(|b| !valid.iter().any(|f| f.matches(b))).collect();
        assert_eq!(left, want, "delete removed the wrong ACLs");
        let response = DeleteAclsResponse {
            filter_results: results.iter().map(delete_acls_filter_result).collect(),
            ..Default::default()
        };
        response.encode(&mut BytesMut::new(), version).expect("DeleteAcls response encodes");
    }
});
