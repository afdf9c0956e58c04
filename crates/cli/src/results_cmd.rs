//! `stackbench results list|show ID|export`: reading the result store.
//!
//! A stored run whose record cannot be read (written by a newer stackbench,
//! damaged) does not stop `results list`: it is listed from its indexed
//! columns with Complete = UNREADABLE (and an `error` field in `--json`), and
//! its error is printed on stderr as a warning. `results show ID` of it fails
//! with that one-line error; `export`, `compare` and `report` refuse a
//! selection containing it, naming the run id.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Args, Subcommand, ValueEnum};
use stackbench_results::export;
use stackbench_results::store::{parse_labels, Store, WHERE_HELP};

#[derive(Debug, Args)]
pub struct ResultsArgs {
    #[command(subcommand)]
    command: ResultsCommand,
    /// Result database (default: $STACKBENCH_DB, else $XDG_DATA_HOME/stackbench/results.db).
    #[arg(long, global = true, value_name = "PATH")]
    db: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
enum ResultsCommand {
    /// List stored runs, oldest first.
    List {
        /// Only runs with this label (repeatable, all must match), e.g. study=quick.
        #[arg(long = "where", value_name = "KEY=VALUE")]
        filter: Vec<String>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Show one stored run: labels, environment, settings and per-class figures.
    Show {
        /// Run id, as `results list` prints it.
        id: i64,
        /// Print the stored run as JSON.
        #[arg(long)]
        json: bool,
        /// Print every column of the table, however wide the terminal.
        #[arg(long, conflicts_with = "json")]
        wide: bool,
    },
    /// Export stored runs as JSON, CSV or Markdown (one row per run and class).
    Export {
        #[arg(long = "where", value_name = "KEY=VALUE")]
        filter: Vec<String>,
        /// [default: json; csv with --flat]
        #[arg(long, value_enum)]
        format: Option<Format>,
        /// The flat table: one row per class per run, every figure a column
        /// whose name carries its unit, warnings as a column (docs/record.md
        /// lists the columns); CSV, or JSON lines with --format json.
        #[arg(long)]
        flat: bool,
        /// Run records to export instead of the store (`run --json` output or
        /// `results show N --json`); any schema version. Needs --flat.
        #[arg(value_name = "FILE", requires = "flat", conflicts_with = "filter")]
        files: Vec<PathBuf>,
        /// Write to this file instead of standard output.
        #[arg(long, short, value_name = "FILE")]
        output: Option<PathBuf>,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Format {
    Json,
    Csv,
    Markdown,
}

fn filter_of(texts: &[String]) -> anyhow::Result<stackbench_results::store::Labels> {
    parse_labels(texts).or_else(|e| crate::exit::usage(format!("--where: {e}; {WHERE_HELP}")))
}

pub fn run(args: ResultsArgs) -> anyhow::Result<i32> {
    // Opened per command: `export --flat FILE…` reads no store.
    let store = || Store::open_existing(args.db.as_deref());
    match args.command {
        ResultsCommand::List { filter, json } => {
            let runs = store()?.list(&filter_of(&filter)?)?;
            for error in runs.iter().filter_map(|r| r.error.as_ref()) {
                eprintln!("stackbench: warning: {error} (listed as UNREADABLE)");
            }
            if json {
                println!("{}", serde_json::to_string_pretty(&runs)?);
            } else {
                print!("{}", export::render_list(&runs));
            }
        }
        ResultsCommand::Show { id, json, wide } => {
            let run = store()?.get(id)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&run)?);
            } else {
                print!(
                    "{}",
                    export::render_show(&run, crate::terminal::layout(wide))
                );
            }
        }
        ResultsCommand::Export {
            filter,
            format,
            flat,
            files,
            output,
        } => {
            let text = if flat {
                export_flat(&store, &filter, &files, format)?
            } else {
                let runs = store()?.select(&filter_of(&filter)?)?;
                match format.unwrap_or(Format::Json) {
                    Format::Json => export::export_json(&runs) + "\n",
                    Format::Csv => export::export_csv(&runs),
                    Format::Markdown => export::export_markdown(&runs),
                }
            };
            match output {
                Some(path) => std::fs::write(&path, text)
                    .with_context(|| format!("cannot write --output {}", path.display()))?,
                None => print!("{text}"),
            }
        }
    }
    Ok(crate::exit::OK)
}

/// `results export --flat`: the stored runs `filter` selects, or the run
/// records in `files`, each read through `record_from_json` (so any schema
/// version), as the flat table.
fn export_flat(
    store: &dyn Fn() -> Result<Store, stackbench_results::store::StoreError>,
    filter: &[String],
    files: &[PathBuf],
    format: Option<Format>,
) -> anyhow::Result<String> {
    let runs: Vec<(String, stackbench_record::RunRecord)> = if files.is_empty() {
        store()?
            .select(&filter_of(filter)?)?
            .into_iter()
            .map(|r| (format!("run {}", r.id), r.record))
            .collect()
    } else {
        let mut runs = Vec::new();
        for path in files {
            runs.extend(read_record_file(path)?);
        }
        runs
    };
    let runs: Vec<(String, &stackbench_record::RunRecord)> =
        runs.iter().map(|(name, r)| (name.clone(), r)).collect();
    match format.unwrap_or(Format::Csv) {
        Format::Csv => Ok(export::export_flat_csv(&runs)),
        Format::Json => Ok(export::export_flat_json_lines(&runs)),
        Format::Markdown => crate::exit::usage(
            "--flat writes CSV or JSON lines: use --format csv or --format json".to_string(),
        ),
    }
}

/// The run records of one file, named as the flat table's `run` column.
fn read_record_file(path: &Path) -> anyhow::Result<Vec<(String, stackbench_record::RunRecord)>> {
    let runs = stackbench_results::record_file::read_runs(path)?;
    Ok(runs.into_iter().map(|r| (r.name, r.record)).collect())
}
