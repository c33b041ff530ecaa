//! Heap allocations on the read path of the accepted TLS stream: a large request must not cost
//! an allocation per TLS record (rustls 0.23's own record layer gives every decrypted record a
//! `Vec` of its own; the stream's record layer decrypts in place).
//!
//! Its own test binary: the counting allocator sees every allocation of the process.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

mod common;

use common::self_signed;
use josef_tls::TlsListener;
use rustls::RootCertStore;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The system allocator, counting allocations.
struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's layout, as GlobalAlloc::alloc requires.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `alloc` above with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: as for `dealloc` and `alloc`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations while the server reads a 1 MiB request (64 full records) the client had already
/// sent, on `version`.
async fn allocations_reading_a_large_request(
    version: &'static rustls::SupportedProtocolVersion,
) -> usize {
    let (cert, settings) = self_signed();
    let mut roots = RootCertStore::empty();
    roots.add(cert).unwrap();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_protocol_versions(&[version])
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let listener = TlsListener::new(&settings).unwrap();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    // A pipe large enough to hold the whole request: the client is done before the count starts.
    let (a, b) = tokio::io::duplex(4 * 1024 * 1024);
    let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
    let (client, server) = tokio::join!(connector.connect(name, a), listener.accept(b));
    let (mut client, (mut server, _)) = (client.unwrap(), server.unwrap());
    let request: Vec<u8> = (0..1024 * 1024).map(|i| (i % 251) as u8).collect();
    client.write_all(&request).await.unwrap();
    client.flush().await.unwrap();
    let mut got = vec![0u8; request.len()];
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    server.read_exact(&mut got).await.unwrap();
    let allocations = ALLOCATIONS.load(Ordering::Relaxed) - before;
    assert!(got == request);
    allocations
}

#[tokio::test]
async fn a_large_request_is_read_without_an_allocation_per_record() {
    for version in [&rustls::version::TLS13, &rustls::version::TLS12] {
        let n = allocations_reading_a_large_request(version).await;
        // The ciphertext buffer grows a few times; 64 records must not mean 64 allocations.
        assert!(n <= 8, "{n} allocations for 64 records on {version:?}");
    }
}
