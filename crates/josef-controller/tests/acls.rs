//! CreateAcls / DeleteAcls on the controller: records, validation, duplicates, replay.

mod common;

use common::Harness;
use josef_authorizer::convert::{creation_from_binding, delete_filter_from_filter};
use josef_authorizer::{
    AccessControlEntry, AclBinding, AclBindingFilter, AclOperation, PatternType, ResourcePattern,
    ResourcePatternFilter, ResourceType,
};
use josef_controller::{Controller, ControllerConfig, MetadataRecord, WriteContext};
use josef_protocol::messages::{CreateAclsRequest, DeleteAclsRequest};
use josef_protocol::ErrorCode;

fn read(pattern: ResourcePattern, principal: &str) -> AclBinding {
    AclBinding::new(
        pattern,
        AccessControlEntry::allow(principal, "*", AclOperation::Read),
    )
}

fn create(h: &mut Harness, bindings: &[AclBinding]) -> Vec<i16> {
    let req = CreateAclsRequest {
        creations: bindings.iter().map(creation_from_binding).collect(),
        ..Default::default()
    };
    let r = h.c.create_acls(h.ctx(), &req);
    h.commit(r).results.iter().map(|r| r.error_code).collect()
}

#[test]
fn created_acls_are_records_and_duplicates_write_nothing() {
    let mut h = Harness::new(ControllerConfig::default());
    let a = read(ResourcePattern::literal(ResourceType::Topic, "t"), "User:a");
    let bad = read(
        ResourcePattern::new(ResourceType::Topic, "t", PatternType::Match),
        "User:a",
    );
    let codes = create(&mut h, &[a.clone(), a.clone(), bad]);
    assert_eq!(codes, vec![0, 0, ErrorCode::InvalidRequest.code()]);
    let (_, batch) = h.log.last().unwrap();
    assert_eq!(batch.len(), 1);
    assert!(matches!(batch[0], MetadataRecord::AccessControlEntry(_)));
    let before = h.log.len();
    assert_eq!(create(&mut h, std::slice::from_ref(&a)), vec![0]);
    assert_eq!(h.log.len(), before, "a duplicate writes no record");
    assert_eq!(h.c.acls().count(), 1);
    assert_eq!(h.replayed().acls().count(), 1);
    assert_eq!(h.c.image().acls().len(), 1);
}

#[test]
fn delete_removes_each_matching_acl_once() {
    let mut h = Harness::new(ControllerConfig::default());
    create(
        &mut h,
        &[
            read(
                ResourcePattern::literal(ResourceType::Topic, "orders-eu"),
                "User:a",
            ),
            read(
                ResourcePattern::prefixed(ResourceType::Topic, "orders-"),
                "User:b",
            ),
            read(ResourcePattern::literal(ResourceType::Topic, "*"), "User:c"),
            read(ResourcePattern::literal(ResourceType::Group, "g"), "User:d"),
        ],
    );
    let matching = AclBindingFilter::new(
        ResourcePatternFilter {
            resource_type: ResourceType::Topic,
            name: Some("orders-eu".into()),
            pattern_type: PatternType::Match,
        },
        josef_authorizer::AccessControlEntryFilter::ANY,
    );
    let req = DeleteAclsRequest {
        filters: vec![
            delete_filter_from_filter(&matching),
            delete_filter_from_filter(&AclBindingFilter::ANY),
        ],
        ..Default::default()
    };
    let r = h.c.delete_acls(h.ctx(), &req);
    assert_eq!(
        r.records.len(),
        4,
        "every ACL once, though two filters match three"
    );
    let resp = h.commit(r);
    assert_eq!(resp.filter_results[0].matching_acls.len(), 3);
    assert_eq!(resp.filter_results[1].matching_acls.len(), 4);
    assert_eq!(h.c.acls().count(), 0);
    assert!(h.c.image().acls().is_empty());
    assert_eq!(h.replayed().acls().count(), 0);
}

#[test]
fn a_standby_answers_not_controller() {
    let mut c = Controller::new(ControllerConfig::default());
    let req = CreateAclsRequest {
        creations: vec![creation_from_binding(&read(
            ResourcePattern::literal(ResourceType::Topic, "t"),
            "User:a",
        ))],
        ..Default::default()
    };
    let r = c.create_acls(WriteContext::default(), &req);
    assert!(r.records.is_empty());
    assert_eq!(
        r.response.results[0].error_code,
        ErrorCode::NotController.code()
    );
    let r = c.delete_acls(
        WriteContext::default(),
        &DeleteAclsRequest {
            filters: vec![delete_filter_from_filter(&AclBindingFilter::ANY)],
            ..Default::default()
        },
    );
    assert_eq!(
        r.response.filter_results[0].error_code,
        ErrorCode::NotController.code()
    );
}
