//! `stackbench plan normalize`: flags → [`stackbench_plan::normalize`].

use clap::Args;
use serde::{Deserialize, Serialize};
use stackbench_plan::normalize::{self, NormalizeInput, Profile};
use stackbench_plan::units;

use super::common::{opt, required, Ctx, OrUsage, Output};

pub const EXAMPLES: &str = "\
Examples (zIIP-assisted IPsec):
  stackbench plan normalize --networking-change 61%                     # interactive: +4.9%
  stackbench plan normalize --networking-change 13% --profile bulk      # +3.9%
  stackbench plan normalize --networking-change 45% --networking-share 30%  # +13.5%";

/// Flags of `plan normalize` (also the keys of a plan file's [normalize] section).
#[derive(Debug, Default, Args, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct NormalizeArgs {
    /// Change in networking CPU, e.g. 61% or -20%.
    #[arg(long, value_name = "PCT", allow_hyphen_values = true)]
    networking_change: Option<String>,
    /// Networking's share of total CPU [default: from --profile].
    #[arg(long, value_name = "PCT")]
    networking_share: Option<String>,
    /// interactive (share 8%) or bulk (share 30%) [default: interactive].
    #[arg(long)]
    profile: Option<String>,
}

/// Resolves the flags and scales.
pub fn compute(args: NormalizeArgs, ctx: &Ctx) -> anyhow::Result<Output> {
    let a = ctx.merge(args, "normalize")?;
    let change = required(
        &a.networking_change,
        "networking-change",
        "give the change in networking CPU, e.g. 61%",
        units::parse_pct,
    )?;
    let profile = opt(&a.profile, "profile", Profile::parse)?;
    let input = match opt(&a.networking_share, "networking-share", units::parse_pct)? {
        Some(share) => NormalizeInput {
            networking_change_pct: change,
            networking_share_pct: share,
            profile: None,
        },
        None => {
            let p = profile.unwrap_or(Profile::Interactive);
            NormalizeInput {
                networking_change_pct: change,
                networking_share_pct: p.share_pct(),
                profile: Some(p),
            }
        }
    };
    let plan = normalize::plan(&input).or_usage()?;
    Output::new("normalize", &plan, plan.report(ctx.digits))
}
