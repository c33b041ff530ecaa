//! Decodes arbitrary bytes as a request frame (without length prefix); whatever decodes must
//! re-encode, and the re-encoded frame must decode to the same header and body; encoding the body
//! into `FrameChunks` (records referenced, not copied) gives the same bytes. Nothing may panic.
#![no_main]

use bytes::{Bytes, BytesMut};
use josef_protocol::{decode_request_frame, encode_request_frame, split_frame, FrameChunks};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The length-prefixed path, with a small maximum.
    let mut stream = BytesMut::from(data);
    while let Ok(Some(frame)) = split_frame(&mut stream, 1 << 16) {
        let _ = decode_request_frame(frame.freeze());
    }

    let Ok((header, body)) = decode_request_frame(Bytes::copy_from_slice(data)) else {
        return;
    };
    let mut out = BytesMut::new();
    // Encoding can legitimately fail (e.g. a string longer than 32767 bytes cannot come from the
    // wire, but a tagged field that decodes to its default is dropped): it must not panic.
    if encode_request_frame(&header, &body, &mut out).is_err() {
        return;
    }
    let size = i32::from_be_bytes([out[0], out[1], out[2], out[3]]) as usize;
    assert_eq!(size, out.len() - 4, "length prefix");
    let out = out.freeze();
    let version = header.request_api_version;
    let mut flat = BytesMut::new();
    body.encode(&mut flat, version).expect("encoded in the frame above");
    let flat = flat.freeze();
    let mut chunks = FrameChunks::new();
    body.encode(&mut chunks, version).expect("same body, same version");
    assert_eq!(chunks.to_bytes(), flat, "FrameChunks encoding differs");
    let (h2, b2) = decode_request_frame(out.slice(4..)).expect("re-encoded frame decodes");
    assert_eq!(h2, header);
    if b2 != body {
        // Only a NaN (not equal to itself) may differ by `==`: the bytes must still be the same.
        let mut again = BytesMut::new();
        b2.encode(&mut again, version).expect("decoded from an encoding");
        assert_eq!(again.freeze(), flat, "decode(encode(body)) != body");
    }
});
