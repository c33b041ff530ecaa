//! Kafka's `sasl.jaas.config` syntax (`JaasConfig`): one or more
//! `<loginModuleClass> <controlFlag> (<optionName>=<optionValue>)*;` entries.
//!
//! Tokens follow the `java.io.StreamTokenizer` set-up Kafka uses: bytes up to the space are
//! white space; `;` and `=` are single-character tokens; `"` and `'` quote (with Java escapes:
//! `\n`, `\t`, octal `\101`, and `\x` for any other `x`); `//`, `/* */` and a lone `/` start
//! comments; every other character is part of a word.
//!
//! ```
//! use josef_sasl::jaas::{ControlFlag, JaasConfig};
//!
//! let config = JaasConfig::parse(
//!     r#"org.apache.kafka.common.security.plain.PlainLoginModule required
//!        username="admin" password="admin-secret" user_alice="alice-secret";"#,
//! )
//! .unwrap();
//! let entry = &config.entries[0];
//! assert_eq!(entry.control_flag, ControlFlag::Required);
//! assert_eq!(entry.options["user_alice"], "alice-secret");
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::iter::Peekable;
use std::str::Chars;

/// A JAAS login module's control flag (`LoginModuleControlFlag`), matched without regard to case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ControlFlag {
    /// `required`.
    Required,
    /// `requisite`.
    Requisite,
    /// `sufficient`.
    Sufficient,
    /// `optional`.
    Optional,
}

impl ControlFlag {
    fn parse(flag: &str) -> Option<ControlFlag> {
        match flag.to_ascii_uppercase().as_str() {
            "REQUIRED" => Some(ControlFlag::Required),
            "REQUISITE" => Some(ControlFlag::Requisite),
            "SUFFICIENT" => Some(ControlFlag::Sufficient),
            "OPTIONAL" => Some(ControlFlag::Optional),
            _ => None,
        }
    }

    /// The lower-case keyword.
    pub const fn as_str(self) -> &'static str {
        match self {
            ControlFlag::Required => "required",
            ControlFlag::Requisite => "requisite",
            ControlFlag::Sufficient => "sufficient",
            ControlFlag::Optional => "optional",
        }
    }
}

/// One `<loginModuleClass> <controlFlag> options;` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoginModuleEntry {
    /// The login module class name.
    pub login_module: String,
    /// The control flag.
    pub control_flag: ControlFlag,
    /// The options; a repeated key keeps its last value, as Kafka's map does.
    pub options: BTreeMap<String, String>,
}

/// A parsed `sasl.jaas.config` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JaasConfig {
    /// The entries in order (at least one).
    pub entries: Vec<LoginModuleEntry>,
}

/// Why a `sasl.jaas.config` value does not parse (Kafka's `IllegalArgumentException`s).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JaasError {
    /// No entry at all.
    #[error("Login module not specified in JAAS config")]
    LoginModuleNotSpecified,
    /// An entry starts with `;` or `=` instead of a class name.
    #[error("Login module class name missing in JAAS config")]
    LoginModuleNameMissing,
    /// The class name is the last token.
    #[error("Login module control flag not specified in JAAS config")]
    ControlFlagNotSpecified,
    /// The control flag is `;` or `=`.
    #[error("Login module control flag is not available in the JAAS config")]
    ControlFlagNotAvailable,
    /// The control flag is not one of the four keywords.
    #[error("Invalid login module control flag '{0}' in JAAS config")]
    InvalidControlFlag(String),
    /// An option starts with `=`.
    #[error("Option name missing in JAAS config")]
    OptionNameMissing,
    /// An option name without `=value`.
    #[error("Value not specified for key '{0}' in JAAS config")]
    ValueNotSpecified(String),
    /// The entry does not end with `;`.
    #[error("JAAS config entry not terminated by semi-colon")]
    NotTerminated,
    /// A consumer asked for one entry of a login module class and found none or several.
    #[error("Must supply exactly 1 JAAS entry for login module {login_module} (found {found})")]
    EntryCount {
        /// The class asked for.
        login_module: String,
        /// How many entries of it there are.
        found: usize,
    },
}

#[derive(Debug, PartialEq, Eq)]
enum Token {
    Eof,
    /// A word or a quoted string: StreamTokenizer's `sval`.
    Text(String),
    /// `;`, `=` or another ordinary character (`sval` null).
    Ordinary(char),
}

fn is_ordinary(c: char) -> bool {
    c == ';' || c == '=' || ('\u{81}'..='\u{9f}').contains(&c)
}

fn is_word(c: char) -> bool {
    c > ' ' && !is_ordinary(c) && c != '/' && c != '"' && c != '\''
}

struct Tokenizer<'a> {
    chars: Peekable<Chars<'a>>,
}

