//! `stackbench plan mva`: flags → [`stackbench_plan::mva`].

use clap::Args;
use serde::{Deserialize, Serialize};
use stackbench_plan::mva::{self, MvaInput, Station};
use stackbench_plan::{units, PlanError};

use super::common::{load_run, opt, usage_err, Ctx, OrUsage, Output};

pub const EXAMPLES: &str = "\
Examples:
  # TN3270 capacity planning's users: 30 s think, 0.176 ms CPU per transaction, 4 CPs
  stackbench plan mva --demand cpu=0.176ms --think 30s --processors 4 --users 8K,16K,32K,64K,128K,256K
  # exact MVA over two stations
  stackbench plan mva --demand cpu=0.1s --demand net=0.05s --think 1s --users 1,10,100
  # the CPU demand of a stored run's server side
  stackbench plan mva --from result.json --think 30s --users 256K";

/// Flags of `plan mva` (also the keys of a plan file's [mva] section).
#[derive(Debug, Default, Args, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct MvaArgs {
    /// A station's demand per transaction, NAME=DURATION (repeat for more stations).
    #[arg(long, value_name = "NAME=DURATION")]
    demand: Vec<String>,
    /// Think time between a response and the next request [default: 0s].
    #[arg(long, value_name = "DURATION")]
    think: Option<String>,
    /// Populations, comma-separated, e.g. 8K,16K,256K [default with --from: the run's clients].
    #[arg(long, value_name = "N,...")]
    users: Option<String>,
    /// Servers of the one station: above 1 solves the M/M/m repairman model [default: 1].
    #[arg(long, value_name = "M")]
    processors: Option<String>,
    /// A stored run: its CPU per transaction becomes the `cpu` station.
    #[arg(long, value_name = "RESULT.json")]
    from: Option<String>,
    /// Side of the stored run: server or client [default: server].
    #[arg(long)]
    side: Option<String>,
    /// Class of the stored run: index (0 = first) or notation.
    #[arg(long)]
    class: Option<String>,
}

fn station(text: &str, index: usize) -> Result<Station, PlanError> {
    let (name, value) = match text.split_once('=') {
        Some((n, v)) if !n.trim().is_empty() => (n.trim().to_string(), v),
        Some(_) => {
            return Err(PlanError::bad(
                "demand",
                text,
                "the station has no name",
                "write NAME=DURATION, e.g. cpu=0.176ms",
            ))
        }
        None if index == 0 => ("cpu".to_string(), text),
        None => (format!("station{}", index + 1), text),
    };
    Ok(Station {
        name,
        demand_s: units::parse_duration_s("demand", value)?,
    })
}

/// Resolves the flags and solves.
pub fn compute(args: MvaArgs, ctx: &Ctx) -> anyhow::Result<Output> {
    let a = ctx.merge(args, "mva")?;
    let mut stations: Vec<Station> = a
        .demand
        .iter()
        .enumerate()
        .map(|(i, t)| station(t, i))
        .collect::<Result<_, _>>()
        .or_usage()?;
    let mut users = opt(&a.users, "users", units::parse_count_list)?;
    let mut warnings = Vec::new();
    if let Some(path) = &a.from {
        let run = load_run(path, a.side.as_deref(), a.class.as_deref())?;
        if !stations.iter().any(|s| s.name == "cpu") {
            stations.insert(
                0,
                Station {
                    name: "cpu".into(),
                    demand_s: run.cpu().or_usage()?.cpu_us_per_tran * 1e-6,
                },
            );
            warnings.extend(run.cpu_warning());
        }
        users = users.or(Some(vec![run.clients.max(1.0) as u64]));
    }
    let processors = match opt(&a.processors, "processors", units::parse_count)? {
        Some(m) => u32::try_from(m).map_err(|_| {
            usage_err(PlanError::bad(
                "processors",
                &m.to_string(),
                "too large",
                "give a processor count",
            ))
        })?,
        None => 1,
    };
    let input = MvaInput {
        stations,
        think_s: opt(&a.think, "think", units::parse_duration_s)?.unwrap_or(0.0),
        users: users.unwrap_or_default(),
        processors,
    };
    let plan = mva::plan(&input).or_usage()?;
    let mut report = plan.report(ctx.digits);
    report.warnings.extend(warnings);
    Output::new("mva", &plan, report)
}
