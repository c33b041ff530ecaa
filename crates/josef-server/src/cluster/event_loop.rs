//! The controller's event loop (Kafka's `QuorumController` and its `KafkaEventQueue`): one thread
//! owns the pure [`Controller`] and handles every event — API writes and reads, timer ticks,
//! leadership changes, committed batches to replay, snapshot installs — in FIFO order from one
//! channel, so no lock guards the controller's state.
//!
//! The controller's state is only ever the replay of committed records: a write generates records
//! and, while they are proposed and not yet replayed, later writes wait in FIFO order (replays and
//! the other events keep being handled). Each write therefore sees the previous one's effect, and
//! a deposed controller has nothing to revert. Proposing is asynchronous; its outcome comes back
//! to the loop as an event.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use crossbeam_channel::{Receiver, Sender};
use josef_controller::{Controller, ControllerResult, WriteContext};
use josef_metadata::MetadataRecord;

/// What the loop needs from the metadata quorum.
pub trait ControllerQuorum: Send + Sync + 'static {
    /// The leader and its term (the controller epoch), when one is known.
    fn leader(&self) -> Option<(u64, u64)>;
    /// Starts proposing `batch` as one entry; `done` gets its offset once it is committed (and
    /// handed to this node's log), or why it was not.
    fn propose(&self, batch: Vec<Bytes>, done: ProposeDone);
}

/// The outcome of a proposal, called from any thread.
pub type ProposeDone = Box<dyn FnOnce(Result<u64, String>) + Send>;

/// Makes a fresh controller state (at start and when a snapshot is installed).
pub type NewController = Box<dyn Fn() -> Controller + Send>;

/// The write was not done: this node is not the active controller (or lost it meanwhile).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotController;

/// A write's records and how to answer once they are replayed. Dropping `answer` without calling
/// it answers NOT_CONTROLLER (the reply channel closes).
struct Proposal {
    records: Vec<MetadataRecord>,
    answer: Box<dyn FnOnce() + Send>,
}

type WriteFn = Box<dyn FnOnce(&mut Controller, WriteContext) -> Proposal + Send>;
type ReadFn = Box<dyn FnOnce(&Controller) + Send>;

struct Write {
    /// The activation itself runs on a controller not yet active for the term.
    activation: bool,
    op: WriteFn,
}

enum Event {
    Write(Write),
    Read(ReadFn),
    Proposed {
        id: u64,
        result: Result<u64, String>,
    },
    Replay {
        offset: u64,
        records: Vec<MetadataRecord>,
    },
    Reset,
    Deactivate,
    Shutdown,
}

/// The sending side of the loop's queue, shared by the API handlers, the leadership watcher and
/// the metadata log. Cheap to clone.
#[derive(Clone)]
pub struct ControllerEvents {
    tx: Sender<Event>,
    /// The epoch the controller is active in, -1 when inactive: published by the loop after
    /// every event so `is_active` needs no round trip.
    active_epoch: Arc<AtomicI64>,
}

/// The receiving side, handed to [`spawn`].
pub struct EventQueue {
    rx: Receiver<Event>,
    tx: Sender<Event>,
    active_epoch: Arc<AtomicI64>,
}

/// A new, unbounded queue (events are small and their producers are bounded by the request rate).
pub fn channel() -> (ControllerEvents, EventQueue) {
    let (tx, rx) = crossbeam_channel::unbounded();
    let active_epoch = Arc::new(AtomicI64::new(-1));
    (
        ControllerEvents {
            tx: tx.clone(),
            active_epoch: active_epoch.clone(),
        },
        EventQueue {
            rx,
            tx,
            active_epoch,
        },
    )
}

impl ControllerEvents {
    fn send(&self, event: Event) {
        // The loop is gone only at shutdown; a write's reply channel then closes (NOT_CONTROLLER).
        let _ = self.tx.send(event);
    }

