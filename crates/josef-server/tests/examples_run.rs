//! Runs `examples/in_memory_transport.rs`: the broker answers ApiVersions over an in-memory pipe.

#[allow(dead_code)] // the example's `main`
#[path = "../examples/in_memory_transport.rs"]
mod in_memory_transport;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_in_memory_transport_example_is_answered_over_its_pipe() {
    let apis = in_memory_transport::run().await.unwrap();
    // Every API josef-server serves on one node, ApiVersions and Produce and Fetch among them.
    assert!(apis >= 40, "{apis} APIs listed");
}
