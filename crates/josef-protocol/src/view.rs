//! Borrowed views: decoding without building an owned message.
//!
//! Every generated struct `X` has a view `XView<'a>` whose fields borrow the frame: strings are
//! `&'a str`, bytes and records `&'a [u8]`, nested structs are views, and arrays are
//! [`ArrayView`]s that were checked whole when the view was decoded and are read again, element by
//! element, when iterated. Decoding a view accepts exactly the input that [`crate::Decode`] accepts
//! (the same checks, the same errors) but allocates nothing and touches no reference count, so it
//! is what a proxy or a broker's hot path reads a request with; [`MessageView::to_message`] builds
//! the owned message when one is needed.
//!
//! A view keeps no index: iterating an array decodes each element again, and finding where the
//! next element starts means skipping over the nested arrays of this one (by their lengths; they
//! are not checked again). Each level of nesting a caller iterates is one more walk over the
//! bytes below it, so a message that will be read whole is better decoded owned.
//!
//! ```
//! use bytes::BytesMut;
//! use josef_protocol::messages::{produce_request::*, ProduceRequest};
//! use josef_protocol::{DecodeView, Encode, MessageView};
//!
//! let request = ProduceRequest {
//!     acks: -1,
//!     topic_data: vec![TopicProduceData {
//!         name: "events".into(),
//!         partition_data: vec![PartitionProduceData { index: 3, ..Default::default() }],
//!         ..Default::default()
//!     }],
//!     ..Default::default()
//! };
//! let mut buf = BytesMut::new();
//! request.encode(&mut buf, 9).unwrap();
//!
//! let mut frame: &[u8] = &buf;
//! let view = ProduceRequestView::decode_view(&mut frame, 9).unwrap();
//! assert!(frame.is_empty());
//! assert_eq!(view.acks, -1);
//! for topic in view.topic_data.iter() {
//!     assert_eq!(topic.name, "events");
//!     assert_eq!(topic.partition_data.iter().map(|p| p.index).collect::<Vec<_>>(), [3]);
//! }
//! assert_eq!(view.to_message(), request);
//! ```

use std::fmt;
use std::marker::PhantomData;

use crate::{DecodeError, Uuid};

/// A value that can be read as a borrowed view of `'a` bytes at a given version.
pub trait DecodeView<'a>: Sized {
    /// Reads `Self` from the front of `buf`, advancing it past the value.
    fn decode_view(buf: &mut &'a [u8], version: i16) -> Result<Self, DecodeError>;
}

/// A view that can build the owned value it borrows from.
pub trait MessageView {
    /// The owned type.
    type Owned;
    /// The owned value, with strings, bytes and records copied out of the frame.
    fn to_message(&self) -> Self::Owned;
}

/// An element type of an [`ArrayView`]: a number, a uuid, a string, bytes or a struct view.
pub trait ViewElement<'a>: Sized {
    /// The encoded size of every element, for numbers and uuids: an array of them is checked by
    /// its length alone.
    const FIXED_SIZE: Option<usize> = None;
    /// Reads one element, checking it; `flexible` selects compact strings and bytes.
    fn read_element(buf: &mut &'a [u8], version: i16, flexible: bool) -> Result<Self, DecodeError>;
    /// Reads one element that was checked before (by [`ViewElement::read_element`]): a struct
    /// skips over its nested arrays instead of checking them again.
    #[inline(always)]
    fn read_checked_element(
        buf: &mut &'a [u8],
        version: i16,
        flexible: bool,
    ) -> Result<Self, DecodeError> {
        Self::read_element(buf, version, flexible)
    }
    /// Moves past one element that was checked before, reading only lengths.
    #[inline(always)]
    fn skip_element(buf: &mut &'a [u8], version: i16, flexible: bool) -> Result<(), DecodeError> {
        Self::read_checked_element(buf, version, flexible).map(drop)
    }
}

/// An array read from the frame: its elements were all checked when the message's view was
/// decoded, and are decoded again, lazily and without allocating, by [`ArrayView::iter`].
pub struct ArrayView<'a, T> {
    bytes: &'a [u8],
    // A count is at most an int32 or a uvarint32, and a smaller view is cheaper to pass around.
    len: u32,
    version: i16,
    flexible: bool,
    element: PhantomData<fn() -> T>,
}

