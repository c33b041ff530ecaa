//! Producer id allocation in blocks, persisted through a small store so a restarted broker
//! never hands out an id twice (the single-node form of Kafka's `ProducerIdManager` and the
//! controller's `ProducerIdControlManager`).

use crate::error::ProducerIdError;

/// Kafka's block size (`ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE`).
pub const DEFAULT_PRODUCER_ID_BLOCK_SIZE: i64 = 1000;

/// Where the allocator remembers the start of the next unallocated block.
///
/// `save` must be durable when it returns: the manager hands out ids of a new block only
/// after `save(block_end)` succeeded, so after a crash `load` returns a value past every id
/// ever handed out (at worst the rest of a block is skipped).
pub trait ProducerIdBlockStore {
    /// The store's failure.
    type Error: std::error::Error + Send + Sync + 'static;

    /// The next block start saved last, or `None` if nothing was ever saved.
    fn load(&mut self) -> Result<Option<i64>, Self::Error>;

    /// Durably records that ids below `next_block_start` may have been handed out.
    fn save(&mut self, next_block_start: i64) -> Result<(), Self::Error>;

    /// Takes the next block, `(start, size)`: by default `[start, start + size)` after saving its
    /// end. A store that gets its blocks from elsewhere (a cluster's controller, Kafka's
    /// AllocateProducerIds) returns the block it was given instead; the manager hands out exactly
    /// that block's ids.
    fn allocate(&mut self, start: i64, size: i64) -> Result<(i64, i64), Self::Error> {
        self.save(start.saturating_add(size))?;
        Ok((start, size))
    }
}

/// A [`ProducerIdBlockStore`] in memory, for tests and single-process use. Clones share nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InMemoryBlockStore {
    /// The last saved next block start.
    pub next_block_start: Option<i64>,
    /// Number of `save` calls, to observe block allocation in tests.
    pub saves: u64,
}

impl ProducerIdBlockStore for InMemoryBlockStore {
    type Error = std::convert::Infallible;

    fn load(&mut self) -> Result<Option<i64>, Self::Error> {
        Ok(self.next_block_start)
    }

    fn save(&mut self, next_block_start: i64) -> Result<(), Self::Error> {
        self.next_block_start = Some(next_block_start);
        self.saves += 1;
        Ok(())
    }
}

impl<S: ProducerIdBlockStore + ?Sized> ProducerIdBlockStore for &mut S {
    type Error = S::Error;

    fn load(&mut self) -> Result<Option<i64>, Self::Error> {
        (**self).load()
    }

    fn save(&mut self, next_block_start: i64) -> Result<(), Self::Error> {
        (**self).save(next_block_start)
    }

    fn allocate(&mut self, start: i64, size: i64) -> Result<(i64, i64), Self::Error> {
        (**self).allocate(start, size)
    }
}

/// Hands out producer ids for InitProducerId, one block at a time.
///
/// ```
/// use josef_sequencer::{InMemoryBlockStore, ProducerIdManager};
///
/// let mut store = InMemoryBlockStore::default();
/// let mut pids = ProducerIdManager::new(&mut store, 1000).unwrap();
/// assert_eq!(pids.next_id().unwrap(), 0);
/// assert_eq!(pids.next_id().unwrap(), 1);
/// drop(pids);
/// assert_eq!(store.next_block_start, Some(1000));
///
/// // After a restart the next block starts where the saved one ended.
/// let mut pids = ProducerIdManager::new(&mut store, 1000).unwrap();
/// assert_eq!(pids.next_id().unwrap(), 1000);
/// ```
#[derive(Debug)]
pub struct ProducerIdManager<S: ProducerIdBlockStore> {
    store: S,
    block_size: i64,
    /// Next id to hand out; equal to `block_end` when the block is used up.
    next_id: i64,
    block_end: i64,
}

impl<S: ProducerIdBlockStore> ProducerIdManager<S> {
    /// Loads the allocator state from `store`. No block is taken until the first id is needed.
    /// A `block_size` below 1 is treated as 1.
    pub fn new(mut store: S, block_size: i64) -> Result<Self, ProducerIdError> {
        let next = store
            .load()
            .map_err(|e| ProducerIdError::Store(Box::new(e)))?
            .unwrap_or(0);
        if next < 0 {
            return Err(ProducerIdError::InvalidStoredState(next));
        }
        Ok(ProducerIdManager {
            store,
            block_size: block_size.max(1),
            next_id: next,
            block_end: next,
        })
    }

