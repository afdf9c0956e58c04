//! `stackbench plan cpu`: flags → [`crate::cpu`].

use serde::{Deserialize, Serialize};

use super::{opt, Ctx, Output};
use crate::cpu::{self, CpuInput, Load, Rating};
use crate::units;
use crate::PlanError;

/// Flags of `plan cpu` (also the keys of a plan file's [cpu] section).
#[derive(Debug, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(rename_all = "kebab-case")]
pub struct CpuArgs {
    /// Users in the population, e.g. 8000 or 256K (K = 1024).
    #[cfg_attr(feature = "clap", arg(long))]
    pub users: Option<String>,
    /// Transactions per user per interval, e.g. 2/min (with --users).
    #[cfg_attr(feature = "clap", arg(long, value_name = "RATE"))]
    pub per_user: Option<String>,
    /// Total transaction rate instead of users × per-user, e.g. 8275/s.
    #[cfg_attr(feature = "clap", arg(long, value_name = "RATE"))]
    pub rate: Option<String>,
    /// CPU time per transaction, with a unit: 0.176ms, 199.666us.
    #[cfg_attr(feature = "clap", arg(long, value_name = "DURATION"))]
    pub cpu_per_tran: Option<String>,
    /// Processors of the machine or LPAR [default with --from: the CPUs the side's figures cover].
    #[cfg_attr(feature = "clap", arg(long, value_name = "N"))]
    pub processors: Option<String>,
    /// Utilisation the processors may reach when sizing [default: 100%].
    #[cfg_attr(feature = "clap", arg(long, value_name = "PCT"))]
    pub target_util: Option<String>,
    /// Capacity rating of the whole machine/LPAR (MIPS or any unit): prints the rating required.
    #[cfg_attr(feature = "clap", arg(long))]
    pub rating: Option<String>,
    /// Name of the rating's unit [default: MIPS].
    #[cfg_attr(feature = "clap", arg(long, value_name = "UNIT"))]
    pub rating_unit: Option<String>,
    /// A stored run (`stackbench run --json`): its CPU per transaction and rate.
    #[cfg_attr(feature = "clap", arg(long, value_name = "RESULT.json"))]
    pub from: Option<String>,
    /// Side of the stored run whose CPU counts: server or client [default: server].
    #[cfg_attr(feature = "clap", arg(long))]
    pub side: Option<String>,
    /// Class of the stored run: index (0 = first) or notation.
    #[cfg_attr(feature = "clap", arg(long))]
    pub class: Option<String>,
}

fn load(a: &CpuArgs, run_rate_tps: Option<f64>) -> Result<Load, PlanError> {
    let users = opt(&a.users, "users", units::parse_count)?;
    let per_user = opt(&a.per_user, "per-user", units::parse_rate)?;
    let rate = opt(&a.rate, "rate", units::parse_rate)?;
    match (users, per_user, rate) {
        (Some(_), _, Some(_)) | (_, Some(_), Some(_)) => Err(PlanError::Invalid(
            "--rate and --users/--per-user both give the transaction rate: use one of them".into(),
        )),
        (Some(u), Some(p), None) => Ok(Load::users(u as f64, p)),
        (Some(_), None, None) => Err(PlanError::missing(
            "per-user",
            "give each user's rate with --users, e.g. --per-user 2/min",
        )),
        (None, Some(_), None) => Err(PlanError::missing(
            "users",
            "give the population with --per-user, e.g. --users 8000",
        )),
        (None, None, Some(r)) => Ok(Load::Rate {
            rate_tps: r.per_s(),
        }),
        (None, None, None) => run_rate_tps
            .map(|rate_tps| Load::Rate { rate_tps })
            .ok_or_else(|| {
                PlanError::missing(
                    "users",
                    "give --users with --per-user (e.g. 8000 and 2/min), or --rate 8275/s",
                )
            }),
    }
}

/// Resolves the flags and applies the formula.
pub fn compute(args: CpuArgs, ctx: &Ctx<'_>) -> Result<Output, PlanError> {
    let a = ctx.merge(args, "cpu")?;
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
    // The run's CPU figures are read only for what the flags leave open.
    let run_cpu = match (&run, flag_cpu) {
        (Some(r), None) => Some(r.cpu()?),
        _ => None,
    };
    let cpu_s_per_tran = match (flag_cpu, run_cpu) {
        (Some(d), _) => d,
        (None, Some(c)) => c.cpu_us_per_tran * 1e-6,
        (None, None) => {
            return Err(PlanError::missing(
                "cpu-per-tran",
                "give the CPU time per transaction, e.g. 0.176ms (or --from result.json)",
            ));
        }
    };
    let processors = match opt(&a.processors, "processors", units::parse_positive)? {
        Some(m) => m,
        None => run_cpu
            .and_then(|c| c.cpus)
            .map(|n| n as f64)
            .ok_or_else(|| {
                PlanError::missing(
                    "processors",
                    "give the processors of the machine or LPAR, e.g. 4",
                )
            })?,
    };
    let input = CpuInput {
        load: load(&a, run.as_ref().map(|r| r.rate_tps))?,
        cpu_s_per_tran,
        processors,
        target_util_pct: opt(&a.target_util, "target-util", units::parse_util_pct)?
            .unwrap_or(100.0),
        rating: opt(&a.rating, "rating", units::parse_positive)?.map(|value| Rating {
            value,
            unit: a.rating_unit.clone().unwrap_or_else(|| "MIPS".into()),
        }),
    };
    let plan = cpu::plan(&input)?;
    let mut report = plan.report(ctx.digits);
    report
        .warnings
        .extend(run.as_ref().and_then(|r| r.cpu_warning()));
    report
        .warnings
        .extend(run.iter().flat_map(|r| r.recorded_warnings()));
    Output::new("cpu", &plan, report)
}
