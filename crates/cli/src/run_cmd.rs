//! `stackbench run`: resolves the command line into run settings (raw flags →
//! immutable settings, printed and stored with the result), places the two
//! sides on CPUs, starts the responder process unless `--target` names one,
//! runs each workload in turn and prints the record.

use clap::Args;
use stackbench_model::settings::RunSettings;
use stackbench_model::study::reserved_label;
use stackbench_model::sweep::{Sweep, SweepDim};
use stackbench_record::RunRecord;
use stackbench_results::store::{parse_labels, Labels, Store};
use stackbench_runner::find_rate::{find_max_rate, Search};
use stackbench_runner::metrics_listen::MetricsServer;
use stackbench_runner::resolve::workloads_or_default;
use stackbench_runner::sweep::{resolve_sweep, run_sweep, summary};
use stackbench_runner::{environment_of, Observer, RunError};

use crate::exit::{usage, FAILED_CHECK, INCOMPLETE, OK};
use crate::progress::Terminal;
use crate::setting_flags::SettingFlags;

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  stackbench run                                   # the default study against a local responder
  stackbench run 'RR10(4kB/4kB)' --duration 30s    # 10 clients, 4 kB each way
  stackbench run 'CRR40(64B/8kB)' --crr-close abort
  stackbench run 'STR3(1B/20MB)' 'STR3(20MB/1B)'   # GET then PUT
  stackbench run 'RR1(100B/800B)+STR10(1B/20MB)'   # a mix: classes run at once
  stackbench run 'RR1(1B/1B)' --transactions 100000 --json
  stackbench run 'RR(1B/1B)' --sweep clients=1,2,4,8,16 --repeat 3   # a scalability curve
  stackbench run 'RR60(4kB/4kB)' --target 127.0.0.1:12870   # against `stackbench serve`
  stackbench run 'RR1K(100B/800B)@exp:1s' --ramp 2000/s       # 1024 users thinking 1 s on average
  stackbench run 'RR10(1kB/1kB)' --rate 20000/s --arrivals poisson   # open loop, wrk2-style latency
  stackbench run 'RR10(1kB/1kB)' --find-max-rate --p99-under 1ms --duration 3s

Notation: NAME<clients>(<request>/<response>)[@PACING], NAME = RR | CRR | STR; clients take K (=1024);
sizes B, kB/KB/KiB, MB/MiB, GB/GiB (binary multiples); PACING a think time (30s, exp:30s,
uniform:10s..50s) or a rate (5000/s). Every setting flag is also a study-file key.
Exit status: 0 complete, 2 usage or input error, 3 incomplete run (Ctrl-C, SIGTERM, responder lost).")]
pub struct RunArgs {
    /// Workloads in the z/OS performance reports' notation, run one after another
    /// [default: RR1(1B/1B) RR10(4kB/4kB) CRR10(64B/8kB) STR3(1B/20MB), 5 s each].
    workloads: Vec<String>,
    #[command(flatten)]
    settings: SettingFlags,
    /// Sweep a dimension: clients, request, response or any setting, e.g. clients=1,2,4,8
    /// (repeat the flag to cross two; separate values with ';' when they hold commas: server-cpus=1;0-1).
    #[arg(long, value_name = "NAME=V1,V2,…", allow_hyphen_values = true)]
    sweep: Vec<String>,
    /// Print one JSON document on stdout (a sweep: an array, one record per point).
    #[arg(long)]
    json: bool,
    /// Print CSV, one row per class.
    #[arg(long, conflicts_with = "json")]
    csv: bool,
    /// Print every column of the table, however wide the terminal (by default
    /// the key columns, and the others that fit).
    #[arg(long, conflicts_with_all = ["json", "csv"])]
    wide: bool,
    /// Label stored with the run (repeatable), e.g. --label kernel=6.18 --label build=A; study, variant, repetition, workload and sweep.* are set by `study` and `--sweep` only.
    #[arg(long, value_name = "KEY=VALUE")]
    label: Vec<String>,
    /// Result database [default: $STACKBENCH_DB, else $XDG_DATA_HOME/stackbench/results.db].
    #[arg(long, value_name = "PATH", conflicts_with = "no_store")]
    db: Option<std::path::PathBuf>,
    /// Do not store the run.
    #[arg(long)]
    no_store: bool,
    /// Search the highest --rate whose p99 (from the intended send) is under --p99-under:
    /// doubling, then bisection, at most STEPS short runs [default: 12].
    #[arg(long, value_name = "STEPS", num_args = 0..=1, require_equals = true,
          default_missing_value = "12", conflicts_with_all = ["sweep", "csv"], requires = "p99_under")]
    find_max_rate: Option<u32>,
    /// The p99 latency bound of --find-max-rate, e.g. 1ms.
    #[arg(
        long,
        value_name = "DURATION",
        requires = "find_max_rate",
        allow_hyphen_values = true
    )]
    p99_under: Option<String>,
}

