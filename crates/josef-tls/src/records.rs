//! The TLS record layer of an established server connection, done by Josef with the keys rustls
//! negotiated (rustls's kernel-connection API, the one kTLS users have).
//!
//! Why: rustls 0.23 decrypts a record in place in the caller's buffer but then copies the
//! plaintext into a fresh `Vec` per record (`take_received_plaintext`), which the stream copied
//! once more into the reader's buffer: an allocation and two copies per 16 KiB record on every
//! produce request. Here a record is opened with ring (the AEAD code rustls's ring provider runs,
//! see [`crate::opener`]) either in place or right behind the plaintext of the record before it
//! in the reader's own buffer, which leaves a request's plaintext contiguous with no copy.
//!
//! What rustls no longer does after the handshake, and so is done here: sequence numbers,
//! record framing and size limits, alerts (close_notify ends the stream; a fatal alert or any
//! other message is an error), TLS 1.3 KeyUpdate (new receive keys, and an answer with new send
//! keys when the peer asks), a TLS 1.3 key update before the send key's confidentiality limit.
//! Renegotiation (TLS 1.2) and other post-handshake messages are refused, as rustls refuses them.

use std::ops::Range;

use rustls::crypto::cipher::{MessageEncrypter, OutboundChunks, OutboundPlainMessage};
use rustls::kernel::KernelConnection;
use rustls::server::{ServerConnectionData, UnbufferedServerConnection};
use rustls::{
    ConnectionTrafficSecrets, ContentType, Error, PeerMisbehaved, ProtocolVersion,
    SupportedCipherSuite,
};

use crate::opener::Opener;

/// A record header: type, version, length.
pub(crate) const HEADER: usize = 5;
/// The most plaintext in one record (2^14).
pub(crate) const MAX_FRAGMENT: usize = 16 * 1024;
/// The largest ciphertext fragment a peer may send (TLS 1.2's 2^14 + 2048; TLS 1.3 allows less).
const MAX_CIPHERTEXT: usize = MAX_FRAGMENT + 2048;
/// TLS 1.3's limit for a record's ciphertext (2^14 + 256).
const MAX_CIPHERTEXT_TLS13: usize = MAX_FRAGMENT + 256;
/// HandshakeType key_update.
const KEY_UPDATE: u8 = 24;

/// What opening one record gave.
#[derive(Debug, PartialEq)]
pub(crate) enum Opened {
    /// Application data, at this range of the record's bytes.
    Data(Range<usize>),
    /// The peer's close_notify.
    Closed,
    /// Nothing for the reader (a KeyUpdate, an empty record, a warning alert); `send` holds what
    /// must go out before any later record (a KeyUpdate answer), possibly nothing.
    Control,
}

/// The record layer after the handshake: keys, sequence numbers, and what rustls still keeps
/// (the key schedule for KeyUpdate).
pub(crate) struct RecordLayer {
    kernel: KernelConnection<ServerConnectionData>,
    suite: SupportedCipherSuite,
    opener: Opener,
    encrypter: Box<dyn MessageEncrypter>,
    rx_seq: u64,
    tx_seq: u64,
    /// Records sealed under the current send key before a key update (TLS 1.3) or an error.
    tx_limit: u64,
}

impl std::fmt::Debug for RecordLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordLayer")
            .field("suite", &self.suite.suite())
            .field("rx_seq", &self.rx_seq)
            .field("tx_seq", &self.tx_seq)
            .finish_non_exhaustive()
    }
}

/// The key and IV of a traffic secret.
fn key_iv(
    s: ConnectionTrafficSecrets,
) -> Result<(rustls::crypto::cipher::AeadKey, rustls::crypto::cipher::Iv), Error> {
    match s {
        ConnectionTrafficSecrets::Aes128Gcm { key, iv }
        | ConnectionTrafficSecrets::Aes256Gcm { key, iv }
        | ConnectionTrafficSecrets::Chacha20Poly1305 { key, iv } => Ok((key, iv)),
        _ => Err(Error::General("unsupported traffic secret".into())),
    }
}

/// The encrypter of `suite` for a traffic secret.
fn encrypter(
    suite: SupportedCipherSuite,
    s: ConnectionTrafficSecrets,
) -> Result<Box<dyn MessageEncrypter>, Error> {
    let (key, iv) = key_iv(s)?;
    Ok(match suite {
        SupportedCipherSuite::Tls13(t) => t.aead_alg.encrypter(key, iv),
        SupportedCipherSuite::Tls12(t) => {
            let fixed = t.aead_alg.key_block_shape().fixed_iv_len;
            let (fixed, explicit) = iv.as_ref().split_at(fixed);
            t.aead_alg.encrypter(key, fixed, explicit)
        }
    })
}

