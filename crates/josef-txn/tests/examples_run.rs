//! Runs `examples/commit_transaction.rs` and checks the records, replies and markers it prints.

#[path = "../examples/commit_transaction.rs"]
mod commit_transaction;

#[test]
fn commit_transaction_persists_each_state_and_asks_for_commit_markers() {
    let mut out = Vec::new();
    commit_transaction::run(&mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    let persisted: Vec<&str> = lines
        .iter()
        .filter_map(|l| l.strip_prefix("persist "))
        .collect();
    assert_eq!(
        persisted,
        [
            "@0: payments-txn -> Empty pid 4000 epoch 0 []",
            "@1: payments-txn -> Ongoing pid 4000 epoch 0 [ledger-3, payments-0]",
            "@2: payments-txn -> PrepareCommit pid 4000 epoch 0 [ledger-3, payments-0]",
            "@3: payments-txn -> CompleteCommit pid 4000 epoch 0 []",
        ],
        "{text}"
    );
    // Every reply waited for its record; the markers go out only with the EndTxn reply.
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.starts_with("(reply held until @"))
            .count(),
        4,
        "{text}"
    );
    let markers: Vec<&&str> = lines.iter().filter(|l| l.starts_with("write ")).collect();
    assert_eq!(
        markers,
        [&"write Commit marker for pid 4000 epoch 0 (coordinator epoch 7) to [ledger-3, payments-0]"],
        "{text}"
    );
    let end = lines.iter().position(|l| *l == "EndTxn(commit)").unwrap();
    assert_eq!(
        lines[end + 3],
        "reply: EndTxnResponse { error: None, producer_id: -1, producer_epoch: -1 }"
    );
    assert!(lines.contains(
        &"reply: InitProducerIdResponse { error: None, producer_id: 4000, producer_epoch: 0 }"
    ));
    assert_eq!(
        *lines.last().unwrap(),
        "payments-txn is now Some(CompleteCommit); __transaction_state holds 4 records"
    );
}