impl<T> Clone for ArrayView<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for ArrayView<'_, T> {}

impl<T> Default for ArrayView<'_, T> {
    fn default() -> Self {
        Self::empty()
    }
}

impl<'a, T> ArrayView<'a, T> {
    /// An array of no elements.
    pub const fn empty() -> Self {
        ArrayView {
            bytes: &[],
            len: 0,
            version: 0,
            flexible: false,
            element: PhantomData,
        }
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The encoded elements (without the count).
    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }
}

impl<'a, T: ViewElement<'a>> ArrayView<'a, T> {
    /// Reads `len` elements from `buf`, checking each (or, without `CHECKED`, skipping over each:
    /// the input was checked before), and keeps their bytes.
    #[inline(always)]
    fn read<const CHECKED: bool>(
        buf: &mut &'a [u8],
        len: usize,
        version: i16,
        flexible: bool,
    ) -> Result<Self, DecodeError> {
        let start = *buf;
        match T::FIXED_SIZE {
            // Any bytes are valid numbers: only the length needs checking (failing as the
            // element reads would, with the error of the first short read).
            Some(size) => {
                let whole = buf.len() / size;
                if len > whole {
                    return Err(read::truncated_at(&buf[whole * size..], size));
                }
                *buf = &buf[len * size..];
            }
            None if CHECKED => {
                for _ in 0..len {
                    T::read_element(buf, version, flexible)?;
                }
            }
            None => {
                for _ in 0..len {
                    T::skip_element(buf, version, flexible)?;
                }
            }
        }
        Ok(ArrayView {
            bytes: &start[..start.len().saturating_sub(buf.len())],
            // Lossless: a count is an int32 or a uvarint32 minus one.
            len: len as u32,
            version,
            flexible,
            element: PhantomData,
        })
    }

    /// The elements, decoded as they are visited.
    pub fn iter(&self) -> ArrayViewIter<'a, T> {
        ArrayViewIter {
            bytes: self.bytes,
            left: self.len,
            version: self.version,
            flexible: self.flexible,
            element: PhantomData,
        }
    }
}

impl<'a, T: ViewElement<'a>> IntoIterator for ArrayView<'a, T> {
    type Item = T;
    type IntoIter = ArrayViewIter<'a, T>;
    fn into_iter(self) -> ArrayViewIter<'a, T> {
        self.iter()
    }
}

impl<'a, T: ViewElement<'a>> IntoIterator for &ArrayView<'a, T> {
    type Item = T;
    type IntoIter = ArrayViewIter<'a, T>;
    fn into_iter(self) -> ArrayViewIter<'a, T> {
        self.iter()
    }
}

impl<'a, T: ViewElement<'a> + fmt::Debug> fmt::Debug for ArrayView<'a, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<'a, T: ViewElement<'a> + PartialEq> PartialEq for ArrayView<'a, T> {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && self.iter().eq(other.iter())
    }
}

/// Iterator over an [`ArrayView`].
pub struct ArrayViewIter<'a, T> {
    bytes: &'a [u8],
    left: u32,
    version: i16,
    flexible: bool,
    element: PhantomData<fn() -> T>,
}

impl<'a, T: ViewElement<'a>> Iterator for ArrayViewIter<'a, T> {
    type Item = T;

    #[inline(always)]
    fn next(&mut self) -> Option<T> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        // The elements were checked when the array was read, so this cannot fail; if it somehow
        // did, the iteration ends instead of panicking.
        match T::read_checked_element(&mut self.bytes, self.version, self.flexible) {
            Ok(element) => Some(element),
            Err(_) => {
                self.left = 0;
                None
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(self.left as usize))
    }
}

/// The tagged-field section of a flexible struct as it was read: every field, known ones
/// included (those are also decoded into the view's fields).
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub struct TaggedFieldsView<'a> {
    // The fields after the count: they fill it exactly (each is at least two bytes), so the
    // count need not be kept, and an empty section is an empty slice.
    bytes: &'a [u8],
}

