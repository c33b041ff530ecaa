//! `UnknownTaggedFields`: the tagged fields a decoder did not know, kept to be written back unchanged.

use bytes::Bytes;
use std::collections::{btree_map, BTreeMap};
use std::fmt;

/// Tagged fields that the generated code does not know, by tag; written back in tag order.
///
/// Every generated struct of a flexible message carries one, and nearly always it is empty, so the
/// empty case is what this type is built for: one null pointer, nothing to allocate on decode and
/// nothing to free on drop (a `BTreeMap` costs tens of instructions to drop even when empty,
/// which was a fifth of a fetch response's decode).
///
/// ```
/// use bytes::Bytes;
/// use josef_protocol::UnknownTaggedFields;
/// let mut unknown = UnknownTaggedFields::new();
/// assert!(unknown.is_empty());
/// unknown.insert(7, Bytes::from_static(b"x"));
/// unknown.insert(3, Bytes::from_static(b"y"));
/// let tags: Vec<u32> = unknown.iter().map(|(tag, _)| *tag).collect();
/// assert_eq!(tags, [3, 7]); // tag order, as they are written
/// assert_eq!(unknown.get(&7).map(|b| &b[..]), Some(&b"x"[..]));
/// ```
#[derive(Clone, Default)]
// Boxed on purpose: one pointer, null when empty, in every struct (an empty `BTreeMap` is three
// words and costs a call to drop).
#[allow(clippy::box_collection)]
pub struct UnknownTaggedFields(Option<Box<BTreeMap<u32, Bytes>>>);

/// What `iter` walks when there is nothing: a `BTreeMap` that is never written.
static EMPTY: BTreeMap<u32, Bytes> = BTreeMap::new();

impl UnknownTaggedFields {
    /// No unknown fields (no allocation).
    pub const fn new() -> UnknownTaggedFields {
        UnknownTaggedFields(None)
    }

    /// Whether there are none.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.0.as_ref().map_or(true, |m| m.is_empty())
    }

    /// How many there are.
    #[inline]
    pub fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |m| m.len())
    }

    /// Keeps `data` under `tag`, returning what was there before.
    pub fn insert(&mut self, tag: u32, data: Bytes) -> Option<Bytes> {
        self.0
            .get_or_insert_with(Default::default)
            .insert(tag, data)
    }

    /// The data kept under `tag`.
    pub fn get(&self, tag: &u32) -> Option<&Bytes> {
        self.0.as_ref()?.get(tag)
    }

    /// Takes out the data kept under `tag`.
    pub fn remove(&mut self, tag: &u32) -> Option<Bytes> {
        let map = self.0.as_mut()?;
        let removed = map.remove(tag);
        if map.is_empty() {
            self.0 = None;
        }
        removed
    }

    /// The fields in tag order.
    #[inline]
    pub fn iter(&self) -> btree_map::Iter<'_, u32, Bytes> {
        self.0.as_deref().unwrap_or(&EMPTY).iter()
    }
}

impl PartialEq for UnknownTaggedFields {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for UnknownTaggedFields {}

impl fmt::Debug for UnknownTaggedFields {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<'a> IntoIterator for &'a UnknownTaggedFields {
    type Item = (&'a u32, &'a Bytes);
    type IntoIter = btree_map::Iter<'a, u32, Bytes>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl FromIterator<(u32, Bytes)> for UnknownTaggedFields {
    fn from_iter<I: IntoIterator<Item = (u32, Bytes)>>(iter: I) -> Self {
        let map: BTreeMap<u32, Bytes> = iter.into_iter().collect();
        map.into()
    }
}

impl From<BTreeMap<u32, Bytes>> for UnknownTaggedFields {
    fn from(map: BTreeMap<u32, Bytes>) -> Self {
        if map.is_empty() {
            UnknownTaggedFields(None)
        } else {
            UnknownTaggedFields(Some(Box::new(map)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_after_removing_the_last_equals_new() {
        let mut u = UnknownTaggedFields::new();
        u.insert(1, Bytes::from_static(b"a"));
        assert_ne!(u, UnknownTaggedFields::new());
        assert_eq!(u.remove(&1), Some(Bytes::from_static(b"a")));
        assert_eq!(u, UnknownTaggedFields::new());
        assert!(u.is_empty());
        assert_eq!(u.len(), 0);
        assert_eq!(u.iter().count(), 0);
    }

    #[test]
    fn equality_is_by_content() {
        let a: UnknownTaggedFields = [(2, Bytes::from_static(b"x")), (1, Bytes::new())]
            .into_iter()
            .collect();
        let mut b = UnknownTaggedFields::new();
        b.insert(1, Bytes::new());
        b.insert(2, Bytes::from_static(b"x"));
        assert_eq!(a, b);
        assert_eq!(format!("{a:?}"), "{1: b\"\", 2: b\"x\"}");
        assert_eq!(
            UnknownTaggedFields::from(BTreeMap::new()),
            UnknownTaggedFields::new()
        );
    }

    #[test]
    fn is_one_pointer() {
        assert_eq!(
            std::mem::size_of::<UnknownTaggedFields>(),
            std::mem::size_of::<usize>()
        );
    }
}
