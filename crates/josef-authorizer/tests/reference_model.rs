//! The indexed authorizer agrees with a naive reference that scans every ACL, on random ACL sets,
//! removals, requests and filters.

use std::collections::BTreeSet;

use josef_authorizer::*;
use josef_protocol::Uuid;
use proptest::prelude::*;

const CONCRETE_OPS: &[AclOperation] = &[
    AclOperation::All,
    AclOperation::Read,
    AclOperation::Write,
    AclOperation::Create,
    AclOperation::Delete,
    AclOperation::Alter,
    AclOperation::Describe,
    AclOperation::ClusterAction,
    AclOperation::DescribeConfigs,
    AclOperation::AlterConfigs,
    AclOperation::IdempotentWrite,
];

fn name(min: usize) -> impl Strategy<Value = String> {
    // A tiny alphabet (with a multi-byte char and the wildcard) makes prefixes collide often.
    prop::collection::vec(prop::sample::select(vec!["a", "b", "*", "é", "è"]), min..5)
        .prop_map(|parts| parts.concat())
}

fn resource_type() -> impl Strategy<Value = ResourceType> {
    prop::sample::select(vec![
        ResourceType::Topic,
        ResourceType::Group,
        ResourceType::Cluster,
    ])
}

fn binding() -> impl Strategy<Value = AclBinding> {
    (
        resource_type(),
        prop_oneof![name(1), Just("*".to_string())],
        prop::sample::select(vec![PatternType::Literal, PatternType::Prefixed]),
        prop::sample::select(vec![
            "User:alice",
            "User:bob",
            "User:*",
            "Group:alice",
            "alice",
        ]),
        prop::sample::select(vec!["*", "1.1.1.1", "2.2.2.2"]),
        prop::sample::select(CONCRETE_OPS.to_vec()),
        prop::sample::select(vec![AclPermissionType::Allow, AclPermissionType::Deny]),
    )
        .prop_map(|(rt, n, pt, principal, host, op, perm)| {
            AclBinding::new(
                ResourcePattern::new(rt, n, pt),
                AccessControlEntry::new(principal, host, op, perm),
            )
        })
}

#[derive(Debug, Clone)]
struct Request {
    principal: KafkaPrincipal,
    host: String,
    action: Action,
}

fn request() -> impl Strategy<Value = Request> {
    (
        prop::sample::select(vec!["User:alice", "User:bob", "User:carol", "Group:alice"]),
        prop::sample::select(vec!["1.1.1.1", "2.2.2.2"]),
        prop::sample::select(CONCRETE_OPS[1..].to_vec()),
        resource_type(),
        name(0),
    )
        .prop_map(|(p, host, op, rt, n)| Request {
            principal: p.parse().unwrap(),
            host: host.to_string(),
            action: Action::new(op, rt, n),
        })
}

fn filter() -> impl Strategy<Value = AclBindingFilter> {
    (
        prop::sample::select(vec![
            ResourceType::Any,
            ResourceType::Topic,
            ResourceType::Group,
        ]),
        prop::option::of(prop_oneof![name(1), Just("*".to_string())]),
        prop::sample::select(vec![
            PatternType::Any,
            PatternType::Match,
            PatternType::Literal,
            PatternType::Prefixed,
        ]),
        prop::option::of(prop::sample::select(vec!["User:alice", "User:*"])),
        prop::option::of(prop::sample::select(vec!["*", "1.1.1.1"])),
        prop::sample::select(vec![
            AclOperation::Any,
            AclOperation::Read,
            AclOperation::All,
        ]),
        prop::sample::select(vec![
            AclPermissionType::Any,
            AclPermissionType::Allow,
            AclPermissionType::Deny,
        ]),
    )
        .prop_map(|(rt, n, pt, principal, host, op, perm)| {
            AclBindingFilter::new(
                ResourcePatternFilter {
                    resource_type: rt,
                    name: n,
                    pattern_type: pt,
                },
                AccessControlEntryFilter {
                    principal: principal.map(str::to_string),
                    host: host.map(str::to_string),
                    operation: op,
                    permission_type: perm,
                },
            )
        })
}

