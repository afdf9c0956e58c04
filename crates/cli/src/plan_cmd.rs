//! `stackbench plan`: capacity planning subcommands (issue 5). Placeholder until
//! the planner lands; it refuses with a clear message rather than pretending.

use clap::Args;

#[derive(Debug, Args)]
pub struct PlanArgs {
    /// What to plan.
    what: Option<String>,
}

pub fn run(args: PlanArgs) -> anyhow::Result<i32> {
    crate::exit::usage(format!(
        "plan {}: the capacity planner is not built yet",
        args.what.unwrap_or_default()
    ))
}
