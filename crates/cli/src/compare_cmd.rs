//! `stackbench compare A B`: two sets of runs — stored runs selected by labels,
//! or JSON files of run records — compared per workload and metric with a
//! verdict. Exit status 1 when any verdict is WORSE, so it can gate CI. Runs
//! measured in a TCG-emulated guest get their figures but no verdict.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use serde_json::Value;
use stackbench_metrics::record::record_from_json;
use stackbench_metrics::RunRecord;
use stackbench_results::compare::{compare, emulated_sides, is_emulated, Margins};
use stackbench_results::compare_output::{render_json, render_markdown, render_table};
use stackbench_results::store::{parse_labels, Labels, Store, WHERE_HELP};

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Baseline: a JSON file of run records (one record, an array, or one per
    /// line) or a label selector such as variant=A or kernel=6.1,study=r2r.
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

/// Reads run records from a JSON file: one object, an array, or JSON lines,
/// each checked and migrated by `record_from_json`.
fn read_json_runs(path: &Path) -> anyhow::Result<Vec<RunRecord>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let parsed = match serde_json::from_str::<Value>(&text) {
        Ok(Value::Array(items)) => items,
        Ok(one) => vec![one],
        Err(_) => text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(serde_json::from_str)
            .collect::<Result<_, _>>()
            .or_else(|e| {
                crate::exit::usage(format!("{}: not JSON run records: {e}", path.display()))
            })?,
    };
    if parsed.iter().any(|v| !v["classes"].is_array()) {
        return crate::exit::usage(format!(
            "{}: not run records (no \"classes\"): give files written by `stackbench run --json`",
            path.display()
        ));
    }
    let count = parsed.len();
    parsed
        .into_iter()
        .enumerate()
        .map(|(i, value)| {
            record_from_json(value).or_else(|e| match count {
                1 => crate::exit::usage(format!("{}: {e}", path.display())),
                _ => crate::exit::usage(format!("{} (record {}): {e}", path.display(), i + 1)),
            })
        })
        .collect()
}

/// One side's records, and whether any was measured in a TCG-emulated guest
/// (from the stored environment; from the settings for JSON files).
fn side(
    spec: &str,
    common: &Labels,
    store: &mut Option<Store>,
    db: Option<&Path>,
) -> anyhow::Result<(Vec<RunRecord>, bool)> {
    let path = Path::new(spec);
    if path.is_file() {
        let runs = read_json_runs(path)?;
        let emulated = runs.iter().any(|r| is_emulated(r, None));
        return Ok((runs, emulated));
    }
    let mut filter = common.clone();
    let own = parse_labels(&spec.split(',').collect::<Vec<_>>()).or_else(|_| {
        crate::exit::usage(format!(
            "'{spec}' is neither a JSON file nor a label selector: give a file of run records or key=value[,key=value], e.g. variant=A"
        ))
    })?;
    filter.extend(own);
    if store.is_none() {
        *store = Some(crate::results_cmd::open_read_only(db)?);
    }
    let runs = store.as_ref().expect("opened above").select(&filter)?;
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
    Ok((runs.into_iter().map(|r| r.record).collect(), emulated))
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
    let mut c = compare(&args.a, &a, &args.b, &b, margins);
    if let Some(sides) = emulated_sides(&args.a, a_emulated, &args.b, b_emulated) {
        c.refuse_verdicts(&sides);
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
