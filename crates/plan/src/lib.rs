//! The capacity planner (pure code, no sockets, no files): `stackbench plan`'s
//! arithmetic and models. Each module takes typed inputs, returns a
//! serialisable result, and renders a [`report::Report`] whose rows show each
//! formula with the numbers substituted.
//!
//! - [`units`]: parsing durations, rates, percentages, counts, sizes.
//! - [`cpu`]: CPU-s per elapsed-s, utilisation, processors, rating required.
//! - [`exact`]: exact rationals for whole-number results (processors needed).
//! - [`rescale`]: CPU per transaction across machines by ratings; ITR.
//! - [`storage`]: fixed + per-connection storage.
//! - [`offload`]: offload-engine (zIIP) projection from RMF APPL%.
//! - [`normalize`]: networking CPU change scaled by its share.
//! - [`mva`]: exact MVA and the finite-source M/M/m model for user populations.
//! - [`usl`]: Universal Scalability Law fit with intervals.
//! - [`planfile`]: plan files (TOML sections whose keys are the flags).
//! - [`runfile`]: CPU, memory and rate figures read from a stored run record.
//! - [`input`]: each subcommand's flags (and plan-file section) to its plan
//!   and report, files read through an injected reader.

pub mod cpu;
pub mod error;
pub mod exact;
pub mod input;
pub mod mva;
pub mod normalize;
pub mod offload;
pub mod planfile;
pub mod report;
pub mod rescale;
pub mod runfile;
pub mod storage;
pub mod units;
pub mod usl;

pub use error::PlanError;
