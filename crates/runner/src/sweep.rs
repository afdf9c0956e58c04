//! `--sweep`: one run per point of the sweep (a dimension's values, or the
//! cross of two), on one runner so that the points share the responder when
//! their settings allow. Every point is resolved before any is measured, so a
//! bad value costs no run; the sweep stops at the first incomplete point.

use stackbench_model::settings::RunSettings;
use stackbench_model::sweep::{Sweep, SweepPoint};
use stackbench_model::Workload;
use stackbench_record::RunRecord;
use stackbench_results::store::Labels;

use crate::error::{input, RunError};
use crate::resolve::{resolve, ResolvedRun};
use crate::session::Runner;

/// Each point of `sweep` applied to the workloads and settings, resolved.
/// A sweep with no dimension is one point, the settings as given.
pub fn resolve_sweep(
    workloads: &[Workload],
    settings: &RunSettings,
    sweep: &Sweep,
    default_study: bool,
    announce: bool,
) -> Result<Vec<(SweepPoint, ResolvedRun)>, RunError> {
    let mut runs = Vec::new();
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
        // Say which point a refusal is about: its settings are not the flags given.
        let run = match resolve(s, ws, default_study, announce) {
            Err(RunError::Input(e)) if !sweep.is_empty() => {
                return input(format!("--sweep {}: {e}", point.describe()))
            }
            other => other?,
        };
        runs.push((point, run));
    }
    Ok(runs)
}

/// The sweep's runs as a study's would be stored: each point's record split
/// by workload — by position, as the classes were appended in workload order
/// (two workloads may print alike at a sweep point) — and labelled with the
/// point, the workload as given and `variant=run`.
pub fn runs_by_workload(
    workloads: &[Workload],
    points: &[(SweepPoint, ResolvedRun)],
    records: &[RunRecord],
) -> Vec<(Labels, RunRecord)> {
    let mut runs = Vec::new();
    for ((point, run), record) in points.iter().zip(records) {
        let mut at = 0;
        for (base, effective) in workloads.iter().zip(&run.workloads) {
            let n = effective.classes.len();
            let mut r = record.clone();
            r.classes = record.classes.iter().skip(at).take(n).cloned().collect();
            at += n;
            let mut labels: Labels = point.labels().into_iter().collect();
            labels.insert("workload".into(), base.to_string());
            labels.insert("variant".into(), "run".into());
            runs.push((labels, r));
        }
    }
    runs
}

/// The sweep's table and, for a client sweep, its USL fit.
pub fn summary(
    workloads: &[Workload],
    points: &[(SweepPoint, ResolvedRun)],
    records: &[RunRecord],
) -> String {
    let runs = runs_by_workload(workloads, points, records);
    let refs: Vec<(&Labels, &RunRecord)> = runs.iter().map(|(l, r)| (l, r)).collect();
    stackbench_results::sweep::text::sweep_text(&refs)
}

/// Runs the points in order; `on_record` gets each point's record as soon
/// as it is measured (to store it). Stops after the first incomplete record,
/// which is the last one returned.
pub fn run_sweep(
    runner: &mut Runner,
    points: &[(SweepPoint, ResolvedRun)],
    on_record: &mut dyn FnMut(&SweepPoint, &RunRecord),
) -> Result<Vec<RunRecord>, RunError> {
    let mut records = Vec::new();
    for (point, run) in points {
        if run.announce && !point.values.is_empty() {
            runner
                .observer()
                .note(&format!("sweep point {}", point.describe()));
        }
        let record = runner.execute(run)?;
        on_record(point, &record);
        let complete = record.complete;
        records.push(record);
        if !complete {
            break;
        }
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;
    use stackbench_model::sweep::SweepDim;
    use stackbench_results::fixtures;

    /// Two workloads at two client counts: each point's record splits into
    /// one run per workload, its classes by position, labelled as a study's.
    #[test]
    fn each_points_record_splits_by_workload_in_order() {
        let workloads: Vec<Workload> = ["RR(1B/1B)", "RR(1B/1B)+STR1(1B/1kB)"]
            .iter()
            .map(|w| w.parse().unwrap())
            .collect();
        let mut settings = RunSettings::default();
        settings.set("target", "192.0.2.1:12870").unwrap();
        let sweep = Sweep::new(vec![SweepDim::parse_flag("clients=2,4").unwrap()]).unwrap();
        let plans = resolve_sweep(&workloads, &settings, &sweep, false, false).unwrap();
        let records: Vec<RunRecord> = plans
            .iter()
            .map(|(_, run)| {
                let text: Vec<String> = run.workloads.iter().map(|w| w.to_string()).collect();
                fixtures::record(&text.join("+"), 100.0, 10.0, 20.0, 0.0)
            })
            .collect();
        let runs = runs_by_workload(&workloads, &plans, &records);
        let got: Vec<(String, String, usize)> = runs
            .iter()
            .map(|(l, r)| {
                (
                    l["sweep.clients"].clone(),
                    l["workload"].clone(),
                    r.classes.len(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("2".into(), "RR1(1B/1B)".into(), 1),
                ("2".into(), "RR1(1B/1B)+STR1(1B/1kB)".into(), 2),
                ("4".into(), "RR1(1B/1B)".into(), 1),
                ("4".into(), "RR1(1B/1B)+STR1(1B/1kB)".into(), 2),
            ]
        );
        assert!(runs.iter().all(|(l, _)| l["variant"] == "run"));
        assert_eq!(runs[1].1.classes[1].notation, "STR2(1B/1kB)");
    }
}
