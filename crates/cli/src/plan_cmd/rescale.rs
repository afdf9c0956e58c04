//! `stackbench plan rescale`: flags → [`stackbench_plan::rescale`].

use std::path::Path;

use clap::Args;
use serde::{Deserialize, Serialize};
use stackbench_plan::rescale::{self, Machine, Measured, RatingsTable, RescaleInput};
use stackbench_plan::runfile::{CpuFigures, RunClass};
use stackbench_plan::units;
use stackbench_plan::PlanError;

use super::common::{load_run, opt, read_text, usage_err, Ctx, OrUsage, Output};

pub const EXAMPLES: &str = "\
Examples:
  # by machine names from a ratings table (user-supplied numbers)
  stackbench plan rescale --cpu-per-tran 0.176ms --ratings examples/ratings.toml \\
      --source seed003-z9-4way --target example-8way --rate 8275/s
  # by explicit ratings, with the ITR of the measured run
  stackbench plan rescale --cpu-per-tran 0.176ms --source-rating 1592 --source-engines 4 \\
      --target-rating 3600 --target-engines 8 --measured-rate 8275/s --measured-util 36.3%";

/// Flags of `plan rescale` (also the keys of a plan file's [rescale] section).
#[derive(Debug, Default, Args, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct RescaleArgs {
    /// CPU time per transaction measured on the source machine, e.g. 0.176ms.
    #[arg(long, value_name = "DURATION")]
    cpu_per_tran: Option<String>,
    /// Ratings table (TOML, see examples/ratings.toml) naming the machines.
    #[arg(long, value_name = "RATINGS.toml")]
    ratings: Option<String>,
    /// Source machine's name in the ratings table.
    #[arg(long, value_name = "NAME")]
    source: Option<String>,
    /// Target machine's name in the ratings table.
    #[arg(long, value_name = "NAME")]
    target: Option<String>,
    /// Rating of the whole source machine (instead of --ratings/--source).
    #[arg(long)]
    source_rating: Option<String>,
    /// Engines the source rating is for [default: 1].
    #[arg(long, value_name = "N")]
    source_engines: Option<String>,
    /// Rating of the whole target machine (instead of --ratings/--target).
    #[arg(long)]
    target_rating: Option<String>,
    /// Engines the target rating is for [default: 1].
    #[arg(long, value_name = "N")]
    target_engines: Option<String>,
    /// Unit of explicit ratings [default: MIPS].
    #[arg(long, value_name = "UNIT")]
    rating_unit: Option<String>,
    /// Rate of a measured run on the source, for its ITR, e.g. 8275/s.
    #[arg(long, value_name = "RATE")]
    measured_rate: Option<String>,
    /// CPU utilisation of the source machine in that run, e.g. 36.3%.
    #[arg(long, value_name = "PCT")]
    measured_util: Option<String>,
    /// A planned rate on the target: prints its utilisation.
    #[arg(long, value_name = "RATE")]
    rate: Option<String>,
    /// A stored run on the source: CPU per transaction, rate and utilisation.
    #[arg(long, value_name = "RESULT.json")]
    from: Option<String>,
    /// Side of the stored run: server or client [default: server].
    #[arg(long)]
    side: Option<String>,
    /// Class of the stored run: index (0 = first) or notation.
    #[arg(long)]
    class: Option<String>,
}

/// One machine from `--ratings` + name, or from explicit flags.
fn machine(
    table: Option<&RatingsTable>,
    name_flag: (&str, &Option<String>),
    rating_flag: (&str, &Option<String>),
    engines_flag: (&str, &Option<String>),
) -> anyhow::Result<(String, Machine)> {
    if let Some(rating) = opt(rating_flag.1, rating_flag.0, units::parse_positive)? {
        let engines = opt(engines_flag.1, engines_flag.0, units::parse_positive)?.unwrap_or(1.0);
        let name = name_flag
            .1
            .clone()
            .unwrap_or_else(|| name_flag.0.to_string());
        return Ok((
            name,
            Machine {
                rating,
                engines,
                description: None,
            },
        ));
    }
    let (Some(table), Some(name)) = (table, name_flag.1) else {
        return Err(usage_err(PlanError::missing(
            rating_flag.0,
            format!(
                "give --{} (with --{}), or --ratings FILE with --{}",
                rating_flag.0, engines_flag.0, name_flag.0
            ),
        )));
    };
    Ok((
        name.clone(),
        table.machine(name_flag.0, name).or_usage()?.clone(),
    ))
}