impl<'a> TaggedFieldsView<'a> {
    /// No tagged fields.
    pub const fn empty() -> Self {
        TaggedFieldsView { bytes: &[] }
    }

    /// The number of tagged fields.
    pub fn len(&self) -> usize {
        self.iter().count()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// `(tag, payload)` of each field, in tag order.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &'a [u8])> {
        let mut bytes = self.bytes;
        std::iter::from_fn(move || {
            if bytes.is_empty() {
                return None;
            }
            // Checked when the section was read; a failure ends the iteration.
            match get_tagged_field(&mut bytes, &mut None) {
                Ok(field) => Some(field),
                Err(_) => {
                    bytes = &[];
                    None
                }
            }
        })
    }
}

impl fmt::Debug for TaggedFieldsView<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// Readers of the primitive encodings over a borrowed slice, with exactly the checks and errors of
/// [`crate::wire`]'s readers over `Bytes`. Used by the generated views.
pub mod read {
    use super::{ArrayView, TaggedFieldsView, ViewElement};
    use crate::{wire, DecodeError, Uuid};

    /// The error of a read of `needed` bytes from `buf`, which holds fewer.
    pub(super) fn truncated_at(buf: &[u8], needed: usize) -> DecodeError {
        truncated(buf, needed)
    }

    #[cold]
    #[inline(never)]
    fn truncated(buf: &[u8], needed: usize) -> DecodeError {
        DecodeError::Truncated {
            needed,
            remaining: buf.len(),
        }
    }

    #[inline(always)]
    fn take<const N: usize>(buf: &mut &[u8]) -> Result<[u8; N], DecodeError> {
        match buf.split_first_chunk::<N>() {
            Some((b, rest)) => {
                *buf = rest;
                Ok(*b)
            }
            None => Err(truncated(buf, N)),
        }
    }

    /// Reads a boolean (any non-zero byte is true).
    #[inline(always)]
    pub fn get_bool(buf: &mut &[u8]) -> Result<bool, DecodeError> {
        Ok(take::<1>(buf)?[0] != 0)
    }
    macro_rules! big_endian_readers {
        ($($name:ident -> $t:ty, $what:literal;)*) => {$(
            #[doc = concat!("Reads ", $what, " (big-endian).")]
            #[inline(always)]
            pub fn $name(buf: &mut &[u8]) -> Result<$t, DecodeError> {
                Ok(<$t>::from_be_bytes(take(buf)?))
            }
        )*};
    }

    big_endian_readers! {
        get_i8 -> i8, "an int8";
        get_i16 -> i16, "an int16";
        get_u16 -> u16, "a uint16";
        get_i32 -> i32, "an int32";
        get_u32 -> u32, "a uint32";
        get_i64 -> i64, "an int64";
        get_f64 -> f64, "a float64";
    }

    /// Reads a 16-byte uuid.
    #[inline(always)]
    pub fn get_uuid(buf: &mut &[u8]) -> Result<Uuid, DecodeError> {
        Ok(Uuid::from_bytes(take(buf)?))
    }

    /// Reads an unsigned varint of at most 5 bytes (32 bits).
    #[inline(always)]
    pub fn get_uvarint(buf: &mut &[u8]) -> Result<u32, DecodeError> {
        // Up to three bytes inline: tag counts and short lengths take one, a record batch of up
        // to 2 MiB three; longer ones call.
        match **buf {
            [b0, ref rest @ ..] if b0 < 0x80 => {
                *buf = rest;
                Ok(u32::from(b0))
            }
            [b0, b1, ref rest @ ..] if b1 < 0x80 => {
                *buf = rest;
                Ok(u32::from(b0 & 0x7f) | u32::from(b1) << 7)
            }
            [b0, b1, b2, ref rest @ ..] if b1 >= 0x80 && b2 < 0x80 => {
                *buf = rest;
                Ok(u32::from(b0 & 0x7f) | u32::from(b1 & 0x7f) << 7 | u32::from(b2) << 14)
            }
            _ => get_uvarint_long(buf),
        }
    }

