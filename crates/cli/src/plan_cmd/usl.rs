//! `stackbench plan usl`: flags → [`stackbench_plan::usl`].
//!
//! Stored runs (`--from`) of a think-time or open-loop population are fitted
//! only when they saturate something, by the same test as a sweep's
//! (`stackbench_results::sweep_usl::paced`): their rate is N/(R+Z) or the
//! offered rate by construction, and a fit would call that linear.

use std::path::Path;

use clap::Args;
use serde::{Deserialize, Serialize};
use stackbench_plan::usl::{self, UslInput};
use stackbench_plan::{units, PlanError};
use stackbench_results::sweep::{Point, Series, Stat};
use stackbench_results::sweep_usl::paced;

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
    let mut populations = Vec::new();
    for path in &a.from {
        let run = load_run(path, None, a.class.as_deref())?;
        points.push((run.clients, run.rate_tps));
        populations.extend(population_point(path, &run.notation));
    }
    let saturation = saturation(populations)?;
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
    let mut plan = usl::plan(&input).or_usage()?;
    plan.warnings.extend(saturation);
    Output::new("usl", &plan, plan.report(ctx.digits))
}

/// The class `notation` of the stored run at `path` as a sweep point, when
/// it is a paced population (think time or an offered rate); `None` for the
/// closed loop, or a file that is not a run record (then `load_run` decided).
fn population_point(path: &str, notation: &str) -> Option<Point> {
    let text = std::fs::read_to_string(path).ok()?;
    let record = stackbench_record::record_from_json(serde_json::from_str(&text).ok()?).ok()?;
    let c = record.classes.iter().find(|c| c.notation == notation)?;
    let p = c.population.as_ref()?;
    let l = c.latency_us?;
    let one = |v: f64| Stat::of(vec![v]);
    Some(Point {
        x: f64::from(c.clients),
        x_text: c.clients.to_string(),
        runs: 1,
        rate_tps: one(c.rate_tps)?,
        latency_mean_us: one(l.mean)?,
        latency_p50_us: one(l.p50)?,
        latency_p99_us: one(l.p99)?,
        cpu_client_us_per_tran: None,
        cpu_server_us_per_tran: None,
        pacing: p.pacing,
        think_s: p.wait_mean_s.or(p.think_mean_s),
        offered_rate_tps: p.offered_rate_tps,
    })
}

/// Refuses paced runs that saturate nothing, saying what they show; for
/// those that do, the sentence that goes with the fit as a warning.
fn saturation(mut populations: Vec<Point>) -> anyhow::Result<Option<String>> {
    populations.sort_by(|a, b| a.x.total_cmp(&b.x));
    let series = Series {
        variant: String::new(),
        second: None,
        label: String::new(),
        points: populations,
    };
    match paced(&series) {
        None => Ok(None),
        Some(p) if p.saturated() => Ok(Some(p.to_string())),
        Some(p) => Err(usage_err(PlanError::Invalid(format!(
            "--from: {p}; give closed-loop runs, or a population swept until it saturates"
        )))),
    }
}