    /// Queues a write: `f` runs on the loop once every earlier write is replayed; the receiver
    /// gets the response once `f`'s records are replayed, or closes (NOT_CONTROLLER) if this
    /// node is not the active controller for the current term or the records do not commit.
    pub fn write<T: Send + 'static>(
        &self,
        activation: bool,
        f: impl FnOnce(&mut Controller, WriteContext) -> ControllerResult<T> + Send + 'static,
    ) -> tokio::sync::oneshot::Receiver<T> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let op: WriteFn = Box::new(move |c, ctx| {
            let r = f(c, ctx);
            let response = r.response;
            Proposal {
                records: r.records,
                answer: Box::new(move || {
                    let _ = tx.send(response);
                }),
            }
        });
        self.send(Event::Write(Write { activation, op }));
        rx
    }

    /// Queues a read of the active controller's state; the receiver closes if it is not active
    /// for the current term.
    pub fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Controller) -> T + Send + 'static,
    ) -> tokio::sync::oneshot::Receiver<T> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.send(Event::Read(Box::new(move |c| {
            let _ = tx.send(f(c));
        })));
        rx
    }

    /// A committed batch at `offset`, to replay (called in log order by the metadata log).
    pub fn replay(&self, offset: u64, records: Vec<MetadataRecord>) {
        self.send(Event::Replay { offset, records });
    }

    /// A snapshot is being installed: the state starts over; its records follow as a replay.
    pub fn reset(&self) {
        self.send(Event::Reset);
    }

    /// This node is no longer the leader (Kafka's `renounce`).
    pub fn deactivate(&self) {
        self.send(Event::Deactivate);
    }

    /// Ends the loop; queued and in-flight writes answer NOT_CONTROLLER.
    pub fn shutdown(&self) {
        self.send(Event::Shutdown);
    }

    /// The epoch the controller was last seen active in, if any.
    pub fn active_epoch(&self) -> Option<i32> {
        let e = self.active_epoch.load(Ordering::Acquire);
        (e >= 0).then_some(e as i32)
    }
}

/// Starts the loop on its own thread ("controller-event-loop").
pub fn spawn(
    queue: EventQueue,
    node_id: u64,
    quorum: Arc<dyn ControllerQuorum>,
    new_controller: NewController,
    now_ms: fn() -> i64,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    let mut lp = EventLoop::new(&queue, node_id, quorum, new_controller, now_ms);
    std::thread::Builder::new()
        .name("controller-event-loop".into())
        .spawn(move || {
            while let Ok(event) = queue.rx.recv() {
                if !lp.handle(event) {
                    break;
                }
            }
            tracing::debug!("controller event loop stopped");
        })
}

struct InFlight {
    id: u64,
    /// Known once the quorum accepted the entry.
    offset: Option<u64>,
    answer: Box<dyn FnOnce() + Send>,
}

/// The loop's state; [`EventLoop::handle`] is the whole of its behaviour.
struct EventLoop {
    node_id: u64,
    quorum: Arc<dyn ControllerQuorum>,
    new_controller: NewController,
    now_ms: fn() -> i64,
    controller: Controller,
    /// The last replayed offset.
    applied: u64,
    in_flight: Option<InFlight>,
    waiting: VecDeque<Write>,
    next_id: u64,
    tx: Sender<Event>,
    active_epoch: Arc<AtomicI64>,
}

impl EventLoop {
    fn new(
        queue: &EventQueue,
        node_id: u64,
        quorum: Arc<dyn ControllerQuorum>,
        new_controller: NewController,
        now_ms: fn() -> i64,
    ) -> Self {
        EventLoop {
            node_id,
            quorum,
            controller: new_controller(),
            new_controller,
            now_ms,
            applied: 0,
            in_flight: None,
            waiting: VecDeque::new(),
            next_id: 0,
            tx: queue.tx.clone(),
            active_epoch: queue.active_epoch.clone(),
        }
    }

