//! `stackbench plan usl`: flags → [`crate::usl`].
//!
//! Stored runs (`--from`) of a think-time or open-loop population are fitted
//! only when they saturate something, by the same test as a sweep's (the
//! results crate's, through [`super::Env::paced`]): their rate is N/(R+Z) or
//! the offered rate by construction, and a fit would call that linear.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{opt, Ctx, Output};
use crate::usl::{self, UslInput};
use crate::{units, PlanError};

/// Flags of `plan usl` (also the keys of a plan file's [usl] section).
#[derive(Debug, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(rename_all = "kebab-case")]
pub struct UslArgs {
    /// A measured point N:X (repeat), e.g. 18:996.
    #[cfg_attr(feature = "clap", arg(long, value_name = "N:X"))]
    pub point: Vec<String>,
    /// A CSV file of N,X rows (optional header line, # comments).
    #[cfg_attr(feature = "clap", arg(long, value_name = "POINTS.csv"))]
    pub csv: Option<String>,
    /// Stored runs (repeat): N = the class's clients, X = its rate_tps.
    #[cfg_attr(feature = "clap", arg(long, value_name = "RESULT.json"))]
    pub from: Vec<String>,
    /// Class of the stored runs: index (0 = first) or notation.
    #[cfg_attr(feature = "clap", arg(long))]
    pub class: Option<String>,
    /// Confidence level of the intervals [default: 95%].
    #[cfg_attr(feature = "clap", arg(long, value_name = "PCT"))]
    pub confidence: Option<String>,
    /// Populations to predict X and R = N/X at, comma-separated.
    #[cfg_attr(feature = "clap", arg(long, value_name = "N,..."))]
    pub at_users: Option<String>,
    /// Throughputs to find N for (the exact rising-branch root), comma-separated.
    #[cfg_attr(feature = "clap", arg(long, value_name = "X,..."))]
    pub at_throughput: Option<String>,
}

fn numbers(flag: &str, text: &str) -> Result<Vec<f64>, PlanError> {
    text.split(',')
        .map(|t| units::parse_positive(flag, t))
        .collect()
}

/// Gathers the points and fits.
pub fn compute(args: UslArgs, ctx: &Ctx<'_>) -> Result<Output, PlanError> {
    let a = ctx.merge(args, "usl")?;
    let mut points: Vec<(f64, f64)> = a
        .point
        .iter()
        .map(|p| usl::parse_point("point", p))
        .collect::<Result<_, _>>()?;
    if let Some(path) = &a.csv {
        points.extend(usl::parse_csv(
            path,
            &ctx.read_text(Path::new(path), "csv")?,
        )?);
    }
    let mut runs = Vec::new();
    let mut recorded = Vec::new();
    for path in &a.from {
        let run = ctx.load_run(path, None, a.class.as_deref())?;
        points.push((run.clients, run.rate_tps));
        recorded.extend(run.recorded_warnings());
        runs.push((path.clone(), run.notation));
    }
    let saturation = saturation(ctx, &runs)?;
    if points.is_empty() {
        return Err(PlanError::missing(
            "point",
            "give measured points: --point N:X (repeat), --csv FILE or --from RESULT.json (repeat)",
        ));
    }
    let input = UslInput {
        points,
        confidence: opt(&a.confidence, "confidence", units::parse_util_pct)?
            .map_or(0.95, |c| c / 100.0),
        at_users: opt(&a.at_users, "at-users", numbers)?.unwrap_or_default(),
        at_throughput: opt(&a.at_throughput, "at-throughput", numbers)?.unwrap_or_default(),
    };
    let mut plan = usl::plan(&input)?;
    plan.warnings.extend(saturation);
    plan.warnings.extend(recorded);
    Output::new("usl", &plan, plan.report(ctx.digits))
}

/// Refuses paced runs that saturate nothing, saying what they show; for
/// those that do, the sentence that goes with the fit as a warning.
pub(super) fn saturation(
    ctx: &Ctx<'_>,
    runs: &[(String, String)],
) -> Result<Option<String>, PlanError> {
    match (ctx.env.paced)(runs) {
        None => Ok(None),
        Some(p) if p.saturated => Ok(Some(p.text)),
        Some(p) => Err(PlanError::Invalid(format!(
            "--from: {}; give closed-loop runs, or a population swept until it saturates",
            p.text
        ))),
    }
}