    /// The next producer id. Takes a new block (saving its end first) when the current one is
    /// used up; if the save fails, no id is handed out and the next call tries again.
    pub fn next_id(&mut self) -> Result<i64, ProducerIdError> {
        if self.next_id >= self.block_end {
            let start = self.block_end;
            start
                .checked_add(self.block_size)
                .ok_or(ProducerIdError::Exhausted)?;
            let (start, size) = self
                .store
                .allocate(start, self.block_size)
                .map_err(|e| ProducerIdError::Store(Box::new(e)))?;
            let end = start
                .checked_add(size.max(1))
                .ok_or(ProducerIdError::Exhausted)?;
            if start < 0 {
                return Err(ProducerIdError::InvalidStoredState(start));
            }
            self.next_id = start;
            self.block_end = end;
        }
        let id = self.next_id;
        self.next_id += 1;
        Ok(id)
    }

    /// The current block as `(next id, block end)`; empty when `next == end`.
    pub fn current_block(&self) -> (i64, i64) {
        (self.next_id, self.block_end)
    }

    /// The store.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// Gives the store back.
    pub fn into_store(self) -> S {
        self.store
    }
}

#[cfg(test)]
mod tests {
    /// A store handing out blocks chosen elsewhere (as a controller does).
    struct Remote(Vec<(i64, i64)>);

    impl super::ProducerIdBlockStore for Remote {
        type Error = std::convert::Infallible;
        fn load(&mut self) -> Result<Option<i64>, Self::Error> {
            Ok(None)
        }
        fn save(&mut self, _: i64) -> Result<(), Self::Error> {
            unreachable!("allocate is overridden")
        }
        fn allocate(&mut self, _: i64, _: i64) -> Result<(i64, i64), Self::Error> {
            Ok(self.0.remove(0))
        }
    }

    #[test]
    fn blocks_from_an_allocating_store_are_used_as_given() {
        let mut m =
            super::ProducerIdManager::new(Remote(vec![(5000, 2), (9000, 2)]), 1000).unwrap();
        let ids: Vec<i64> = (0..4).map(|_| m.next_id().unwrap()).collect();
        assert_eq!(ids, vec![5000, 5001, 9000, 9001]);
    }

    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("disk full")]
    struct DiskFull;

    #[derive(Default)]
    struct FailingStore {
        fail: bool,
        saved: Option<i64>,
    }

    impl ProducerIdBlockStore for FailingStore {
        type Error = DiskFull;
        fn load(&mut self) -> Result<Option<i64>, DiskFull> {
            Ok(self.saved)
        }
        fn save(&mut self, v: i64) -> Result<(), DiskFull> {
            if self.fail {
                return Err(DiskFull);
            }
            self.saved = Some(v);
            Ok(())
        }
    }

    #[test]
    fn block_end_is_saved_before_any_id_of_the_block_is_handed_out() {
        let mut m = ProducerIdManager::new(FailingStore::default(), 3).unwrap();
        assert_eq!(m.next_id().unwrap(), 0);
        assert_eq!(m.store().saved, Some(3));
        assert_eq!(m.next_id().unwrap(), 1);
        assert_eq!(m.next_id().unwrap(), 2);
        m.store.fail = true;
        // The block is used up and the new block's end cannot be saved: no id.
        assert!(matches!(m.next_id(), Err(ProducerIdError::Store(_))));
        assert!(matches!(m.next_id(), Err(ProducerIdError::Store(_))));
        m.store.fail = false;
        assert_eq!(m.next_id().unwrap(), 3);
        assert_eq!(m.store().saved, Some(6));
    }

    #[test]
    fn restarted_manager_never_repeats_an_id() {
        let mut store = InMemoryBlockStore::default();
        let mut seen = std::collections::HashSet::new();
        for used in [0, 1, 5, 10, 11, 3] {
            let mut m = ProducerIdManager::new(&mut store, 10).unwrap();
            for _ in 0..used {
                assert!(seen.insert(m.next_id().unwrap()));
            }
        }
        assert_eq!(seen.len(), 30);
    }

    #[test]
    fn exhausted_ids_are_an_error() {
        let store = InMemoryBlockStore {
            next_block_start: Some(i64::MAX - 5),
            saves: 0,
        };
        let mut m = ProducerIdManager::new(store, 10).unwrap();
        assert!(matches!(m.next_id(), Err(ProducerIdError::Exhausted)));
    }

    #[test]
    fn negative_stored_state_is_refused() {
        let store = InMemoryBlockStore {
            next_block_start: Some(-3),
            saves: 0,
        };
        assert!(matches!(
            ProducerIdManager::new(store, 10),
            Err(ProducerIdError::InvalidStoredState(-3))
        ));
    }
}