    /// Handles one event; false once the loop should stop.
    fn handle(&mut self, event: Event) -> bool {
        match event {
            Event::Write(w) => {
                self.waiting.push_back(w);
                self.run_writes();
            }
            Event::Read(f) => {
                if self.active_term().is_some() {
                    f(&self.controller);
                } // else dropped: NOT_CONTROLLER
            }
            Event::Proposed { id, result } => self.proposed(id, result),
            Event::Replay { offset, records } => {
                for r in &records {
                    if let Err(e) = self.controller.replay(offset, r) {
                        tracing::error!(offset, error = %e, "controller cannot replay a record");
                    }
                }
                self.applied = offset;
                self.complete_replayed();
            }
            Event::Reset => {
                self.controller = (self.new_controller)();
                self.applied = 0;
            }
            Event::Deactivate => {
                if self.controller.is_active() {
                    tracing::info!("this node is no longer the active controller");
                }
                self.controller.deactivate();
            }
            Event::Shutdown => return false,
        }
        let epoch = if self.controller.is_active() {
            self.controller.epoch() as i64
        } else {
            -1
        };
        self.active_epoch.store(epoch, Ordering::Release);
        true
    }

    /// The current term if this node leads it and the controller is active in it. Active in an
    /// earlier term is not active: a leader that lost the quorum and won it back must not act on
    /// the sessions and timers of its old term before it is re-activated for the new one.
    fn active_term(&self) -> Option<u64> {
        let term = self.leader_term()?;
        (self.controller.is_active() && self.controller.epoch() as i64 == term as i64)
            .then_some(term)
    }

    fn leader_term(&self) -> Option<u64> {
        match self.quorum.leader() {
            Some((id, term)) if id == self.node_id => Some(term),
            _ => None,
        }
    }

    /// Runs queued writes while none is in flight.
    fn run_writes(&mut self) {
        while self.in_flight.is_none() {
            let Some(w) = self.waiting.pop_front() else {
                return;
            };
            let allowed = if w.activation {
                self.leader_term().is_some()
            } else {
                self.active_term().is_some()
            };
            if !allowed {
                continue; // dropped: NOT_CONTROLLER
            }
            let ctx = WriteContext {
                now_ms: (self.now_ms)(),
                next_offset: self.applied + 1,
            };
            let p = (w.op)(&mut self.controller, ctx);
            if p.records.is_empty() {
                (p.answer)();
                continue;
            }
            let mut batch = Vec::with_capacity(p.records.len());
            for r in &p.records {
                match r.encode() {
                    Ok(b) => batch.push(b),
                    Err(e) => {
                        tracing::error!(error = %e, "cannot encode a metadata record; write dropped");
                        break;
                    }
                }
            }
            if batch.len() != p.records.len() {
                continue;
            }
            let id = self.next_id;
            self.next_id += 1;
            self.in_flight = Some(InFlight {
                id,
                offset: None,
                answer: p.answer,
            });
            let tx = self.tx.clone();
            self.quorum.propose(
                batch,
                Box::new(move |result| {
                    let _ = tx.send(Event::Proposed { id, result });
                }),
            );
        }
    }

    fn proposed(&mut self, id: u64, result: Result<u64, String>) {
        if self.in_flight.as_ref().map(|f| f.id) != Some(id) {
            return;
        }
        match result {
            Ok(offset) => {
                if let Some(f) = self.in_flight.as_mut() {
                    f.offset = Some(offset);
                }
                self.complete_replayed();
            }
            Err(e) => {
                tracing::info!(error = %e, "controller write not committed");
                self.in_flight = None; // the answer is dropped: NOT_CONTROLLER
                self.run_writes();
            }
        }
    }

    /// Answers the in-flight write once its records are replayed, then runs the next.
    fn complete_replayed(&mut self) {
        let done = self
            .in_flight
            .as_ref()
            .and_then(|f| f.offset)
            .is_some_and(|o| o <= self.applied);
        if done {
            if let Some(f) = self.in_flight.take() {
                (f.answer)();
            }
            self.run_writes();
        }
    }
}

#[cfg(test)]
#[path = "event_loop_tests.rs"]
mod tests;
