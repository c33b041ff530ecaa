//! josef-partition (in progress).
#![deny(missing_docs)]
