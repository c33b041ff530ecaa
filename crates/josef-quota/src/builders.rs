//! AlterClientQuotas entries and DescribeClientQuotas requests from plain (type, name) data, as an
//! admin client writes them.

use josef_protocol::messages::alter_client_quotas_request::{EntityData, EntryData, OpData};
use josef_protocol::messages::describe_client_quotas_request::{
    ComponentData, DescribeClientQuotasRequest,
};

/// An AlterClientQuotas entry for the entity of wire `(entity type, name)` components (a `None`
/// name is the default entity): each `(key, Some(value))` sets the key, each `(key, None)`
/// removes it.
///
/// ```
/// let e = josef_quota::alter_entry(
///     &[("user", Some("alice")), ("client-id", None)],
///     &[("producer_byte_rate", Some(1024.0)), ("request_percentage", None)],
/// );
/// assert_eq!(e.entity[1].entity_name, None);
/// assert!(e.ops[1].remove);
/// ```
pub fn alter_entry(entity: &[(&str, Option<&str>)], ops: &[(&str, Option<f64>)]) -> EntryData {
    EntryData {
        entity: entity
            .iter()
            .map(|(t, n)| EntityData {
                entity_type: (*t).into(),
                entity_name: n.map(Into::into),
                ..Default::default()
            })
            .collect(),
        ops: ops
            .iter()
            .map(|(k, v)| OpData {
                key: (*k).into(),
                value: v.unwrap_or(0.0),
                remove: v.is_none(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// A DescribeClientQuotas request of `(entity type, match type, match)` components (see
/// [`MATCH_TYPE_EXACT`](crate::MATCH_TYPE_EXACT) and the others); `strict` leaves out entities
/// with components the filter does not name.
pub fn describe_request(
    components: &[(&str, i8, Option<&str>)],
    strict: bool,
) -> DescribeClientQuotasRequest {
    DescribeClientQuotasRequest {
        components: components
            .iter()
            .map(|(t, m, n)| ComponentData {
                entity_type: (*t).into(),
                match_type: *m,
                match_: n.map(Into::into),
                ..Default::default()
            })
            .collect(),
        strict,
        ..Default::default()
    }
}
