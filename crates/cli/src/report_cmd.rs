//! `stackbench report`: the performance summary of stored studies, written as
//! one self-contained HTML file plus the same content as Markdown with its
//! figures as SVG files beside it.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use stackbench_results::compare::Margins;
use stackbench_results::export::format_utc;
use stackbench_results::report::{build_report, ReportOptions, StudyInput};
use stackbench_results::store::{Labels, Store};
use stackbench_results::study::parse_study;

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

fn study_input(store: &Store, name: &str) -> anyhow::Result<StudyInput> {
    let filter: Labels = [("study".to_string(), name.to_string())].into();
    let runs = store.select(&filter)?;
    if runs.is_empty() {
        return crate::exit::usage(format!(
            "--study {name}: no stored runs of that study (`stackbench results list` shows them)"
        ));
    }
    // A stored study file that no longer parses (renamed keys) still reports,
    // without the variant settings it would add.
    let study = store
        .study_file(name)?
        .and_then(|text| parse_study(&text, name).ok());
    Ok(StudyInput {
        name: name.to_string(),
        description: store.study_description(name)?.unwrap_or_default(),
        study,
        runs,
    })
}

pub fn run(args: ReportArgs) -> anyhow::Result<i32> {
    let margins =
        Margins::from_flags(args.margin, args.latency_margin).or_else(crate::exit::usage)?;
    let store = Store::open_existing(args.db.as_deref())?;
    let names = if args.study.is_empty() {
        store.study_names()?
    } else {
        args.study.clone()
    };
    if names.is_empty() {
        return crate::exit::usage(
            "no stored studies: run `stackbench study FILE` first, or pass --db",
        );
    }
    let studies = names
        .iter()
        .map(|n| study_input(&store, n))
        .collect::<anyhow::Result<Vec<_>>>()?;
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
