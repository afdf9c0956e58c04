//! What [`Mode::Parts`](super::Mode::Parts) asks of its caller: who
//! measured each part, and the figures only the caller can merge (CPU and
//! memory by host and process). A leaf: the merges of the parts use it.

use stackbench_record::{CpuFigures, MemoryFigures};

use crate::cpu::Work;

/// What merging the parts of one run needs beyond their classes.
pub trait Parts {
    /// Who measured the `i`th of the classes given to [`combine`](super::combine).
    fn who(&self, i: usize) -> Who;
    /// The parts' CPU, each side's host views once per host and process
    /// figures once per process, per transaction of `work` (all the parts'
    /// work); `None` when not measured.
    fn cpu(&mut self, work: Work) -> Option<CpuFigures>;
    /// The parts' memory, each figure once per what it describes.
    fn memory(&mut self) -> Option<MemoryFigures>;
    /// A figure left out, and why (`AgentsSummary::merge_notes`).
    fn note(&mut self, note: String);
}

/// Who measured one part: it names the part in notes and keys the figures
/// that are a host's (kTLS counters, one set per network namespace).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Who {
    /// Its agent's index i of N.
    pub index: u32,
    /// The agents' count N.
    pub count: u32,
    /// The host its driver ran on.
    pub host: String,
    /// The host of the responder it drove.
    pub responder_host: String,
    /// False when it was cut short.
    pub complete: bool,
}