    #[inline(never)]
    fn get_uvarint_long(buf: &mut &[u8]) -> Result<u32, DecodeError> {
        let (value, used) = wire::uvarint_from(buf)?;
        *buf = &buf[used..];
        Ok(value)
    }

    /// Reads a length prefix as [`crate::wire`] does: `None` is null, and the length is checked
    /// against the bytes remaining.
    #[inline(always)]
    fn get_len(buf: &mut &[u8], flexible: bool, short: bool) -> Result<Option<usize>, DecodeError> {
        let len: i64 = if flexible {
            i64::from(get_uvarint(buf)?) - 1
        } else if short {
            i64::from(get_i16(buf)?)
        } else {
            i64::from(get_i32(buf)?)
        };
        wire::checked_len(len, buf.len())
    }

    #[inline(always)]
    fn split<'a>(buf: &mut &'a [u8], n: usize) -> &'a [u8] {
        let (head, rest) = buf.split_at(n);
        *buf = rest;
        head
    }

    /// Reads a nullable string.
    #[inline(always)]
    pub fn get_nullable_str<'a>(
        buf: &mut &'a [u8],
        flexible: bool,
    ) -> Result<Option<&'a str>, DecodeError> {
        match get_len(buf, flexible, true)? {
            None => Ok(None),
            Some(n) => {
                let b = split(buf, n);
                if b.is_ascii() {
                    // SAFETY: ASCII is UTF-8.
                    Ok(Some(unsafe { std::str::from_utf8_unchecked(b) }))
                } else {
                    std::str::from_utf8(b)
                        .map(Some)
                        .map_err(|_| DecodeError::InvalidUtf8)
                }
            }
        }
    }

    /// Reads a non-null string.
    #[inline(always)]
    pub fn get_str<'a>(buf: &mut &'a [u8], flexible: bool) -> Result<&'a str, DecodeError> {
        get_nullable_str(buf, flexible)?.ok_or(DecodeError::UnexpectedNull)
    }

    /// Reads nullable bytes.
    #[inline(always)]
    pub fn get_nullable_bytes<'a>(
        buf: &mut &'a [u8],
        flexible: bool,
    ) -> Result<Option<&'a [u8]>, DecodeError> {
        Ok(get_len(buf, flexible, false)?.map(|n| split(buf, n)))
    }

    /// Reads non-null bytes.
    #[inline(always)]
    pub fn get_bytes<'a>(buf: &mut &'a [u8], flexible: bool) -> Result<&'a [u8], DecodeError> {
        get_nullable_bytes(buf, flexible)?.ok_or(DecodeError::UnexpectedNull)
    }

    /// Reads a nullable array, checking every element (without `CHECKED`: skipping over every
    /// element of input that was checked before).
    #[inline(always)]
    pub fn get_nullable_array<'a, T: ViewElement<'a>, const CHECKED: bool>(
        buf: &mut &'a [u8],
        flexible: bool,
        version: i16,
    ) -> Result<Option<ArrayView<'a, T>>, DecodeError> {
        match get_len(buf, flexible, false)? {
            None => Ok(None),
            Some(n) => ArrayView::read::<CHECKED>(buf, n, version, flexible).map(Some),
        }
    }

    /// Reads a non-null array, as [`get_nullable_array`].
    #[inline(always)]
    pub fn get_array<'a, T: ViewElement<'a>, const CHECKED: bool>(
        buf: &mut &'a [u8],
        flexible: bool,
        version: i16,
    ) -> Result<ArrayView<'a, T>, DecodeError> {
        get_nullable_array::<T, CHECKED>(buf, flexible, version)?.ok_or(DecodeError::UnexpectedNull)
    }

    /// Moves past `n` bytes.
    #[inline(always)]
    pub fn skip(buf: &mut &[u8], n: usize) -> Result<(), DecodeError> {
        if buf.len() < n {
            return Err(truncated(buf, n));
        }
        *buf = &buf[n..];
        Ok(())
    }

    /// Moves past a (possibly null) string or bytes value.
    #[inline(always)]
    pub fn skip_len(buf: &mut &[u8], flexible: bool, short: bool) -> Result<(), DecodeError> {
        let n = get_len(buf, flexible, short)?.unwrap_or(0);
        *buf = &buf[n..];
        Ok(())
    }

    /// Moves past a (possibly null) array of elements that were checked before.
    #[inline(always)]
    pub fn skip_array<'a, T: ViewElement<'a>>(
        buf: &mut &'a [u8],
        flexible: bool,
        version: i16,
    ) -> Result<(), DecodeError> {
        if let Some(n) = get_len(buf, flexible, false)? {
            ArrayView::<T>::read::<false>(buf, n, version, flexible)?;
        }
        Ok(())
    }

    /// Moves past a tagged-field section that was checked before.
    #[inline(always)]
    pub fn skip_tagged_fields(buf: &mut &[u8]) -> Result<(), DecodeError> {
        for _ in 0..get_uvarint(buf)? {
            get_uvarint(buf)?;
            let size = get_uvarint(buf)? as usize;
            skip(buf, size)?;
        }
        Ok(())
    }

    /// Reads a nullable struct: an int8 marker (negative = null) then the struct.
    #[inline(always)]
    pub fn get_nullable_struct<'a, T>(
        buf: &mut &'a [u8],
        read: impl FnOnce(&mut &'a [u8]) -> Result<T, DecodeError>,
    ) -> Result<Option<T>, DecodeError> {
        if get_i8(buf)? < 0 {
            Ok(None)
        } else {
            read(buf).map(Some)
        }
    }

    /// Reads one tagged field's tag and payload, checking that tags strictly increase.
    #[inline(always)]
    pub fn get_tagged_field<'a>(
        buf: &mut &'a [u8],
        last_tag: &mut Option<u32>,
    ) -> Result<(u32, &'a [u8]), DecodeError> {
        let tag = get_uvarint(buf)?;
        wire::check_tag_order(tag, last_tag)?;
        let size = get_uvarint(buf)? as usize;
        wire::check_tagged_size(size, buf.len())?;
        Ok((tag, split(buf, size)))
    }

    /// The tagged-field section read between `start` (just after the count) and `buf`, a later
    /// position of the same slice.
    #[inline(always)]
    pub fn finish_tagged_fields<'a>(start: &'a [u8], buf: &[u8]) -> TaggedFieldsView<'a> {
        TaggedFieldsView {
            bytes: &start[..start.len().saturating_sub(buf.len())],
        }
    }

    /// Checks that a known tagged field's payload was read completely.
    #[inline(always)]
    pub fn expect_consumed(buf: &[u8], field: &'static str) -> Result<(), DecodeError> {
        if buf.is_empty() {
            Ok(())
        } else {
            Err(DecodeError::TaggedFieldSize {
                field,
                remaining: buf.len(),
            })
        }
    }
}

