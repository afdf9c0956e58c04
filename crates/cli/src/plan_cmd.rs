//! `stackbench plan`: capacity planning from measured costs. The flags of
//! each subcommand (also a plan file's section keys), their merging, checks
//! and the plans are `stackbench_plan::input`'s; this module holds the
//! command line, the examples of the help, and the printing
//! ([`crate::plan_render`]).

use std::path::PathBuf;

use clap::{Args, Subcommand};

use stackbench_plan::input::{self, cpu, mva, normalize, offload, rescale, storage, usl};
use stackbench_plan::input::{Ctx, Env, Output, Paced, Section};

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
    #[command(after_help = CPU_EXAMPLES)]
    Cpu(cpu::CpuArgs),
    /// Move CPU per transaction between machines by capacity ratings; ITR of a run.
    #[command(after_help = RESCALE_EXAMPLES)]
    Rescale(rescale::RescaleArgs),
    /// Storage per user and for a population: fixed + per connection × users.
    #[command(after_help = STORAGE_EXAMPLES)]
    Storage(storage::StorageArgs),
    /// Offload-engine (zIIP) projection from RMF workload activity (zIIP-assisted IPsec).
    #[command(after_help = OFFLOAD_EXAMPLES)]
    Offload(offload::OffloadArgs),
    /// Change in total CPU from a change in networking CPU (zIIP-assisted IPsec).
    #[command(after_help = NORMALIZE_EXAMPLES)]
    Normalize(normalize::NormalizeArgs),
    /// Closed user populations with think time: exact MVA, M/M/m repairman, bounds.
    #[command(after_help = MVA_EXAMPLES)]
    Mva(mva::MvaArgs),
    /// Universal Scalability Law fit of (N, X) points: peak, intervals, verdict.
    #[command(after_help = USL_EXAMPLES)]
    Usl(usl::UslArgs),
    /// Every section of a plan file (-f), in the order cpu, rescale, storage,
    /// offload, normalize, mva, usl.
    #[command(
        after_help = "Example:\n  stackbench plan all -f examples/plan-tn3270-capacity.toml"
    )]
    All,
}

/// Runs one `plan` subcommand (or all sections of a plan file).
pub fn run(args: PlanArgs) -> anyhow::Result<i32> {
    let read = |path: &std::path::Path| std::fs::read_to_string(path);
    let paced = |runs: &[(String, String)]| {
        stackbench_results::sweep::usl::paced_runs(runs).map(|p| Paced {
            saturated: p.saturated(),
            text: p.to_string(),
        })
    };
    let env = Env {
        read: &read,
        paced: &paced,
    };
    let ctx = Ctx::new(args.file.as_deref(), usize::from(args.digits), env)?;
    let section = match args.what {
        What::Cpu(a) => Section::Cpu(a),
        What::Rescale(a) => Section::Rescale(a),
        What::Storage(a) => Section::Storage(a),
        What::Offload(a) => Section::Offload(a),
        What::Normalize(a) => Section::Normalize(a),
        What::Mva(a) => Section::Mva(a),
        What::Usl(a) => Section::Usl(a),
        What::All => {
            let outputs = input::all(&ctx)?;
            return print(&outputs, args.json);
        }
    };
    let output = input::compute(section, &ctx)?;
    print(&[output], args.json)
}

fn print(outputs: &[Output], json: bool) -> anyhow::Result<i32> {
    crate::plan_render::print(outputs, json)?;
    Ok(crate::exit::OK)
}

const CPU_EXAMPLES: &str = "\
Examples:
  # TN3270 capacity planning appendix: 8000 users, 2 tr/min/user, 0.000199666 CPU-s/tr, 4 CPs
  stackbench plan cpu --users 8000 --per-user 2/min --cpu-per-tran 199.666us --processors 4
  # from a total rate, with the LPAR's rating
  stackbench plan cpu --rate 8275/s --cpu-per-tran 0.176ms --processors 4 --rating 1592
  # the same from a plan file, or from a stored run's server CPU figures
  stackbench plan cpu -f examples/plan-tn3270-capacity.toml
  stackbench plan cpu --from result.json --side server --processors 8";

const MVA_EXAMPLES: &str = "\
Examples:
  # TN3270 capacity planning's users: 30 s think, 0.176 ms CPU per transaction, 4 CPs
  stackbench plan mva --demand cpu=0.176ms --think 30s --processors 4 --users 8K,16K,32K,64K,128K,256K
  # exact MVA over two stations
  stackbench plan mva --demand cpu=0.1s --demand net=0.05s --think 1s --users 1,10,100
  # the CPU demand of a stored run's server side
  stackbench plan mva --from result.json --think 30s --users 256K";

const NORMALIZE_EXAMPLES: &str = "\
Examples (zIIP-assisted IPsec):
  stackbench plan normalize --networking-change 61%                     # interactive: +4.9%
  stackbench plan normalize --networking-change 13% --profile bulk      # +3.9%
  stackbench plan normalize --networking-change 45% --networking-share 30%  # +13.5%";

const OFFLOAD_EXAMPLES: &str = "\
Examples:
  # zIIP-assisted IPsec, bulk data and no zIIPs: RMF APPL% CP 105.17, IIPCP 105.17, 2 CPs 56.88% busy
  stackbench plan offload --appl-cp 105.17 --iipcp 105.17 --general-engines 2 --cp-busy 56.88%
  # zIIP-assisted IPsec, the same workload with one zIIP configured
  stackbench plan offload --appl-cp 7.78 --iipcp 7.78 --iip 95.13 --general-engines 2 --offload-engines 1";

const RESCALE_EXAMPLES: &str = "\
Examples:
  # by machine names from a ratings table (user-supplied numbers)
  stackbench plan rescale --cpu-per-tran 0.176ms --ratings examples/ratings.toml \\
      --source tn3270-capacity-z9-4way --target example-8way --rate 8275/s
  # by explicit ratings, with the ITR of the measured run
  stackbench plan rescale --cpu-per-tran 0.176ms --source-rating 1592 --source-engines 4 \\
      --target-rating 3600 --target-engines 8 --measured-rate 8275/s --measured-util 36.3%";

const STORAGE_EXAMPLES: &str = "\
Examples:
  # TN3270 capacity planning, one TN3270 server, 256K users: ECSA 501 MB and private 1.07 GB
  # are 2004 B and 4382.72 B per user; project them to 128K users
  stackbench plan storage --users 128K --server-kernel-per-conn 2004B \\
      --server-user-per-conn 4382.72B
  # from a stored run's memory figures, projected to 256K users
  stackbench plan storage --from result.json --side server --users 256K";

const USL_EXAMPLES: &str = "\
Examples:
  # codahale/usl's example data (N,X per line)
  stackbench plan usl --csv examples/usl-example.csv
  stackbench plan usl --point 1:65 --point 18:996 --point 36:1652 --point 72:1853 \\
      --point 108:1829 --point 144:1775 --point 216:1702 --at-throughput 1800
  # stored runs at several concurrencies: N = the class's clients, X = its rate
  stackbench plan usl --from rr1.json --from rr2.json --from rr4.json --from rr8.json";
