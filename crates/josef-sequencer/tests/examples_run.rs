//! Runs `examples/idempotent_produce.rs` and checks each answer it prints.

#[path = "../examples/idempotent_produce.rs"]
mod idempotent_produce;

#[test]
fn idempotent_produce_answers_duplicates_gaps_and_zombies_as_kafka() {
    let mut out = Vec::new();
    idempotent_produce::run(&mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let answers: Vec<&str> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("-> "))
        .collect();
    assert_eq!(
        answers,
        [
            "appended at offsets 0..=4",
            "duplicate: NONE with the original offsets 0..=4, not appended",
            "error 45: out of order sequence for producer 0 epoch 0: received 10, last appended 4",
            "appended at offsets 5..=7",
            "appended at offsets 8..=9",
            "error 47: invalid producer epoch for producer 0: received 0, current 1",
            // After the restart from the snapshot: the newest batch is still known.
            "duplicate: NONE with the original offsets 8..=9, not appended",
            "appended at offsets 10..=11",
        ]
    );
    assert!(
        text.contains("producer 0: epoch 1, last sequence 1, log end offset 10"),
        "{text}"
    );
    assert!(text.contains("(block saved up to Some(1000))"), "{text}");
}