/// The length of the complete record at the front of `buf` (header included), `None` while it is
/// incomplete; an error for a header no TLS peer sends (so bad input never waits for, or buffers,
/// more than one largest record).
pub(crate) fn record_len(buf: &[u8]) -> Result<Option<usize>, Error> {
    let Some(h) = buf.get(..HEADER) else {
        return Ok(None);
    };
    if h[1] != 3 {
        return Err(Error::InvalidMessage(
            rustls::InvalidMessage::UnknownProtocolVersion,
        ));
    }
    let len = u16::from_be_bytes([h[3], h[4]]) as usize;
    if len > MAX_CIPHERTEXT {
        return Err(Error::PeerSentOversizedRecord);
    }
    Ok((buf.len() >= HEADER + len).then_some(HEADER + len))
}

impl RecordLayer {
    /// Takes over an established connection: its keys and sequence numbers. The connection must
    /// have nothing left to send (drive it until `WriteTraffic`) and its configuration must allow
    /// secret extraction.
    pub(crate) fn new(conn: UnbufferedServerConnection) -> Result<Self, Error> {
        let (secrets, kernel) = conn.dangerous_into_kernel_connection()?;
        let suite = kernel.negotiated_cipher_suite();
        let (rx_seq, rx) = secrets.rx;
        let (tx_seq, tx) = secrets.tx;
        Ok(RecordLayer {
            opener: Opener::new(suite, rx)?,
            encrypter: encrypter(suite, tx)?,
            tx_limit: match suite {
                SupportedCipherSuite::Tls13(t) => t.common.confidentiality_limit,
                SupportedCipherSuite::Tls12(t) => t.common.confidentiality_limit,
            },
            kernel,
            suite,
            rx_seq,
            tx_seq,
        })
    }

    /// The negotiated cipher suite.
    pub(crate) fn suite(&self) -> SupportedCipherSuite {
        self.suite
    }

    /// The negotiated protocol version.
    pub(crate) fn protocol_version(&self) -> ProtocolVersion {
        self.kernel.protocol_version()
    }

    fn tls13(&self) -> bool {
        matches!(self.suite, SupportedCipherSuite::Tls13(_))
    }

    /// Opens `record` (one complete record, as [`record_len`] measured it) in place. What must be
    /// sent in answer (a KeyUpdate) is appended to `send`.
    pub(crate) fn open(&mut self, record: &mut [u8], send: &mut Vec<u8>) -> Result<Opened, Error> {
        let len = record.len();
        self.open_at(record, self.opener.ciphertext_offset(), 0..len, send)
    }

    /// Opens the record at `buf[record]` (complete, as [`record_len`] measured it), its plaintext
    /// written at `buf[dst..]`: `dst` may be anywhere from the end of the plaintext opened before
    /// (records read back to back become one contiguous plaintext) to where the record's
    /// ciphertext starts (in place). What must be sent in answer (a KeyUpdate) is appended to
    /// `send`.
    pub(crate) fn open_at(
        &mut self,
        buf: &mut [u8],
        dst: usize,
        record: Range<usize>,
        send: &mut Vec<u8>,
    ) -> Result<Opened, Error> {
        // A caller that did not measure the record with `record_len` gets an error, not a panic.
        let Some(&typ) = buf.get(record.start).filter(|_| record.len() >= HEADER) else {
            return Err(Error::InvalidMessage(
                rustls::InvalidMessage::MessageTooShort,
            ));
        };
        let typ = ContentType::from(typ);
        let tls13 = self.tls13();
        if tls13
            && (typ != ContentType::ApplicationData || record.len() > HEADER + MAX_CIPHERTEXT_TLS13)
        {
            return Err(if typ != ContentType::ApplicationData {
                Error::InappropriateMessage {
                    expect_types: vec![ContentType::ApplicationData],
                    got_type: typ,
                }
            } else {
                Error::PeerSentOversizedRecord
            });
        }
        if self.rx_seq == u64::MAX {
            return Err(Error::DecryptError);
        }
        let (typ, len) = self.opener.open(buf, dst, record, self.rx_seq)?;
        self.rx_seq += 1;
        let range = dst..dst + len;
        let payload = &buf[range.clone()];
        match typ {
            ContentType::ApplicationData if range.is_empty() => Ok(Opened::Control),
            ContentType::ApplicationData => Ok(Opened::Data(range)),
            ContentType::Alert => match payload {
                // close_notify.
                [_, 0] => Ok(Opened::Closed),
                // user_canceled, and TLS 1.2's warnings: nothing to do (rustls ignores them too).
                [1, 90] => Ok(Opened::Control),
                [1, _] if !tls13 => Ok(Opened::Control),
                [_, d] => Err(Error::AlertReceived(rustls::AlertDescription::from(*d))),
                _ => Err(Error::InvalidMessage(
                    rustls::InvalidMessage::MessageTooShort,
                )),
            },
            ContentType::Handshake if tls13 => {
                // Only KeyUpdate is expected after the handshake (no post-handshake auth), and
                // it must end its record: what follows is under the next key.
                let answer = match payload {
                    [KEY_UPDATE, 0, 0, 1, 0] => false,
                    [KEY_UPDATE, 0, 0, 1, 1] => true,
                    _ => return Err(PeerMisbehaved::KeyEpochWithPendingFragment.into()),
                };
                let (seq, secret) = self.kernel.update_rx_secret()?;
                self.opener = Opener::new(self.suite, secret)?;
                self.rx_seq = seq;
                if answer {
                    self.update_tx(send)?;
                }
                Ok(Opened::Control)
            }
            // TLS 1.2 renegotiation, and anything else: refused.
            _ => Err(Error::InappropriateMessage {
                expect_types: vec![ContentType::ApplicationData],
                got_type: typ,
            }),
        }
    }

