//! `stackbench plan normalize`: flags → [`crate::normalize`].

use serde::{Deserialize, Serialize};

use super::{opt, required, Ctx, Output};
use crate::normalize::{self, NormalizeInput, Profile};
use crate::{units, PlanError};

/// Flags of `plan normalize` (also the keys of a plan file's [normalize] section).
#[derive(Debug, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(rename_all = "kebab-case")]
pub struct NormalizeArgs {
    /// Change in networking CPU, e.g. 61% or -20%.
    #[cfg_attr(
        feature = "clap",
        arg(long, value_name = "PCT", allow_hyphen_values = true)
    )]
    pub networking_change: Option<String>,
    /// Networking's share of total CPU [default: from --profile].
    #[cfg_attr(feature = "clap", arg(long, value_name = "PCT"))]
    pub networking_share: Option<String>,
    /// interactive (share 8%) or bulk (share 30%) [default: interactive].
    #[cfg_attr(feature = "clap", arg(long))]
    pub profile: Option<String>,
}

/// Resolves the flags and scales.
pub fn compute(args: NormalizeArgs, ctx: &Ctx<'_>) -> Result<Output, PlanError> {
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
    let plan = normalize::plan(&input)?;
    Output::new("normalize", &plan, plan.report(ctx.digits))
}
