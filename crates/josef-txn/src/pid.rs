//! Where producer ids come from.

use crate::TxnError;

/// Allocates producer ids. The broker plugs in its cluster-wide allocator (e.g. josef-sequencer's
/// block allocator); tests use [`SequentialProducerIdGenerator`].
pub trait ProducerIdGenerator {
    /// A producer id never handed out before, or the error to answer with (Kafka answers
    /// `COORDINATOR_LOAD_IN_PROGRESS` while its next id block is being fetched).
    fn generate_producer_id(&mut self) -> Result<i64, TxnError>;
}

impl<G: ProducerIdGenerator + ?Sized> ProducerIdGenerator for &mut G {
    fn generate_producer_id(&mut self) -> Result<i64, TxnError> {
        (**self).generate_producer_id()
    }
}

/// Hands out consecutive ids from a starting value.
///
/// ```
/// use josef_txn::{ProducerIdGenerator, SequentialProducerIdGenerator};
/// let mut g = SequentialProducerIdGenerator::new(1000);
/// assert_eq!(g.generate_producer_id(), Ok(1000));
/// assert_eq!(g.generate_producer_id(), Ok(1001));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SequentialProducerIdGenerator {
    next: i64,
}

impl SequentialProducerIdGenerator {
    /// Starts at `first`.
    pub fn new(first: i64) -> Self {
        Self { next: first }
    }

    /// The id the next call returns.
    pub fn peek(&self) -> i64 {
        self.next
    }
}

impl ProducerIdGenerator for SequentialProducerIdGenerator {
    fn generate_producer_id(&mut self) -> Result<i64, TxnError> {
        if self.next == i64::MAX {
            return Err(TxnError::UnknownServerError);
        }
        let id = self.next;
        self.next += 1;
        Ok(id)
    }
}
