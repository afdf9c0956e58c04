//! `stackbench compare A B`: two sets of runs — stored runs selected by labels
//! or by id, or JSON files of run records (`run --json`) or of stored runs
//! (`results show N --json`) — compared per workload and metric with a
//! verdict, under the settings, kernel and path that differ between them.
//! Incomplete runs are listed as left out, never counted. Exit status 1 when any verdict is WORSE, so it can gate CI. Runs
//! measured in a TCG-emulated guest get their figures but no verdict.

use std::path::{Path, PathBuf};

use clap::Args;
use stackbench_record::RunRecord;
use stackbench_results::compare::{compare_runs, emulated_sides, is_emulated, Margins, RunInput};
use stackbench_results::compare_output::{render_json, render_markdown, render_table};
use stackbench_results::env::Environment;
use stackbench_results::store::{parse_labels, Labels, RunId, Store, StoreError, WHERE_HELP};

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Baseline: stored run ids (6, 2,3,4 or 2-4), a label selector such as
    /// variant=A or kernel=6.1,study=r2r, or a JSON file of runs (from
    /// `run --json` or `results show N --json`; one, an array, or one after another).
    a: String,
    /// Candidate, in the same forms as A.
    b: String,
    /// Label both stored sets must also carry (repeatable), e.g. study=quick.
    #[arg(long = "where", value_name = "KEY=VALUE")]
    filter: Vec<String>,
    /// Equivalence margin for rate and CPU per transaction, in percent.
    #[arg(long, value_name = "PCT", default_value_t = 2.5)]
    margin: f64,
    /// Equivalence margin for latency, in percent.
    #[arg(long, value_name = "PCT", default_value_t = 5.0)]
    latency_margin: f64,
    /// Print JSON.
    #[arg(long, conflicts_with = "markdown")]
    json: bool,
    /// Print Markdown.
    #[arg(long)]
    markdown: bool,
    /// Result database (default: $STACKBENCH_DB, else the XDG data directory).
    #[arg(long, value_name = "PATH")]
    db: Option<PathBuf>,
}

/// One run of a side: how a reader finds it, its record, and its stored
/// environment when the input carried one.
struct SideRun {
    name: String,
    record: RunRecord,
    env: Option<Environment>,
}

/// Reads runs from a JSON file (see [`crate::json_files::read_runs`]); a
/// stored run's environment then counts too.
fn read_json_runs(path: &Path) -> anyhow::Result<Vec<SideRun>> {
    let runs = crate::json_files::read_runs(path)?;
    Ok(runs
        .into_iter()
        .map(|r| SideRun {
            name: r.name,
            record: r.record,
            env: r.env.and_then(|e| serde_json::from_value(e).ok()),
        })
        .collect())
}

/// Widest id range one side may give (`2-4`).
const MAX_ID_RANGE: RunId = 100_000;

/// Run ids as `compare` takes them: `6`, `2,3,4` or `2-4`; `None` when the
/// text is not a list of ids (a label selector or a file).
fn parse_ids(spec: &str) -> Option<Vec<RunId>> {
    let mut ids = Vec::new();
    for part in spec.split(',') {
        let part = part.trim();
        match part.split_once('-') {
            Some((lo, hi)) => {
                let (lo, hi): (RunId, RunId) = (lo.parse().ok()?, hi.parse().ok()?);
                // A range is listed id by id: bound it, so a typo such as
                // 1-99999999999 is not a memory exhaustion.
                if lo > hi || hi - lo >= MAX_ID_RANGE {
                    return None;
                }
                ids.extend(lo..=hi);
            }
            None => ids.push(part.parse().ok()?),
        }
    }
    (!ids.is_empty()).then_some(ids)
}

