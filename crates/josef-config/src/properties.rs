//! A reader and writer of Java properties text, with the rules of `java.util.Properties.load`
//! and `store` (JDK `java/util/Properties.java`: `LineReader`, `load0`, `loadConvert`,
//! `saveConvert`), which is how Kafka reads `server.properties` (`Utils.loadProps`).
//!
//! Reading, as Java does:
//! - a natural line ends at `\n`, `\r` or `\r\n`;
//! - leading spaces, tabs and form feeds of every line are skipped; a line that is then empty is
//!   skipped;
//! - a logical line starting with `#` or `!` is a comment (only at the start of a logical line:
//!   a continuation line starting with `#` is data);
//! - a line ending in an odd number of backslashes continues on the next natural line: the last
//!   backslash is dropped, and so are the leading whitespace characters of the next line; an empty
//!   next line ends the logical line; a continuation at the end of the text just ends it;
//! - the key ends at the first unescaped `=`, `:`, space, tab or form feed; whitespace after the
//!   key is skipped, then one `=` or `:` if the key ended at whitespace, then whitespace again;
//!   the rest of the line (trailing whitespace included) is the value; a line with only a key
//!   has the empty value;
//! - in keys and values `\t \n \r \f` are the control characters, `\uXXXX` (exactly four hex
//!   digits) a UTF-16 unit, and a backslash before any other character stands for that character
//!   (`\=`, `\:`, `\ `, `\#`, `\\`);
//! - a key given twice keeps its last value.
//!
//! Where Rust differs from Java: Java strings are UTF-16, so `\uD83D\uDE00` (a surrogate pair)
//! becomes the one character it encodes, and a lone surrogate, which no Rust string can hold,
//! becomes U+FFFD. The only error is a malformed `\u` escape (Java's `IllegalArgumentException`).

use std::collections::BTreeMap;
use std::fmt;

/// The one way properties text can be malformed: a `\u` not followed by four hex digits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PropertiesError {
    /// 1-based number of the natural line where the bad logical line starts.
    pub line: usize,
}

impl fmt::Display for PropertiesError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: malformed \\uxxxx escape", self.line)
    }
}

impl std::error::Error for PropertiesError {}

fn is_blank(c: char) -> bool {
    c == ' ' || c == '\t' || c == '\u{c}'
}

/// Splits `text` into logical lines (continuations joined, comments and blank lines dropped),
/// each with the 1-based number of its first natural line. Escapes are still in place.
fn logical_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    let mut line_no = 1;
    let mut start_line = 1;
    let mut buf = String::new();
    let mut skip_white = true;
    let mut appended_line_begin = false;
    let mut preceding_backslash = false;
    while let Some(c) = chars.next() {
        let newline = c == '\n' || c == '\r';
        if newline && c == '\r' && chars.peek() == Some(&'\n') {
            chars.next();
        }
        if skip_white {
            if is_blank(c) {
                continue;
            }
            if !appended_line_begin && newline {
                line_no += 1;
                continue;
            }
            skip_white = false;
            appended_line_begin = false;
        }
        if buf.is_empty() && !newline && (c == '#' || c == '!') {
            // A comment: drop the rest of the natural line.
            for c in chars.by_ref() {
                if c == '\n' || c == '\r' {
                    if c == '\r' && chars.peek() == Some(&'\n') {
                        chars.next();
                    }
                    break;
                }
            }
            line_no += 1;
            skip_white = true;
            continue;
        }
        if buf.is_empty() && !newline {
            start_line = line_no;
        }
        if !newline {
            buf.push(c);
            preceding_backslash = c == '\\' && !preceding_backslash;
            continue;
        }
        line_no += 1;
        if buf.is_empty() {
            skip_white = true;
            continue;
        }
        if preceding_backslash {
            buf.pop();
            skip_white = true;
            appended_line_begin = true;
            preceding_backslash = false;
        } else {
            out.push((start_line, std::mem::take(&mut buf)));
            skip_white = true;
        }
    }
    if preceding_backslash {
        buf.pop();
    }
    if !buf.is_empty() || preceding_backslash {
        out.push((start_line, buf));
    }
    out
}

