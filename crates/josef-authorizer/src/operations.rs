//! KIP-430 authorized operations: the int32 bit field Metadata, DescribeCluster, DescribeGroups and
//! ConsumerGroupDescribe return (bit `1 << code` per allowed operation).

use crate::authorizer::StandardAuthorizer;
use crate::context::AuthorizableRequestContext;
use crate::types::{AclOperation, ResourceType};

/// The value of an authorized-operations field the client did not ask for.
pub const AUTHORIZED_OPERATIONS_OMITTED: i32 = i32::MIN;

/// A set of operations, as Kafka's bit field.
///
/// ```
/// use josef_authorizer::{AclOperation, AuthorizedOperations};
/// let ops = AuthorizedOperations::from_operations([AclOperation::Read, AclOperation::Describe]);
/// assert_eq!(ops.bits(), (1 << 3) | (1 << 8));
/// assert!(ops.contains(AclOperation::Read));
/// assert_eq!(ops.operations(), vec![AclOperation::Read, AclOperation::Describe]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct AuthorizedOperations(i32);

impl AuthorizedOperations {
    /// The set of these operations (codes outside 0..=30 cannot be encoded and are left out).
    pub fn from_operations(ops: impl IntoIterator<Item = AclOperation>) -> Self {
        AuthorizedOperations(ops.into_iter().fold(0, |bits, op| {
            let code = op.code();
            if (0..31).contains(&code) {
                bits | (1 << code)
            } else {
                bits
            }
        }))
    }

    /// What Kafka reports when no authorizer is configured: every supported operation of the type.
    pub fn all_supported(resource_type: ResourceType) -> Self {
        Self::from_operations(resource_type.supported_operations().iter().copied())
    }

    /// A set from a bit field.
    pub fn from_bits(bits: i32) -> Self {
        AuthorizedOperations(bits)
    }

    /// The bit field.
    pub fn bits(self) -> i32 {
        self.0
    }

    /// True if `op` is in the set.
    pub fn contains(self, op: AclOperation) -> bool {
        let code = op.code();
        (0..31).contains(&code) && self.0 & (1 << code) != 0
    }

    /// The operations in the set, in code order.
    pub fn operations(self) -> Vec<AclOperation> {
        AclOperation::ALL_VALUES
            .iter()
            .copied()
            .filter(|op| self.contains(*op))
            .collect()
    }
}

/// Kafka's `AuthHelper.authorizedOperations`: with an authorizer, the supported operations it
/// allows; without one, all of them.
pub fn authorized_operations(
    authorizer: Option<&StandardAuthorizer>,
    context: &AuthorizableRequestContext,
    resource_type: ResourceType,
    resource_name: &str,
) -> AuthorizedOperations {
    match authorizer {
        Some(a) => a.authorized_operations(context, resource_type, resource_name),
        None => AuthorizedOperations::all_supported(resource_type),
    }
}
