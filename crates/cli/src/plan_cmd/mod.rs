//! `stackbench plan`: capacity planning from measured costs. Thin:
//! each subcommand turns its flags (merged with a plan file's section and, where
//! it makes sense, a stored run) into the planner's typed input, calls the pure
//! `stackbench-plan` crate, and prints its report as tables or `--json`.

mod common;
mod cpu;
mod mva;
mod normalize;
mod offload;
mod render;
mod rescale;
mod storage;
mod usl;

use std::path::PathBuf;

use clap::{Args, Subcommand};

use common::{Ctx, Output};

/// Flags shared by every `plan` subcommand.
#[derive(Debug, Args)]
pub struct PlanArgs {
    #[command(subcommand)]
    what: What,
    /// Print JSON (versioned, units in field names) instead of tables.
    #[arg(long, global = true)]
    json: bool,
    /// Significant digits of the figures in the tables (JSON is unrounded).
    #[arg(long, global = true, default_value_t = 3, value_parser = clap::value_parser!(u8).range(1..=12))]
    digits: u8,
    /// A plan file (TOML): a [cpu], [rescale], … section per subcommand whose
    /// keys are the flag names; flags given on the command line win.
    #[arg(long, short = 'f', global = true, value_name = "PLAN.toml")]
    file: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
enum What {
    /// CPU-s per elapsed-s, utilisation, processors and rating required (TN3270 capacity planning).
    #[command(after_help = cpu::EXAMPLES)]
    Cpu(cpu::CpuArgs),
    /// Move CPU per transaction between machines by capacity ratings; ITR of a run.
    #[command(after_help = rescale::EXAMPLES)]
    Rescale(rescale::RescaleArgs),
    /// Storage per user and for a population: fixed + per connection × users.
    #[command(after_help = storage::EXAMPLES)]
    Storage(storage::StorageArgs),
    /// Offload-engine (zIIP) projection from RMF workload activity (zIIP-assisted IPsec).
    #[command(after_help = offload::EXAMPLES)]
    Offload(offload::OffloadArgs),
    /// Change in total CPU from a change in networking CPU (zIIP-assisted IPsec).
    #[command(after_help = normalize::EXAMPLES)]
    Normalize(normalize::NormalizeArgs),
    /// Closed user populations with think time: exact MVA, M/M/m repairman, bounds.
    #[command(after_help = mva::EXAMPLES)]
    Mva(mva::MvaArgs),
    /// Universal Scalability Law fit of (N, X) points: peak, intervals, verdict.
    #[command(after_help = usl::EXAMPLES)]
    Usl(usl::UslArgs),
    /// Every section of a plan file (-f), in the order cpu, rescale, storage,
    /// offload, normalize, mva, usl.
    #[command(after_help = "Example:\n  stackbench plan all -f examples/plan-seed003.toml")]
    All,
}

/// Runs one `plan` subcommand (or all sections of a plan file).
pub fn run(args: PlanArgs) -> anyhow::Result<i32> {
    let ctx = Ctx::new(args.file.as_deref(), usize::from(args.digits))?;
    let outputs: Vec<Output> = match args.what {
        What::Cpu(a) => vec![cpu::compute(a, &ctx)?],
        What::Rescale(a) => vec![rescale::compute(a, &ctx)?],
        What::Storage(a) => vec![storage::compute(a, &ctx)?],
        What::Offload(a) => vec![offload::compute(a, &ctx)?],
        What::Normalize(a) => vec![normalize::compute(a, &ctx)?],
        What::Mva(a) => vec![mva::compute(a, &ctx)?],
        What::Usl(a) => vec![usl::compute(a, &ctx)?],
        What::All => all(&ctx)?,
    };
    render::print(&outputs, args.json)?;
    Ok(crate::exit::OK)
}

/// Every section of the plan file, each computed from its keys alone.
fn all(ctx: &Ctx) -> anyhow::Result<Vec<Output>> {
    let Some(file) = ctx.file() else {
        return crate::exit::usage("plan all needs a plan file: give -f PLAN.toml");
    };
    file.section_names()
        .into_iter()
        .map(|name| match name {
            "cpu" => cpu::compute(Default::default(), ctx),
            "rescale" => rescale::compute(Default::default(), ctx),
            "storage" => storage::compute(Default::default(), ctx),
            "offload" => offload::compute(Default::default(), ctx),
            "normalize" => normalize::compute(Default::default(), ctx),
            "mva" => mva::compute(Default::default(), ctx),
            _ => usl::compute(Default::default(), ctx),
        })
        .collect()
}
