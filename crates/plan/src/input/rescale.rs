//! `stackbench plan rescale`: flags → [`crate::rescale`].

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{opt, Ctx, Output};
use crate::rescale::{self, Machine, Measured, RatingsTable, RescaleInput};
use crate::runfile::{CpuFigures, RunClass};
use crate::units;
use crate::PlanError;

/// Flags of `plan rescale` (also the keys of a plan file's [rescale] section).
#[derive(Debug, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(rename_all = "kebab-case")]
pub struct RescaleArgs {
    /// CPU time per transaction measured on the source machine, e.g. 0.176ms.
    #[cfg_attr(feature = "clap", arg(long, value_name = "DURATION"))]
    pub cpu_per_tran: Option<String>,
    /// Ratings table (TOML, see examples/ratings.toml) naming the machines.
    #[cfg_attr(feature = "clap", arg(long, value_name = "RATINGS.toml"))]
    pub ratings: Option<String>,
    /// Source machine's name in the ratings table.
    #[cfg_attr(feature = "clap", arg(long, value_name = "NAME"))]
    pub source: Option<String>,
    /// Target machine's name in the ratings table.
    #[cfg_attr(feature = "clap", arg(long, value_name = "NAME"))]
    pub target: Option<String>,
    /// Rating of the whole source machine (instead of --ratings/--source).
    #[cfg_attr(feature = "clap", arg(long))]
    pub source_rating: Option<String>,
    /// Engines the source rating is for [default: 1].
    #[cfg_attr(feature = "clap", arg(long, value_name = "N"))]
    pub source_engines: Option<String>,
    /// Rating of the whole target machine (instead of --ratings/--target).
    #[cfg_attr(feature = "clap", arg(long))]
    pub target_rating: Option<String>,
    /// Engines the target rating is for [default: 1].
    #[cfg_attr(feature = "clap", arg(long, value_name = "N"))]
    pub target_engines: Option<String>,
    /// Unit of explicit ratings [default: MIPS].
    #[cfg_attr(feature = "clap", arg(long, value_name = "UNIT"))]
    pub rating_unit: Option<String>,
    /// Rate of a measured run on the source, for its ITR, e.g. 8275/s.
    #[cfg_attr(feature = "clap", arg(long, value_name = "RATE"))]
    pub measured_rate: Option<String>,
    /// CPU utilisation of the source machine in that run, e.g. 36.3%.
    #[cfg_attr(feature = "clap", arg(long, value_name = "PCT"))]
    pub measured_util: Option<String>,
    /// A planned rate on the target: prints its utilisation.
    #[cfg_attr(feature = "clap", arg(long, value_name = "RATE"))]
    pub rate: Option<String>,
    /// A stored run on the source: CPU per transaction, rate and utilisation.
    #[cfg_attr(feature = "clap", arg(long, value_name = "RESULT.json"))]
    pub from: Option<String>,
    /// Side of the stored run: server or client [default: server].
    #[cfg_attr(feature = "clap", arg(long))]
    pub side: Option<String>,
    /// Class of the stored run: index (0 = first) or notation.
    #[cfg_attr(feature = "clap", arg(long))]
    pub class: Option<String>,
}

/// One machine from `--ratings` + name, or from explicit flags.
fn machine(
    table: Option<&RatingsTable>,
    name_flag: (&str, &Option<String>),
    rating_flag: (&str, &Option<String>),
    engines_flag: (&str, &Option<String>),
) -> Result<(String, Machine), PlanError> {
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
                aliases: Vec::new(),
            },
        ));
    }
    let (Some(table), Some(name)) = (table, name_flag.1) else {
        return Err(PlanError::missing(
            rating_flag.0,
            format!(
                "give --{} (with --{}), or --ratings FILE with --{}",
                rating_flag.0, engines_flag.0, name_flag.0
            ),
        ));
    };
    Ok((name.clone(), table.machine(name_flag.0, name)?.clone()))
}

/// The measured run for the ITR: from the flags, else from the stored run.
fn measured(
    a: &RescaleArgs,
    run: Option<(&RunClass, CpuFigures)>,
) -> Result<Option<Measured>, PlanError> {
    let rate = opt(&a.measured_rate, "measured-rate", units::parse_rate)?.map(|r| r.per_s());
    let util = opt(&a.measured_util, "measured-util", units::parse_util_pct)?;
    match (rate, util) {
        (Some(rate_tps), Some(util_pct)) => Ok(Some(Measured { rate_tps, util_pct })),
        (Some(_), None) => Err(PlanError::missing(
            "measured-util",
            "give the source's CPU utilisation in the measured run, e.g. 36.3%",
        )),
        (None, Some(_)) => Err(PlanError::missing(
            "measured-rate",
            "give the measured run's rate, e.g. 8275/s",
        )),
        (None, None) => Ok(run.and_then(|(r, c)| {
            c.util_pct.map(|util_pct| Measured {
                rate_tps: r.rate_tps,
                util_pct,
            })
        })),
    }
}

/// Resolves the flags and applies the ratings.
pub fn compute(args: RescaleArgs, ctx: &Ctx<'_>) -> Result<Output, PlanError> {
    let a = ctx.merge(args, "rescale")?;
    let table = match &a.ratings {
        Some(path) => Some(RatingsTable::parse(
            path,
            &ctx.read_text(Path::new(path), "ratings")?,
        )?),
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
        .map(|p| ctx.load_run(p, a.side.as_deref(), a.class.as_deref()))
        .transpose()?;
    let flag_cpu = opt(
        &a.cpu_per_tran,
        "cpu-per-tran",
        units::parse_positive_duration_s,
    )?;
    // Missing CPU figures are an error only when the flags do not supply them.
    let run_cpu = match &run {
        Some(r) if flag_cpu.is_none() => Some(r.cpu()?),
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
    let plan = rescale::plan(&input)?;
    let mut report = plan.report(ctx.digits);
    report
        .warnings
        .extend(run.as_ref().and_then(|r| r.cpu_warning()));
    report
        .warnings
        .extend(run.iter().flat_map(|r| r.recorded_warnings()));
    Output::new("rescale", &plan, report)
}
