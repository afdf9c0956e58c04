//! `stackbench plan offload`: flags → [`stackbench_plan::offload`].

use clap::Args;
use serde::{Deserialize, Serialize};
use stackbench_plan::offload::{self, OffloadInput};
use stackbench_plan::{units, PlanError};

use super::common::{opt, required, Ctx, OrUsage, Output};

pub const EXAMPLES: &str = "\
Examples:
  # zIIP-assisted IPsec, bulk data and no zIIPs: RMF APPL% CP 105.17, IIPCP 105.17, 2 CPs 56.88% busy
  stackbench plan offload --appl-cp 105.17 --iipcp 105.17 --general-engines 2 --cp-busy 56.88%
  # zIIP-assisted IPsec, the same workload with one zIIP configured
  stackbench plan offload --appl-cp 7.78 --iipcp 7.78 --iip 95.13 --general-engines 2 --offload-engines 1";

/// Flags of `plan offload` (also the keys of a plan file's [offload] section).
#[derive(Debug, Default, Args, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct OffloadArgs {
    /// RMF APPL% CP of the workload (% of one general engine).
    #[arg(long, value_name = "PCT")]
    appl_cp: Option<String>,
    /// RMF APPL% IIPCP: offload-eligible time that ran on general engines.
    #[arg(long, value_name = "PCT")]
    iipcp: Option<String>,
    /// RMF APPL% IIP: time on offload engines (% of one offload engine) [default: 0, N/A].
    #[arg(long, value_name = "PCT")]
    iip: Option<String>,
    /// General engines (CPs) of the LPAR.
    #[arg(long, value_name = "N")]
    general_engines: Option<String>,
    /// Measured busy of each general engine (RMF CPU activity), all work.
    #[arg(long, value_name = "PCT")]
    cp_busy: Option<String>,
    /// Offload engine speed ÷ general engine speed (above 1 with sub-capacity CPs) [default: 1].
    #[arg(long, value_name = "NF")]
    speed_factor: Option<String>,
    /// Offload engines to project for [default: the number needed].
    #[arg(long, value_name = "N")]
    offload_engines: Option<String>,
    /// Utilisation offload engines may reach when sizing [default: 100%].
    #[arg(long, value_name = "PCT")]
    target_util: Option<String>,
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
pub fn compute(args: OffloadArgs, ctx: &Ctx) -> anyhow::Result<Output> {
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
    let plan = offload::plan(&input).or_usage()?;
    Output::new("offload", &plan, plan.report(ctx.digits))
}
