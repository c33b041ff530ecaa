//! An ACL check as a broker makes it: ACL records arrive from the metadata log, then each request's
//! actions are authorized with the table of what each API needs.
//!
//! Run with `cargo run -p josef-authorizer --example acl_check`.

use josef_authorizer::api_acls::{api_acls, Condition, Target};
use josef_authorizer::*;
use josef_protocol::{ApiKey, Uuid};

fn main() {
    let mut authorizer = StandardAuthorizer::new(AuthorizerConfig::from_configs([
        ("super.users", "User:admin"),
        ("allow.everyone.if.no.acl.found", "false"),
    ]));

    // As the controller would write them: one AccessControlEntryRecord per ACL.
    let acls = [
        (
            1,
            ResourcePattern::prefixed(ResourceType::Topic, "orders-"),
            AccessControlEntry::allow("User:*", "*", AclOperation::Read),
        ),
        (
            2,
            ResourcePattern::literal(ResourceType::Topic, "orders-audit"),
            AccessControlEntry::deny("User:bob", "*", AclOperation::Read),
        ),
        (
            3,
            ResourcePattern::literal(ResourceType::Group, "billing"),
            AccessControlEntry::allow("User:bob", "*", AclOperation::Read),
        ),
    ];
    for (id, pattern, entry) in acls {
        let record = AclWithId {
            id: Uuid::from_u128(id),
            binding: AclBinding::new(pattern, entry),
        }
        .to_record();
        authorizer
            .replay_access_control_entry(&record)
            .expect("valid record");
    }

    let bob = AuthorizableRequestContext::from_addr(
        KafkaPrincipal::user("bob"),
        "10.1.2.3".parse().unwrap(),
        "PLAINTEXT",
    );

    // OffsetCommit for group "billing" on two topics: which checks apply, and what do they say?
    let needs = api_acls(ApiKey::OffsetCommit);
    for check in needs.checks.iter().filter(|c| c.when == Condition::Always) {
        for req in check.any_of {
            let names: &[&str] = match req.target {
                Target::Groups => &["billing"],
                Target::Topics => &["orders-eu", "orders-audit"],
                _ => &[],
            };
            for name in names {
                let result =
                    authorizer.authorize_action(&bob, req.operation, req.resource_type, name);
                let code = if result.is_allowed() {
                    0
                } else {
                    req.error.code()
                };
                println!(
                    "{:?} {} {} {name:?}: {result:?} (error code {code})",
                    needs.api_key, req.operation, req.resource_type
                );
            }
        }
    }

    // KIP-430 authorized operations for Metadata's topic entry.
    let ops = authorizer.authorized_operations(&bob, ResourceType::Topic, "orders-eu");
    println!(
        "topic_authorized_operations for orders-eu = {} {:?}",
        ops.bits(),
        ops.operations()
    );
}