impl Tokenizer<'_> {
    fn next_token(&mut self) -> Token {
        loop {
            let Some(c) = self.chars.next() else {
                return Token::Eof;
            };
            if c <= ' ' {
                continue;
            }
            if c == '/' {
                if self.chars.peek() == Some(&'*') {
                    self.chars.next();
                    self.skip_block_comment();
                } else {
                    self.skip_line();
                }
                continue;
            }
            if c == '"' || c == '\'' {
                return Token::Text(self.quoted(c));
            }
            if is_ordinary(c) {
                return Token::Ordinary(c);
            }
            let mut word = String::from(c);
            while let Some(&n) = self.chars.peek() {
                if !is_word(n) {
                    break;
                }
                word.push(n);
                self.chars.next();
            }
            return Token::Text(word);
        }
    }

    fn skip_line(&mut self) {
        while let Some(&c) = self.chars.peek() {
            if c == '\n' || c == '\r' {
                break;
            }
            self.chars.next();
        }
    }

    fn skip_block_comment(&mut self) {
        let mut star = false;
        for c in self.chars.by_ref() {
            if star && c == '/' {
                return;
            }
            star = c == '*';
        }
    }

    /// A quoted string ends at its quote, or (unterminated, as StreamTokenizer allows) at a line
    /// end, which is left for the white-space rule, or at the end of input.
    fn quoted(&mut self, quote: char) -> String {
        let mut out = String::new();
        while let Some(&c) = self.chars.peek() {
            if c == '\n' || c == '\r' {
                return out;
            }
            self.chars.next();
            if c == quote {
                return out;
            }
            if c != '\\' {
                out.push(c);
                continue;
            }
            let Some(e) = self.chars.next() else {
                return out;
            };
            match e {
                '0'..='7' => out.push(self.octal(e)),
                'a' => out.push('\u{7}'),
                'b' => out.push('\u{8}'),
                'f' => out.push('\u{c}'),
                'n' => out.push('\n'),
                'r' => out.push('\r'),
                't' => out.push('\t'),
                'v' => out.push('\u{b}'),
                other => out.push(other),
            }
        }
        out
    }

    /// Up to three octal digits; the third only when the first is at most 3 (so it fits a byte).
    fn octal(&mut self, first: char) -> char {
        let mut value = first as u32 - '0' as u32;
        if let Some(&d @ '0'..='7') = self.chars.peek() {
            self.chars.next();
            value = value * 8 + (d as u32 - '0' as u32);
            if first <= '3' {
                if let Some(&d @ '0'..='7') = self.chars.peek() {
                    self.chars.next();
                    value = value * 8 + (d as u32 - '0' as u32);
                }
            }
        }
        // At most 0o377: always a valid char.
        char::from_u32(value).unwrap_or('\u{fffd}')
    }
}

impl JaasConfig {
    /// Parses a `sasl.jaas.config` value.
    pub fn parse(text: &str) -> Result<JaasConfig, JaasError> {
        let mut tokens = Tokenizer {
            chars: text.chars().peekable(),
        };
        let mut entries = Vec::new();
        loop {
            match tokens.next_token() {
                Token::Eof => break,
                first => entries.push(parse_entry(first, &mut tokens)?),
            }
        }
        if entries.is_empty() {
            return Err(JaasError::LoginModuleNotSpecified);
        }
        Ok(JaasConfig { entries })
    }

    /// The single entry of `login_module` (a broker's listener JAAS config has one per mechanism).
    pub fn single_entry(&self, login_module: &str) -> Result<&LoginModuleEntry, JaasError> {
        let mut found = self
            .entries
            .iter()
            .filter(|e| e.login_module == login_module);
        match (found.next(), found.count()) {
            (Some(e), 0) => Ok(e),
            (first, rest) => Err(JaasError::EntryCount {
                login_module: login_module.to_string(),
                found: usize::from(first.is_some()) + rest,
            }),
        }
    }
}

fn parse_entry(first: Token, tokens: &mut Tokenizer<'_>) -> Result<LoginModuleEntry, JaasError> {
    let Token::Text(login_module) = first else {
        return Err(JaasError::LoginModuleNameMissing);
    };
    let control_flag = match tokens.next_token() {
        Token::Eof => return Err(JaasError::ControlFlagNotSpecified),
        Token::Ordinary(_) => return Err(JaasError::ControlFlagNotAvailable),
        Token::Text(flag) => {
            ControlFlag::parse(&flag).ok_or(JaasError::InvalidControlFlag(flag))?
        }
    };
    let mut options = BTreeMap::new();
    loop {
        let key = match tokens.next_token() {
            Token::Eof => return Err(JaasError::NotTerminated),
            Token::Ordinary(';') => break,
            Token::Ordinary(_) => return Err(JaasError::OptionNameMissing),
            Token::Text(key) => key,
        };
        if tokens.next_token() != Token::Ordinary('=') {
            return Err(JaasError::ValueNotSpecified(key));
        }
        match tokens.next_token() {
            Token::Text(value) => {
                options.insert(key, value);
            }
            _ => return Err(JaasError::ValueNotSpecified(key)),
        }
    }
    Ok(LoginModuleEntry {
        login_module,
        control_flag,
        options,
    })
}

