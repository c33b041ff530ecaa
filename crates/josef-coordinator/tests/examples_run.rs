//! Runs `examples/lease_coordinator.rs` and checks what it prints.

#[path = "../examples/lease_coordinator.rs"]
mod lease_coordinator;

fn lines(out: &[u8]) -> Vec<String> {
    String::from_utf8(out.to_vec())
        .unwrap()
        .lines()
        .map(|l| l.trim().to_string())
        .collect()
}

#[test]
fn lease_coordinator_holds_answers_until_commit_and_reloads_after_failover() {
    let mut out = Vec::new();
    lease_coordinator::run(&mut out).unwrap();
    let lines = lines(&out);
    let after = |marker: &str| {
        let i = lines
            .iter()
            .position(|l| l == marker)
            .unwrap_or_else(|| panic!("no line {marker:?} in {lines:#?}"));
        lines[i + 1..].to_vec()
    };
    // The grant is held until the high watermark passes offset 0.
    assert_eq!(
        after("t=0 alice acquires orders-cleaner")[..3],
        [
            "held until committed: true",
            "high watermark 1",
            "-> alice: orders-cleaner granted until 30000",
        ]
    );
    assert_eq!(
        after("t=1000 bob acquires orders-cleaner")[0],
        "-> bob: orders-cleaner is held by alice"
    );
    // A failed append is COORDINATOR_NOT_AVAILABLE and leaves the shard as it was.
    assert!(
        after("t=2000 bob acquires payments-cleaner, the append fails")[0]
            .starts_with("-> error code 15 (")
            && lines.iter().any(|l| l.ends_with("leases held: 1"))
    );
    assert_eq!(
        after("t=30000 timer fires for orders-cleaner")[0],
        "-> alice: orders-cleaner expired"
    );
    // Bob's unreplicated grant is lost with the old leader; the reloaded shard has no lease.
    assert!(lines.contains(&"1 response(s) answered NOT_COORDINATOR".to_string()));
    assert_eq!(
        after("the new leader loads the partition:")[..3],
        [
            "offset 0 Granted { name: \"orders-cleaner\", owner: \"alice\", expires_ms: 30000 }",
            "offset 1 Released { name: \"orders-cleaner\" }",
            "loaded 2 records; leases held: {}",
        ]
    );
    assert_eq!(
        lines.last().unwrap(),
        "-> bob: orders-cleaner granted until 62000"
    );
}