/// One side's runs, and whether any was measured in a TCG-emulated guest
/// (from the stored environment; from the settings for record files).
fn side(
    spec: &str,
    common: &Labels,
    store: &mut Option<Store>,
    db: Option<&Path>,
) -> anyhow::Result<(Vec<SideRun>, bool)> {
    let path = Path::new(spec);
    if path.is_file() {
        let runs = read_json_runs(path)?;
        let emulated = runs.iter().any(|r| is_emulated(&r.record, r.env.as_ref()));
        return Ok((runs, emulated));
    }
    let ids = parse_ids(spec);
    let mut filter = common.clone();
    if ids.is_none() {
        let own = parse_labels(&spec.split(',').collect::<Vec<_>>()).or_else(|_| {
            crate::exit::usage(format!(
                "'{spec}' is neither a JSON file nor a label selector nor run ids: give a file of run records, key=value[,key=value] such as variant=A, or stored run ids such as 6, 2,3 or 2-4 (a range spans fewer than {MAX_ID_RANGE} ids)"
            ))
        })?;
        filter.extend(own);
    }
    if store.is_none() {
        *store = Some(crate::results_cmd::open_read_only(db)?);
    }
    let store = store.as_ref().expect("opened above");
    let runs = match ids {
        Some(ids) => ids
            .into_iter()
            .map(|id| match store.get(id) {
                Err(e @ StoreError::NoSuchRun(_)) => crate::exit::usage(e.to_string()),
                other => Ok(other?),
            })
            .collect::<anyhow::Result<Vec<_>>>()?,
        None => store.select(&filter)?,
    };
    if runs.is_empty() {
        return crate::exit::usage(format!(
            "no stored runs match {}: `stackbench results list` shows the labels",
            filter
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(",")
        ));
    }
    let emulated = runs.iter().any(|r| is_emulated(&r.record, Some(&r.env)));
    let runs = runs
        .into_iter()
        .map(|r| SideRun {
            name: format!("run {}", r.id),
            record: r.record,
            env: Some(r.env),
        })
        .collect();
    Ok((runs, emulated))
}

/// The inputs [`compare_runs`] reads, borrowed from one side's runs.
fn inputs(runs: &[SideRun]) -> Vec<RunInput<'_>> {
    runs.iter()
        .map(|r| RunInput {
            name: &r.name,
            record: &r.record,
            env: r.env.as_ref(),
        })
        .collect()
}

pub fn run(args: CompareArgs) -> anyhow::Result<i32> {
    for (flag, v) in [
        ("--margin", args.margin),
        ("--latency-margin", args.latency_margin),
    ] {
        if !(v > 0.0 && v < 100.0) {
            return crate::exit::usage(format!(
                "{flag} {v}: give a percentage above 0 and below 100, e.g. 2.5"
            ));
        }
    }
    let common = parse_labels(&args.filter)
        .or_else(|e| crate::exit::usage(format!("--where: {e}; {WHERE_HELP}")))?;
    let mut store = None;
    let (a, a_emulated) = side(&args.a, &common, &mut store, args.db.as_deref())?;
    let (b, b_emulated) = side(&args.b, &common, &mut store, args.db.as_deref())?;
    let margins = Margins {
        rate_pct: args.margin,
        latency_pct: args.latency_margin,
        cpu_pct: args.margin,
    };
    let mut c = compare_runs(&args.a, &inputs(&a), &args.b, &inputs(&b), margins);
    if let Some(sides) = emulated_sides(&args.a, a_emulated, &args.b, b_emulated) {
        c.refuse_verdicts(&sides);
    }
    for (name, n, given) in [(&args.a, c.runs_a, a.len()), (&args.b, c.runs_b, b.len())] {
        if n == 0 {
            return crate::exit::usage(format!(
                "{name}: none of its {given} runs is complete (each was interrupted or ended early), so there is nothing to compare: `stackbench results list` marks complete runs"
            ));
        }
    }
    if c.rows.is_empty() {
        return crate::exit::usage(format!(
            "{} and {} share no workload: compare runs of the same workloads",
            args.a, args.b
        ));
    }
    if args.json {
        println!("{}", render_json(&c));
    } else if args.markdown {
        print!("{}", render_markdown(&c));
    } else {
        print!("{}", render_table(&c));
    }
    Ok(if c.any_worse() {
        crate::exit::FAILED_CHECK
    } else {
        crate::exit::OK
    })
}
