//! The ACL index: per resource type, literal and prefixed patterns in sorted maps keyed by name, so
//! the patterns covering a resource name are found without scanning every ACL.

use std::collections::BTreeMap;
use std::ops::{Bound, ControlFlow};

use josef_protocol::Uuid;

use crate::binding::{
    AccessControlEntry, AclBinding, AclBindingFilter, AclWithId, ResourcePattern, WILDCARD_RESOURCE,
};
use crate::error::AclError;
use crate::types::{PatternType, ResourceType};

/// The entries of one resource pattern, with their ids.
type Entries = Vec<(Uuid, AccessControlEntry)>;

#[derive(Debug, Clone, Default)]
struct TypeAcls {
    literal: BTreeMap<String, Entries>,
    prefixed: BTreeMap<String, Entries>,
}

impl TypeAcls {
    fn map(&self, pattern_type: PatternType) -> Option<&BTreeMap<String, Entries>> {
        match pattern_type {
            PatternType::Literal => Some(&self.literal),
            PatternType::Prefixed => Some(&self.prefixed),
            _ => None,
        }
    }

    fn map_mut(&mut self, pattern_type: PatternType) -> Option<&mut BTreeMap<String, Entries>> {
        match pattern_type {
            PatternType::Literal => Some(&mut self.literal),
            PatternType::Prefixed => Some(&mut self.prefixed),
            _ => None,
        }
    }

    fn is_empty(&self) -> bool {
        self.literal.is_empty() && self.prefixed.is_empty()
    }
}

/// Every ACL by id, and indexed by resource.
#[derive(Debug, Clone, Default)]
pub(crate) struct AclIndex {
    by_id: BTreeMap<Uuid, AclBinding>,
    by_type: BTreeMap<ResourceType, TypeAcls>,
}

/// A pattern found covering a resource: its type and name, and its entries.
pub(crate) struct Covering<'a> {
    pub pattern_type: PatternType,
    pub name: &'a str,
    pub entries: &'a [(Uuid, AccessControlEntry)],
}

impl AclIndex {
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    pub fn get(&self, id: &Uuid) -> Option<&AclBinding> {
        self.by_id.get(id)
    }

    pub fn contains_id(&self, id: &Uuid) -> bool {
        self.by_id.contains_key(id)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&Uuid, &AclBinding)> {
        self.by_id.iter()
    }

    /// Adds an ACL; only bindings that pass [`AclBinding::validate_record`] are indexed.
    pub fn insert(&mut self, id: Uuid, binding: AclBinding) -> Result<(), AclError> {
        if id.is_zero() {
            return Err(AclError::ZeroAclId);
        }
        if self.by_id.contains_key(&id) {
            return Err(AclError::DuplicateAclId(id));
        }
        binding.validate_record()?;
        let p = &binding.pattern;
        let Some(map) = self
            .by_type
            .entry(p.resource_type)
            .or_default()
            .map_mut(p.pattern_type)
        else {
            return Err(AclError::InvalidPatternType(p.pattern_type));
        };
        map.entry(p.name.clone())
            .or_default()
            .push((id, binding.entry.clone()));
        self.by_id.insert(id, binding);
        Ok(())
    }

    pub fn remove(&mut self, id: &Uuid) -> Result<AclBinding, AclError> {
        let binding = self.by_id.remove(id).ok_or(AclError::UnknownAclId(*id))?;
        let p = &binding.pattern;
        if let Some(type_acls) = self.by_type.get_mut(&p.resource_type) {
            if let Some(map) = type_acls.map_mut(p.pattern_type) {
                if let Some(entries) = map.get_mut(&p.name) {
                    entries.retain(|(i, _)| i != id);
                    if entries.is_empty() {
                        map.remove(&p.name);
                    }
                }
            }
            if type_acls.is_empty() {
                self.by_type.remove(&p.resource_type);
            }
        }
        Ok(binding)
    }