    /// Seals the fatal alert that tells the peer why its record was refused (best effort: the
    /// connection is closed either way).
    pub(crate) fn alert(&mut self, e: &Error, out: &mut Vec<u8>) {
        let description = match e {
            Error::DecryptError => 20,            // bad_record_mac
            Error::PeerSentOversizedRecord => 22, // record_overflow
            Error::AlertReceived(_) => return,    // the peer already gave up
            Error::InvalidMessage(_) => 50,       // decode_error
            _ => 10,                              // unexpected_message
        };
        let _ = self.seal(ContentType::Alert, &[2, description], out);
    }

    /// Sends a KeyUpdate (update_not_requested) under the current send key, then switches to the
    /// next one (TLS 1.3).
    fn update_tx(&mut self, send: &mut Vec<u8>) -> Result<(), Error> {
        self.seal_one(ContentType::Handshake, &[KEY_UPDATE, 0, 0, 1, 0], send)?;
        let (seq, secret) = self.kernel.update_tx_secret()?;
        self.encrypter = encrypter(self.suite, secret)?;
        self.tx_seq = seq;
        Ok(())
    }

    /// Seals `data` of type `typ` into records appended to `out`.
    pub(crate) fn seal(
        &mut self,
        typ: ContentType,
        data: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(), Error> {
        for chunk in data.chunks(MAX_FRAGMENT) {
            if self.tx_seq >= self.tx_limit {
                if !self.tls13() {
                    return Err(Error::EncryptError);
                }
                self.update_tx(out)?;
            }
            self.seal_one(typ, chunk, out)?;
        }
        Ok(())
    }

    /// Sealed size of `plain` bytes of data: what `seal` appends at most.
    pub(crate) fn sealed_len(&self, plain: usize) -> usize {
        let records = plain.div_ceil(MAX_FRAGMENT).max(1) + 1;
        plain + records * (HEADER + self.encrypter.encrypted_payload_len(0) + 8)
    }

    fn seal_one(&mut self, typ: ContentType, data: &[u8], out: &mut Vec<u8>) -> Result<(), Error> {
        let msg = OutboundPlainMessage {
            typ,
            version: ProtocolVersion::TLSv1_2,
            payload: OutboundChunks::Single(data),
        };
        let sealed = self.encrypter.encrypt(msg, self.tx_seq)?;
        self.tx_seq += 1;
        out.extend_from_slice(&sealed.encode());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_measured_only_once_complete_and_bad_headers_are_refused() {
        assert_eq!(record_len(&[23, 3, 3, 0]).unwrap(), None);
        assert_eq!(record_len(&[23, 3, 3, 0, 2, 9]).unwrap(), None);
        assert_eq!(record_len(&[23, 3, 3, 0, 2, 9, 9, 7]).unwrap(), Some(7));
        // Not TLS (an HTTP request, say): refused at once.
        assert!(record_len(b"GET / HTTP/1.1").is_err());
        // Larger than any record: refused, never waited for.
        let [hi, lo] = ((MAX_CIPHERTEXT + 1) as u16).to_be_bytes();
        assert!(record_len(&[23, 3, 3, hi, lo]).is_err());
        let [hi, lo] = (MAX_CIPHERTEXT as u16).to_be_bytes();
        assert_eq!(record_len(&[23, 3, 3, hi, lo]).unwrap(), None);
    }
}
