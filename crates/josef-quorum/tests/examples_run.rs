//! Runs `examples/three_voters.rs` and checks what every voter applied.

#[path = "../examples/three_voters.rs"]
mod three_voters;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_voters_example_survives_the_loss_of_its_leader() {
    let dir = tempfile::tempdir().unwrap();
    let mut out = Vec::new();
    three_voters::run(dir.path(), &mut out).await.unwrap();
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines,
        [
            "leader elected",
            "3 voters applied: TopicRecord orders, PartitionRecord orders-0",
            "leader stopped",
            "new leader elected: true",
            "voter applied: TopicRecord orders, PartitionRecord orders-0, PartitionChangeRecord orders-0",
            "voter applied: TopicRecord orders, PartitionRecord orders-0, PartitionChangeRecord orders-0",
        ],
        "{text}"
    );
}
