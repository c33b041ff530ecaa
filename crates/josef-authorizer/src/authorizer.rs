//! [`StandardAuthorizer`]: Kafka's KRaft authorizer rules over an indexed set of ACLs.

use std::collections::{BTreeSet, HashSet};
use std::ops::ControlFlow;

use josef_protocol::Uuid;

use crate::binding::{
    AccessControlEntry, AclBinding, AclBindingFilter, AclWithId, WILDCARD_HOST, WILDCARD_PRINCIPAL,
    WILDCARD_RESOURCE,
};
use crate::config::AuthorizerConfig;
use crate::context::{Action, AuthorizableRequestContext, AuthorizationResult, KafkaPrincipal};
use crate::error::AclError;
use crate::index::AclIndex;
use crate::operations::AuthorizedOperations;
use crate::types::{AclOperation, AclPermissionType, PatternType, ResourceType};

/// How many ids [`StandardAuthorizer::plan_create`] asks its id source for before giving up on one
/// creation (Kafka retries random UUIDs until one is unused; a real source collides never).
const MAX_ID_ATTEMPTS: usize = 64;

/// What a successful creation did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AclCreateOutcome {
    /// A new ACL with this id (an AccessControlEntryRecord is due).
    Created(Uuid),
    /// An equal ACL already exists (or came earlier in the same request); Kafka answers success
    /// and writes no record.
    AlreadyExists,
}

/// The outcome of [`StandardAuthorizer::plan_create`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatePlan {
    /// One result per binding, in request order.
    pub results: Vec<Result<AclCreateOutcome, AclError>>,
    /// The ACLs to add (one AccessControlEntryRecord each), in request order.
    pub new_acls: Vec<AclWithId>,
}

/// Kafka's `StandardAuthorizer`: super users, DENY over ALLOW, literal / prefixed / wildcard
/// patterns, the `User:*` principal, the `*` host, implied operations, and
/// `allow.everyone.if.no.acl.found`.
///
/// It is a pure state machine: ACLs come in as metadata records (or through
/// [`create_acls`](Self::create_acls) / [`delete_acls`](Self::delete_acls) for a broker without a
/// controller), and questions are answered from the current set.
#[derive(Debug, Clone, Default)]
pub struct StandardAuthorizer {
    config: AuthorizerConfig,
    index: AclIndex,
}

