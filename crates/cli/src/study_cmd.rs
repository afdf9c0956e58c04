//! `stackbench study FILE`: runs every workload × variant × repetition of a
//! study file, interleaved (A B A B …), and stores each run with its study,
//! variant and repetition labels. Measuring and storing the steps is the
//! runner's ([`stackbench_runner::study`]); this module reads the flags,
//! estimates, lists a `--dry-run` and prints the summary.

use std::path::PathBuf;

use clap::Args;
use stackbench_model::settings::RunSettings;
use stackbench_model::study::{
    load_study, reserved_label, SettingTexts, Study, StudyError, StudyStep,
};
use stackbench_results::store::{parse_labels, Store};
use stackbench_results::study::summary::study_summary;
use stackbench_runner::metrics_listen::{one_address, MetricsServer};
use stackbench_runner::resolve::resolve;
use stackbench_runner::study::{run_steps, StudyRun};
use stackbench_runner::study_estimate::{estimate, Estimate, MAX_UNCONFIRMED};
use stackbench_runner::{Observer, RunError};

use crate::progress::Terminal;

use crate::setting_flags::SettingFlags;

/// Steps `--dry-run` lists in full; a longer plan lists its first
/// [`LISTED_HEAD`] steps and a summary (a 256,000-step plan printed
/// 256,000 lines).
const LIST_ALL: usize = 100;
const LISTED_HEAD: usize = 20;

#[derive(Debug, Args)]
pub struct StudyArgs {
    /// The study file (TOML); see docs/results.md for its keys.
    file: PathBuf,
    /// Run only this variant (repeatable), e.g. one side of a release-to-release study.
    #[arg(long, value_name = "NAME")]
    variant: Vec<String>,
    /// Extra label stored with every run (repeatable), e.g. --label host=lab1.
    #[arg(long, value_name = "KEY=VALUE")]
    label: Vec<String>,
    /// Result database (default: $STACKBENCH_DB, else the XDG data directory).
    #[arg(long, value_name = "PATH", conflicts_with = "no_store")]
    db: Option<PathBuf>,
    /// Do not store the runs.
    #[arg(long)]
    no_store: bool,
    /// Print the interleaved plan and exit without running anything.
    #[arg(long)]
    dry_run: bool,
    /// Print every column of the summary table, however wide the terminal.
    #[arg(long)]
    wide: bool,
    /// Run a study estimated to take longer than 24 h.
    #[arg(long)]
    yes: bool,
    /// Repetitions of every workload × variant, over the file's [1 to 1000].
    #[arg(long, value_name = "N")]
    repetitions: Option<u32>,
    /// Any run setting, over the file's and every variant's (not the swept one).
    #[command(flatten)]
    settings: SettingFlags,
}

/// Prints the plan (all of it, or its head when long) and its estimate;
/// a long plan is built only as far as its head.
fn dry_run(study: &Study, only: &[String], file: &str, time: &Estimate) -> anyhow::Result<()> {
    let listed = if time.steps <= LIST_ALL {
        time.steps
    } else {
        LISTED_HEAD
    };
    let usage = |e: StudyError| crate::exit::usage::<()>(e.to_string()).unwrap_err();
    for step in study.head(only, file, listed, time.steps).map_err(usage)? {
        println!("{}", step.line());
    }
    if listed < time.steps {
        println!(
            "… and {} more steps (a plan of more than {LIST_ALL} steps is listed by its first {LISTED_HEAD})",
            time.steps - listed
        );
    }
    println!("study plan: {}", time.describe());
    if time.total > MAX_UNCONFIRMED {
        println!("longer than 24 h: `study` runs it only with --yes");
    }
    Ok(())
}

/// Applies `--repetitions` and the setting flags to the study.
fn override_study(study: &mut Study, args: &StudyArgs) -> anyhow::Result<()> {
    if let Some(n) = args.repetitions {
        study.set_repetitions(n).or_else(crate::exit::usage)?;
    }
    let mut check = RunSettings::default();
    args.settings
        .apply(&mut check)
        .or_else(crate::exit::usage)?;
    study.overrides = SettingTexts(
        args.settings
            .given
            .iter()
            .map(|(d, t)| (d.name.to_string(), t.clone()))
            .collect(),
    );
    Ok(())
}

