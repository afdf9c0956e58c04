//! The metrics layer: latency histograms, the result record every run produces,
//! CPU and memory accounting from the kernel's counters, repetition statistics
//! and measurement-quality warnings. Pure code apart from thin `/proc` readers:
//! no sockets, so the results layer can read and compare records without the
//! engine.

pub mod cpu;
pub mod guest;
pub mod lab;
pub mod latency;
pub mod memory;
pub mod migrate;
pub mod procfs;
pub mod record;
pub mod stats;
pub mod threads;
pub mod warnings;

pub use cpu::{side_cpu, CpuError, CpuSample, ProcessSource, Work};
pub use guest::{GuestEnvironment, EMULATED_NOTE};
pub use lab::{LabEnvironment, LabInterface, LabIpsec, LabNetem, LabSa};
pub use latency::LatencyHistogram;
pub use memory::{side_memory, MemorySample, OwnSockets, SockKind};
pub use record::{
    record_from_json, ClassResult, CpuFigures, ErrorCounts, HandshakeCpuUs, LagUs, LatencyUs,
    MemoryFigures, MixCpu, PacingMode, PopulationFigures, RecordError, Repetitions, RunRecord,
    RunSettings, SideCpu, SideMemory, SkMemInfo, TlsFigures, WarningRecord, SCHEMA_VERSION,
};
pub use stats::{Iterations, Verdict};
pub use warnings::Warning;
