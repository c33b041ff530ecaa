//! A delayed operation and the wrapper that makes it complete exactly once (Kafka's
//! `DelayedOperation`).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::Mutex;

use crate::wheel::TimerHandle;

/// An operation that waits for a condition or a timeout, whichever comes first (Kafka's
/// `DelayedOperation`): a produce waiting for the high watermark, a fetch waiting for bytes.
///
/// The [`crate::Purgatory`] guarantees that `on_complete` runs exactly once per operation, whether
/// the operation is completed by [`crate::Purgatory::check_and_complete`], by its own
/// `try_complete` when first submitted, or by expiry, even when these race across threads. On
/// expiry `on_complete` runs first and `on_expiration` right after it.
pub trait DelayedOperation: Send + Sync + 'static {
    /// How long the operation may wait before it expires, in milliseconds.
    fn delay_ms(&self) -> u64;

    /// Whether the operation can complete now (its condition holds, or it must end early, e.g.
    /// because a partition moved). Called with the operation's lock held, so calls on the same
    /// operation never overlap; it must not call back into the purgatory for this operation.
    fn try_complete(&self) -> bool;

    /// Completes the operation (builds and sends the response). Runs exactly once.
    fn on_complete(&self);

    /// Runs after `on_complete` when the operation completed because it expired (metrics).
    fn on_expiration(&self) {}
}

/// A [`DelayedOperation`] plus the state the purgatory keeps for it: the completed flag that is
/// flipped by a compare-and-set, the lock `try_complete` runs under, and its timer.
pub struct Delayed<O> {
    op: O,
    completed: AtomicBool,
    lock: Mutex<()>,
    /// `TimerHandle` bits of its expiry timer, `TimerHandle::NONE` when not scheduled.
    timer: AtomicU64,
}

impl<O: DelayedOperation> Delayed<O> {
    pub(crate) fn new(op: O) -> Self {
        Delayed {
            op,
            completed: AtomicBool::new(false),
            lock: Mutex::new(()),
            timer: AtomicU64::new(TimerHandle::NONE.to_bits()),
        }
    }

    /// The wrapped operation.
    pub fn operation(&self) -> &O {
        &self.op
    }

    /// Whether the operation has completed (by event or expiry).
    pub fn is_completed(&self) -> bool {
        self.completed.load(Ordering::SeqCst)
    }

    /// Kafka's `forceComplete`: the caller that flips `completed` from false to true runs
    /// `on_complete` and gets `true`; every other caller gets `false`. The purgatory cancels the
    /// timer of an operation completed this way.
    pub(crate) fn force_complete(&self) -> bool {
        if self
            .completed
            .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            self.op.on_complete();
            true
        } else {
            false
        }
    }

    pub(crate) fn try_complete_locked(&self) -> bool {
        !self.is_completed() && self.op.try_complete() && self.force_complete()
    }

    /// `check` (the operation's `try_complete`, or a cheaper check that knows which key's event
    /// fired) under the operation's lock, completing it if the condition holds. `true` only if
    /// this call completed it.
    pub(crate) fn safe_try_complete_with(&self, check: impl FnOnce(&O) -> bool) -> bool {
        let _guard = self.lock.lock();
        !self.is_completed() && check(&self.op) && self.force_complete()
    }

    /// Runs `f` holding the operation's lock.
    pub(crate) fn locked<R>(&self, f: impl FnOnce() -> R) -> R {
        let _guard = self.lock.lock();
        f()
    }

    pub(crate) fn set_timer(&self, handle: TimerHandle) {
        self.timer.store(handle.to_bits(), Ordering::SeqCst);
    }

    /// Takes the timer handle so that exactly one caller cancels it.
    pub(crate) fn take_timer(&self) -> TimerHandle {
        TimerHandle::from_bits(
            self.timer
                .swap(TimerHandle::NONE.to_bits(), Ordering::SeqCst),
        )
    }

    pub(crate) fn on_expiration(&self) {
        self.op.on_expiration();
    }
}

impl<O> std::fmt::Debug for Delayed<O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Delayed")
            .field("completed", &self.completed.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}