/// The rules written out once more, over a plain list.
fn naive_authorize(
    config: &AuthorizerConfig,
    acls: &[AclBinding],
    r: &Request,
) -> AuthorizationResult {
    if config.super_users.contains(&r.principal.to_string()) {
        return AuthorizationResult::Allowed;
    }
    let a = &r.action;
    let covering: Vec<&AclBinding> = acls
        .iter()
        .filter(|b| {
            let p = &b.pattern;
            p.resource_type == a.resource_type
                && match p.pattern_type {
                    PatternType::Literal => p.name == a.resource_name || p.name == "*",
                    PatternType::Prefixed => a.resource_name.starts_with(&p.name),
                    _ => unreachable!(),
                }
        })
        .collect();
    let applies = |b: &&&AclBinding| {
        let e = &b.entry;
        let principal_ok = e.principal == "User:*" || e.principal == r.principal.to_string();
        let host_ok = e.host == "*" || e.host == r.host;
        let op_ok = e.operation == AclOperation::All
            || e.operation == a.operation
            || (e.permission_type == AclPermissionType::Allow
                && match a.operation {
                    AclOperation::Describe => matches!(
                        e.operation,
                        AclOperation::Read
                            | AclOperation::Write
                            | AclOperation::Delete
                            | AclOperation::Alter
                    ),
                    AclOperation::DescribeConfigs => e.operation == AclOperation::AlterConfigs,
                    _ => false,
                });
        principal_ok && host_ok && op_ok
    };
    let applying: Vec<&&AclBinding> = covering.iter().filter(applies).collect();
    if applying
        .iter()
        .any(|b| b.entry.permission_type == AclPermissionType::Deny)
    {
        AuthorizationResult::Denied
    } else if !applying.is_empty() || (covering.is_empty() && config.allow_everyone_if_no_acl_found)
    {
        AuthorizationResult::Allowed
    } else {
        AuthorizationResult::Denied
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn indexed_authorizer_agrees_with_a_scan(
        acls in prop::collection::vec(binding(), 0..40),
        removed in prop::collection::vec(any::<prop::sample::Index>(), 0..10),
        requests in prop::collection::vec(request(), 1..40),
        filters in prop::collection::vec(filter(), 1..10),
        super_bob in any::<bool>(),
        allow_everyone in any::<bool>(),
    ) {
        let mut config = AuthorizerConfig::default().with_allow_everyone_if_no_acl_found(allow_everyone);
        if super_bob {
            config = config.with_super_user("User:bob");
        }
        let mut authorizer = StandardAuthorizer::new(config.clone());
        let mut live: Vec<(Uuid, AclBinding)> = Vec::new();
        for (i, b) in acls.iter().enumerate() {
            let id = Uuid::from_u128(i as u128 + 1);
            authorizer.add_acl(id, b.clone()).unwrap();
            live.push((id, b.clone()));
        }
        for ix in removed {
            if live.is_empty() {
                break;
            }
            let (id, b) = live.remove(ix.index(live.len()));
            prop_assert_eq!(authorizer.remove_acl(&id).unwrap(), b);
        }
        let plain: Vec<AclBinding> = live.iter().map(|(_, b)| b.clone()).collect();
        prop_assert_eq!(authorizer.acl_count(), plain.len());

        for r in &requests {
            let ctx = AuthorizableRequestContext::new(r.principal.clone(), r.host.clone(), "L");
            let got = authorizer.authorize(&ctx, std::slice::from_ref(&r.action))[0];
            prop_assert_eq!(got, naive_authorize(&config, &plain, r), "{:?}", r);
        }

        for f in &filters {
            let got: BTreeSet<(Uuid, AclBinding)> = authorizer
                .describe_with_ids(f)
                .unwrap()
                .into_iter()
                .map(|a| (a.id, a.binding))
                .collect();
            let want: BTreeSet<(Uuid, AclBinding)> =
                live.iter().filter(|(_, b)| f.matches(b)).cloned().collect();
            prop_assert_eq!(got, want, "{:?}", f);
        }

        // Deleting with the filters leaves exactly what none of them matched.
        authorizer.delete_acls(&filters);
        let left: BTreeSet<Uuid> = authorizer.acls().map(|(id, _)| *id).collect();
        let want: BTreeSet<Uuid> = live
            .iter()
            .filter(|(_, b)| !filters.iter().any(|f| f.matches(b)))
            .map(|(id, _)| *id)
            .collect();
        prop_assert_eq!(left, want);
    }
}
