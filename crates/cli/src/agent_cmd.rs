//! `stackbench agent`: one driver process of a run split over agents. It
//! connects to the controller (the `run` or `study` process started with
//! `--agents N`), takes its segment, and runs what the controller sends
//! until the controller is done (see `stackbench_runner::agents::agent`).

use clap::Args;
use stackbench_engine::token::{Token, TOKEN_ENV};

use crate::run_cmd::run_error;

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  stackbench agent --controller 10.0.0.1:7700 --segment 0/4 --token-file ~/.stackbench-token
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
    /// The run token, proved to the controller and the responders (at least
    /// 16 bytes, mode 600) [default: STACKBENCH_TOKEN, as local, lab and
    /// Slurm launchers and the Kubernetes Secret set it].
    #[arg(long, value_name = "FILE")]
    token_file: Option<std::path::PathBuf>,
}

pub fn run(args: AgentArgs) -> anyhow::Result<i32> {
    let env = |k: &str| std::env::var(k).ok();
    let segment = stackbench_runner::agents::agent::segment_from(args.segment.as_deref(), &env)
        .map_err(crate::exit::UsageError)?;
    let token = match &args.token_file {
        Some(path) => Token::from_file(path).map_err(crate::exit::UsageError)?,
        None => Token::from_env()
            .map_err(crate::exit::UsageError)?
            .ok_or_else(|| {
                crate::exit::UsageError(format!(
                    "no run token: give --token-file FILE (the controller's) or set {TOKEN_ENV}"
                ))
            })?,
    };
    let stop = crate::interrupt::stop_flag();
    stackbench_runner::agents::agent::agent_main(&args.controller, segment, &token, stop)
        .map_err(run_error)?;
    Ok(crate::exit::OK)
}
