//! The event loop driven by hand with a fake quorum: no thread, no openraft, no clock.

use std::sync::Mutex;

use josef_controller::records::FeatureLevelRecord;
use josef_controller::ControllerConfig;
use tokio::sync::oneshot::error::TryRecvError;

use super::*;

const ME: u64 = 1;
const FEATURE: &str = "test.counter";

/// A quorum whose leader the test sets and whose proposals the test completes.
#[derive(Default)]
struct FakeQuorum {
    leader: Mutex<Option<(u64, u64)>>,
    proposals: Mutex<VecDeque<(Vec<Bytes>, ProposeDone)>>,
}

impl ControllerQuorum for FakeQuorum {
    fn leader(&self) -> Option<(u64, u64)> {
        *self.leader.lock().unwrap()
    }

    fn propose(&self, batch: Vec<Bytes>, done: ProposeDone) {
        self.proposals.lock().unwrap().push_back((batch, done));
    }
}

struct Harness {
    quorum: Arc<FakeQuorum>,
    events: ControllerEvents,
    queue: EventQueue,
    lp: EventLoop,
    /// The last committed offset (the fake log).
    log_end: u64,
}

impl Harness {
    fn new() -> Self {
        let quorum = Arc::new(FakeQuorum::default());
        let (events, queue) = channel();
        let lp = EventLoop::new(
            &queue,
            ME,
            quorum.clone(),
            Box::new(|| Controller::new(ControllerConfig::default())),
            || 1_000,
        );
        let h = Harness {
            quorum,
            events,
            queue,
            lp,
            log_end: 0,
        };
        h.set_leader(ME, 5);
        h
    }

    /// Handles every queued event, in order.
    fn run(&mut self) {
        while let Ok(e) = self.queue.rx.try_recv() {
            assert!(self.lp.handle(e));
        }
    }

    fn proposals(&self) -> usize {
        self.quorum.proposals.lock().unwrap().len()
    }

    fn set_leader(&self, id: u64, term: u64) {
        *self.quorum.leader.lock().unwrap() = Some((id, term));
    }

    fn take_proposal(&self) -> (Vec<Bytes>, ProposeDone) {
        self.quorum.proposals.lock().unwrap().pop_front().unwrap()
    }

    /// Appends `batch` to the fake log and hands it to the loop, as the metadata log does.
    fn replay(&mut self, batch: &[Bytes]) {
        self.log_end += 1;
        let records = batch
            .iter()
            .map(|b| MetadataRecord::decode(b).unwrap())
            .collect();
        self.events.replay(self.log_end, records);
    }

    /// Commits the oldest proposal: its records to the replay, then its offset to the proposer,
    /// in the order the real log does (the state machine applies before the write returns).
    fn commit_next(&mut self) {
        let (batch, done) = self.take_proposal();
        self.replay(&batch);
        done(Ok(self.log_end));
        self.run();
    }

    /// One [`bump`] on an idle loop, committed: what it saw, or why it was not answered.
    fn bump_committed(&mut self) -> Result<i16, TryRecvError> {
        let mut rx = bump(&self.events);
        self.run();
        if self.proposals() > 0 {
            self.commit_next();
        }
        rx.try_recv()
    }

    /// Activates the controller for the current term, as the leadership watcher does.
    fn activate(&mut self) {
        let term = self.quorum.leader().unwrap().1 as i32;
        let mut rx = self
            .events
            .write(true, move |c, ctx| c.activate(ctx, term, "cluster".into()));
        self.run();
        if self.proposals() > 0 {
            self.commit_next(); // the bootstrap batch of an empty log
        }
        rx.try_recv().expect("activated");
        assert_eq!(self.events.active_epoch(), Some(term));
    }
}

/// A write that sets the test feature to one more than the level it sees, and answers what it
/// saw: each answer tells whether the previous write had been replayed before it ran.
fn bump(events: &ControllerEvents) -> tokio::sync::oneshot::Receiver<i16> {
    events.write(false, |c, _ctx| {
        let seen = c.feature_level(FEATURE).unwrap_or(0);
        ControllerResult::of(
            vec![MetadataRecord::FeatureLevel(FeatureLevelRecord {
                name: FEATURE.into(),
                feature_level: seen + 1,
                ..Default::default()
            })],
            seen,
        )
    })
}

