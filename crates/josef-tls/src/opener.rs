//! Decrypting one TLS record with ring, its plaintext written at any offset at or before the
//! record's ciphertext (ring's `open_within`: the AEAD reads the ciphertext and writes the
//! plaintext in the same pass).
//!
//! Why not rustls's `MessageDecrypter`: it decrypts in place only, so the plaintext of each record
//! stays between that record's header and tag, and a reader that wants a request's bytes in one
//! piece has to copy every record's plaintext once more. Opening each record of a buffer right
//! behind the plaintext of the record before it leaves the whole request contiguous with no copy.
//!
//! Nonces and additional data as RFC 8446 §5.2-5.3 (TLS 1.3), RFC 5288 §3 (TLS 1.2 AES-GCM: an
//! explicit 8-byte nonce leads each record) and RFC 7905 §2 (TLS 1.2 ChaCha20-Poly1305).

use std::ops::Range;

use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, NONCE_LEN};
use rustls::{ConnectionTrafficSecrets, ContentType, Error, PeerMisbehaved, SupportedCipherSuite};

use crate::records::{HEADER, MAX_FRAGMENT};

/// An AEAD tag (AES-GCM and ChaCha20-Poly1305 alike).
const TAG: usize = 16;
/// TLS 1.2 AES-GCM's explicit nonce at the front of each record.
const EXPLICIT_NONCE: usize = 8;

/// The receive key of a connection: what opens the peer's records.
pub(crate) struct Opener {
    key: LessSafeKey,
    iv: [u8; NONCE_LEN],
    /// TLS 1.3: the content type is inside the encryption, the header is the additional data.
    tls13: bool,
    /// TLS 1.2 AES-GCM: the record carries the last 8 bytes of its nonce.
    explicit: bool,
}

impl Opener {
    /// The opener for a traffic secret of `suite`.
    pub(crate) fn new(
        suite: SupportedCipherSuite,
        s: ConnectionTrafficSecrets,
    ) -> Result<Self, Error> {
        let (alg, key, iv) = match s {
            ConnectionTrafficSecrets::Aes128Gcm { key, iv } => (&ring::aead::AES_128_GCM, key, iv),
            ConnectionTrafficSecrets::Aes256Gcm { key, iv } => (&ring::aead::AES_256_GCM, key, iv),
            ConnectionTrafficSecrets::Chacha20Poly1305 { key, iv } => {
                (&ring::aead::CHACHA20_POLY1305, key, iv)
            }
            _ => return Err(Error::General("unsupported traffic secret".into())),
        };
        let key = UnboundKey::new(alg, key.as_ref())
            .map_err(|_| Error::General("bad traffic key".into()))?;
        let iv: [u8; NONCE_LEN] = iv
            .as_ref()
            .try_into()
            .map_err(|_| Error::General("bad traffic IV".into()))?;
        let tls13 = matches!(suite, SupportedCipherSuite::Tls13(_));
        Ok(Opener {
            key: LessSafeKey::new(key),
            iv,
            tls13,
            explicit: !tls13 && alg != &ring::aead::CHACHA20_POLY1305,
        })
    }

    /// Where a record's ciphertext starts, from the record's first byte: decrypting in place puts
    /// the plaintext there.
    pub(crate) fn ciphertext_offset(&self) -> usize {
        HEADER + if self.explicit { EXPLICIT_NONCE } else { 0 }
    }

    /// Opens the record at `buf[record]` (complete, as `record_len` measured it) with sequence
    /// number `seq`, writing its plaintext at `buf[dst..]`; `dst` is at most where the record's
    /// ciphertext starts. Gives the content type and the plaintext's length.
    pub(crate) fn open(
        &self,
        buf: &mut [u8],
        dst: usize,
        record: Range<usize>,
        seq: u64,
    ) -> Result<(ContentType, usize), Error> {
        let too_short = || Error::InvalidMessage(rustls::InvalidMessage::MessageTooShort);
        let header: [u8; HEADER] = buf
            .get(record.start..record.start + HEADER)
            .and_then(|h| h.try_into().ok())
            .ok_or_else(too_short)?;
        let cipher = record.start + self.ciphertext_offset();
        if record.end > buf.len() || cipher + TAG > record.end || dst > cipher {
            return Err(if record.end > buf.len() || dst > cipher {
                too_short()
            } else {
                Error::DecryptError
            });
        }
        let mut nonce = self.iv;
        if self.explicit {
            nonce[NONCE_LEN - EXPLICIT_NONCE..]
                .copy_from_slice(&buf[record.start + HEADER..cipher]);
        } else {
            let seq = seq.to_be_bytes();
            for (n, s) in nonce[NONCE_LEN - 8..].iter_mut().zip(seq) {
                *n ^= s;
            }
        }
        let nonce = Nonce::assume_unique_for_key(nonce);
        let plain_len = record.end - cipher - TAG;
        let opened = if self.tls13 {
            self.key.open_within(
                nonce,
                Aad::from(header),
                &mut buf[dst..record.end],
                cipher - dst..,
            )
        } else {
            let mut aad = [0u8; 13];
            aad[..8].copy_from_slice(&seq.to_be_bytes());
            aad[8..11].copy_from_slice(&header[..3]);
            aad[11..].copy_from_slice(&(plain_len as u16).to_be_bytes());
            self.key.open_within(
                nonce,
                Aad::from(aad),
                &mut buf[dst..record.end],
                cipher - dst..,
            )
        };
        let plain = opened.map_err(|_| Error::DecryptError)?;
        if !self.tls13 {
            if plain.len() > MAX_FRAGMENT {
                return Err(Error::PeerSentOversizedRecord);
            }
            return Ok((ContentType::from(header[0]), plain.len()));
        }
        // TLS 1.3's inner plaintext: content, its type, then zero padding.
        let Some(end) = plain.iter().rposition(|&b| b != 0) else {
            return Err(PeerMisbehaved::IllegalTlsInnerPlaintext.into());
        };
        if end > MAX_FRAGMENT {
            return Err(Error::PeerSentOversizedRecord);
        }
        Ok((ContentType::from(plain[end]), end))
    }
}