    /// The id of an ACL equal to `binding`, if one is held.
    pub fn find(&self, binding: &AclBinding) -> Option<Uuid> {
        let p = &binding.pattern;
        self.by_type
            .get(&p.resource_type)?
            .map(p.pattern_type)?
            .get(&p.name)?
            .iter()
            .find(|(_, e)| *e == binding.entry)
            .map(|(id, _)| *id)
    }

    /// Calls `visit` with every pattern covering the resource `name` of `resource_type`: the
    /// literal name, the prefixed patterns that are prefixes of it, then the literal wildcard.
    /// Stops when `visit` breaks.
    pub fn visit_covering<'a>(
        &'a self,
        resource_type: ResourceType,
        name: &str,
        mut visit: impl FnMut(Covering<'a>) -> ControlFlow<()>,
    ) {
        let Some(type_acls) = self.by_type.get(&resource_type) else {
            return;
        };
        if let Some((key, entries)) = type_acls.literal.get_key_value(name) {
            let c = Covering {
                pattern_type: PatternType::Literal,
                name: key,
                entries,
            };
            if visit(c).is_break() {
                return;
            }
        }
        if visit_prefixes(&type_acls.prefixed, name, &mut visit).is_break() {
            return;
        }
        if name != WILDCARD_RESOURCE {
            if let Some((key, entries)) = type_acls.literal.get_key_value(WILDCARD_RESOURCE) {
                let _ = visit(Covering {
                    pattern_type: PatternType::Literal,
                    name: key,
                    entries,
                });
            }
        }
    }

    /// Every ACL of `resource_type`.
    pub fn of_type(&self, resource_type: ResourceType) -> impl Iterator<Item = AclWithId> + '_ {
        self.by_type
            .get(&resource_type)
            .into_iter()
            .flat_map(move |t| {
                let lit = t.literal.iter().map(|(n, e)| (PatternType::Literal, n, e));
                let pre = t
                    .prefixed
                    .iter()
                    .map(|(n, e)| (PatternType::Prefixed, n, e));
                lit.chain(pre)
            })
            .flat_map(move |(pt, name, entries)| {
                entries.iter().map(move |(id, entry)| AclWithId {
                    id: *id,
                    binding: AclBinding::new(
                        ResourcePattern::new(resource_type, name.clone(), pt),
                        entry.clone(),
                    ),
                })
            })
    }

    /// The ACLs `filter` matches, narrowed through the index where the filter names a resource;
    /// sorted by binding, then id.
    pub fn matching(&self, filter: &AclBindingFilter) -> Vec<AclWithId> {
        let pf = &filter.pattern_filter;
        let types: Vec<ResourceType> = if pf.resource_type == ResourceType::Any {
            self.by_type.keys().copied().collect()
        } else {
            vec![pf.resource_type]
        };
        let mut out = Vec::new();
        for rt in types {
            let Some(type_acls) = self.by_type.get(&rt) else {
                continue;
            };
            let mut push = |pt: PatternType, name: &str, entries: &[(Uuid, AccessControlEntry)]| {
                for (id, entry) in entries {
                    let binding =
                        AclBinding::new(ResourcePattern::new(rt, name, pt), entry.clone());
                    if filter.matches(&binding) {
                        out.push(AclWithId { id: *id, binding });
                    }
                }
            };
            match (&pf.name, pf.pattern_type) {
                (Some(name), PatternType::Match) => {
                    self.visit_covering(rt, name, |c| {
                        push(c.pattern_type, c.name, c.entries);
                        ControlFlow::Continue(())
                    });
                }
                (Some(name), pt) => {
                    for map_pt in [PatternType::Literal, PatternType::Prefixed] {
                        if pt != PatternType::Any && pt != map_pt {
                            continue;
                        }
                        if let Some(entries) = type_acls.map(map_pt).and_then(|m| m.get(name)) {
                            push(map_pt, name, entries);
                        }
                    }
                }
                (None, _) => {
                    for (name, entries) in &type_acls.literal {
                        push(PatternType::Literal, name, entries);
                    }
                    for (name, entries) in &type_acls.prefixed {
                        push(PatternType::Prefixed, name, entries);
                    }
                }
            }
        }
        out.sort_by(|a, b| a.binding.cmp(&b.binding).then(a.id.cmp(&b.id)));
        out
    }
}

