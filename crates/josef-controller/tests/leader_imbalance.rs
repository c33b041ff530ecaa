//! The auto rebalance's per-broker threshold, `leader.imbalance.per.broker.percentage` (the
//! ZooKeeper-era `KafkaController.checkAndTriggerAutoLeaderRebalance`): preferred leaders are
//! elected only for brokers whose share of preferred leaderships held elsewhere is above it.

mod common;

use common::{reassign, Harness};
use josef_controller::ControllerConfig;

const INTERVAL_MS: i64 = 1000;

fn harness(percentage: i32) -> Harness {
    Harness::new(ControllerConfig {
        node_id: 100,
        seed: 7,
        leader_imbalance_check_interval_ms: INTERVAL_MS,
        leader_imbalance_per_broker_percentage: percentage,
        ..Default::default()
    })
}

/// One rebalance check: the first tick schedules it, the one an interval later runs it.
/// Returns the number of batches written.
fn run_rebalance_check(h: &mut Harness) -> usize {
    let scheduled = h.tick_all();
    h.now += INTERVAL_MS;
    h.heartbeat_all();
    scheduled + h.tick_all()
}

/// Makes `topic`-`p`, led by `leader`, prefer `preferred` instead: a reassignment to the same
/// replicas in another order completes at once and keeps the current leader.
fn prefer(h: &mut Harness, topic: &str, p: i32, preferred: i32, leader: i32) {
    assert_eq!(h.partition(topic, p).leader, leader);
    assert_eq!(reassign(h, topic, p, Some(&[preferred, leader])), 0);
    let after = h.partition(topic, p);
    assert_eq!((after.replicas[0], after.leader), (preferred, leader));
    assert!(!after.is_reassigning());
}

/// Broker 1 is the preferred replica of `led_by_1 + 1` partitions of "a" (led by 1) and "b"
/// (led by 2).
fn broker_1_prefers(h: &mut Harness, led_by_1: usize, led_by_2: usize) {
    h.add_brokers(2);
    let one_two: Vec<&[i32]> = vec![&[1, 2]; led_by_1];
    assert_eq!(h.create_assigned("a", &one_two), 0);
    let two_one: Vec<&[i32]> = vec![&[2, 1]; led_by_2];
    assert_eq!(h.create_assigned("b", &two_one), 0);
    for p in 0..led_by_2 as i32 {
        prefer(h, "b", p, 1, 2);
    }
}

#[test]
fn at_or_below_the_percentage_no_election_runs() {
    let mut h = harness(10);
    // 1 of broker 1's 10 preferred leaderships is elsewhere: 10 %, not above 10 %.
    broker_1_prefers(&mut h, 9, 1);
    assert_eq!(run_rebalance_check(&mut h), 0);
    assert_eq!(h.partition("b", 0).leader, 2);
    // Later checks do not act either.
    assert_eq!(run_rebalance_check(&mut h), 0);
    assert_eq!(h.partition("b", 0).leader, 2);
}

#[test]
fn above_the_percentage_the_preferred_leaders_are_elected() {
    let mut h = harness(10);
    // 2 of 11: 18 %.
    broker_1_prefers(&mut h, 9, 2);
    assert_eq!(run_rebalance_check(&mut h), 1);
    assert_eq!(h.partition("b", 0).leader, 1);
    assert_eq!(h.partition("b", 1).leader, 1);
    h.c.check_consistency().unwrap();
}

#[test]
fn a_lower_percentage_acts_on_the_same_imbalance() {
    let mut h = harness(9);
    broker_1_prefers(&mut h, 9, 1);
    assert_eq!(run_rebalance_check(&mut h), 1);
    assert_eq!(h.partition("b", 0).leader, 1);
}

#[test]
fn the_ratio_is_per_broker() {
    let mut h = harness(10);
    // Broker 1: 1 of 10 elsewhere (10 %). Broker 2: 1 of 2 elsewhere (50 %).
    broker_1_prefers(&mut h, 9, 1);
    assert_eq!(h.create_assigned("c", &[&[1, 2], &[2, 1]]), 0);
    prefer(&mut h, "c", 0, 2, 1);
    // Over all partitions 2 of 12 (17 %) would be above 10 %; only broker 2 is.
    assert_eq!(run_rebalance_check(&mut h), 1);
    assert_eq!(h.partition("c", 0).leader, 2, "broker 2 is above");
    assert_eq!(h.partition("b", 0).leader, 2, "broker 1 is not");
}

#[test]
fn a_preferred_replica_outside_the_isr_is_not_elected() {
    let mut h = harness(0);
    broker_1_prefers(&mut h, 0, 1);
    let ep = h.c.broker(1).unwrap().epoch;
    // Broker 1 is fenced: it leaves the ISR and cannot lead, so nothing is elected.
    h.heartbeat(1, ep, true, false);
    assert_eq!(h.partition("b", 0).isr, vec![2]);
    assert_eq!(run_rebalance_check(&mut h), 0);
    assert_eq!(h.partition("b", 0).leader, 2);
}
