//! One test per StandardAuthorizer rule, and DescribeAcls / DeleteAcls / CreateAcls behaviour.

use josef_authorizer::convert::{
    acl_creation_result, bindings_from_create_request, creation_from_binding,
    delete_acls_filter_result, describe_request_from_filter, filter_from_describe_request,
};
use josef_authorizer::*;
use josef_protocol::messages::CreateAclsRequest;
use josef_protocol::{ErrorCode, Uuid};

use AclOperation::*;
use AuthorizationResult::{Allowed, Denied};
use ResourceType::{Cluster, Group, Topic, TransactionalId};

struct Fixture {
    authorizer: StandardAuthorizer,
    next_id: u128,
}

impl Fixture {
    fn new(config: AuthorizerConfig) -> Self {
        Fixture {
            authorizer: StandardAuthorizer::new(config),
            next_id: 0,
        }
    }

    fn plain() -> Self {
        Self::new(AuthorizerConfig::default())
    }

    fn add(&mut self, pattern: ResourcePattern, entry: AccessControlEntry) -> Uuid {
        self.next_id += 1;
        let id = Uuid::from_u128(self.next_id);
        self.authorizer
            .add_acl(id, AclBinding::new(pattern, entry))
            .unwrap();
        id
    }

    fn check(
        &self,
        who: &AuthorizableRequestContext,
        op: AclOperation,
        rt: ResourceType,
        name: &str,
    ) -> AuthorizationResult {
        let results = self.authorizer.authorize(who, &[Action::new(op, rt, name)]);
        results[0]
    }
}

fn user(name: &str) -> AuthorizableRequestContext {
    AuthorizableRequestContext::new(KafkaPrincipal::user(name), "127.0.0.1", "PLAINTEXT")
}

fn user_at(name: &str, host: &str) -> AuthorizableRequestContext {
    AuthorizableRequestContext::new(KafkaPrincipal::user(name), host, "PLAINTEXT")
}

fn lit(rt: ResourceType, name: &str) -> ResourcePattern {
    ResourcePattern::literal(rt, name)
}

fn pre(rt: ResourceType, name: &str) -> ResourcePattern {
    ResourcePattern::prefixed(rt, name)
}

fn allow(principal: &str, op: AclOperation) -> AccessControlEntry {
    AccessControlEntry::allow(principal, "*", op)
}

fn deny(principal: &str, op: AclOperation) -> AccessControlEntry {
    AccessControlEntry::deny(principal, "*", op)
}

#[test]
fn no_read_acl_denies_fetch() {
    let mut f = Fixture::plain();
    f.add(lit(Topic, "t"), allow("User:alice", Write));
    assert_eq!(f.check(&user("alice"), Read, Topic, "t"), Denied);
    assert_eq!(f.check(&user("alice"), Write, Topic, "t"), Allowed);
}

#[test]
fn deny_wins_over_allow() {
    let mut f = Fixture::plain();
    f.add(lit(Topic, "t"), allow("User:*", Read));
    f.add(lit(Topic, "t"), deny("User:bob", Read));
    assert_eq!(f.check(&user("bob"), Read, Topic, "t"), Denied);
    assert_eq!(f.check(&user("alice"), Read, Topic, "t"), Allowed);
    // A DENY on a covering prefix beats a literal ALLOW too.
    f.add(lit(Topic, "orders-eu"), allow("User:carol", Write));
    f.add(pre(Topic, "orders-"), deny("User:carol", Write));
    assert_eq!(f.check(&user("carol"), Write, Topic, "orders-eu"), Denied);
    // DENY ALL denies every operation.
    f.add(lit(Topic, "x"), allow("User:dave", Read));
    f.add(lit(Topic, "*"), deny("User:dave", All));
    assert_eq!(f.check(&user("dave"), Read, Topic, "x"), Denied);
}

#[test]
fn prefixed_acl_covers_longer_names_only() {
    let mut f = Fixture::plain();
    f.add(pre(Topic, "orders-"), allow("User:alice", Read));
    assert_eq!(f.check(&user("alice"), Read, Topic, "orders-eu"), Allowed);
    assert_eq!(f.check(&user("alice"), Read, Topic, "orders-"), Allowed);
    assert_eq!(f.check(&user("alice"), Read, Topic, "order"), Denied);
    assert_eq!(f.check(&user("alice"), Read, Topic, "xorders-eu"), Denied);
    // Only the same resource type.
    assert_eq!(f.check(&user("alice"), Read, Group, "orders-eu"), Denied);
}

