//! `stackbench results list|show ID|export`: reading the result store.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Subcommand, ValueEnum};
use stackbench_results::export;
use stackbench_results::store::{parse_labels, Store};

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
    },
    /// Export stored runs as JSON, CSV or Markdown (one row per run and class).
    Export {
        #[arg(long = "where", value_name = "KEY=VALUE")]
        filter: Vec<String>,
        #[arg(long, value_enum, default_value_t = Format::Json)]
        format: Format,
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
    parse_labels(texts).or_else(|e| crate::exit::usage(format!("--where: {e}")))
}

pub fn run(args: ResultsArgs) -> anyhow::Result<i32> {
    let store = Store::open(args.db.as_deref())?;
    match args.command {
        ResultsCommand::List { filter, json } => {
            let runs = store.list(&filter_of(&filter)?)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&runs)?);
            } else {
                print!("{}", export::render_list(&runs));
            }
        }
        ResultsCommand::Show { id, json } => {
            let run = match store.get(id) {
                Err(e @ stackbench_results::store::StoreError::NoSuchRun(_)) => {
                    return crate::exit::usage(e.to_string())
                }
                other => other?,
            };
            if json {
                println!("{}", serde_json::to_string_pretty(&run)?);
            } else {
                print!("{}", export::render_show(&run));
            }
        }
        ResultsCommand::Export {
            filter,
            format,
            output,
        } => {
            let runs = store.select(&filter_of(&filter)?)?;
            let text = match format {
                Format::Json => export::export_json(&runs) + "\n",
                Format::Csv => export::export_csv(&runs),
                Format::Markdown => export::export_markdown(&runs),
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
