//! `ssl.principal.mapping.rules`: from a TLS client certificate's subject DN to a principal
//! name, after Kafka's `SslPrincipalMapper`.
//!
//! The rules are a comma-separated list of `DEFAULT` (the DN itself) and
//! `RULE:<regex>/<replacement>/[L|U]`. A rule applies when its regex matches the *whole* DN; the
//! replacement may use `$n` groups (a `$n` naming a group the regex does not have is literal, as in
//! Kafka) and `\` escapes the next character; `L` / `U` lower- or upper-case the result. The first
//! rule that applies wins; when none does, the connection is refused.
//!
//! ```
//! use josef_sasl::ssl_principal::SslPrincipalMapper;
//!
//! let m = SslPrincipalMapper::parse("RULE:^CN=([^,]+),.*$/$1/L,DEFAULT").unwrap();
//! assert_eq!(m.name("CN=Bob,OU=eng,O=corp").unwrap(), "bob");
//! assert_eq!(m.name("O=corp").unwrap(), "O=corp");
//! ```

use std::fmt;

use regex::Regex;

/// Kafka's default `ssl.principal.mapping.rules`.
pub const DEFAULT_SSL_PRINCIPAL_MAPPING_RULES: &str = "DEFAULT";

/// A rule list that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MappingRuleError {
    /// Not `DEFAULT` nor `RULE:pattern/replacement/[LU]`.
    #[error("Invalid rule: `{rule}`")]
    InvalidRule {
        /// The rule as written.
        rule: String,
    },
    /// The regex of a rule does not compile.
    #[error("Invalid rule: `{rule}`: {reason}")]
    InvalidPattern {
        /// The rule as written.
        rule: String,
        /// The regex compiler's complaint.
        reason: String,
    },
}

/// No rule applies to a DN: the connection fails (Kafka's `NoMatchingRule`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("No rules apply to {dn}, rules {rules}")]
pub struct NoMatchingRule {
    /// The DN.
    pub dn: String,
    /// The rules, as configured.
    pub rules: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Case {
    Keep,
    Lower,
    Upper,
}

#[derive(Debug, Clone)]
enum Rule {
    Default,
    Replace {
        /// The pattern anchored at both ends (Java's `Matcher.matches`).
        pattern: Regex,
        /// Capture groups of the pattern, not counting group 0.
        groups: usize,
        replacement: String,
        case: Case,
    },
}

/// A parsed `ssl.principal.mapping.rules` value.
#[derive(Debug, Clone)]
pub struct SslPrincipalMapper {
    rules: Vec<Rule>,
    text: String,
}

impl Default for SslPrincipalMapper {
    fn default() -> Self {
        SslPrincipalMapper {
            rules: vec![Rule::Default],
            text: DEFAULT_SSL_PRINCIPAL_MAPPING_RULES.to_string(),
        }
    }
}

impl fmt::Display for SslPrincipalMapper {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Splits the text at commas outside a rule's pattern and replacement; `\` escapes inside them.
fn split_rules(text: &str) -> Result<Vec<(String, String, String)>, MappingRuleError> {
    // (kind-or-whole, pattern, replacement) with the flags folded into the last element below.
    let mut out = Vec::new();
    let mut rest = text.trim();
    while !rest.is_empty() {
        let invalid = |r: &str| MappingRuleError::InvalidRule {
            rule: r.trim().to_string(),
        };
        if let Some(after) = rest.strip_prefix("RULE:") {
            let (pattern, after) = take_part(after).ok_or_else(|| invalid(rest))?;
            let (replacement, after) = take_part(after).ok_or_else(|| invalid(rest))?;
            // Flags, then anything up to the next comma (Kafka ignores it).
            let end = after.find(',').unwrap_or(after.len());
            let flags = after[..end].trim().to_string();
            out.push((
                "RULE".to_string(),
                pattern,
                format!("{replacement}\u{0}{flags}"),
            ));
            rest = after[end..].trim_start_matches(',').trim_start();
        } else {
            let end = rest.find(',').unwrap_or(rest.len());
            let word = rest[..end].trim();
            if word == "DEFAULT" {
                out.push(("DEFAULT".to_string(), String::new(), String::new()));
            } else if !word.is_empty() {
                return Err(invalid(word));
            }
            rest = rest[end..].trim_start_matches(',').trim_start();
        }
    }
    Ok(out)
}

/// One `/`-terminated part with `\` escapes kept as written; the rest after the `/`.
fn take_part(s: &str) -> Option<(String, &str)> {
    let mut part = String::new();
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => {
                let (_, next) = chars.next()?;
                part.push('\\');
                part.push(next);
            }
            '/' => return Some((part, &s[i + 1..])),
            _ => part.push(c),
        }
    }
    None
}