#[test]
fn literal_acl_is_exact() {
    let mut f = Fixture::plain();
    f.add(lit(Topic, "orders"), allow("User:alice", Read));
    assert_eq!(f.check(&user("alice"), Read, Topic, "orders"), Allowed);
    assert_eq!(f.check(&user("alice"), Read, Topic, "orders-eu"), Denied);
    // A prefixed ACL named "*" is not a wildcard.
    f.add(pre(Topic, "*"), allow("User:bob", Read));
    assert_eq!(f.check(&user("bob"), Read, Topic, "orders"), Denied);
}

#[test]
fn wildcard_resource_covers_every_name_of_its_type() {
    let mut f = Fixture::plain();
    f.add(lit(Topic, "*"), allow("User:alice", Write));
    assert_eq!(f.check(&user("alice"), Write, Topic, "anything"), Allowed);
    assert_eq!(f.check(&user("alice"), Write, Topic, "*"), Allowed);
    assert_eq!(f.check(&user("alice"), Write, Group, "anything"), Denied);
}

#[test]
fn super_users_are_allowed_everything_even_over_deny() {
    let config = AuthorizerConfig::from_configs([("super.users", "User:alice;User:bob")]);
    let mut f = Fixture::new(config);
    f.add(lit(Topic, "*"), deny("User:alice", All));
    assert_eq!(f.check(&user("alice"), Read, Topic, "t"), Allowed);
    assert_eq!(
        f.check(&user("bob"), ClusterAction, Cluster, CLUSTER_NAME),
        Allowed
    );
    assert_eq!(f.check(&user("carol"), Read, Topic, "t"), Denied);
    // Another principal type with the same name is not a super user.
    let svc = AuthorizableRequestContext::new(KafkaPrincipal::new("Service", "alice"), "h", "L");
    assert_eq!(f.check(&svc, Read, Topic, "t"), Denied);
}

#[test]
fn allow_implies_describe_and_describe_configs_but_deny_does_not() {
    let mut f = Fixture::plain();
    for (i, op) in [Read, Write, Delete, Alter].into_iter().enumerate() {
        let name = format!("t{i}");
        f.add(lit(Topic, &name), allow("User:alice", op));
        assert_eq!(
            f.check(&user("alice"), Describe, Topic, &name),
            Allowed,
            "{op}"
        );
        assert_eq!(
            f.check(&user("alice"), DescribeConfigs, Topic, &name),
            Denied,
            "{op}"
        );
    }
    f.add(lit(Topic, "c"), allow("User:alice", AlterConfigs));
    assert_eq!(
        f.check(&user("alice"), DescribeConfigs, Topic, "c"),
        Allowed
    );
    assert_eq!(f.check(&user("alice"), Describe, Topic, "c"), Denied);
    // Create does not imply Describe.
    f.add(lit(Topic, "n"), allow("User:alice", Create));
    assert_eq!(f.check(&user("alice"), Describe, Topic, "n"), Denied);
    // ALL allows everything.
    f.add(lit(Group, "g"), allow("User:alice", All));
    for op in [Read, Describe, Delete, DescribeConfigs, AlterConfigs] {
        assert_eq!(f.check(&user("alice"), op, Group, "g"), Allowed, "{op}");
    }
    // A DENY READ does not deny DESCRIBE (implication is for ALLOW only).
    f.add(lit(Topic, "d"), allow("User:bob", Write));
    f.add(lit(Topic, "d"), deny("User:bob", Read));
    assert_eq!(f.check(&user("bob"), Describe, Topic, "d"), Allowed);
}

#[test]
fn allow_everyone_if_no_acl_found_only_helps_resources_without_acls() {
    let mut f = Fixture::new(AuthorizerConfig::default().with_allow_everyone_if_no_acl_found(true));
    f.add(lit(Topic, "guarded"), allow("User:alice", Read));
    assert_eq!(f.check(&user("bob"), Read, Topic, "open"), Allowed);
    assert_eq!(f.check(&user("bob"), Read, Topic, "guarded"), Denied);
    // An ACL of another principal or operation still makes the resource "have ACLs".
    f.add(pre(Topic, "pre"), allow("User:alice", Write));
    assert_eq!(f.check(&user("bob"), Read, Topic, "prefixed-name"), Denied);
}