/// Writes a value so that [`JaasConfig::parse`] reads it back unchanged.
fn write_text(f: &mut fmt::Formatter<'_>, text: &str) -> fmt::Result {
    if !text.is_empty() && text.chars().all(is_word) {
        return f.write_str(text);
    }
    f.write_str("\"")?;
    for c in text.chars() {
        match c {
            '"' => f.write_str("\\\"")?,
            '\\' => f.write_str("\\\\")?,
            '\n' => f.write_str("\\n")?,
            '\r' => f.write_str("\\r")?,
            c => write!(f, "{c}")?,
        }
    }
    f.write_str("\"")
}

impl fmt::Display for LoginModuleEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_text(f, &self.login_module)?;
        write!(f, " {}", self.control_flag.as_str())?;
        for (k, v) in &self.options {
            f.write_str(" ")?;
            write_text(f, k)?;
            f.write_str("=")?;
            write_text(f, v)?;
        }
        f.write_str(";")
    }
}

impl fmt::Display for JaasConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.entries.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAIN: &str = "org.apache.kafka.common.security.plain.PlainLoginModule";

    #[test]
    fn parses_kafkas_documented_plain_config() {
        let c = JaasConfig::parse(&format!(
            r#"{PLAIN} required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";"#
        ))
        .unwrap();
        assert_eq!(c.entries.len(), 1);
        let e = c.single_entry(PLAIN).unwrap();
        assert_eq!(e.login_module, PLAIN);
        assert_eq!(e.options.len(), 4);
        assert_eq!(e.options["username"], "admin");
        assert_eq!(e.options["user_admin"], "admin-secret");
    }

    #[test]
    fn quotes_escapes_comments_and_flags() {
        let c = JaasConfig::parse(
            "a.B Optional /* c */ k1='x y' k2=\"q\\\"\\\\\\n\\101\" k3=bare // rest\n;\
             c.D SUFFICIENT; e.F requisite k=v;",
        )
        .unwrap();
        assert_eq!(c.entries.len(), 3);
        let e = &c.entries[0];
        assert_eq!(e.control_flag, ControlFlag::Optional);
        assert_eq!(e.options["k1"], "x y");
        assert_eq!(e.options["k2"], "q\"\\\nA");
        assert_eq!(e.options["k3"], "bare");
        assert_eq!(c.entries[1].control_flag, ControlFlag::Sufficient);
        assert!(c.entries[1].options.is_empty());
        assert_eq!(c.entries[2].control_flag, ControlFlag::Requisite);
        assert!(c.single_entry("a.B").is_ok());
        assert!(matches!(
            c.single_entry("x.Y"),
            Err(JaasError::EntryCount { found: 0, .. })
        ));
    }

    #[test]
    fn refuses_what_kafka_refuses() {
        let cases = [
            ("", JaasError::LoginModuleNotSpecified),
            ("  // only a comment", JaasError::LoginModuleNotSpecified),
            ("a.B", JaasError::ControlFlagNotSpecified),
            ("a.B ;", JaasError::ControlFlagNotAvailable),
            (
                "a.B mandatory;",
                JaasError::InvalidControlFlag("mandatory".into()),
            ),
            ("a.B required k;", JaasError::ValueNotSpecified("k".into())),
            ("a.B required k=;", JaasError::ValueNotSpecified("k".into())),
            ("a.B required k=v", JaasError::NotTerminated),
            ("a.B required =v;", JaasError::OptionNameMissing),
            ("; a.B required;", JaasError::LoginModuleNameMissing),
        ];
        for (text, err) in cases {
            assert_eq!(JaasConfig::parse(text), Err(err), "{text:?}");
        }
    }

    #[test]
    fn repeated_key_keeps_last_value() {
        let c = JaasConfig::parse("a.B required k=1 k=2;").unwrap();
        assert_eq!(c.entries[0].options["k"], "2");
    }

    #[test]
    fn display_parses_back() {
        let c =
            JaasConfig::parse("'odd name' required 'k k'=\"a\\\"b\\\\c\\nd\" e='' ; x.Y optional;")
                .unwrap();
        let again = JaasConfig::parse(&c.to_string()).unwrap();
        assert_eq!(again, c);
    }
}
