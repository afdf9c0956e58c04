//! The metrics layer: latency histograms, the result record every run produces,
//! CPU and memory accounting from the kernel's counters, repetition statistics
//! and measurement-quality warnings. Pure code apart from thin `/proc` readers:
//! no sockets, so the results layer can read and compare records without the
//! engine.

pub mod cpu;
pub mod latency;
pub mod memory;
pub mod procfs;
pub mod record;
pub mod stats;

pub use cpu::{CpuSample, ProcessSource, Work};
pub use latency::LatencyHistogram;
pub use memory::MemorySample;
pub use record::{ClassResult, ErrorCounts, LatencyUs, RunRecord, RunSettings, SCHEMA_VERSION};