#[test]
fn writes_run_in_fifo_order_each_after_the_previous_one_is_replayed() {
    let mut h = Harness::new();
    h.activate();
    let mut replies: Vec<_> = (0..3).map(|_| bump(&h.events)).collect();
    h.run();
    // Only the first is proposed: the others wait for its replay.
    assert_eq!(h.proposals(), 1);
    assert_eq!(replies[0].try_recv(), Err(TryRecvError::Empty));
    for _ in 0..3 {
        h.commit_next();
    }
    assert_eq!(h.proposals(), 0);
    let seen: Vec<i16> = replies.iter_mut().map(|r| r.try_recv().unwrap()).collect();
    assert_eq!(seen, vec![0, 1, 2]);
}

#[test]
fn a_write_is_answered_only_once_its_records_are_replayed() {
    let mut h = Harness::new();
    h.activate();
    let mut first = bump(&h.events);
    h.run();
    let (batch, done) = h.take_proposal();
    // Committed, but not replayed yet: no answer, and the next write waits.
    done(Ok(h.log_end + 1));
    let mut second = bump(&h.events);
    h.run();
    assert_eq!(first.try_recv(), Err(TryRecvError::Empty));
    assert_eq!(h.proposals(), 0);
    // Reads are not held back by the write in flight.
    let mut read = h.events.read(|c| c.feature_level(FEATURE));
    h.run();
    assert_eq!(read.try_recv(), Ok(None));
    h.replay(&batch);
    h.run();
    assert_eq!(first.try_recv(), Ok(0));
    assert_eq!(h.proposals(), 1);
    h.commit_next();
    assert_eq!(second.try_recv(), Ok(1));
}

#[test]
fn a_write_in_a_term_the_controller_was_not_activated_for_is_not_controller() {
    let mut h = Harness::new();
    h.activate();
    // A new term: leading it is not enough before the activation for it.
    h.set_leader(ME, 6);
    let mut stale = bump(&h.events);
    let mut read = h.events.read(|c| c.epoch());
    h.run();
    assert_eq!(stale.try_recv(), Err(TryRecvError::Closed));
    assert_eq!(read.try_recv(), Err(TryRecvError::Closed));
    assert_eq!(h.proposals(), 0);
    // Another node leading: not controller either.
    h.set_leader(ME + 1, 6);
    assert_eq!(h.bump_committed(), Err(TryRecvError::Closed));
    // Re-activated for the new term, writes go through again.
    h.set_leader(ME, 6);
    h.activate();
    assert_eq!(h.bump_committed(), Ok(0));
}

#[test]
fn a_failed_proposal_is_not_controller_and_the_next_write_proceeds() {
    let mut h = Harness::new();
    h.activate();
    let mut failed = bump(&h.events);
    let mut next = bump(&h.events);
    h.run();
    let (_, done) = h.take_proposal();
    done(Err("not leader".into()));
    h.run();
    assert_eq!(failed.try_recv(), Err(TryRecvError::Closed));
    // The failed write changed nothing: the next one sees the state before it.
    assert_eq!(h.proposals(), 1);
    h.commit_next();
    assert_eq!(next.try_recv(), Ok(0));
}

#[test]
fn a_snapshot_install_resets_the_controller_state() {
    let mut h = Harness::new();
    h.activate();
    assert_eq!(h.bump_committed(), Ok(0));
    // A snapshot at offset 10 without the feature: the state is exactly the snapshot's.
    h.events.reset();
    h.events.replay(
        10,
        vec![MetadataRecord::ClusterId(
            josef_controller::records::ClusterIdRecord {
                cluster_id: "snap".into(),
            },
        )],
    );
    let mut read = bump(&h.events);
    h.run();
    // A fresh state is not active: the watcher must activate it again.
    assert_eq!(read.try_recv(), Err(TryRecvError::Closed));
    assert_eq!(h.events.active_epoch(), None);
    h.log_end = 10;
    h.activate();
    let mut after = h.events.read(|c| {
        (
            c.feature_level(FEATURE),
            c.cluster_id().map(String::from),
            c.last_offset(),
        )
    });
    h.run();
    assert_eq!(
        after.try_recv(),
        Ok((None, Some("snap".to_string()), Some(10)))
    );
}

#[test]
fn deactivation_and_shutdown() {
    let mut h = Harness::new();
    h.activate();
    h.events.deactivate();
    assert_eq!(h.bump_committed(), Err(TryRecvError::Closed));
    assert_eq!(h.events.active_epoch(), None);
    h.events.shutdown();
    let e = h.queue.rx.try_recv().unwrap();
    assert!(!h.lp.handle(e));
}
