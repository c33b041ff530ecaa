//! Runs `examples/replicate.rs` and checks the offsets it prints.

#[path = "../examples/replicate.rs"]
mod replicate;

#[test]
fn replicate_example_advances_the_high_watermark_after_the_follower_fetches() {
    let mut out = Vec::new();
    replicate::run(&mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let states: Vec<&str> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("leader LEO "))
        .collect();
    assert_eq!(
        states,
        [
            "3 HW 0; follower LEO 0 HW 0",
            // The follower has the records, but the leader learns it only from the next fetch.
            "3 HW 0; follower LEO 3 HW 0",
            "3 HW 3; follower LEO 3 HW 0",
            "3 HW 3; follower LEO 3 HW 3",
        ],
        "{text}"
    );
    assert!(
        text.contains("offsets 0..=1, acknowledged yet: false"),
        "{text}"
    );
    assert!(
        text.contains("round 1: fetch at 0: 164 bytes, leader HW 0, appended Some((0, 2))"),
        "{text}"
    );
    assert!(
        text.contains("acks=all satisfied for offset 3: true"),
        "{text}"
    );
    assert!(
        text.contains("read HighWatermark from 0 after an acks=1 append: 3 records"),
        "{text}"
    );
    assert!(
        text.contains("read LogEnd from 0 after an acks=1 append: 4 records"),
        "{text}"
    );
}
