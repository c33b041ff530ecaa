//! `StrBytes`: a UTF-8 string stored in `Bytes`, so that decoding slices the input instead of copying it.

use bytes::Bytes;
use std::borrow::Borrow;
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;

/// A validated UTF-8 string backed by [`Bytes`]: decoding a Kafka string yields a slice of the frame,
/// not a copy.
///
/// ```
/// use josef_protocol::StrBytes;
/// let s = StrBytes::from("my-topic");
/// assert_eq!(s.as_str(), "my-topic");
/// assert_eq!(s.len(), 8); // str methods through Deref
/// let owned: StrBytes = String::from("x").into();
/// assert_eq!(owned, "x");
/// ```
#[derive(Clone, Default)]
pub struct StrBytes(Bytes);

impl StrBytes {
    /// The empty string (no allocation).
    pub const fn new() -> StrBytes {
        StrBytes(Bytes::new())
    }

    /// A string over static text (no allocation).
    pub const fn from_static_str(s: &'static str) -> StrBytes {
        StrBytes(Bytes::from_static(s.as_bytes()))
    }

    /// Validates `bytes` as UTF-8 and wraps them without copying.
    pub fn from_utf8(bytes: Bytes) -> Result<StrBytes, std::str::Utf8Error> {
        // Topic names, ids and hosts are ASCII: a word-at-a-time check is several times cheaper
        // than the general validator on such short strings.
        if !bytes.is_ascii() {
            std::str::from_utf8(&bytes)?;
        }
        Ok(StrBytes(bytes))
    }

    /// The string.
    pub fn as_str(&self) -> &str {
        // SAFETY: every constructor validates UTF-8 (from_utf8) or starts from a `str`.
        unsafe { std::str::from_utf8_unchecked(&self.0) }
    }

    /// The underlying bytes (cheap clone of the `Bytes` handle).
    pub fn as_bytes(&self) -> &Bytes {
        &self.0
    }

    /// Unwraps the underlying bytes.
    pub fn into_bytes(self) -> Bytes {
        self.0
    }
}

impl Deref for StrBytes {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for StrBytes {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for StrBytes {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl From<&str> for StrBytes {
    fn from(s: &str) -> StrBytes {
        StrBytes(Bytes::copy_from_slice(s.as_bytes()))
    }
}

impl From<String> for StrBytes {
    fn from(s: String) -> StrBytes {
        StrBytes(Bytes::from(s))
    }
}

impl From<StrBytes> for String {
    fn from(s: StrBytes) -> String {
        s.as_str().to_owned()
    }
}

impl fmt::Display for StrBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.as_str(), f)
    }
}

impl fmt::Debug for StrBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl PartialEq for StrBytes {
    fn eq(&self, other: &StrBytes) -> bool {
        self.0 == other.0
    }
}

impl Eq for StrBytes {}

impl PartialEq<str> for StrBytes {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for StrBytes {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<StrBytes> for str {
    fn eq(&self, other: &StrBytes) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<StrBytes> for &str {
    fn eq(&self, other: &StrBytes) -> bool {
        *self == other.as_str()
    }
}

impl PartialOrd for StrBytes {
    fn partial_cmp(&self, other: &StrBytes) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for StrBytes {
    fn cmp(&self, other: &StrBytes) -> Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl Hash for StrBytes {
    fn hash<H: Hasher>(&self, state: &mut H) {
        // Hash like `str` so that `Borrow<str>` lookups in hash maps work.
        self.as_str().hash(state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn from_utf8_rejects_invalid_utf8() {
        assert!(StrBytes::from_utf8(Bytes::from_static(&[0xff, 0xfe])).is_err());
    }

    #[test]
    fn from_utf8_does_not_copy() {
        let b = Bytes::from_static(b"hello");
        let s = StrBytes::from_utf8(b.clone()).unwrap();
        assert_eq!(s.as_bytes().as_ptr(), b.as_ptr());
    }

    #[test]
    fn borrow_str_lookup_in_hash_map() {
        let mut m = HashMap::new();
        m.insert(StrBytes::from("a"), 1);
        assert_eq!(m.get("a"), Some(&1));
    }

    #[test]
    fn ordering_follows_str() {
        let (a, b) = (StrBytes::from("a"), StrBytes::from("b"));
        assert_eq!(a.cmp(&b), std::cmp::Ordering::Less);
        assert_eq!(StrBytes::default(), "");
    }
}
