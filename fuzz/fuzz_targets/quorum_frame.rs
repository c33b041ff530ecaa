//! The Raft transport's frames (josef-quorum) from arbitrary bytes: `length: u32 BE | JSON`, the
//! length checked against `MAX_FRAME_BYTES` before any buffer is sized, then each body decoded as a
//! request (as a node serves it) and as a response (as a client reads it). Nothing may panic;
//! whatever decodes encodes to JSON that decodes to the same encoding again.
#![no_main]

use josef_quorum::fuzzing::{decode_request, decode_response, read_frames};
use josef_quorum::MAX_FRAME_BYTES;
use libfuzzer_sys::fuzz_target;

fn check_body(body: &[u8]) {
    if let Some(json) = decode_request(body) {
        assert_eq!(
            decode_request(&json).as_ref(),
            Some(&json),
            "request JSON not stable"
        );
    }
    if let Some(json) = decode_response(body) {
        assert_eq!(
            decode_response(&json).as_ref(),
            Some(&json),
            "response JSON not stable"
        );
    }
}

fuzz_target!(|data: &[u8]| {
    let (frames, err) = read_frames(data);
    let used: usize = frames.iter().map(|f| 4 + f.len()).sum();
    assert!(used <= data.len(), "frames larger than the stream");
    if err.is_none() {
        assert_eq!(used, data.len(), "a clean end before the stream's end");
    } else if let Some(head) = data.get(used..used + 4) {
        let len = u32::from_be_bytes([head[0], head[1], head[2], head[3]]);
        if len > MAX_FRAME_BYTES {
            assert_eq!(err.unwrap().kind(), std::io::ErrorKind::InvalidData);
        }
    }
    for body in &frames {
        check_body(body);
    }
    // The bytes as one body too, so the JSON decoders see the fuzzer's input directly.
    check_body(data);
});
