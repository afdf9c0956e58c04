//! The metrics layer: latency histograms, CPU and memory accounting from the
//! kernel's counters, repetition statistics and measurement-quality warnings —
//! the computation that fills in the record (`stackbench_record`). Pure code
//! apart from thin `/proc` readers: no sockets.
//! The record's types themselves live in `stackbench_record`, which every
//! writer and reader uses directly.

pub mod combine;
pub mod cpu;
pub mod latency;
pub mod live;
pub mod memory;
pub mod openmetrics;
pub mod procfs;
pub mod stats;
pub mod threads;
pub mod warnings;

pub use cpu::{side_cpu, CpuError, CpuSample, ProcessSource, Work};
pub use latency::{generator_lag_p99_share_pct, LatencyHistogram};
pub use memory::{side_memory, MemorySample, OwnSockets, SockKind};
pub use stats::{Iterations, Verdict};
pub use warnings::Warning;
