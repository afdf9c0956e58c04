//! A run split over agents: driver processes, each running one segment of
//! every class, under a controller that starts them, aligns their windows
//! and merges what they measured.
//!
//! - [`wire`]: the messages between controller and agents, versioned (one
//!   JSON object per line over TCP);
//! - [`agent`]: the agent process (`stackbench agent`);
//! - [`controller`]: the controller's side, which the session drives;
//! - [`merge`]: the agents' results combined into the run's, exactly;
//! - [`launch`]: starting the agents (`launcher` local, slurm, external),
//!   with [`slurm`] for srun.
//!
//! Inside, `wire` and `merge` are at the bottom, `slurm` under `launch`,
//! `agent` on `wire`, `controller` on all of them.

pub mod agent;
pub mod controller;
pub mod launch;
pub mod merge;
pub mod slurm;
pub mod wire;
#[cfg(test)]
mod wire_golden;
