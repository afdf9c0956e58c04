//! `stackbench`: the one binary. Thin: parses the command line with clap, hands
//! resolved settings to the engine, results and planner crates, and maps errors
//! to exit statuses (0 success, 1 a failed comparison, 2 usage or input error,
//! 3 an incomplete run).

mod exit;
mod plan_cmd;
mod progress;
mod quality;
mod run_cmd;
mod serve_cmd;
mod spawn;

use clap::{Parser, Subcommand};

/// Model, measure and plan network workloads on Linux.
#[derive(Debug, Parser)]
#[command(name = "stackbench", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Drive workloads against a responder and report rate, latency and errors per class.
    Run(run_cmd::RunArgs),
    /// Run the responder for drivers on this or other hosts.
    Serve(serve_cmd::ServeArgs),
    /// Capacity planning from measured costs: CPU, ratings, storage, offload,
    /// queueing models and scalability fits.
    Plan(plan_cmd::PlanArgs),
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run_cmd::run(args),
        Command::Serve(args) => serve_cmd::run(args),
        Command::Plan(args) => plan_cmd::run(args),
    };
    std::process::exit(exit::code_for(result));
}