/// Visits the keys of `prefixed` that are prefixes of `name`, longest first.
///
/// Starting from the greatest key not above `name`: a key that is a prefix is visited and the
/// search continues below it; a key that is not shares only `l` leading bytes with `name`, and every
/// remaining prefix is then at most `name[..l]`, so the search jumps there. Each step visits a
/// match or shortens the bound, so the cost is O((matches + jumps) · log n), not a scan.
fn visit_prefixes<'a>(
    prefixed: &'a BTreeMap<String, Entries>,
    name: &str,
    visit: &mut impl FnMut(Covering<'a>) -> ControlFlow<()>,
) -> ControlFlow<()> {
    let mut upper: Bound<&str> = Bound::Included(name);
    while let Some((key, entries)) = prefixed
        .range::<str, _>((Bound::Unbounded, upper))
        .next_back()
    {
        if name.starts_with(key.as_str()) {
            visit(Covering {
                pattern_type: PatternType::Prefixed,
                name: key,
                entries,
            })?;
            upper = Bound::Excluded(key.as_str());
        } else {
            let common = common_prefix_len(key, name);
            upper = Bound::Included(&name[..common]);
        }
    }
    ControlFlow::Continue(())
}

/// The length in bytes of the longest common prefix of `a` and `b` that ends on a char boundary.
fn common_prefix_len(a: &str, b: &str) -> usize {
    let mut n = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    while !b.is_char_boundary(n) {
        n -= 1;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::AclOperation;

    fn id(n: u128) -> Uuid {
        Uuid::from_u128(n)
    }

    fn prefixed_index(names: &[&str]) -> AclIndex {
        let mut idx = AclIndex::default();
        for (i, n) in names.iter().enumerate() {
            let b = AclBinding::new(
                ResourcePattern::prefixed(ResourceType::Topic, *n),
                AccessControlEntry::allow("User:a", "*", AclOperation::Read),
            );
            idx.insert(id(i as u128 + 1), b).unwrap();
        }
        idx
    }

    fn covering(idx: &AclIndex, name: &str) -> Vec<String> {
        let mut out = Vec::new();
        idx.visit_covering(ResourceType::Topic, name, |c| {
            out.push(c.name.to_string());
            ControlFlow::Continue(())
        });
        out
    }

    #[test]
    fn prefix_search_jumps_over_non_prefixes() {
        let idx = prefixed_index(&[
            "gar", "foobar", "foob", "foo", "fb", "fa", "f", "eeee", "foobaz",
        ]);
        assert_eq!(covering(&idx, "foobar"), ["foobar", "foob", "foo", "f"]);
        assert_eq!(covering(&idx, "fz"), ["f"]);
        assert!(covering(&idx, "e").is_empty());
    }

    #[test]
    fn prefix_search_respects_char_boundaries() {
        let idx = prefixed_index(&["é", "éa", "\u{e9}\u{ff}"]);
        assert_eq!(covering(&idx, "éb"), ["é"]);
        // "è" shares its first byte with "é" but is not a prefix of it.
        let idx = prefixed_index(&["è", "a"]);
        assert!(covering(&idx, "é").is_empty());
    }

    #[test]
    fn remove_drops_empty_entries() {
        let mut idx = prefixed_index(&["a", "b"]);
        idx.remove(&id(1)).unwrap();
        assert_eq!(covering(&idx, "ab"), Vec::<String>::new());
        assert_eq!(idx.remove(&id(1)), Err(AclError::UnknownAclId(id(1))));
        idx.remove(&id(2)).unwrap();
        assert!(idx.by_type.is_empty());
    }
}