/// Java's regex takes `\/` for `/`; Rust's does too only for meta characters.
fn pattern_for_rust(pattern: &str) -> String {
    pattern.replace("\\/", "/")
}

impl SslPrincipalMapper {
    /// Parses a rule list (`DEFAULT` when empty, as Kafka's default).
    pub fn parse(text: &str) -> Result<SslPrincipalMapper, MappingRuleError> {
        let mut rules = Vec::new();
        for (kind, pattern, rest) in split_rules(text)? {
            if kind == "DEFAULT" {
                rules.push(Rule::Default);
                continue;
            }
            let (replacement, flags) = rest.split_once('\u{0}').unwrap_or((&rest, ""));
            let whole = format!("RULE:{pattern}/{replacement}/{flags}");
            let case = match flags {
                "" => Case::Keep,
                "L" => Case::Lower,
                "U" => Case::Upper,
                // Kafka's `.*?` after the flag takes anything; only L and U mean something.
                f if f.starts_with('L') => Case::Lower,
                f if f.starts_with('U') => Case::Upper,
                _ => Case::Keep,
            };
            let anchored = format!("^(?:{})$", pattern_for_rust(&pattern));
            let regex = Regex::new(&anchored).map_err(|e| MappingRuleError::InvalidPattern {
                rule: whole.clone(),
                reason: e.to_string(),
            })?;
            rules.push(Rule::Replace {
                groups: regex.captures_len().saturating_sub(1),
                pattern: regex,
                replacement: replacement.to_string(),
                case,
            });
        }
        if text.trim().is_empty() {
            return Ok(SslPrincipalMapper::default());
        }
        Ok(SslPrincipalMapper {
            rules,
            text: text.trim().to_string(),
        })
    }

    /// The principal name for `dn` (Java's RFC 2253 form of the subject).
    pub fn name(&self, dn: &str) -> Result<String, NoMatchingRule> {
        for rule in &self.rules {
            match rule {
                Rule::Default => return Ok(dn.to_string()),
                Rule::Replace {
                    pattern,
                    groups,
                    replacement,
                    case,
                } => {
                    let Some(caps) = pattern.captures(dn) else {
                        continue;
                    };
                    let out = expand(replacement, *groups, |i| {
                        caps.get(i).map_or("", |m| m.as_str())
                    });
                    return Ok(match case {
                        Case::Keep => out,
                        Case::Lower => out.to_lowercase(),
                        Case::Upper => out.to_uppercase(),
                    });
                }
            }
        }
        Err(NoMatchingRule {
            dn: dn.to_string(),
            rules: self.text.clone(),
        })
    }
}

