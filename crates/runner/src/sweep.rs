//! `--sweep`: one run per point of the sweep (a dimension's values, or the
//! cross of two), on one runner so that the points share the responder when
//! their settings allow. Every point is resolved before any is measured, so a
//! bad value costs no run; the sweep stops at the first incomplete point.

use stackbench_model::settings::RunSettings;
use stackbench_model::sweep::{Sweep, SweepPoint};
use stackbench_model::Workload;
use stackbench_record::RunRecord;

use crate::error::{input, RunError};
use crate::plan::{resolve, RunPlan};
use crate::session::Runner;

/// Each point of `sweep` applied to the workloads and settings, resolved.
/// A sweep with no dimension is one point, the settings as given.
pub fn plan_sweep(
    workloads: &[Workload],
    settings: &RunSettings,
    sweep: &Sweep,
    default_study: bool,
    announce: bool,
) -> Result<Vec<(SweepPoint, RunPlan)>, RunError> {
    let mut plans = Vec::new();
    for point in sweep.points() {
        let mut s = settings.clone();
        let mut ws = Vec::with_capacity(workloads.len());
        for w in workloads {
            ws.push(
                point
                    .apply(w, &mut s)
                    .or_else(|e| input(format!("--sweep {}: {}", point.describe(), e.message)))?,
            );
        }
        plans.push((point, resolve(s, ws, default_study, announce)?));
    }
    Ok(plans)
}

/// Runs the points in order; `on_record` gets each point's record as soon
/// as it is measured (to store it). Stops after the first incomplete record,
/// which is the last one returned.
pub fn run_sweep(
    runner: &mut Runner,
    plans: &[(SweepPoint, RunPlan)],
    on_record: &mut dyn FnMut(&SweepPoint, &RunRecord),
) -> Result<Vec<RunRecord>, RunError> {
    let mut records = Vec::new();
    for (point, plan) in plans {
        if plan.announce && !point.values.is_empty() {
            runner
                .observer()
                .note(&format!("sweep point {}", point.describe()));
        }
        let record = runner.execute(plan)?;
        on_record(point, &record);
        let complete = record.complete;
        records.push(record);
        if !complete {
            break;
        }
    }
    Ok(records)
}