use read::get_tagged_field;

macro_rules! fixed_elements {
    ($($t:ty => $get:ident),* $(,)?) => {$(
        impl<'a> ViewElement<'a> for $t {
            const FIXED_SIZE: Option<usize> = Some(std::mem::size_of::<$t>());
            #[inline(always)]
            fn read_element(buf: &mut &'a [u8], _version: i16, _flexible: bool) -> Result<Self, DecodeError> {
                read::$get(buf)
            }
        }
    )*};
}

fixed_elements!(
    bool => get_bool,
    i8 => get_i8,
    i16 => get_i16,
    u16 => get_u16,
    i32 => get_i32,
    u32 => get_u32,
    i64 => get_i64,
    f64 => get_f64,
    Uuid => get_uuid,
);

impl<'a> ViewElement<'a> for &'a str {
    #[inline]
    fn read_element(
        buf: &mut &'a [u8],
        _version: i16,
        flexible: bool,
    ) -> Result<Self, DecodeError> {
        read::get_str(buf, flexible)
    }
    #[inline]
    fn skip_element(buf: &mut &'a [u8], _version: i16, flexible: bool) -> Result<(), DecodeError> {
        read::skip_len(buf, flexible, true)
    }
}

impl<'a> ViewElement<'a> for &'a [u8] {
    #[inline]
    fn read_element(
        buf: &mut &'a [u8],
        _version: i16,
        flexible: bool,
    ) -> Result<Self, DecodeError> {
        read::get_bytes(buf, flexible)
    }
    #[inline]
    fn skip_element(buf: &mut &'a [u8], _version: i16, flexible: bool) -> Result<(), DecodeError> {
        read::skip_len(buf, flexible, false)
    }
}