/// Java's `Matcher.appendReplacement`: `\x` is `x`, `$n` takes the longest group number that
/// exists; a `$` whose first digit names no group stays literal (Kafka escapes those).
fn expand<'a>(replacement: &str, groups: usize, group: impl Fn(usize) -> &'a str) -> String {
    let bytes: Vec<char> = replacement.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            '\\' if i + 1 < bytes.len() => {
                out.push(bytes[i + 1]);
                i += 2;
            }
            '$' if i + 1 < bytes.len() && bytes[i + 1].is_ascii_digit() => {
                let first = bytes[i + 1].to_digit(10).unwrap_or(0) as usize;
                if first > groups {
                    out.push('$');
                    i += 1;
                    continue;
                }
                let mut n = first;
                let mut j = i + 2;
                while j < bytes.len() {
                    let Some(d) = bytes[j].to_digit(10) else {
                        break;
                    };
                    let next = n * 10 + d as usize;
                    if next > groups {
                        break;
                    }
                    n = next;
                    j += 1;
                }
                out.push_str(group(n));
                i = j;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prop_assert_eq;

    #[test]
    fn default_is_the_dn() {
        let m = SslPrincipalMapper::parse("DEFAULT").unwrap();
        assert_eq!(m.name("CN=a,O=b").unwrap(), "CN=a,O=b");
        assert_eq!(
            SslPrincipalMapper::parse("").unwrap().name("x").unwrap(),
            "x"
        );
    }

    #[test]
    fn rules_as_kafka_documents_them() {
        let m = SslPrincipalMapper::parse(
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L,DEFAULT",
        )
        .unwrap();
        assert_eq!(
            m.name("CN=kafka-server1,OU=ServiceUsers,O=Unknown,L=Unknown,ST=Unknown,C=Unknown")
                .unwrap(),
            "kafka-server1"
        );
        assert_eq!(
            m.name("CN=Duke,OU=JavaSoft,O=Sun Microsystems,L=Cupertino,ST=CA,C=US")
                .unwrap(),
            "duke@javasoft"
        );
        assert_eq!(m.name("OU=x,cn=Admin.Bob").unwrap(), "admin.bob");
        assert_eq!(m.name("O=none").unwrap(), "O=none");
    }

    #[test]
    fn upper_case_and_no_match() {
        let m = SslPrincipalMapper::parse("RULE:^CN=([^,]+),.*$/$1/U").unwrap();
        assert_eq!(m.name("CN=bob,O=x").unwrap(), "BOB");
        let e = m.name("O=x").unwrap_err();
        assert_eq!(e.dn, "O=x");
    }

    #[test]
    fn escapes_commas_and_literal_dollars() {
        // A comma inside the pattern does not split the list; `$3` with two groups is literal.
        let m =
            SslPrincipalMapper::parse(r"RULE:^CN=([^,]+),O=(\w+)$/$1-$2-$3\/x/,DEFAULT").unwrap();
        assert_eq!(m.name("CN=a,O=b").unwrap(), "a-b-$3/x");
        let m = SslPrincipalMapper::parse(r"RULE:^CN=(a)$/$12/").unwrap();
        assert_eq!(m.name("CN=a").unwrap(), "a2");
    }

    #[test]
    fn bad_rules_are_refused() {
        assert!(matches!(
            SslPrincipalMapper::parse("RULE:^CN=(.*$/x/"),
            Err(MappingRuleError::InvalidPattern { .. })
        ));
        assert!(matches!(
            SslPrincipalMapper::parse("RULE:abc"),
            Err(MappingRuleError::InvalidRule { .. })
        ));
        assert!(matches!(
            SslPrincipalMapper::parse("NOPE"),
            Err(MappingRuleError::InvalidRule { .. })
        ));
    }

    proptest::proptest! {
        #[test]
        fn never_panics(text in ".{0,64}", dn in ".{0,32}") {
            if let Ok(m) = SslPrincipalMapper::parse(&text) {
                // What parses prints as given and parses again to the same mapping of `dn`.
                let again = SslPrincipalMapper::parse(&m.to_string()).unwrap();
                prop_assert_eq!(again.name(&dn), m.name(&dn));
                match m.name(&dn) {
                    Ok(_) => {}
                    Err(e) => {
                        prop_assert_eq!(&e.dn, &dn);
                        prop_assert_eq!(e.rules, m.to_string());
                    }
                }
            }
        }

        #[test]
        fn the_first_rule_that_matches_wins_else_default(key in "(CN|OU|O)", value in "[A-Za-z]{1,8}") {
            let dn = format!("{key}={value}");
            let m = SslPrincipalMapper::parse("RULE:^CN=(.*)$/$1/L,DEFAULT").unwrap();
            let want = if key == "CN" { value.to_lowercase() } else { dn.clone() };
            prop_assert_eq!(m.name(&dn).unwrap(), want);
        }
    }
}
