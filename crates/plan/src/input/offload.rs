//! `stackbench plan offload`: flags → [`crate::offload`].

use serde::{Deserialize, Serialize};

use super::{opt, required, Ctx, Output};
use crate::offload::{self, OffloadInput};
use crate::{units, PlanError};

/// Flags of `plan offload` (also the keys of a plan file's [offload] section).
#[derive(Debug, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(rename_all = "kebab-case")]
pub struct OffloadArgs {
    /// RMF APPL% CP of the workload (% of one general engine).
    #[cfg_attr(feature = "clap", arg(long, value_name = "PCT"))]
    pub appl_cp: Option<String>,
    /// RMF APPL% IIPCP: offload-eligible time that ran on general engines.
    #[cfg_attr(feature = "clap", arg(long, value_name = "PCT"))]
    pub iipcp: Option<String>,
    /// RMF APPL% IIP: time on offload engines (% of one offload engine) [default: 0, N/A].
    #[cfg_attr(feature = "clap", arg(long, value_name = "PCT"))]
    pub iip: Option<String>,
    /// General engines (CPs) of the LPAR.
    #[cfg_attr(feature = "clap", arg(long, value_name = "N"))]
    pub general_engines: Option<String>,
    /// Measured busy of each general engine (RMF CPU activity), all work.
    #[cfg_attr(feature = "clap", arg(long, value_name = "PCT"))]
    pub cp_busy: Option<String>,
    /// Offload engine speed ÷ general engine speed (above 1 with sub-capacity CPs) [default: 1].
    #[cfg_attr(feature = "clap", arg(long, value_name = "NF"))]
    pub speed_factor: Option<String>,
    /// Offload engines to project for [default: the number needed].
    #[cfg_attr(feature = "clap", arg(long, value_name = "N"))]
    pub offload_engines: Option<String>,
    /// Utilisation offload engines may reach when sizing [default: 100%].
    #[cfg_attr(feature = "clap", arg(long, value_name = "PCT"))]
    pub target_util: Option<String>,
}

fn engines(flag: &str, text: &str) -> Result<u32, PlanError> {
    units::parse_count(flag, text).and_then(|n| {
        u32::try_from(n)
            .map_err(|_| PlanError::bad(flag, text, "too large", "give an engine count"))
    })
}

fn engines_or_zero(flag: &str, text: &str) -> Result<u32, PlanError> {
    if text.trim() == "0" {
        Ok(0)
    } else {
        engines(flag, text)
    }
}

/// Resolves the flags and projects.
pub fn compute(args: OffloadArgs, ctx: &Ctx<'_>) -> Result<Output, PlanError> {
    let a = ctx.merge(args, "offload")?;
    let input = OffloadInput {
        appl_cp_pct: required(
            &a.appl_cp,
            "appl-cp",
            "copy APPL% CP from the RMF workload activity report, e.g. 105.17",
            units::parse_pct,
        )?,
        iipcp_pct: required(
            &a.iipcp,
            "iipcp",
            "copy APPL% IIPCP from the RMF workload activity report, e.g. 105.17",
            units::parse_pct,
        )?,
        iip_pct: opt(&a.iip, "iip", units::parse_pct)?.unwrap_or(0.0),
        general_engines: required(
            &a.general_engines,
            "general-engines",
            "give the general engines (CPs) of the LPAR, e.g. 2",
            engines,
        )?,
        cp_busy_pct: opt(&a.cp_busy, "cp-busy", units::parse_pct)?,
        speed_factor: opt(&a.speed_factor, "speed-factor", units::parse_positive)?.unwrap_or(1.0),
        offload_engines: opt(&a.offload_engines, "offload-engines", engines_or_zero)?,
        target_util_pct: opt(&a.target_util, "target-util", units::parse_util_pct)?
            .unwrap_or(100.0),
    };
    let plan = offload::plan(&input)?;
    Output::new("offload", &plan, plan.report(ctx.digits))
}
