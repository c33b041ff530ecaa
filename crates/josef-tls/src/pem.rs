//! PEM keystores and truststores: certificate chains and one private key, from inline text or a
//! file. Everything is bounded by the input: a block's length comes from the text itself, not
//! from a field in it.

use std::io::BufReader;
use std::path::{Path, PathBuf};

use rustls_pki_types::pem::{PemObject, SectionKind};
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use crate::TlsConfigError;

/// The PEM text of a setting: the inline value, else the file at `location`.
pub(crate) fn pem_text(
    inline: Option<&str>,
    location: Option<&PathBuf>,
) -> Result<Option<Vec<u8>>, TlsConfigError> {
    if let Some(t) = inline {
        return Ok(Some(t.as_bytes().to_vec()));
    }
    location.map(|p| read_file(p)).transpose()
}

fn read_file(p: &Path) -> Result<Vec<u8>, TlsConfigError> {
    std::fs::read(p).map_err(|source| TlsConfigError::Io {
        path: p.display().to_string(),
        source,
    })
}

/// Every CERTIFICATE block of `pem`, in order; at least one.
pub fn certificates(
    pem: &[u8],
    what: &'static str,
) -> Result<Vec<CertificateDer<'static>>, TlsConfigError> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsConfigError::Pem {
            what,
            reason: e.to_string(),
        })?;
    if certs.is_empty() {
        return Err(TlsConfigError::Pem {
            what,
            reason: "no CERTIFICATE block".into(),
        });
    }
    Ok(certs)
}

/// The one unencrypted private key of `pem` (PKCS#8, PKCS#1 or SEC1); other blocks are skipped.
pub fn private_key(
    pem: &[u8],
    what: &'static str,
) -> Result<PrivateKeyDer<'static>, TlsConfigError> {
    let mut keys = Vec::new();
    let mut reader = BufReader::new(pem);
    loop {
        let item =
            rustls_pki_types::pem::from_buf(&mut reader).map_err(|e| TlsConfigError::Pem {
                what,
                reason: e.to_string(),
            })?;
        let Some((kind, der)) = item else { break };
        match kind {
            SectionKind::PrivateKey => keys.push(PrivateKeyDer::Pkcs8(der.into())),
            SectionKind::RsaPrivateKey => keys.push(PrivateKeyDer::Pkcs1(der.into())),
            SectionKind::EcPrivateKey => keys.push(PrivateKeyDer::Sec1(der.into())),
            _ => {}
        }
    }
    match keys.len() {
        1 => Ok(keys.remove(0)),
        0 => Err(TlsConfigError::Pem {
            what,
            reason: "no unencrypted PRIVATE KEY block (encrypted keys are not supported)".into(),
        }),
        n => Err(TlsConfigError::Pem {
            what,
            reason: format!("{n} private keys; a keystore holds one"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pki() -> (String, String) {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["localhost".into()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        (key.serialize_pem(), cert.pem())
    }

    fn reason(e: TlsConfigError) -> String {
        match e {
            TlsConfigError::Pem { what, reason } => {
                assert_eq!(what, "t");
                reason
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_keystore_holds_a_chain_and_one_key() {
        let (key, cert) = pki();
        let both = format!("{key}{cert}{cert}");
        assert_eq!(certificates(both.as_bytes(), "t").unwrap().len(), 2);
        assert!(matches!(
            private_key(both.as_bytes(), "t").unwrap(),
            PrivateKeyDer::Pkcs8(_)
        ));
        let two = format!("{key}{key}");
        assert!(reason(private_key(two.as_bytes(), "t").unwrap_err()).contains("2 private keys"));
        assert!(reason(private_key(cert.as_bytes(), "t").unwrap_err()).contains("no unencrypted"));
        assert!(reason(certificates(key.as_bytes(), "t").unwrap_err()).contains("no CERTIFICATE"));
    }

    #[test]
    fn truncated_and_garbage_pem_is_an_error() {
        let (key, cert) = pki();
        for text in [&cert, &key] {
            // Cut inside the base64 or the END line: never a panic, never a key or chain.
            // (A cut after the END line's last dash leaves whole PEM: the cuts stop before it, and the
            // last one always takes just that dash, whatever length this run's key and certificate have.)
            let whole = text.trim_end().len();
            for cut in (1..whole).step_by(7).chain([whole - 1]) {
                let t = &text.as_bytes()[..cut];
                assert!(certificates(t, "t").is_err() || text == &key);
                let _ = private_key(t, "t");
                if text == &key {
                    assert!(private_key(t, "t").is_err(), "cut at {cut}");
                }
            }
        }
        let bad = "-----BEGIN CERTIFICATE-----\n!!!not base64!!!\n-----END CERTIFICATE-----\n";
        assert!(certificates(bad.as_bytes(), "t").is_err());
        assert!(certificates(&[0xff; 4096], "t").is_err());
        assert!(private_key(&[0xff; 4096], "t").is_err());
    }

    #[test]
    fn a_missing_file_names_its_path() {
        let p = PathBuf::from("/nonexistent/josef-tls-test.pem");
        match pem_text(None, Some(&p)).unwrap_err() {
            TlsConfigError::Io { path, .. } => assert_eq!(path, p.display().to_string()),
            other => panic!("{other:?}"),
        }
        assert_eq!(pem_text(Some("x"), Some(&p)).unwrap().unwrap(), b"x");
        assert!(pem_text(None, None).unwrap().is_none());
    }
}