#[test]
fn without_allow_everyone_no_acl_means_denied() {
    let f = Fixture::plain();
    assert!(!f.authorizer.config().allow_everyone_if_no_acl_found);
    assert_eq!(f.check(&user("bob"), Read, Topic, "open"), Denied);
    assert_eq!(
        f.check(&user("bob"), Describe, Cluster, CLUSTER_NAME),
        Denied
    );
}

#[test]
fn host_must_be_wildcard_or_exact_address() {
    let mut f = Fixture::plain();
    f.add(
        lit(Topic, "t"),
        AccessControlEntry::allow("User:alice", "10.0.0.1", Read),
    );
    assert_eq!(
        f.check(&user_at("alice", "10.0.0.1"), Read, Topic, "t"),
        Allowed
    );
    assert_eq!(
        f.check(&user_at("alice", "127.0.0.1"), Read, Topic, "t"),
        Denied
    );
    let v6 = AuthorizableRequestContext::from_addr(
        KafkaPrincipal::user("alice"),
        "::ffff:10.0.0.1".parse().unwrap(),
        "L",
    );
    assert_eq!(f.check(&v6, Read, Topic, "t"), Allowed);
}

#[test]
fn principal_wildcard_matches_every_user() {
    let mut f = Fixture::plain();
    f.add(lit(Topic, "t"), allow("User:*", Read));
    assert_eq!(f.check(&user("anyone"), Read, Topic, "t"), Allowed);
    assert_eq!(f.check(&user("ANONYMOUS"), Read, Topic, "t"), Allowed);
    // The principal must otherwise be equal, type included.
    f.add(lit(Topic, "u"), allow("User:alice", Read));
    assert_eq!(f.check(&user("alicia"), Read, Topic, "u"), Denied);
    assert_eq!(f.check(&user("alice"), Read, Topic, "u"), Allowed);
}

#[test]
fn authorize_answers_each_action_in_order() {
    let mut f = Fixture::plain();
    f.add(lit(Topic, "a"), allow("User:alice", Read));
    let actions = [
        Action::new(Read, Topic, "a"),
        Action::new(Read, Topic, "b"),
        Action::cluster(Describe),
        Action::new(Describe, Topic, "a"),
    ];
    assert_eq!(
        f.authorizer.authorize(&user("alice"), &actions),
        [Allowed, Denied, Denied, Allowed]
    );
}

#[test]
fn authorize_by_resource_type_rules() {
    let mut f = Fixture::plain();
    let ctx = user("alice");
    let by_type = |f: &Fixture| {
        f.authorizer
            .authorize_by_resource_type(&ctx, Write, Topic)
            .unwrap()
    };
    assert_eq!(by_type(&f), Denied);
    // An ALLOW on some topic is enough.
    let allow_id = f.add(lit(Topic, "t1"), allow("User:alice", Write));
    assert_eq!(by_type(&f), Allowed);
    // ...unless an equal literal DENY shadows it,
    let deny_id = f.add(lit(Topic, "t1"), deny("User:alice", Write));
    assert_eq!(by_type(&f), Denied);
    f.authorizer.remove_acl(&deny_id).unwrap();
    // ...or a covering prefixed DENY,
    f.add(pre(Topic, "t"), deny("User:alice", Write));
    assert_eq!(by_type(&f), Denied);
    // while an allowed prefix no DENY covers still allows.
    f.add(pre(Topic, "ok-"), allow("User:alice", All));
    assert_eq!(by_type(&f), Allowed);
    // A wildcard DENY denies everything.
    f.add(lit(Topic, "*"), deny("User:*", Write));
    assert_eq!(by_type(&f), Denied);
    f.authorizer.remove_acl(&allow_id).unwrap();
    // Implied operations do not count here: READ does not give DESCRIBE by type.
    let mut g = Fixture::plain();
    g.add(lit(Group, "g"), allow("User:alice", Read));
    assert_eq!(
        g.authorizer
            .authorize_by_resource_type(&ctx, Describe, Group)
            .unwrap(),
        Denied
    );
    // A wildcard ALLOW allows; super users always pass.
    g.add(lit(TransactionalId, "*"), allow("User:alice", Write));
    assert_eq!(
        g.authorizer
            .authorize_by_resource_type(&ctx, Write, TransactionalId)
            .unwrap(),
        Allowed
    );
    let su = Fixture::new(AuthorizerConfig::default().with_super_user("User:root"));
    assert_eq!(
        su.authorizer
            .authorize_by_resource_type(&user("root"), Write, Topic)
            .unwrap(),
        Allowed
    );
    // allow.everyone.if.no.acl.found passes when nothing covers the made-up name.
    let open = Fixture::new(AuthorizerConfig::default().with_allow_everyone_if_no_acl_found(true));
    assert_eq!(
        open.authorizer
            .authorize_by_resource_type(&ctx, Write, Topic)
            .unwrap(),
        Allowed
    );
    // Filters are refused.
    let err = g
        .authorizer
        .authorize_by_resource_type(&ctx, Any, Topic)
        .unwrap_err();
    assert_eq!(err.kafka_error_code(), ErrorCode::UnknownServerError);
    assert!(g
        .authorizer
        .authorize_by_resource_type(&ctx, Write, ResourceType::Any)
        .is_err());
}

