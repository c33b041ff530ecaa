//! Runs `examples/classic_group.rs` and checks the group it prints.

#[path = "../examples/classic_group.rs"]
mod classic_group;

#[test]
fn classic_group_example_joins_syncs_commits_and_rebalances() {
    let mut out = Vec::new();
    classic_group::run(&mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let has = |line: &str| {
        assert!(
            text.lines().any(|l| l == line),
            "no line {line:?} in:\n{text}"
        )
    };
    assert!(
        text.lines()
            .filter(|l| l.contains(" joins: MEMBER_ID_REQUIRED, member id consumer-"))
            .count()
            == 2,
        "{text}"
    );
    has("consumer-a joins again: parked = true");
    has("consumer-b joins again: parked = true");
    // The join phase ends only when the initial rebalance delay runs out.
    assert!(text.contains("t=3000: a coordinator timer fires"), "{text}");
    has("consumer-a: generation 1, protocol range, leader, 2 member(s) listed");
    has("consumer-b: generation 1, protocol range, follower, 0 member(s) listed");
    has("consumer-a is assigned orders-0, orders-1");
    has("consumer-b is assigned orders-2, orders-3");
    has("consumer-a commits orders-0=42, orders-1=17: NONE, NONE");
    has("consumer-b leaves: NONE");
    has("consumer-a heartbeats: REBALANCE_IN_PROGRESS");
    has("consumer-a rejoins: generation 2, 1 member(s) listed");
    has("consumer-a is assigned orders-0, orders-1, orders-2, orders-3");
    // The offsets committed in generation 1 survive the rebalance.
    has("committed orders-0: 42");
    has("committed orders-1: 17");
}
