//! Runs `examples/fetch_session.rs` and checks the answers it prints.

#[path = "../examples/fetch_session.rs"]
mod fetch_session;

#[test]
fn fetch_session_example_sends_only_what_changed() {
    let mut out = Vec::new();
    fetch_session::run(&mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let answers: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("-> ") || l.starts_with("orders-"))
        .collect();
    let id = answers[0]
        .strip_prefix("-> NONE, session ")
        .and_then(|s| s.split(',').next())
        .unwrap();
    assert!(id.parse::<i32>().unwrap() > 0, "{text}");
    let expected = [
        format!("-> NONE, session {id}, 2 partition(s)"),
        "orders-0: records 0..3, high watermark 3".into(),
        "orders-1: records 0..0, high watermark 0".into(),
        // Nothing new on orders-0 past offset 3, nothing on orders-1.
        format!("-> NONE, session {id}, 0 partition(s)"),
        // Only the partition whose high watermark moved.
        format!("-> NONE, session {id}, 1 partition(s)"),
        "orders-1: records 0..2, high watermark 2".into(),
        "-> INVALID_FETCH_SESSION_EPOCH, session 0, 0 partition(s)".into(),
        format!("-> NONE, session {id}, 0 partition(s)"),
        "-> NONE, session 0, 0 partition(s)".into(),
    ];
    assert_eq!(answers, expected, "{text}");
    assert!(
        text.contains(&format!("session {id}: epoch 4, 1 partition(s)")),
        "{text}"
    );
    assert!(text.ends_with("sessions in the cache: 0\n"), "{text}");
}
