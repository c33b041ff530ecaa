//! Golden frames written by real clients (confluent-kafka/librdkafka, kafka-python, kafkajs): every one
//! decodes completely and re-encodes to the same bytes, and its borrowed views read the same values.
//!
//! The frames are copied into `tests/data/<client>/` so that this test does not depend on the shared
//! fixtures. `decodes_shared_fixture_frames` also reads the shared directory (`../shared` beside
//! the clone, not in this repository); it is `#[ignore]`d with that reason, since libtest cannot
//! ignore a test at run time, so a plain clone lists it as ignored rather than passing it
//! unchecked. `scripts/test.sh` runs it with `--ignored`, where a missing directory fails it.

use bytes::{Bytes, BytesMut};
use josef_protocol::{
    decode_request_header, encode_request_frame, DecodeView, MessageView, RequestBody,
};
use std::path::{Path, PathBuf};

fn bin_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(clients) = std::fs::read_dir(dir) else {
        return out;
    };
    for c in clients.flatten() {
        if let Ok(files) = std::fs::read_dir(c.path()) {
            for f in files.flatten() {
                if f.path().extension().is_some_and(|e| e == "bin") {
                    out.push(f.path());
                }
            }
        }
    }
    out.sort();
    out
}

/// Decodes one frame, checks nothing is left over, re-encodes and compares. Returns an error text.
fn check_frame(path: &Path) -> Result<(), String> {
    let raw = std::fs::read(path).map_err(|e| e.to_string())?;
    let mut frame = Bytes::from(raw.clone());
    let (api_key, header) =
        decode_request_header(&mut frame).map_err(|e| format!("header: {e}"))?;
    let version = header.request_api_version;
    let body =
        RequestBody::decode(api_key, version, &mut frame).map_err(|e| format!("body: {e}"))?;
    if !frame.is_empty() {
        return Err(format!("{} bytes left after the body", frame.len()));
    }
    let mut out = BytesMut::new();
    encode_request_frame(&header, &body, &mut out).map_err(|e| format!("encode: {e}"))?;
    if out[..4] != (raw.len() as i32).to_be_bytes() {
        return Err("length prefix differs".into());
    }
    if out[4..] != raw[..] {
        let at = out[4..].iter().zip(raw.iter()).position(|(a, b)| a != b);
        return Err(format!(
            "re-encoded bytes differ (lengths {} vs {}, first difference at {at:?})",
            out.len() - 4,
            raw.len()
        ));
    }
    // The full frame API agrees.
    let (h2, b2) =
        josef_protocol::decode_request_frame(Bytes::from(raw)).map_err(|e| e.to_string())?;
    if h2 != header || b2 != body {
        return Err("decode_request_frame disagrees".into());
    }
    // The borrowed views read the same header and body.
    let mut rest: &[u8] = &out[4..];
    let header_view = josef_protocol::RequestHeaderView::decode_view(
        &mut rest,
        api_key.request_header_version(version),
    )
    .map_err(|e| format!("header view: {e}"))?;
    let body_view = josef_protocol::RequestBodyView::decode_view(api_key, version, &mut rest)
        .map_err(|e| format!("body view: {e}"))?;
    if !rest.is_empty() || header_view.to_message() != header || body_view.to_body() != body {
        return Err("the views disagree with the owned decode".into());
    }
    Ok(())
}

fn check_dir(dir: &Path) -> usize {
    let files = bin_files(dir);
    let mut failures = Vec::new();
    for f in &files {
        if let Err(e) = check_frame(f) {
            failures.push(format!("{}: {e}", f.display()));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} frames failed:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
    files.len()
}

#[test]
fn client_frames_decode_and_reencode_byte_exact() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let n = check_dir(&dir);
    assert_eq!(n, 166, "expected the 166 copied client frames");
}

#[test]
#[ignore = "needs the client frames in ../shared/fixtures/client-frames; scripts/test.sh runs it"]
fn decodes_shared_fixture_frames() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/client-frames");
    assert!(
        dir.exists(),
        "{} is absent: this test needs ../shared beside the clone",
        dir.display()
    );
    let n = check_dir(&dir);
    assert!(n >= 166);
}
