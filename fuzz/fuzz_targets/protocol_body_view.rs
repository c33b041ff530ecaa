//! The borrowed-view decoder accepts exactly what the owned decoder accepts. The input is a request
//! frame (without length prefix); past its header, the rest is decoded as that API's request body
//! and, the same bytes, as its response body, once into owned messages and once into views. Both
//! must fail with the same error, or both succeed, consume the same bytes and give equal messages
//! (the view converted with `to_body`). Nothing may panic.
#![no_main]

use bytes::{Bytes, BytesMut};
use josef_protocol::{
    decode_request_header, EncodeError, RequestBody, RequestBodyView, ResponseBody,
    ResponseBodyView,
};
use libfuzzer_sys::fuzz_target;

/// Equal, or (a NaN in a float64 field is not equal to itself) encoded to the same bytes.
fn same<B: PartialEq>(
    a: &B,
    b: &B,
    encode: impl Fn(&B, &mut BytesMut) -> Result<(), EncodeError>,
) -> bool {
    let bytes = |m: &B| {
        let mut out = BytesMut::new();
        encode(m, &mut out).ok().map(|()| out.freeze())
    };
    a == b || matches!((bytes(a), bytes(b)), (Some(x), Some(y)) if x == y)
}

fuzz_target!(|data: &[u8]| {
    let mut frame = Bytes::copy_from_slice(data);
    let Ok((api_key, header)) = decode_request_header(&mut frame) else {
        return;
    };
    let version = header.request_api_version;
    let body: &[u8] = &frame;

    let mut owned_rest = frame.clone();
    let mut view_rest = body;
    let owned = RequestBody::decode(api_key, version, &mut owned_rest);
    let view = RequestBodyView::decode_view(api_key, version, &mut view_rest);
    match (owned, view) {
        (Ok(o), Ok(v)) => {
            let v = v.to_body();
            assert!(
                same(&v, &o, |m, out| m.encode(out, version)),
                "request {api_key:?} v{version}: {v:?} != {o:?}"
            );
            assert_eq!(owned_rest.len(), view_rest.len(), "request bytes consumed");
        }
        (Err(a), Err(b)) => assert_eq!(a, b, "request {api_key:?} v{version} errors"),
        (o, v) => panic!("request {api_key:?} v{version}: owned {o:?}, view {v:?}"),
    }

    let mut owned_rest = frame.clone();
    let mut view_rest = body;
    let owned = ResponseBody::decode(api_key, version, &mut owned_rest);
    let view = ResponseBodyView::decode_view(api_key, version, &mut view_rest);
    match (owned, view) {
        (Ok(o), Ok(v)) => {
            let v = v.to_body();
            assert!(
                same(&v, &o, |m, out| m.encode(out, version)),
                "response {api_key:?} v{version}: {v:?} != {o:?}"
            );
            assert_eq!(owned_rest.len(), view_rest.len(), "response bytes consumed");
        }
        (Err(a), Err(b)) => assert_eq!(a, b, "response {api_key:?} v{version} errors"),
        (o, v) => panic!("response {api_key:?} v{version}: owned {o:?}, view {v:?}"),
    }
});
