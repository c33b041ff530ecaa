//! Runs `examples/broker_view.rs` and checks what broker 2 is told.

#[path = "../examples/broker_view.rs"]
mod broker_view;

#[test]
fn broker_view_example_shows_the_failover_to_broker_2() {
    let mut out = Vec::new();
    broker_view::run(&mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines,
        [
            "broker 2 leads: [orders-1 (epoch 0)]",
            "broker 2 follows: [orders-0 (epoch 0)]",
            "broker 2 newly elected: [orders-1 (epoch 0)]",
            "active brokers: 3",
            "broker 2 leads: [orders-0 (epoch 1)]",
            "broker 2 follows: []",
            "broker 2 newly elected: [orders-0 (epoch 1)]",
            "active brokers: 2",
            "orders-0: leader 2 epoch 1 isr [2, 3] at metadata offset 11",
        ],
        "{text}"
    );
}