#[test]
fn authorized_operations_bits() {
    let mut f = Fixture::plain();
    f.add(lit(Topic, "t"), allow("User:alice", Read));
    let ops = f
        .authorizer
        .authorized_operations(&user("alice"), Topic, "t");
    assert_eq!(ops.bits(), (1 << 3) | (1 << 8));
    assert_eq!(ops.operations(), [Read, Describe]);
    // No authorizer: every supported operation.
    let none = authorized_operations(None, &user("alice"), Cluster, CLUSTER_NAME);
    let want: i32 = [
        Create,
        ClusterAction,
        DescribeConfigs,
        AlterConfigs,
        IdempotentWrite,
        Alter,
        Describe,
    ]
    .iter()
    .map(|op| 1 << op.code())
    .sum();
    assert_eq!(none.bits(), want);
    // A super user gets every supported operation of the type, and only those.
    let su = Fixture::new(AuthorizerConfig::default().with_super_user("User:root"));
    let group_ops = su
        .authorizer
        .authorized_operations(&user("root"), Group, "g");
    assert_eq!(group_ops, AuthorizedOperations::all_supported(Group));
    assert!(!group_ops.contains(Write));
    assert_eq!(AUTHORIZED_OPERATIONS_OMITTED, i32::MIN);
}

fn filter(rt: ResourceType, name: Option<&str>, pt: PatternType) -> AclBindingFilter {
    AclBindingFilter::of_patterns(rt, name, pt)
}

fn match_fixture() -> Fixture {
    let mut f = Fixture::plain();
    f.add(lit(Topic, "orders-eu"), allow("User:a", Read));
    f.add(lit(Topic, "*"), allow("User:b", Read));
    f.add(pre(Topic, "orders-"), allow("User:c", Read));
    f.add(pre(Topic, "orders-us"), allow("User:d", Read));
    f.add(lit(Topic, "orders"), allow("User:e", Read));
    f.add(lit(Group, "orders-eu"), allow("User:f", Read));
    f
}

fn principals(bindings: &[AclBinding]) -> Vec<&str> {
    let mut p: Vec<&str> = bindings
        .iter()
        .map(|b| b.entry.principal.as_str())
        .collect();
    p.sort();
    p
}

#[test]
fn describe_with_match_returns_every_pattern_that_applies() {
    let f = match_fixture();
    let got = f
        .authorizer
        .describe(&filter(Topic, Some("orders-eu"), PatternType::Match))
        .unwrap();
    assert_eq!(principals(&got), ["User:a", "User:b", "User:c"]);
    // MATCH with ANY resource type spans types.
    let got = f
        .authorizer
        .describe(&filter(
            ResourceType::Any,
            Some("orders-eu"),
            PatternType::Match,
        ))
        .unwrap();
    assert_eq!(principals(&got), ["User:a", "User:b", "User:c", "User:f"]);
}

#[test]
fn describe_with_any_and_concrete_pattern_types() {
    let f = match_fixture();
    let got = f
        .authorizer
        .describe(&filter(
            ResourceType::Any,
            Some("orders-eu"),
            PatternType::Any,
        ))
        .unwrap();
    assert_eq!(principals(&got), ["User:a", "User:f"]);
    let got = f
        .authorizer
        .describe(&filter(Topic, Some("orders-"), PatternType::Prefixed))
        .unwrap();
    assert_eq!(principals(&got), ["User:c"]);
    let got = f
        .authorizer
        .describe(&filter(Topic, Some("orders-"), PatternType::Literal))
        .unwrap();
    assert!(got.is_empty());
    let got = f
        .authorizer
        .describe(&filter(Topic, None, PatternType::Prefixed))
        .unwrap();
    assert_eq!(principals(&got), ["User:c", "User:d"]);
    // Null everywhere: everything.
    assert_eq!(
        f.authorizer.describe(&AclBindingFilter::ANY).unwrap().len(),
        6
    );
    // Entry filter fields narrow further.
    let mut by_principal = AclBindingFilter::ANY;
    by_principal.entry_filter.principal = Some("User:c".into());
    assert_eq!(
        principals(&f.authorizer.describe(&by_principal).unwrap()),
        ["User:c"]
    );
}

