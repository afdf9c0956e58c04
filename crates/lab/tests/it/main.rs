//! The lab crate's integration tests, one test binary: `parse` checks lab
//! files and their one-line errors (no privileges needed); `kernel` builds
//! real labs and skips, with a message, where namespaces cannot be made.

mod common;
mod kernel;
mod macvlan;
mod parse;
mod priority;
mod props;
mod rate;