/// Resolves every step of one repetition (repetitions repeat its settings)
/// as it will be run, so that a setting only resolution refuses (a CPU this
/// machine lacks, a certificate that is not PEM) in a later variant or sweep
/// point is refused before the first step starts, naming the step.
fn check_every_step(one: &[StudyStep]) -> anyhow::Result<()> {
    for step in one {
        if let Err(RunError::Input(e)) = resolve(
            step.settings.clone(),
            vec![step.workload.clone()],
            false,
            false,
        ) {
            // Named as a failed step is, without its number: that is of one
            // repetition's plan, not of the study's.
            let point = step.point.describe();
            let point = if point.is_empty() {
                point
            } else {
                format!(", {point}")
            };
            return crate::exit::usage(format!(
                "study step ({}, variant {}{point}) cannot run: {e}",
                step.workload, step.variant
            ));
        }
    }
    Ok(())
}

/// Runs the study, measuring each step with `runner`.
pub fn run(args: StudyArgs) -> anyhow::Result<i32> {
    let file = args.file.display().to_string();
    let usage = |e: StudyError| crate::exit::usage::<()>(e.to_string()).unwrap_err();
    let mut study = load_study(&args.file).map_err(usage)?;
    override_study(&mut study, &args)?;
    // One repetition is checked and estimated first (every repetition
    // repeats its settings); the whole plan is built only to be run or listed.
    let one = Study {
        repetitions: 1,
        ..study.clone()
    }
    .plan(&args.variant, &file)
    .map_err(usage)?;
    let extra =
        parse_labels(&args.label).or_else(|e| crate::exit::usage(format!("--label: {e}")))?;
    if let Some(reason) = extra.keys().find_map(|k| reserved_label(k)) {
        return crate::exit::usage(format!("--label: {reason}"));
    }
    let time = estimate(&one, study.repetitions);
    if args.dry_run {
        dry_run(&study, &args.variant, &file, &time)?;
        return Ok(crate::exit::OK);
    }
    time.check(args.yes).or_else(crate::exit::usage)?;
    check_every_step(&one)?;
    // Bound before the first step: an address in use is bad input.
    let metrics = one_address(one.iter().map(|s| &s.settings))
        .and_then(|listen| listen.map(|l| MetricsServer::bind(&l)).transpose())
        .map_err(crate::run_cmd::run_error)?;
    let mut terminal = Terminal::default();
    let mut served;
    let observer: &mut dyn Observer = match &metrics {
        Some(server) => {
            served = server.observe(&mut terminal);
            &mut served
        }
        None => &mut terminal,
    };
    let runner = &mut crate::interrupt::runner(observer);
    eprintln!("study '{}': {}", study.name, time.describe());
    let plan = study.plan(&args.variant, &file).map_err(usage)?;
    let mut store = if args.no_store {
        None
    } else {
        Some(Store::open(args.db.as_deref())?)
    };
    if let Some(store) = &store {
        let text = std::fs::read_to_string(&args.file)?;
        store.save_study(&study.name, &study.description, &text)?;
    }
    let StudyRun {
        ran,
        stored,
        outcome,
    } = run_steps(
        runner,
        &plan,
        store.as_mut(),
        &extra,
        &mut |step| eprintln!("{}", step.line()),
        &mut |id| eprintln!("  stored as run {id}"),
    );
    // The results on stdout, progress and warnings above on stderr.
    print!(
        "{}",
        study_summary(&ran, crate::terminal::layout(args.wide))
    );
    if let Some(store) = &store {
        eprintln!(
            "{stored} runs of study '{}' stored in {}",
            study.name,
            store.path().display()
        );
    }
    let code = finish(&study, outcome);
    crate::run_cmd::say_labs_left_up(ran.iter().map(|r| &r.record));
    code
}

/// The exit status of a walked study, with the next step suggested.
fn finish(study: &Study, outcome: Result<usize, StudyError>) -> anyhow::Result<i32> {
    match outcome {
        Ok(_) => {
            if study.variants.len() > 1 {
                eprintln!(
                    "compare with: stackbench compare variant={} variant={} --where study={}",
                    study.variants[0].name, study.variants[1].name, study.name
                );
            }
            Ok(crate::exit::OK)
        }
        Err(e @ StudyError::Incomplete { .. }) => {
            eprintln!("stackbench: {e}");
            Ok(crate::exit::INCOMPLETE)
        }
        Err(e) => Err(e.into()),
    }
}
