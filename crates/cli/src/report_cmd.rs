//! `stackbench report`: the performance summary of stored studies, written as
//! one self-contained HTML file plus the same content as Markdown with its
//! figures as SVG files beside it.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use stackbench_results::compare::Margins;
use stackbench_results::export::format_utc;
use stackbench_results::report::{build_report, studies, ReportOptions};
use stackbench_results::store::Store;

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Study to include (repeatable; default: every stored study, oldest first).
    #[arg(long, value_name = "NAME")]
    study: Vec<String>,
    /// Directory to write report.html, report.md and figures/ into.
    #[arg(long, short, value_name = "DIR", default_value = "stackbench-report")]
    out: PathBuf,
    /// Title of the report.
    #[arg(long, default_value = "stackbench performance summary")]
    title: String,
    /// Equivalence margin for rate and CPU per transaction, in percent.
    #[arg(long, value_name = "PCT", default_value_t = 2.5)]
    margin: f64,
    /// Equivalence margin for latency, in percent.
    #[arg(long, value_name = "PCT", default_value_t = 5.0)]
    latency_margin: f64,
    /// Result database (default: $STACKBENCH_DB, else the XDG data directory).
    #[arg(long, value_name = "PATH")]
    db: Option<PathBuf>,
}

pub fn run(args: ReportArgs) -> anyhow::Result<i32> {
    let margins =
        Margins::from_flags(args.margin, args.latency_margin).or_else(crate::exit::usage)?;
    let store = Store::open_existing(args.db.as_deref())?;
    let studies = studies(&store, &args.study)?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let opts = ReportOptions {
        title: args.title.clone(),
        generated: format_utc(now),
        margins,
    };
    let report = build_report(&studies, &opts)?;
    let figures = args.out.join("figures");
    std::fs::create_dir_all(&figures)
        .with_context(|| format!("cannot create --out {}", args.out.display()))?;
    let write = |name: &str, text: &str| {
        let path = args.out.join(name);
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))
    };
    write("report.html", &report.html)?;
    write("report.md", &report.markdown)?;
    for (file, svg) in &report.figures {
        write(file, svg)?;
    }
    println!("{}", args.out.join("report.html").display());
    println!("{}", args.out.join("report.md").display());
    Ok(crate::exit::OK)
}
