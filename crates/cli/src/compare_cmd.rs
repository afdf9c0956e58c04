//! `stackbench compare A B`: two sets of runs — stored runs selected by labels
//! or by id, or JSON files of run records (`run --json`) or of stored runs
//! (`results show N --json`) — compared per workload and metric with a
//! verdict, under the settings, kernel and path that differ between them.
//! Incomplete runs are listed as left out, never counted. Exit status 1 when any verdict is WORSE, so it can gate CI. Runs
//! measured in a TCG-emulated guest get their figures but no verdict.

use std::path::PathBuf;

use clap::Args;
use stackbench_results::compare::output::{render_json, render_markdown, render_table};
use stackbench_results::compare::select::side;
use stackbench_results::compare::{compare_runs, emulated_sides, Margins};
use stackbench_results::store::{parse_labels, Store, WHERE_HELP};

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

pub fn run(args: CompareArgs) -> anyhow::Result<i32> {
    let margins =
        Margins::from_flags(args.margin, args.latency_margin).or_else(crate::exit::usage)?;
    let common = parse_labels(&args.filter)
        .or_else(|e| crate::exit::usage(format!("--where: {e}; {WHERE_HELP}")))?;
    let mut store = None;
    let open = || Store::open_existing(args.db.as_deref());
    let a = side(&args.a, &common, &mut store, &open)?;
    let b = side(&args.b, &common, &mut store, &open)?;
    let mut c = compare_runs(&args.a, &a.inputs(), &args.b, &b.inputs(), margins);
    if let Some(sides) = emulated_sides(&args.a, a.emulated, &args.b, b.emulated) {
        c.refuse_verdicts(&sides);
    }
    for (name, n, given) in [
        (&args.a, c.runs_a, a.runs.len()),
        (&args.b, c.runs_b, b.runs.len()),
    ] {
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