#[test]
fn describe_through_the_protocol_filter() {
    let f = match_fixture();
    let req = describe_request_from_filter(&filter(Topic, Some("orders-eu"), PatternType::Match));
    let got = f
        .authorizer
        .describe(&filter_from_describe_request(&req))
        .unwrap();
    assert_eq!(got.len(), 3);
    // An unknown code in the request is INVALID_REQUEST.
    let mut bad = req.clone();
    bad.operation = 77;
    let err = f
        .authorizer
        .describe(&filter_from_describe_request(&bad))
        .unwrap_err();
    assert_eq!(err.kafka_error_code(), ErrorCode::InvalidRequest);
}

#[test]
fn delete_with_match_removes_literal_wildcard_and_covering_prefixes() {
    let mut f = match_fixture();
    let results = f
        .authorizer
        .delete_acls(&[filter(Topic, Some("orders-eu"), PatternType::Match)]);
    let removed: Vec<AclBinding> = results[0]
        .as_ref()
        .unwrap()
        .iter()
        .map(|a| a.binding.clone())
        .collect();
    assert_eq!(principals(&removed), ["User:a", "User:b", "User:c"]);
    assert_eq!(f.authorizer.acl_count(), 3);
    let rest = f.authorizer.describe(&AclBindingFilter::ANY).unwrap();
    assert_eq!(principals(&rest), ["User:d", "User:e", "User:f"]);
    assert_eq!(f.check(&user("c"), Read, Topic, "orders-x"), Denied);
}

#[test]
fn delete_reports_per_filter_matches_and_errors() {
    let mut f = match_fixture();
    let mut unknown = AclBindingFilter::ANY;
    unknown.entry_filter.permission_type = AclPermissionType::Unknown;
    let results = f.authorizer.delete_acls(&[
        filter(Topic, Some("orders"), PatternType::Literal),
        filter(Topic, None, PatternType::Any),
        unknown,
        filter(Group, Some("none"), PatternType::Any),
    ]);
    // A binding two filters match is reported under both, as Kafka's controller does.
    assert_eq!(principals(&bindings(&results[0])), ["User:e"]);
    assert_eq!(bindings(&results[1]).len(), 5);
    assert_eq!(
        results[2].as_ref().unwrap_err().kafka_error_code(),
        ErrorCode::InvalidRequest
    );
    assert!(bindings(&results[3]).is_empty());
    assert_eq!(f.authorizer.acl_count(), 1);
    let wire = delete_acls_filter_result(&results[2]);
    assert_eq!(wire.error_code, ErrorCode::InvalidRequest.code());
    assert_eq!(
        delete_acls_filter_result(&results[1]).matching_acls.len(),
        5
    );
}

fn bindings(r: &Result<Vec<AclWithId>, AclError>) -> Vec<AclBinding> {
    r.as_ref()
        .unwrap()
        .iter()
        .map(|a| a.binding.clone())
        .collect()
}

#[test]
fn plan_delete_does_not_mutate() {
    let f = match_fixture();
    let plan = f.authorizer.plan_delete(&[AclBindingFilter::ANY]);
    assert_eq!(plan[0].as_ref().unwrap().len(), 6);
    assert_eq!(f.authorizer.acl_count(), 6);
    let ids: Vec<_> = plan[0]
        .as_ref()
        .unwrap()
        .iter()
        .map(|a| a.to_remove_record().id)
        .collect();
    assert!(ids.iter().all(|id| f.authorizer.acl(id).is_some()));
}

