//! What a run tells its caller while it runs: each workload run's start,
//! the engine's periodic progress and its end, the lines the user reads
//! (placement, a guest's boot, a sweep point, a search step) and each
//! measurement-quality warning as it is found. The runner prints nothing;
//! the binary's terminal observer draws and prints, a test records.

use stackbench_engine::{Progress, RunConfig};
use stackbench_record::WarningRecord;

/// The caller's view of a run in progress. `Send`: a lab run's driver runs
/// on a thread inside host A's network namespace.
pub trait Observer: Send {
    /// One run of a workload starts (each repetition is one).
    fn started(&mut self, cfg: &RunConfig);
    /// The engine's periodic progress of the run started last.
    fn progress(&mut self, p: &Progress);
    /// The run started last ended, complete or not.
    fn finished(&mut self);
    /// A line for the user, without the program's name: the placement, a
    /// guest's boot, a sweep point, a search step.
    fn note(&mut self, line: &str);
    /// A measurement-quality warning, as it is found (it is also stored in
    /// the record's `warnings`).
    fn warning(&mut self, w: &WarningRecord);
    /// What a guest's step wrote on its stderr (its own progress, warnings
    /// and errors), passed on as is.
    fn guest_stderr(&mut self, bytes: &[u8]);
}

/// An observer that drops everything, for callers that want the record only.
#[derive(Debug, Default)]
pub struct Quiet;

impl Observer for Quiet {
    fn started(&mut self, _: &RunConfig) {}
    fn progress(&mut self, _: &Progress) {}
    fn finished(&mut self) {}
    fn note(&mut self, _: &str) {}
    fn warning(&mut self, _: &WarningRecord) {}
    fn guest_stderr(&mut self, _: &[u8]) {}
}