fn parse_sweep(args: &RunArgs) -> anyhow::Result<Sweep> {
    let dims = args
        .sweep
        .iter()
        .map(|t| SweepDim::parse_flag(t).or_else(|e| usage(format!("--sweep {t}: {}", e.message))))
        .collect::<anyhow::Result<Vec<_>>>()?;
    Sweep::new(dims).or_else(|e| usage(format!("--sweep: {}", e.message)))
}

pub fn run(args: RunArgs) -> anyhow::Result<i32> {
    let workloads = workloads_or_default(&args.workloads).map_err(run_error)?;
    let mut settings = RunSettings::default();
    args.settings.apply(&mut settings).or_else(usage)?;
    let sweep = parse_sweep(&args)?;
    let labels = parse_labels(&args.label).or_else(|e| usage(format!("--label: {e}")))?;
    // A run labelled study=X would join study X's `compare` and `report`.
    if let Some(reason) = labels.keys().find_map(|k| reserved_label(k)) {
        return usage(format!("--label: {reason}"));
    }
    let default_study = args.workloads.is_empty();
    let announce = !args.json && !args.csv;
    // Bound before anything runs: an address in use is bad input.
    let metrics = settings
        .metrics_listen
        .as_ref()
        .map(|listen| MetricsServer::bind(&listen.0))
        .transpose()
        .map_err(run_error)?;
    let mut terminal = Terminal::default();
    let mut served;
    let observer: &mut dyn Observer = match &metrics {
        Some(server) => {
            served = server.observe(&mut terminal);
            &mut served
        }
        None => &mut terminal,
    };
    let mut runner = crate::interrupt::runner(observer);
    if let Some(steps) = args.find_max_rate {
        let mut store = open_store(&args)?;
        let search = Search {
            workloads: &workloads,
            settings,
            steps,
            p99_under: args.p99_under.as_deref().unwrap_or_default(),
            announce: !args.json,
        };
        let found = find_max_rate(&mut runner, search, &mut |rate, record| {
            if let Some(store) = store.as_mut() {
                let mut labels = labels.clone();
                labels.insert("search".into(), "find-max-rate".into());
                labels.insert("search.rate".into(), rate.to_string());
                store_record(store, record, &labels);
            }
        })
        .map_err(run_error)?;
        if args.json {
            let records: Vec<&RunRecord> = found.steps.iter().map(|s| &s.record).collect();
            println!(
                "{}",
                serde_json::to_string_pretty(&records).expect("records serialise")
            );
        } else {
            print!(
                "{}",
                found.table(args.p99_under.as_deref().unwrap_or_default())
            );
        }
        return Ok(if found.incomplete() {
            INCOMPLETE
        } else if found.pass.is_some() {
            OK
        } else {
            FAILED_CHECK
        });
    }
    // Resolve every point before measuring any, so a bad value costs no run.
    let plans =
        resolve_sweep(&workloads, &settings, &sweep, default_study, announce).map_err(run_error)?;
    let mut store = open_store(&args)?;
    let records = run_sweep(&mut runner, &plans, &mut |point, record| {
        if let Some(store) = store.as_mut() {
            let mut l = labels.clone();
            l.extend(point.labels());
            store_record(store, record, &l);
        }
    })
    .map_err(run_error)?;
    let format = Format::of(&args);
    print_records(&records, format, !sweep.is_empty());
    if announce && !sweep.is_empty() {
        print!("{}", summary(&workloads, &plans, &records));
    }
    let complete = records.len() == plans.len() && records.iter().all(|r| r.complete);
    say_labs_left_up(records.iter());
    Ok(if complete { OK } else { INCOMPLETE })
}

