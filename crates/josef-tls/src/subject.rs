//! The subject of a client certificate as Java's `X500Principal.getName()` (RFC 2253) writes it,
//! the text `ssl.principal.mapping.rules` match.

/// Why a certificate's subject has no RFC 2253 text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SubjectError {
    /// The bytes are not a DER X.509 certificate.
    #[error("client certificate does not parse: {0}")]
    Certificate(String),
    /// An attribute value could not be re-encoded for its `#hex` form.
    #[error("client certificate subject attribute {oid} cannot be encoded")]
    Attribute {
        /// The attribute's OID.
        oid: String,
    },
}

/// The subject of a DER certificate as Java's `X500Principal.getName()` (RFC 2253): the most
/// specific RDN first, `,` between RDNs, `+` inside a multi-valued one, Java's keywords (CN, C, L,
/// ST, O, OU, DC, STREET, UID), other attributes as `OID=#hex`.
///
/// ```
/// assert!(josef_tls::subject_dn(b"not a certificate").is_err());
/// ```
pub fn subject_dn(der: &[u8]) -> Result<String, SubjectError> {
    use x509_parser::der_parser::asn1_rs::ToDer;
    use x509_parser::prelude::*;
    let (_, cert) =
        X509Certificate::from_der(der).map_err(|e| SubjectError::Certificate(e.to_string()))?;
    let mut rdns = Vec::new();
    for rdn in cert.subject().iter() {
        let mut parts = Vec::new();
        for atv in rdn.iter() {
            let oid = atv.attr_type().to_id_string();
            let keyword = match oid.as_str() {
                "2.5.4.3" => Some("CN"),
                "2.5.4.6" => Some("C"),
                "2.5.4.7" => Some("L"),
                "2.5.4.8" => Some("ST"),
                "2.5.4.10" => Some("O"),
                "2.5.4.11" => Some("OU"),
                "2.5.4.9" => Some("STREET"),
                "0.9.2342.19200300.100.1.25" => Some("DC"),
                "0.9.2342.19200300.100.1.1" => Some("UID"),
                _ => None,
            };
            match (keyword, atv.as_str()) {
                (Some(k), Ok(v)) => parts.push(format!("{k}={}", escape_rfc2253(v))),
                _ => {
                    let raw = atv
                        .attr_value()
                        .to_der_vec()
                        .map_err(|_| SubjectError::Attribute { oid: oid.clone() })?;
                    let hex: String = raw.iter().map(|b| format!("{b:02x}")).collect();
                    parts.push(format!("{oid}=#{hex}"));
                }
            }
        }
        rdns.push(parts.join("+"));
    }
    rdns.reverse();
    Ok(rdns.join(","))
}

/// RFC 2253 escaping of an attribute value.
fn escape_rfc2253(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    let n = v.chars().count();
    for (i, c) in v.chars().enumerate() {
        let special = matches!(c, ',' | '+' | '"' | '\\' | '<' | '>' | ';')
            || (i == 0 && (c == '#' || c == ' '))
            || (i + 1 == n && c == ' ');
        if special {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc2253_escaping() {
        assert_eq!(escape_rfc2253("a,b"), "a\\,b");
        assert_eq!(escape_rfc2253(" #x "), "\\ #x\\ ");
        assert_eq!(escape_rfc2253("#x"), "\\#x");
        assert_eq!(escape_rfc2253("plain"), "plain");
    }

    fn certificate(dn: &[(rcgen::DnType, &str)]) -> Vec<u8> {
        let mut params = rcgen::CertificateParams::new(vec!["localhost".into()]).unwrap();
        let mut name = rcgen::DistinguishedName::new();
        for (t, v) in dn {
            name.push(t.clone(), *v);
        }
        params.distinguished_name = name;
        let key = rcgen::KeyPair::generate().unwrap();
        params.self_signed(&key).unwrap().der().to_vec()
    }

    #[test]
    fn subject_is_most_specific_first() {
        let der = certificate(&[
            (rcgen::DnType::CountryName, "US"),
            (rcgen::DnType::OrganizationName, "corp, inc"),
            (rcgen::DnType::OrganizationalUnitName, "eng"),
            (rcgen::DnType::CommonName, "alice"),
        ]);
        assert_eq!(
            subject_dn(&der).unwrap(),
            "CN=alice,OU=eng,O=corp\\, inc,C=US"
        );
        assert!(matches!(
            subject_dn(b"garbage"),
            Err(SubjectError::Certificate(_))
        ));
    }

    #[test]
    fn other_attributes_are_oid_and_hex() {
        let der = certificate(&[
            (rcgen::DnType::CustomDnType(vec![1, 2, 3, 4]), "x"),
            (rcgen::DnType::CommonName, "bob"),
        ]);
        let dn = subject_dn(&der).unwrap();
        assert!(dn.starts_with("CN=bob,1.2.3.4=#"), "{dn}");
        // The value's DER: a string tag, length 1, `x`.
        assert!(dn.ends_with("0178"), "{dn}");
    }

    #[test]
    fn truncated_and_corrupted_certificates_are_errors() {
        let der = certificate(&[(rcgen::DnType::CommonName, "alice")]);
        for cut in 0..der.len() {
            assert!(subject_dn(&der[..cut]).is_err(), "cut at {cut}");
        }
        // A length field claiming far more than there is.
        let mut huge = der.clone();
        huge[1] = 0x84;
        huge.splice(2..2, [0x7f, 0xff, 0xff, 0xff]);
        assert!(subject_dn(&huge).is_err());
        for i in 0..der.len() {
            let mut flipped = der.clone();
            flipped[i] ^= 0xff;
            let _ = subject_dn(&flipped);
        }
    }
}