#[cfg(test)]
mod tests {
    use super::read::*;
    use super::*;

    #[test]
    fn arrays_are_checked_when_read_and_decoded_when_iterated() {
        // Non-flexible int32 array of 3 elements.
        let bytes = [0, 0, 0, 3, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 9];
        let mut buf: &[u8] = &bytes;
        let a: ArrayView<'_, i32> = get_array::<_, true>(&mut buf, false, 0).unwrap();
        assert_eq!(buf, [9]);
        assert_eq!(a.len(), 3);
        assert_eq!(a.iter().collect::<Vec<_>>(), [1, 2, 3]);
        let mut short: &[u8] = &bytes[..10];
        assert!(get_array::<i32, true>(&mut short, false, 0).is_err());
    }

    #[test]
    fn a_null_array_and_a_null_string_are_none() {
        let mut buf: &[u8] = &[0];
        assert!(get_nullable_array::<i32, true>(&mut buf, true, 0)
            .unwrap()
            .is_none());
        let mut buf: &[u8] = &[0xff, 0xff];
        assert_eq!(get_nullable_str(&mut buf, false).unwrap(), None);
        let mut buf: &[u8] = &[0xff, 0xff];
        assert_eq!(get_str(&mut buf, false), Err(DecodeError::UnexpectedNull));
    }

    #[test]
    fn strings_are_checked_for_utf8() {
        let mut buf: &[u8] = &[0, 2, 0xff, 0xfe];
        assert_eq!(get_str(&mut buf, false), Err(DecodeError::InvalidUtf8));
        let mut buf: &[u8] = &[3, 0xc3, 0xa9];
        assert_eq!(get_str(&mut buf, true), Ok("é"));
    }

    proptest::proptest! {
        /// The slice readers give what the `Bytes` readers of `wire` give (value or error) and,
        /// when they succeed, consume as much.
        #[test]
        fn readers_agree_with_wire(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..12), flexible: bool) {
            let mut owned = bytes::Bytes::from(bytes.clone());
            let mut view: &[u8] = &bytes;
            let a = crate::wire::get_uvarint(&mut owned);
            proptest::prop_assert_eq!(&a, &get_uvarint(&mut view));
            proptest::prop_assert!(a.is_err() || owned.len() == view.len());
            let mut owned = bytes::Bytes::from(bytes.clone());
            let mut view: &[u8] = &bytes;
            let a = crate::wire::get_nullable_string(&mut owned, flexible).map(|s| s.map(|s| s.to_string()));
            let b = get_nullable_str(&mut view, flexible).map(|s| s.map(str::to_string));
            proptest::prop_assert!(a.is_err() || owned.len() == view.len());
            proptest::prop_assert_eq!(a, b);
            let mut owned = bytes::Bytes::from(bytes.clone());
            let mut view: &[u8] = &bytes;
            let a = crate::wire::get_nullable_small_array::<[i32; 4]>(&mut owned, flexible, crate::wire::get_i32).map(|a| a.map(|a| a.to_vec()));
            let b = get_nullable_array::<i32, true>(&mut view, flexible, 0).map(|a| a.map(|a| a.iter().collect::<Vec<_>>()));
            proptest::prop_assert!(a.is_err() || owned.len() == view.len());
            proptest::prop_assert_eq!(a, b);
        }
    }

    #[test]
    fn tagged_fields_keep_their_order_check() {
        let bytes = [2, 1, 1, 7, 1, 1, 8];
        let mut buf: &[u8] = &bytes[1..];
        let mut last = None;
        get_tagged_field(&mut buf, &mut last).unwrap();
        assert_eq!(
            get_tagged_field(&mut buf, &mut last),
            Err(DecodeError::TaggedFieldOrder {
                tag: 1,
                previous: 1
            })
        );
    }
}
