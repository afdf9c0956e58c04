//! The metrics layer: latency histograms, the result record every run produces,
//! and (later) CPU and memory accounting and statistics. Pure code: no sockets,
//! so the results layer can read and compare records without the engine.

pub mod latency;
pub mod record;

pub use latency::LatencyHistogram;
pub use record::{ClassResult, ErrorCounts, LatencyUs, RunRecord, RunSettings, SCHEMA_VERSION};
