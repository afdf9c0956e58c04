//! Running a study: [`run_study`] walks a study's plan (a study file parsed
//! and planned by `stackbench_model::study`) with a caller-supplied runner
//! and sink — the engine lives in another crate, so this one never opens a
//! socket — and [`summary`] is the table `study` prints when it ends.

use stackbench_model::study::{RunnerError, StudyError, StudyStep};
use stackbench_record::RunRecord;

pub mod summary;

/// Runs `steps` in order: `runner` measures one step, `sink` stores it. Stops at
/// the first failure or incomplete run (after handing an incomplete record to
/// the sink, so what was measured is kept); every step before stays stored.
/// Returns the number of steps completed.
pub fn run_study(
    steps: &[StudyStep],
    runner: &mut dyn FnMut(&StudyStep) -> Result<RunRecord, RunnerError>,
    sink: &mut dyn FnMut(&StudyStep, &RunRecord) -> Result<(), RunnerError>,
) -> Result<usize, StudyError> {
    let failed = |step: &StudyStep, source: RunnerError| StudyError::StepFailed {
        step: step.index + 1,
        total: step.total,
        workload: step.workload.to_string(),
        variant: step.variant.clone(),
        source,
    };
    for step in steps {
        let record = runner(step).map_err(|e| failed(step, e))?;
        sink(step, &record).map_err(|e| failed(step, e))?;
        if !record.complete {
            return Err(StudyError::Incomplete {
                step: step.index + 1,
                total: step.total,
                workload: step.workload.to_string(),
                variant: step.variant.clone(),
                reason: record
                    .incomplete_reason
                    .clone()
                    .unwrap_or_else(|| "no reason given".into()),
            });
        }
    }
    Ok(steps.len())
}
