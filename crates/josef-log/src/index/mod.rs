//! The three per-segment indexes: offsets, timestamps and aborted transactions.

pub(crate) mod mmap;
pub mod offset;
pub mod time;
pub mod txn;

pub use offset::{OffsetIndex, OffsetPosition, OFFSET_INDEX_ENTRY_SIZE};
pub use time::{TimeIndex, TimestampOffset, NO_TIMESTAMP, TIME_INDEX_ENTRY_SIZE};
pub use txn::{AbortedTxn, TransactionIndex, TxnIndexSearchResult, ABORTED_TXN_ENTRY_SIZE};
