//! The request line of a `/metrics` HTTP request: what the endpoint serves. Std-only; it reads
//! bytes from the network, so fuzz/fuzz_targets/metrics_http_route.rs fuzzes it.

/// What a request head asks for.
#[derive(Debug, PartialEq, Eq)]
pub enum Route {
    /// `GET /metrics` (any query string): the scrape.
    Metrics,
    /// A GET of another path: 404.
    NotFound,
    /// Another method: 405.
    MethodNotAllowed,
    /// Not an HTTP/1.x request line: 400.
    Bad,
}

/// Reads the request line of `head` (the bytes before the blank line).
pub fn route(head: &[u8]) -> Route {
    let line = head
        .split(|&b| b == b'\r' || b == b'\n')
        .next()
        .unwrap_or(&[]);
    let mut parts = line.split(|&b| b == b' ').filter(|p| !p.is_empty());
    let (Some(method), Some(target), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        return Route::Bad;
    };
    if !version.starts_with(b"HTTP/1.") {
        return Route::Bad;
    }
    if method != b"GET" {
        return Route::MethodNotAllowed;
    }
    let path = target.split(|&b| b == b'?').next().unwrap_or(&[]);
    if path == b"/metrics" {
        Route::Metrics
    } else {
        Route::NotFound
    }
}

#[cfg(test)]
mod tests {
    use super::{route, Route};
    use proptest::prelude::*;

    proptest! {
        // The request line parser takes any bytes from the network: it never panics, and only
        // a GET of /metrics is served.
        #[test]
        fn any_head_is_routed_without_panicking(head in proptest::collection::vec(any::<u8>(), 0..256)) {
            let r = route(&head);
            let line = head.split(|&b| b == b'\r' || b == b'\n').next().unwrap_or(&[]);
            if r != Route::Bad {
                prop_assert!(line.windows(7).any(|w| w == b"HTTP/1."));
            }
            if r == Route::Metrics {
                let first = head
                    .split(|&b| b == b' ' || b == b'\r' || b == b'\n')
                    .find(|t| !t.is_empty());
                prop_assert_eq!(first, Some(&b"GET"[..]));
            }
        }

        #[test]
        fn a_get_line_with_any_target_is_routed_by_its_path(target in "/[a-z?=/]{0,20}") {
            let line = format!("GET {target} HTTP/1.1\r\n");
            let want = if target.split('?').next() == Some("/metrics") { Route::Metrics } else { Route::NotFound };
            prop_assert_eq!(route(line.as_bytes()), want);
        }
    }

    #[test]
    fn only_get_of_the_metrics_path_is_served() {
        assert_eq!(
            route(b"GET /metrics HTTP/1.1\r\nHost: x\r\n"),
            Route::Metrics
        );
        assert_eq!(route(b"GET /metrics?x=1 HTTP/1.0"), Route::Metrics);
        assert_eq!(route(b"GET / HTTP/1.1"), Route::NotFound);
        assert_eq!(route(b"POST /metrics HTTP/1.1"), Route::MethodNotAllowed);
        assert_eq!(route(b"GET /metrics SPDY/3"), Route::Bad);
        assert_eq!(route(b"\x00\xff"), Route::Bad);
        assert_eq!(route(b""), Route::Bad);
    }
}
