//! josef-quorum (in progress).
#![deny(missing_docs)]
