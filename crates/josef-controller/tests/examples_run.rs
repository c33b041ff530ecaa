//! Runs `examples/fence_broker.rs` and checks the leaders it prints.

#[path = "../examples/fence_broker.rs"]
mod fence_broker;

#[test]
fn fence_broker_example_moves_the_leader_off_the_fenced_broker() {
    let mut out = Vec::new();
    fence_broker::run(&mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let has = |line: &str| {
        assert!(
            text.lines().any(|l| l.trim() == line),
            "no line {line:?} in:\n{text}"
        )
    };
    for id in 1..=3 {
        has(&format!("broker {id}: epoch {}, fenced false", 2 * id));
    }
    has("error code 0");
    has("orders-0: leader 1 epoch 0 isr [1, 2, 3] replicas [1, 2, 3]");
    has("broker 1 stops heartbeating; the others go on for 10 s");
    has("broker 1 fenced: true");
    // A new leader from the ISR, with a new leader epoch; the fenced broker leaves every ISR.
    has("orders-0: leader 2 epoch 1 isr [2, 3] replicas [1, 2, 3]");
    has("orders-1: leader 2 epoch 0 isr [2, 3] replicas [2, 3, 1]");
    has("metadata image at offset 9: 2 active broker(s)");
}
