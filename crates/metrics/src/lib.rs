//! The metrics layer: latency histograms, CPU and memory accounting from the
//! kernel's counters, repetition statistics and measurement-quality warnings —
//! the computation that fills in the record (`stackbench_record`). Pure code
//! apart from thin `/proc` readers: no sockets.
//!
//! The record's types are re-exported here under their old paths
//! (`stackbench_metrics::record::…`) for the engine, which writes them while
//! measuring; readers use `stackbench_record` directly.

pub mod cpu;
pub use stackbench_record::run as record;
pub mod latency;
pub mod memory;
pub mod procfs;
pub mod stats;
pub mod threads;
pub mod warnings;

pub use cpu::{side_cpu, CpuError, CpuSample, ProcessSource, Work};
pub use latency::LatencyHistogram;
pub use memory::{side_memory, MemorySample, OwnSockets, SockKind};
pub use stackbench_record::{
    record_from_json, ClassResult, CpuFigures, ErrorCounts, HandshakeCpuUs, LagUs, LatencyUs,
    MemoryFigures, MixCpu, PacingMode, PopulationFigures, RecordError, Repetitions, RunRecord,
    RunSettings, SideCpu, SideMemory, SkMemInfo, TlsFigures, WarningRecord, SCHEMA_VERSION,
};
pub use stats::{Iterations, Verdict};
pub use warnings::Warning;
