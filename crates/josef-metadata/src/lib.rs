//! josef-metadata (in progress).
#![deny(missing_docs)]
