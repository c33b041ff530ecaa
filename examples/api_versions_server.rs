//! A tiny TCP server that answers ApiVersions and nothing else.
//!
//! `cargo run --example api_versions_server -- [PORT]` (default 19092), then `kcat -L -b 127.0.0.1:PORT`.
//!
//! It advertises only ApiVersions, answers an ApiVersions request of an unsupported version with a v0
//! UNSUPPORTED_VERSION response (as Kafka does), and closes the connection on any other request or on
//! a malformed frame, so clients report an error instead of waiting.

use bytes::BytesMut;
use josef_protocol::messages::api_versions_response::ApiVersion;
use josef_protocol::messages::ApiVersionsResponse;
use josef_protocol::{
    decode_request_frame, encode_response_frame, split_frame, ApiKey, ErrorCode, FrameError,
    RequestBody, ResponseBody,
};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};

const MAX_FRAME_SIZE: usize = 1 << 20;

fn api_versions(error: ErrorCode) -> ApiVersionsResponse {
    let (min, max) = ApiKey::ApiVersions.valid_versions();
    ApiVersionsResponse {
        error_code: error.code(),
        api_keys: vec![ApiVersion {
            api_key: ApiKey::ApiVersions as i16,
            min_version: min,
            max_version: max,
            ..Default::default()
        }],
        ..Default::default()
    }
}

fn serve(mut stream: TcpStream) -> std::io::Result<()> {
    let peer = stream.peer_addr()?;
    let mut inbuf = BytesMut::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    loop {
        let frame = match split_frame(&mut inbuf, MAX_FRAME_SIZE) {
            Ok(Some(frame)) => frame,
            Ok(None) => {
                let n = stream.read(&mut chunk)?;
                if n == 0 {
                    return Ok(());
                }
                inbuf.extend_from_slice(&chunk[..n]);
                continue;
            }
            Err(e) => {
                eprintln!("{peer}: {e}; closing");
                return Ok(());
            }
        };
        let mut out = BytesMut::new();
        match decode_request_frame(frame.freeze()) {
            Ok((header, RequestBody::ApiVersions(_))) => {
                let body = ResponseBody::ApiVersions(api_versions(ErrorCode::None));
                encode_response_frame(
                    header.correlation_id,
                    ApiKey::ApiVersions,
                    header.request_api_version,
                    &body,
                    &mut out,
                )
                .map_err(std::io::Error::other)?;
                println!(
                    "{peer}: ApiVersions v{} answered",
                    header.request_api_version
                );
            }
            Err(FrameError::UnsupportedVersion {
                api_key: ApiKey::ApiVersions,
                header,
            }) => {
                // Kafka answers with version 0, which every client can read, and its own range.
                let body = ResponseBody::ApiVersions(api_versions(ErrorCode::UnsupportedVersion));
                encode_response_frame(
                    header.correlation_id,
                    ApiKey::ApiVersions,
                    0,
                    &body,
                    &mut out,
                )
                .map_err(std::io::Error::other)?;
                println!(
                    "{peer}: ApiVersions v{} unsupported, answered v0",
                    header.request_api_version
                );
            }
            Ok((header, body)) => {
                eprintln!(
                    "{peer}: {} v{} is not supported here; closing the connection",
                    body.api_key().name(),
                    header.request_api_version
                );
                return Ok(());
            }
            Err(e) => {
                eprintln!("{peer}: {e}; closing the connection");
                return Ok(());
            }
        }
        stream.write_all(&out)?;
    }
}

fn main() -> std::io::Result<()> {
    let port: u16 = std::env::args()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(19092);
    let listener = TcpListener::bind(("127.0.0.1", port))?;
    println!("answering ApiVersions on 127.0.0.1:{port}");
    for stream in listener.incoming() {
        let stream = stream?;
        std::thread::spawn(move || {
            if let Err(e) = serve(stream) {
                eprintln!("connection error: {e}");
            }
        });
    }
    Ok(())
}
