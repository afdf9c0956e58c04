//! A study's steps measured on one runner, in plan order (interleaved:
//! A B A B …), each record stored with the study's, the variant's and the
//! repetition's labels and the environment it was measured in. The walk
//! itself (stop at the first failed or incomplete step) is
//! `stackbench_results::study::run_study`; `stackbench study` prints around it.

use stackbench_model::study::{StudyError, StudyStep};
use stackbench_results::store::{Labels, Store};
use stackbench_results::study::run_study;
use stackbench_results::study::summary::StepRun;

use crate::session::{environment_of, Runner};

/// What a study's walk produced.
pub struct StudyRun {
    /// The steps measured, in order, with their stored ids.
    pub ran: Vec<StepRun>,
    /// How many runs were stored.
    pub stored: usize,
    /// The walk's end: the steps run, or why it stopped.
    pub outcome: Result<usize, StudyError>,
}

/// Measures `steps` on `runner`, storing each record in `store` (when
/// given) with `extra` and the step's labels. `on_step` is told each step
/// before it runs and `on_stored` each stored run's id, for the caller to
/// print.
pub fn run_steps(
    runner: &mut Runner,
    steps: &[StudyStep],
    mut store: Option<&mut Store>,
    extra: &Labels,
    on_step: &mut dyn FnMut(&StudyStep),
    on_stored: &mut dyn FnMut(i64),
) -> StudyRun {
    let mut stored = 0usize;
    let mut ran = Vec::new();
    let outcome = run_study(
        steps,
        &mut |step| {
            on_step(step);
            runner.study_step(step).map_err(Into::into)
        },
        &mut |step, record| {
            let mut run_id = None;
            if let Some(store) = store.as_deref_mut() {
                let mut labels = extra.clone();
                labels.extend(step.labels.clone());
                let id = store.save(record, &labels, &environment_of(record))?;
                stored += 1;
                run_id = Some(id);
                on_stored(id);
            }
            ran.push(StepRun {
                step: step.index + 1,
                variant: step.variant.clone(),
                repetition: step.repetition,
                run_id,
                record: record.clone(),
            });
            Ok(())
        },
    );
    StudyRun {
        ran,
        stored,
        outcome,
    }
}
