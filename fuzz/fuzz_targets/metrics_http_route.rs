//! The request line of the `/metrics` endpoint from arbitrary bytes (`josef_metrics::route`,
//! what a scraper or anyone on the network sends): it never panics, only a
//! GET of `/metrics` over HTTP/1.x is served, and whatever is not an HTTP/1.x request line is Bad.
#![no_main]

use libfuzzer_sys::fuzz_target;

use josef_metrics::{route, Route};

fuzz_target!(|head: &[u8]| {
    let r = route(head);
    let line = head
        .split(|&b| b == b'\r' || b == b'\n')
        .next()
        .unwrap_or(&[]);
    let words: Vec<&[u8]> = line.split(|&b| b == b' ').filter(|w| !w.is_empty()).collect();
    let http1 = words.len() >= 3 && words[2].starts_with(b"HTTP/1.");
    match r {
        Route::Bad => assert!(!http1),
        Route::MethodNotAllowed => assert!(http1 && words[0] != b"GET"),
        Route::NotFound | Route::Metrics => {
            assert!(http1 && words[0] == b"GET");
            let path = words[1].split(|&b| b == b'?').next().unwrap_or(&[]);
            assert_eq!(r == Route::Metrics, path == b"/metrics");
        }
    }
});
