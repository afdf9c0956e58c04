//! A study walks its plan with a fake runner, storing every run with its
//! labels, and stops at the first failed or incomplete step, keeping what ran.

use std::path::PathBuf;

use stackbench_model::study::{load_study, parse_study, RunnerError, StudyError, StudyStep};
use stackbench_record::RunRecord;
use stackbench_results::fixtures;
use stackbench_results::store::{Labels, Store};
use stackbench_results::study::run_study;

fn example(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
}

fn fake_runner(step: &StudyStep) -> Result<RunRecord, RunnerError> {
    let nodelay = step.settings.nodelay == Some(true);
    let rate = if nodelay { 1100.0 } else { 1000.0 } + 5.0 * fixtures::jitter(7, step.index);
    let mut r = fixtures::record(
        &step.workload.to_string(),
        rate,
        50.0,
        90.0,
        1_700_000_000.0 + step.index as f64,
    );
    r.settings = step.settings.clone();
    Ok(r)
}

#[test]
fn a_study_stores_every_run_with_its_labels() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(Some(&dir.path().join("r.db"))).unwrap();
    let study = load_study(&example("quick.toml")).unwrap();
    let plan = study.plan(&[], "quick.toml").unwrap();
    let env = fixtures::environment("6.1.0");
    let mut seen = Vec::new();
    let done = run_study(&plan, &mut fake_runner, &mut |step, rec| {
        seen.push(step.index);
        store.save(rec, &step.labels, &env)?;
        Ok(())
    })
    .unwrap();
    assert_eq!(done, 12);
    assert_eq!(seen, (0..12).collect::<Vec<_>>());
    let filter: Labels = [
        ("study".to_string(), "quick".to_string()),
        ("variant".to_string(), "nodelay".to_string()),
    ]
    .into();
    let runs = store.select(&filter).unwrap();
    assert_eq!(runs.len(), 6);
    assert!(runs.iter().all(|r| r.record.settings.nodelay == Some(true)));
}

#[test]
fn a_failed_or_incomplete_step_stops_the_study() {
    let s = parse_study(
        "name = \"x\"\nworkloads = [\"RR1(1B/1B)\"]\nrepetitions = 3\n",
        "x.toml",
    )
    .unwrap();
    let plan = s.plan(&[], "x.toml").unwrap();
    let mut stored = 0;
    let err = run_study(
        &plan,
        &mut |step| {
            if step.index == 1 {
                Err("responder refused".into())
            } else {
                fake_runner(step)
            }
        },
        &mut |_, _| {
            stored += 1;
            Ok(())
        },
    )
    .unwrap_err();
    assert_eq!(stored, 1);
    assert_eq!(
        err.to_string(),
        "study step 2/3 (RR1(1B/1B), variant default) failed: responder refused"
    );
    let mut stored = 0;
    let err = run_study(
        &plan,
        &mut |step| {
            let mut r = fake_runner(step)?;
            if step.index == 1 {
                r.complete = false;
                r.incomplete_reason = Some("interrupted (Ctrl-C)".into());
            }
            Ok(r)
        },
        &mut |_, _| {
            stored += 1;
            Ok(())
        },
    )
    .unwrap_err();
    assert!(
        matches!(err, StudyError::Incomplete { step: 2, .. }),
        "{err}"
    );
    assert_eq!(stored, 2, "the incomplete run is kept, marked incomplete");
}
