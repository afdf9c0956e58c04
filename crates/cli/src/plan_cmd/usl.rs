//! `stackbench plan usl`: flags → [`stackbench_plan::usl`].

use std::path::Path;

use clap::Args;
use serde::{Deserialize, Serialize};
use stackbench_plan::usl::{self, UslInput};
use stackbench_plan::{units, PlanError};

use super::common::{load_run, opt, read_text, usage_err, Ctx, OrUsage, Output};

pub const EXAMPLES: &str = "\
Examples:
  # codahale/usl's example data (N,X per line)
  stackbench plan usl --csv examples/usl-example.csv
  stackbench plan usl --point 1:65 --point 18:996 --point 36:1652 --point 72:1853 \\
      --point 108:1829 --point 144:1775 --point 216:1702 --at-throughput 1800
  # stored runs at several concurrencies: N = the class's clients, X = its rate
  stackbench plan usl --from rr1.json --from rr2.json --from rr4.json --from rr8.json";

/// Flags of `plan usl` (also the keys of a plan file's [usl] section).
#[derive(Debug, Default, Args, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct UslArgs {
    /// A measured point N:X (repeat), e.g. 18:996.
    #[arg(long, value_name = "N:X")]
    point: Vec<String>,
    /// A CSV file of N,X rows (optional header line, # comments).
    #[arg(long, value_name = "POINTS.csv")]
    csv: Option<String>,
    /// Stored runs (repeat): N = the class's clients, X = its rate_tps.
    #[arg(long, value_name = "RESULT.json")]
    from: Vec<String>,
    /// Class of the stored runs: index (0 = first) or notation.
    #[arg(long)]
    class: Option<String>,
    /// Confidence level of the intervals [default: 95%].
    #[arg(long, value_name = "PCT")]
    confidence: Option<String>,
    /// Populations to predict X and R = N/X at, comma-separated.
    #[arg(long, value_name = "N,...")]
    at_users: Option<String>,
    /// Throughputs to find N for (the exact rising-branch root), comma-separated.
    #[arg(long, value_name = "X,...")]
    at_throughput: Option<String>,
}

fn numbers(flag: &str, text: &str) -> Result<Vec<f64>, PlanError> {
    text.split(',')
        .map(|t| units::parse_positive(flag, t))
        .collect()
}

/// Gathers the points and fits.
pub fn compute(args: UslArgs, ctx: &Ctx) -> anyhow::Result<Output> {
    let a = ctx.merge(args, "usl")?;
    let mut points: Vec<(f64, f64)> = a
        .point
        .iter()
        .map(|p| usl::parse_point("point", p))
        .collect::<Result<_, _>>()
        .or_usage()?;
    if let Some(path) = &a.csv {
        points.extend(usl::parse_csv(path, &read_text(Path::new(path), "csv")?).or_usage()?);
    }
    for path in &a.from {
        let run = load_run(path, None, a.class.as_deref())?;
        points.push((run.clients, run.rate_tps));
    }
    if points.is_empty() {
        return Err(usage_err(PlanError::missing(
            "point",
            "give measured points: --point N:X (repeat), --csv FILE or --from RESULT.json (repeat)",
        )));
    }
    let input = UslInput {
        points,
        confidence: opt(&a.confidence, "confidence", units::parse_util_pct)?
            .map_or(0.95, |c| c / 100.0),
        at_users: opt(&a.at_users, "at-users", numbers)?.unwrap_or_default(),
        at_throughput: opt(&a.at_throughput, "at-throughput", numbers)?.unwrap_or_default(),
    };
    let plan = usl::plan(&input).or_usage()?;
    Output::new("usl", &plan, plan.report(ctx.digits))
}