/// The measured run for the ITR: from the flags, else from the stored run.
fn measured(
    a: &RescaleArgs,
    run: Option<(&RunClass, CpuFigures)>,
) -> anyhow::Result<Option<Measured>> {
    let rate = opt(&a.measured_rate, "measured-rate", units::parse_rate)?.map(|r| r.per_s());
    let util = opt(&a.measured_util, "measured-util", units::parse_util_pct)?;
    match (rate, util) {
        (Some(rate_tps), Some(util_pct)) => Ok(Some(Measured { rate_tps, util_pct })),
        (Some(_), None) => Err(usage_err(PlanError::missing(
            "measured-util",
            "give the source's CPU utilisation in the measured run, e.g. 36.3%",
        ))),
        (None, Some(_)) => Err(usage_err(PlanError::missing(
            "measured-rate",
            "give the measured run's rate, e.g. 8275/s",
        ))),
        (None, None) => Ok(run.and_then(|(r, c)| {
            c.util_pct.map(|util_pct| Measured {
                rate_tps: r.rate_tps,
                util_pct,
            })
        })),
    }
}

/// Resolves the flags and applies the ratings.
pub fn compute(args: RescaleArgs, ctx: &Ctx) -> anyhow::Result<Output> {
    let a = ctx.merge(args, "rescale")?;
    let table = match &a.ratings {
        Some(path) => {
            Some(RatingsTable::parse(path, &read_text(Path::new(path), "ratings")?).or_usage()?)
        }
        None => None,
    };
    let (source_name, source) = machine(
        table.as_ref(),
        ("source", &a.source),
        ("source-rating", &a.source_rating),
        ("source-engines", &a.source_engines),
    )?;
    let (target_name, target) = machine(
        table.as_ref(),
        ("target", &a.target),
        ("target-rating", &a.target_rating),
        ("target-engines", &a.target_engines),
    )?;
    let run = a
        .from
        .as_deref()
        .map(|p| load_run(p, a.side.as_deref(), a.class.as_deref()))
        .transpose()?;
    let flag_cpu = opt(
        &a.cpu_per_tran,
        "cpu-per-tran",
        units::parse_positive_duration_s,
    )?;
    // Missing CPU figures are an error only when the flags do not supply them.
    let run_cpu = match &run {
        Some(r) if flag_cpu.is_none() => Some(r.cpu().or_usage()?),
        Some(r) => r.cpu().ok(),
        None => None,
    };
    let unit = match &table {
        Some(t) if a.source_rating.is_none() || a.target_rating.is_none() => t.unit.clone(),
        _ => a.rating_unit.clone().unwrap_or_else(|| "MIPS".into()),
    };
    let input = RescaleInput {
        cpu_s_per_tran: flag_cpu.or(run_cpu.map(|c| c.cpu_us_per_tran * 1e-6)),
        source_name,
        source,
        target_name,
        target,
        unit,
        measured: measured(&a, run.as_ref().zip(run_cpu))?,
        planned_rate_tps: opt(&a.rate, "rate", units::parse_rate)?.map(|r| r.per_s()),
    };
    let plan = rescale::plan(&input).or_usage()?;
    let mut report = plan.report(ctx.digits);
    report
        .warnings
        .extend(run.as_ref().and_then(|r| r.cpu_warning()));
    Output::new("rescale", &plan, report)
}