/// The last line after runs across labs: a lab run leaves the lab's
/// namespaces up for the next step (by design: building them again per
/// run would cost each step), so say which lab is up and what takes it down.
pub fn say_labs_left_up<'a>(records: impl Iterator<Item = &'a RunRecord>) {
    let mut labs: Vec<(&str, &str)> = Vec::new();
    for lab in records.filter_map(|r| r.lab.as_ref()) {
        if !labs.iter().any(|(name, _)| *name == lab.name) {
            labs.push((&lab.name, &lab.file));
        }
    }
    for (name, file) in labs {
        eprintln!(
            "stackbench: lab {name} is still up (its namespaces stay for the next run); take \
             it down with: stackbench lab down {file}"
        );
    }
}

/// The runner's error as the binary reports it: bad input is a usage error;
/// both are exit status 2 (see [`crate::exit::USAGE`]).
pub fn run_error(e: RunError) -> anyhow::Error {
    match e {
        RunError::Input(m) => crate::exit::UsageError(m).into(),
        e @ RunError::Runtime(_) => e.into(),
    }
}

/// Saves a record with its environment. A store failure is reported, never
/// allowed to lose the measurement, which is still printed.
pub fn store_record(store: &mut Store, record: &RunRecord, labels: &Labels) {
    let env = environment_of(record);
    match store.save(record, labels, &env) {
        Ok(id) => eprintln!("stackbench: stored as run {id}"),
        Err(e) => eprintln!("stackbench: warning: the run was not stored: {e}"),
    }
}

fn open_store(args: &RunArgs) -> anyhow::Result<Option<Store>> {
    Ok(match (&args.db, args.no_store) {
        (_, true) => None,
        (db, false) => Some(Store::open(db.as_deref()).or_else(|e| usage(format!("--db: {e}")))?),
    })
}

/// How records are printed: `--json`, `--csv`, or the human table fitted
/// to the terminal.
enum Format {
    Json,
    Csv,
    Human(stackbench_results::run_table::Layout),
}

impl Format {
    fn of(args: &RunArgs) -> Format {
        match (args.json, args.csv) {
            (true, _) => Format::Json,
            (_, true) => Format::Csv,
            _ => Format::Human(crate::terminal::layout(args.wide)),
        }
    }
}

fn print_records(records: &[RunRecord], format: Format, swept: bool) {
    if matches!(format, Format::Json) && swept {
        println!(
            "{}",
            serde_json::to_string_pretty(records).expect("records serialise")
        );
        return;
    }
    for (i, r) in records.iter().enumerate() {
        let text = print_record(r, &format);
        // One CSV header for the whole sweep.
        let text = match (matches!(format, Format::Csv), i) {
            (true, 1..) => text
                .split_once('\n')
                .map_or("", |(_, rest)| rest)
                .to_string(),
            _ => text,
        };
        print!("{text}");
    }
}

fn print_record(record: &RunRecord, format: &Format) -> String {
    use stackbench_results::output;
    match format {
        Format::Json => output::json(record),
        Format::Csv => output::csv(record),
        Format::Human(layout) => output::human(record, *layout),
    }
}
