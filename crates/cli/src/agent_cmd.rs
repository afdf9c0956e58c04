//! `stackbench agent`: one driver process of a run split over agents. It
//! connects to the controller (the `run` or `study` process started with
//! `--agents N`), takes its segment, and runs what the controller sends
//! until the controller is done (see `stackbench_runner::agents::agent`).

use clap::Args;

use crate::run_cmd::run_error;

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  stackbench agent --controller 10.0.0.1:7700 --segment 0/4
  srun --ntasks=4 stackbench agent --controller head:7700     # SLURM_PROCID/SLURM_NTASKS
  STACKBENCH_AGENTS=4 stackbench agent --controller ctl:7700  # in a Kubernetes Indexed Job")]
pub struct AgentArgs {
    /// The controller's agent address (its --agent-listen), HOST:PORT.
    #[arg(long)]
    controller: String,
    /// This agent's segment I/N (agent I of N, from 0) [default: from
    /// SLURM_PROCID/SLURM_NTASKS, else JOB_COMPLETION_INDEX/STACKBENCH_AGENTS].
    #[arg(long)]
    segment: Option<String>,
}

pub fn run(args: AgentArgs) -> anyhow::Result<i32> {
    let env = |k: &str| std::env::var(k).ok();
    let segment = stackbench_runner::agents::agent::segment_from(args.segment.as_deref(), &env)
        .map_err(crate::exit::UsageError)?;
    let stop = crate::interrupt::stop_flag();
    stackbench_runner::agents::agent::agent_main(&args.controller, segment, stop)
        .map_err(run_error)?;
    Ok(crate::exit::OK)
}
