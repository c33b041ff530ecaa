//! josef-controller (in progress).
#![deny(missing_docs)]