/// Undoes the escapes of a key or a value.
fn unescape(s: &[char], line: usize) -> Result<String, PropertiesError> {
    let mut units: Vec<u16> = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        i += 1;
        if c != '\\' {
            let mut b = [0u16; 2];
            units.extend_from_slice(c.encode_utf16(&mut b));
            continue;
        }
        let Some(&e) = s.get(i) else {
            // A lone trailing backslash: Java drops it too (it cannot survive line joining).
            break;
        };
        i += 1;
        let out = match e {
            'u' => {
                let hex = s.get(i..i + 4).ok_or(PropertiesError { line })?;
                let mut v: u16 = 0;
                for h in hex {
                    let d = h.to_digit(16).ok_or(PropertiesError { line })?;
                    v = v * 16 + d as u16;
                }
                i += 4;
                units.push(v);
                continue;
            }
            't' => '\t',
            'n' => '\n',
            'r' => '\r',
            'f' => '\u{c}',
            other => other,
        };
        let mut b = [0u16; 2];
        units.extend_from_slice(out.encode_utf16(&mut b));
    }
    Ok(String::from_utf16_lossy(&units))
}

/// Splits one logical line into its raw key and value (escapes still in place).
fn split_line(line: &[char]) -> (&[char], &[char]) {
    let mut key_len = 0;
    let mut value_start = line.len();
    let mut has_sep = false;
    let mut preceding_backslash = false;
    while key_len < line.len() {
        let c = line[key_len];
        if (c == '=' || c == ':') && !preceding_backslash {
            value_start = key_len + 1;
            has_sep = true;
            break;
        }
        if is_blank(c) && !preceding_backslash {
            value_start = key_len + 1;
            break;
        }
        preceding_backslash = c == '\\' && !preceding_backslash;
        key_len += 1;
    }
    while value_start < line.len() {
        let c = line[value_start];
        if !is_blank(c) {
            if !has_sep && (c == '=' || c == ':') {
                has_sep = true;
            } else {
                break;
            }
        }
        value_start += 1;
    }
    (&line[..key_len], &line[value_start..])
}

/// Reads properties text into `key → value`, later keys overriding earlier ones.
///
/// ```
/// use josef_config::properties::parse;
/// let p = parse("# comment\nlog.dirs = /a,\\\n    /b\nnode.id: 3\nempty\n").unwrap();
/// assert_eq!(p["log.dirs"], "/a,/b");
/// assert_eq!(p["node.id"], "3");
/// assert_eq!(p["empty"], "");
/// ```
pub fn parse(text: &str) -> Result<BTreeMap<String, String>, PropertiesError> {
    let mut out = BTreeMap::new();
    for (line, logical) in logical_lines(text) {
        let chars: Vec<char> = logical.chars().collect();
        let (k, v) = split_line(&chars);
        out.insert(unescape(k, line)?, unescape(v, line)?);
    }
    Ok(out)
}

/// Decodes the bytes of a properties file: UTF-8 when they are valid UTF-8, else ISO-8859-1.
///
/// Kafka's `Utils.loadProps` hands Java an `InputStream`, which `Properties.load` reads as
/// ISO-8859-1; for ASCII, which every Kafka setting name is, the two readings agree.
pub fn decode_file_bytes(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) => s.to_string(),
        Err(_) => bytes.iter().map(|&b| char::from(b)).collect(),
    }
}

fn escape(s: &str, is_key: bool, out: &mut String) {
    for (i, c) in s.chars().enumerate() {
        match c {
            ' ' if i == 0 || is_key => out.push_str("\\ "),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\u{c}' => out.push_str("\\f"),
            '=' | ':' | '#' | '!' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            c if (' '..='~').contains(&c) => out.push(c),
            c => {
                let mut b = [0u16; 2];
                for u in c.encode_utf16(&mut b) {
                    out.push_str(&format!("\\u{u:04X}"));
                }
            }
        }
    }
}