#[test]
fn create_validates_dedups_and_assigns_fresh_ids() {
    let mut a = StandardAuthorizer::default();
    let good = AclBinding::new(lit(Topic, "t"), allow("User:alice", Read));
    let bindings = [
        good.clone(),
        good.clone(),
        AclBinding::new(
            ResourcePattern::new(Topic, "t", PatternType::Match),
            allow("User:a", Read),
        ),
        AclBinding::new(lit(Cluster, "other"), allow("User:a", Alter)),
        AclBinding::new(lit(Cluster, CLUSTER_NAME), allow("User:a", Alter)),
    ];
    // The id source first returns zero, then an id already used in this request, then fresh ones.
    let mut script = vec![0u128, 7, 7, 8].into_iter();
    let plan = a.create_acls(&bindings, || Uuid::from_u128(script.next().unwrap_or(99)));
    assert_eq!(
        plan.results[0],
        Ok(AclCreateOutcome::Created(Uuid::from_u128(7)))
    );
    assert_eq!(plan.results[1], Ok(AclCreateOutcome::AlreadyExists));
    assert_eq!(
        plan.results[2],
        Err(AclError::InvalidPatternType(PatternType::Match))
    );
    assert_eq!(
        plan.results[3],
        Err(AclError::InvalidClusterName("other".into()))
    );
    assert_eq!(
        plan.results[4],
        Ok(AclCreateOutcome::Created(Uuid::from_u128(8)))
    );
    assert_eq!(plan.new_acls.len(), 2);
    assert_eq!(a.acl_count(), 2);
    // A later duplicate of an existing ACL writes no record either.
    let again = a.plan_create(&[good], || Uuid::from_u128(1000));
    assert_eq!(again.results, [Ok(AclCreateOutcome::AlreadyExists)]);
    assert!(again.new_acls.is_empty());
    // The wire answers.
    assert_eq!(acl_creation_result(&plan.results[1]).error_code, 0);
    assert_eq!(
        acl_creation_result(&plan.results[2]).error_code,
        ErrorCode::InvalidRequest.code()
    );
    // An id source that never yields a fresh id fails that creation instead of looping.
    let stuck = a.plan_create(
        &[AclBinding::new(lit(Topic, "u"), allow("User:a", Read))],
        || Uuid::from_u128(7),
    );
    assert_eq!(stuck.results, [Err(AclError::NoFreshAclId)]);
}

#[test]
fn create_request_validation_errors() {
    let refused = [
        AclBinding::new(lit(ResourceType::Any, "t"), allow("User:a", Read)),
        AclBinding::new(lit(Topic, ""), allow("User:a", Read)),
        AclBinding::new(lit(Topic, "t"), allow("User:a", Any)),
        AclBinding::new(
            lit(Topic, "t"),
            AccessControlEntry::new("User:a", "*", Read, AclPermissionType::Any),
        ),
        AclBinding::new(
            ResourcePattern::new(Topic, "t", PatternType::Any),
            allow("User:a", Read),
        ),
    ];
    let req = CreateAclsRequest {
        creations: refused.iter().map(creation_from_binding).collect(),
        ..Default::default()
    };
    let bindings = bindings_from_create_request(&req);
    let errs: Vec<AclError> = bindings.iter().map(|b| b.validate().unwrap_err()).collect();
    assert_eq!(
        errs,
        [
            AclError::InvalidResourceType(ResourceType::Any),
            AclError::EmptyResourceName,
            AclError::InvalidOperation(Any),
            AclError::InvalidPermissionType(AclPermissionType::Any),
            AclError::InvalidPatternType(PatternType::Any),
        ]
    );
    assert!(errs
        .iter()
        .all(|e| e.kafka_error_code() == ErrorCode::InvalidRequest));
}

#[test]
fn records_replay_into_the_index() {
    let mut source = StandardAuthorizer::default();
    let plan = source.create_acls(
        &[AclBinding::new(pre(Topic, "logs-"), allow("User:*", Read))],
        || Uuid::from_u128(5),
    );
    let record = plan.new_acls[0].to_record();
    let mut replica = StandardAuthorizer::default();
    replica.replay_access_control_entry(&record).unwrap();
    assert_eq!(f_check(&replica, "logs-1"), Allowed);
    assert_eq!(
        replica.replay_access_control_entry(&record),
        Err(AclError::DuplicateAclId(Uuid::from_u128(5)))
    );
    replica
        .replay_remove_access_control_entry(&plan.new_acls[0].to_remove_record())
        .unwrap();
    assert_eq!(f_check(&replica, "logs-1"), Denied);
    assert_eq!(replica.acl_count(), 0);
    // A record with an invalid pattern type is refused, not indexed.
    let mut bad = record.clone();
    bad.pattern_type = PatternType::Match.code();
    assert_eq!(
        replica.replay_access_control_entry(&bad),
        Err(AclError::InvalidPatternType(PatternType::Match))
    );
}

fn f_check(a: &StandardAuthorizer, topic: &str) -> AuthorizationResult {
    a.authorize_action(&user("x"), Read, Topic, topic)
}