impl StandardAuthorizer {
    /// An authorizer with no ACLs.
    pub fn new(config: AuthorizerConfig) -> Self {
        StandardAuthorizer {
            config,
            index: AclIndex::default(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &AuthorizerConfig {
        &self.config
    }

    /// Replaces the configuration (configs can change at runtime), keeping the ACLs.
    pub fn set_config(&mut self, config: AuthorizerConfig) {
        self.config = config;
    }

    /// The number of ACLs.
    pub fn acl_count(&self) -> usize {
        self.index.len()
    }

    /// The ACL with this id.
    pub fn acl(&self, id: &Uuid) -> Option<&AclBinding> {
        self.index.get(id)
    }

    /// Every ACL, by id.
    pub fn acls(&self) -> impl Iterator<Item = (&Uuid, &AclBinding)> {
        self.index.iter()
    }

    /// Adds an ACL (an AccessControlEntryRecord replayed from the metadata log). Refuses a zero or
    /// already used id and a binding the controller would not have written.
    pub fn add_acl(&mut self, id: Uuid, binding: AclBinding) -> Result<(), AclError> {
        self.index.insert(id, binding)
    }

    /// Removes an ACL (a RemoveAccessControlEntryRecord), returning it.
    pub fn remove_acl(&mut self, id: &Uuid) -> Result<AclBinding, AclError> {
        self.index.remove(id)
    }

    /// True if `principal` is in `super.users`.
    pub fn is_super_user(&self, principal: &KafkaPrincipal) -> bool {
        !self.config.super_users.is_empty()
            && self.config.super_users.contains(&principal.to_string())
    }

    /// Decides each action, in order.
    pub fn authorize(
        &self,
        context: &AuthorizableRequestContext,
        actions: &[Action],
    ) -> Vec<AuthorizationResult> {
        let superuser = self.is_super_user(&context.principal);
        actions
            .iter()
            .map(|a| {
                self.decide(
                    superuser,
                    context,
                    a.operation,
                    a.resource_type,
                    &a.resource_name,
                )
            })
            .collect()
    }

    /// Decides one action.
    pub fn authorize_action(
        &self,
        context: &AuthorizableRequestContext,
        operation: AclOperation,
        resource_type: ResourceType,
        resource_name: &str,
    ) -> AuthorizationResult {
        let superuser = self.is_super_user(&context.principal);
        self.decide(superuser, context, operation, resource_type, resource_name)
    }

    /// True if the action is allowed.
    pub fn is_allowed(
        &self,
        context: &AuthorizableRequestContext,
        operation: AclOperation,
        resource_type: ResourceType,
        resource_name: &str,
    ) -> bool {
        self.authorize_action(context, operation, resource_type, resource_name)
            .is_allowed()
    }

    /// A super user is allowed everything; anyone else as the ACLs say.
    fn decide(
        &self,
        superuser: bool,
        context: &AuthorizableRequestContext,
        operation: AclOperation,
        resource_type: ResourceType,
        resource_name: &str,
    ) -> AuthorizationResult {
        if superuser {
            return AuthorizationResult::Allowed;
        }
        let mut has_resource_acls = false;
        let mut allowed = false;
        let mut denied = false;
        self.index
            .visit_covering(resource_type, resource_name, |covering| {
                has_resource_acls = true;
                for (_, entry) in covering.entries {
                    match entry_result(operation, context, entry) {
                        Some(AuthorizationResult::Denied) => {
                            denied = true;
                            return ControlFlow::Break(());
                        }
                        Some(AuthorizationResult::Allowed) => allowed = true,
                        None => {}
                    }
                }
                ControlFlow::Continue(())
            });
        // An applying DENY wins; else an applying ALLOW; else the no-ACL default, but only for a
        // resource that no ACL covers at all.
        let allow = !denied
            && (allowed || (!has_resource_acls && self.config.allow_everyone_if_no_acl_found));
        if allow {
            AuthorizationResult::Allowed
        } else {
            AuthorizationResult::Denied
        }
    }

    /// Kafka's `Authorizer.authorizeByResourceType`: may the principal do `operation` on at least
    /// one resource of `resource_type`? Used for idempotent InitProducerId (Topic WRITE on some
    /// topic).
    ///
    /// Allowed if the action is allowed on a made-up name (so super users, and
    /// `allow.everyone.if.no.acl.found` where no wildcard or covering ACL exists, pass); otherwise
    /// a wildcard DENY denies, a wildcard ALLOW allows, and any other applying ALLOW allows unless
    /// an equal literal DENY or a prefixed DENY covering its name shadows it. Operations are
    /// matched exactly (or by ALL): nothing is implied here.
    pub fn authorize_by_resource_type(
        &self,
        context: &AuthorizableRequestContext,
        operation: AclOperation,
        resource_type: ResourceType,
    ) -> Result<AuthorizationResult, AclError> {
        if matches!(operation, AclOperation::Any | AclOperation::Unknown)
            || !resource_type.is_concrete()
        {
            return Err(AclError::NotConcreteForResourceTypeCheck {
                operation,
                resource_type,
            });
        }
        if self
            .authorize_action(context, operation, resource_type, "hardcode")
            .is_allowed()
        {
            return Ok(AuthorizationResult::Allowed);
        }
        let mut deny_literal = HashSet::new();
        let mut deny_prefixed = BTreeSet::new();
        let mut allow = Vec::new();
        let mut wildcard_allow = false;
        for acl in self.index.of_type(resource_type) {
            let AclBinding { pattern, entry } = acl.binding;
            if !host_applies(&entry, context) || !principal_applies(&entry, context) {
                continue;
            }
            if entry.operation != operation && entry.operation != AclOperation::All {
                continue;
            }
            let wildcard =
                pattern.pattern_type == PatternType::Literal && pattern.name == WILDCARD_RESOURCE;
            match (entry.permission_type, pattern.pattern_type) {
                (AclPermissionType::Deny, _) if wildcard => return Ok(AuthorizationResult::Denied),
                (AclPermissionType::Deny, PatternType::Literal) => {
                    deny_literal.insert(pattern.name);
                }
                (AclPermissionType::Deny, _) => {
                    deny_prefixed.insert(pattern.name);
                }
                (AclPermissionType::Allow, _) if wildcard => wildcard_allow = true,
                (AclPermissionType::Allow, pt) => allow.push((pt, pattern.name)),
                _ => {}
            }
        }
        if wildcard_allow {
            return Ok(AuthorizationResult::Allowed);
        }
        let unshadowed = allow.iter().any(|(pt, name)| {
            let literal_denied = *pt == PatternType::Literal && deny_literal.contains(name);
            let prefix_denied = deny_prefixed
                .iter()
                .any(|p: &String| name.starts_with(p.as_str()));
            !literal_denied && !prefix_denied
        });
        Ok(if unshadowed {
            AuthorizationResult::Allowed
        } else {
            AuthorizationResult::Denied
        })
    }

    /// KIP-430: the operations Kafka would report as authorized on this resource (the type's
    /// [supported operations](ResourceType::supported_operations) that are allowed).
    pub fn authorized_operations(
        &self,
        context: &AuthorizableRequestContext,
        resource_type: ResourceType,
        resource_name: &str,
    ) -> AuthorizedOperations {
        AuthorizedOperations::from_operations(
            resource_type
                .supported_operations()
                .iter()
                .copied()
                .filter(|op| self.is_allowed(context, *op, resource_type, resource_name)),
        )
    }

    /// DescribeAcls: the ACLs `filter` matches (INVALID_REQUEST for `Unknown` fields), sorted.
    pub fn describe(&self, filter: &AclBindingFilter) -> Result<Vec<AclBinding>, AclError> {
        Ok(self
            .describe_with_ids(filter)?
            .into_iter()
            .map(|a| a.binding)
            .collect())
    }

    /// [`describe`](Self::describe) with the ids.
    pub fn describe_with_ids(&self, filter: &AclBindingFilter) -> Result<Vec<AclWithId>, AclError> {
        filter.validate()?;
        Ok(self.index.matching(filter))
    }

    /// CreateAcls without applying anything (a controller writes the records and adds the ACLs
    /// when it replays them): validates each binding, skips bindings equal to an existing ACL or to
    /// an earlier one in the request, and takes a fresh non-zero id from `next_id` for each new ACL.
    pub fn plan_create(
        &self,
        bindings: &[AclBinding],
        mut next_id: impl FnMut() -> Uuid,
    ) -> CreatePlan {
        let mut results = Vec::with_capacity(bindings.len());
        let mut new_acls: Vec<AclWithId> = Vec::new();
        let mut planned: HashSet<&AclBinding> = HashSet::new();
        let mut planned_ids: HashSet<Uuid> = HashSet::new();
        for binding in bindings {
            if let Err(e) = binding.validate() {
                results.push(Err(e));
                continue;
            }
            if self.index.find(binding).is_some() || planned.contains(binding) {
                results.push(Ok(AclCreateOutcome::AlreadyExists));
                continue;
            }
            let fresh = (0..MAX_ID_ATTEMPTS).map(|_| next_id()).find(|id| {
                !id.is_zero() && !self.index.contains_id(id) && !planned_ids.contains(id)
            });
            let Some(id) = fresh else {
                results.push(Err(AclError::NoFreshAclId));
                continue;
            };
            planned.insert(binding);
            planned_ids.insert(id);
            new_acls.push(AclWithId {
                id,
                binding: binding.clone(),
            });
            results.push(Ok(AclCreateOutcome::Created(id)));
        }
        CreatePlan { results, new_acls }
    }

    /// CreateAcls applied at once (for a broker that is its own controller): see
    /// [`plan_create`](Self::plan_create).
    pub fn create_acls(
        &mut self,
        bindings: &[AclBinding],
        next_id: impl FnMut() -> Uuid,
    ) -> CreatePlan {
        let plan = self.plan_create(bindings, next_id);
        for acl in &plan.new_acls {
            // Validated and fresh by construction; an error here would be a bug in plan_create.
            let added = self.index.insert(acl.id, acl.binding.clone());
            debug_assert!(added.is_ok(), "{added:?}");
        }
        plan
    }

    /// DeleteAcls without applying anything: per filter, the ACLs it matches now (an ACL two
    /// filters match is listed under both, as Kafka does), or INVALID_REQUEST for a filter with
    /// `Unknown` fields.
    pub fn plan_delete(
        &self,
        filters: &[AclBindingFilter],
    ) -> Vec<Result<Vec<AclWithId>, AclError>> {
        filters.iter().map(|f| self.describe_with_ids(f)).collect()
    }

    /// DeleteAcls applied at once: see [`plan_delete`](Self::plan_delete).
    pub fn delete_acls(
        &mut self,
        filters: &[AclBindingFilter],
    ) -> Vec<Result<Vec<AclWithId>, AclError>> {
        let results = self.plan_delete(filters);
        for acl in results.iter().flatten().flatten() {
            // Ignoring the error: an ACL listed under two filters is removed once.
            let _ = self.index.remove(&acl.id);
        }
        results
    }
}

/// Whether `entry` applies to the request, and if so its verdict (`findResult`): the resource is
/// already known to be covered.
fn entry_result(
    operation: AclOperation,
    context: &AuthorizableRequestContext,
    entry: &AccessControlEntry,
) -> Option<AuthorizationResult> {
    if !principal_applies(entry, context) || !host_applies(entry, context) {
        return None;
    }
    let allow = entry.permission_type == AclPermissionType::Allow;
    if entry.operation != AclOperation::All {
        let matches = if allow {
            implied_by_allow(entry.operation, operation)
        } else {
            entry.operation == operation
        };
        if !matches {
            return None;
        }
    }
    Some(if allow {
        AuthorizationResult::Allowed
    } else {
        AuthorizationResult::Denied
    })
}

/// True if an ALLOW ACL for `granted` allows `requested`: the same operation, or DESCRIBE from
/// READ / WRITE / DELETE / ALTER, or DESCRIBE_CONFIGS from ALTER_CONFIGS. (ALL is handled by the
/// caller; DENY ACLs imply nothing.)
pub fn implied_by_allow(granted: AclOperation, requested: AclOperation) -> bool {
    use AclOperation::*;
    match requested {
        Describe => matches!(granted, Describe | Read | Write | Delete | Alter),
        DescribeConfigs => matches!(granted, DescribeConfigs | AlterConfigs),
        _ => granted == requested,
    }
}

fn principal_applies(entry: &AccessControlEntry, context: &AuthorizableRequestContext) -> bool {
    entry.principal == WILDCARD_PRINCIPAL || context.principal.is_named_by(&entry.principal)
}

fn host_applies(entry: &AccessControlEntry, context: &AuthorizableRequestContext) -> bool {
    entry.host == WILDCARD_HOST || entry.host == context.host
}