/// Writes `key=value` lines that [`parse`] (and Java's `Properties.load`) reads back as the
/// same map, escaping as Java's `Properties.store` does (non-ASCII as `\uXXXX`).
///
/// ```
/// use josef_config::properties::{parse, write};
/// let map = [("a key".to_string(), " x=y\n".to_string())].into_iter().collect();
/// let text = write(&map);
/// assert_eq!(text, "a\\ key=\\ x\\=y\\n\n");
/// assert_eq!(parse(&text).unwrap(), map);
/// ```
pub fn write(map: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    for (k, v) in map {
        escape(k, true, &mut out);
        out.push('=');
        escape(v, false, &mut out);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn one(text: &str) -> (String, String) {
        let m = parse(text).unwrap();
        assert_eq!(m.len(), 1, "{m:?}");
        m.into_iter().next().unwrap()
    }

    fn kv(k: &str, v: &str) -> (String, String) {
        (k.to_string(), v.to_string())
    }

    #[test]
    fn equals_separates() {
        assert_eq!(one("a=b"), kv("a", "b"));
        assert_eq!(one("a = b"), kv("a", "b"));
    }

    #[test]
    fn colon_separates() {
        assert_eq!(one("a:b"), kv("a", "b"));
        assert_eq!(one("a : b"), kv("a", "b"));
    }

    #[test]
    fn whitespace_separates() {
        assert_eq!(one("a b"), kv("a", "b"));
        assert_eq!(one("a\tb"), kv("a", "b"));
        assert_eq!(one("a\u{c}b"), kv("a", "b"));
        // One `=` or `:` after the whitespace still belongs to the separator; a second does not.
        assert_eq!(one("a = = b"), kv("a", "= b"));
        assert_eq!(one("a  :b"), kv("a", "b"));
    }

    #[test]
    fn the_first_unescaped_separator_wins() {
        assert_eq!(one("a=b=c"), kv("a", "b=c"));
        assert_eq!(one("a:b=c"), kv("a", "b=c"));
        assert_eq!(one("url=PLAINTEXT://:9092"), kv("url", "PLAINTEXT://:9092"));
    }

    #[test]
    fn leading_whitespace_is_ignored_and_trailing_whitespace_kept() {
        assert_eq!(one("   \t a=b  "), kv("a", "b  "));
    }

    #[test]
    fn hash_and_bang_start_comments() {
        let m = parse("# one\n! two\n  # three\na=b # not a comment\n").unwrap();
        assert_eq!(m.len(), 1);
        assert_eq!(m["a"], "b # not a comment");
    }

    #[test]
    fn blank_lines_are_skipped() {
        let m = parse("\n\n  \t\na=1\r\n\r\nb=2\r\r").unwrap();
        assert_eq!(m.len(), 2);
        assert_eq!(m["b"], "2");
    }

    #[test]
    fn every_line_terminator_ends_a_line() {
        let m = parse("a=1\nb=2\rc=3\r\nd=4").unwrap();
        assert_eq!(m.len(), 4);
        assert_eq!(m["d"], "4");
    }

    #[test]
    fn an_odd_number_of_backslashes_continues_the_line() {
        assert_eq!(one("a=x\\\n    y"), kv("a", "xy"));
        assert_eq!(one("a=x\\\r\n\ty\\\n z"), kv("a", "xyz"));
        // Three backslashes: one escaped backslash, then a continuation.
        assert_eq!(one("a=x\\\\\\\ny"), kv("a", "x\\y"));
        // The key itself may continue.
        assert_eq!(one("lo\\\n  ng=1"), kv("long", "1"));
    }

    #[test]
    fn an_even_number_of_backslashes_does_not() {
        let m = parse("a=x\\\\\nb=y").unwrap();
        assert_eq!(m["a"], "x\\");
        assert_eq!(m["b"], "y");
    }

    #[test]
    fn a_continuation_line_is_never_a_comment() {
        assert_eq!(one("a=x\\\n  #y"), kv("a", "x#y"));
    }

    #[test]
    fn an_empty_continuation_line_ends_the_value() {
        let m = parse("a=x\\\n\nb=y").unwrap();
        assert_eq!(m["a"], "x");
        assert_eq!(m["b"], "y");
    }

    #[test]
    fn a_continuation_at_the_end_of_the_text_ends_the_value() {
        assert_eq!(one("a=x\\"), kv("a", "x"));
    }

    #[test]
    fn comments_do_not_continue() {
        let m = parse("# comment \\\na=1").unwrap();
        assert_eq!(m["a"], "1");
    }

    #[test]
    fn control_escapes() {
        assert_eq!(one("a=\\t\\n\\r\\f\\\\"), kv("a", "\t\n\r\u{c}\\"));
    }

    #[test]
    fn unicode_escapes() {
        assert_eq!(one("a=\\u00e9\\u0041"), kv("a", "éA"));
        assert_eq!(one("a=\\uD83D\\uDE00"), kv("a", "😀"));
        assert_eq!(one("a=\\uD83D"), kv("a", "\u{fffd}"));
    }

    #[test]
    fn malformed_unicode_escape_is_the_only_error() {
        assert_eq!(parse("x=1\n\na=\\u12G4"), Err(PropertiesError { line: 3 }));
        assert_eq!(parse("a=\\u12"), Err(PropertiesError { line: 1 }));
        assert!(parse("a=\\u12\\\n34").is_ok(), "joined before unescaping");
    }

    #[test]
    fn escaped_separators_belong_to_the_key() {
        assert_eq!(one("a\\=b=c"), kv("a=b", "c"));
        assert_eq!(one("a\\:b:c"), kv("a:b", "c"));
        assert_eq!(one("a\\ b c"), kv("a b", "c"));
        assert_eq!(one("\\#a=1"), kv("#a", "1"));
    }

    #[test]
    fn other_escaped_characters_stand_for_themselves() {
        assert_eq!(one("a=\\x\\y\\="), kv("a", "xy="));
    }

    #[test]
    fn a_key_alone_has_the_empty_value() {
        assert_eq!(one("lonely"), kv("lonely", ""));
        assert_eq!(one("lonely="), kv("lonely", ""));
        assert_eq!(one("lonely   "), kv("lonely", ""));
        assert_eq!(one("=v"), kv("", "v"));
    }

    #[test]
    fn later_duplicates_override() {
        let m = parse("a=1\na=2\n").unwrap();
        assert_eq!(m["a"], "2");
    }

    #[test]
    fn file_bytes_are_utf8_else_latin1() {
        assert_eq!(decode_file_bytes("é".as_bytes()), "é");
        assert_eq!(decode_file_bytes(&[b'a', 0xe9]), "aé");
    }

    /// What parses is written back to the same map; the only error is a `\u` escape.
    fn parses_back_or_has_a_bad_unicode_escape(text: &str) -> Result<(), TestCaseError> {
        match parse(text) {
            Ok(map) => prop_assert_eq!(parse(&write(&map)).unwrap(), map),
            Err(e) => {
                prop_assert!(text.contains("\\u"), "{e} without a \\u escape: {text:?}");
                // Natural lines end at \n, \r or \r\n.
                prop_assert!(e.line >= 1 && e.line <= 1 + text.matches(['\n', '\r']).count());
            }
        }
        Ok(())
    }

    proptest! {
        #[test]
        fn write_then_parse_round_trips(
            map in proptest::collection::btree_map(any::<String>(), any::<String>(), 0..8)
        ) {
            let text = write(&map);
            prop_assert_eq!(parse(&text).unwrap(), map);
        }

        #[test]
        fn any_text_parses_back_or_has_a_bad_unicode_escape(text in any::<String>()) {
            parses_back_or_has_a_bad_unicode_escape(&text)?;
        }

        #[test]
        fn property_like_text_parses_back_or_has_a_bad_unicode_escape(
            text in "[ a=:\\\\#!\t\r\nu0-9A-Fa-f]{0,64}"
        ) {
            parses_back_or_has_a_bad_unicode_escape(&text)?;
        }
    }
}
