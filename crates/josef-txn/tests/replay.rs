//! Property: loading a partition from its records rebuilds exactly the live state (except the
//! in-memory-only last epoch), and every record written is a legal transition.

mod common;
use common::*;
use josef_txn::*;
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Init(u8),
    Add(u8, u8),
    Offsets(u8),
    End(u8, bool),
    Complete,
    Tick(u16),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u8..3).prop_map(Op::Init),
        (0u8..3, 0u8..4).prop_map(|(i, p)| Op::Add(i, p)),
        (0u8..3).prop_map(Op::Offsets),
        (0u8..3, any::<bool>()).prop_map(|(i, c)| Op::End(i, c)),
        Just(Op::Complete),
        (0u16..40_000).prop_map(Op::Tick),
    ]
}

fn strip(m: &TransactionMetadata) -> TransactionMetadata {
    TransactionMetadata {
        last_producer_epoch: -1,
        ..m.clone()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn reload_rebuilds_live_state(ops in proptest::collection::vec(op(), 1..60)) {
        let mut h = H::new();
        for o in ops {
            let id = |i: u8| format!("t{i}");
            let cur = |h: &H, i: u8| h.d.shard().get(&id(i)).map(|m| (m.producer_id, m.producer_epoch)).unwrap_or((1, 0));
            match o {
                Op::Init(i) => { h.init(&id(i)); }
                Op::Add(i, p) => { let (pid, e) = cur(&h, i); h.add(&id(i), pid, e, &[("topic", p as i32)]); }
                Op::Offsets(i) => { let (pid, e) = cur(&h, i); h.add_offsets(&id(i), pid, e, "g"); }
                Op::End(i, c) => { let (pid, e) = cur(&h, i); h.end(&id(i), pid, e, c); }
                Op::Complete => { h.complete_markers(); }
                Op::Tick(dt) => { h.now += dt as i64; h.tick(); }
            }
        }
        let live: Vec<_> = h.d.shard().transactions().values().map(strip).collect();
        let pending_before: Vec<_> = h.d.shard().pending_markers().into_iter().map(|m| (m.transactional_id, m.result, m.partitions)).collect();
        h.restart();
        let loaded: Vec<_> = h.d.shard().transactions().values().map(strip).collect();
        prop_assert_eq!(live, loaded);
        let pending_after: Vec<_> = h.d.shard().pending_markers().into_iter().map(|m| (m.transactional_id, m.result, m.partitions)).collect();
        prop_assert_eq!(pending_before, pending_after);
        // Legal transitions only.
        let mut last = std::collections::BTreeMap::new();
        for e in h.d.writer().entries() {
            if let josef_coordinator::LogEntry::Record(r) = e {
                match &r.record.value {
                    Some(v) => {
                        if let Some(prev) = last.get(&r.record.transactional_id) {
                            prop_assert!(TxnState::can_transition_to(*prev, v.state, v.client_transaction_version));
                        }
                        last.insert(r.record.transactional_id.clone(), v.state);
                    }
                    None => { last.remove(&r.record.transactional_id); }
                }
            }
        }
    }
}
