//! How a run is spread over driver processes (agents): how many, and who
//! starts them. The controller (the `run` or `study` process) gives each
//! agent an exact segment of every class (see [`crate::segment`]).

use serde::{Deserialize, Serialize};

use super::value::SettingValue;

/// Who starts the agents of a run split over several driver processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Launcher {
    /// The controller starts them on this host, pinned within the driver's
    /// CPUs, one responder process each.
    #[default]
    Local,
    /// `srun` starts them as the tasks of one Slurm job step
    /// (`SLURM_PROCID`/`SLURM_NTASKS` give each its segment).
    Slurm,
    /// Someone else starts them (a Kubernetes Indexed Job): the controller
    /// listens on `agent_listen` and waits for them.
    External,
}

impl Launcher {
    pub fn name(self) -> &'static str {
        match self {
            Launcher::Local => "local",
            Launcher::Slurm => "slurm",
            Launcher::External => "external",
        }
    }
}

impl SettingValue for Launcher {
    const VALUE_NAME: &'static str = "LAUNCHER";
    const ALLOWED: &'static [&'static str] = &["local", "slurm", "external"];
    fn parse(text: &str) -> Result<Self, String> {
        match text.trim() {
            "local" => Ok(Launcher::Local),
            "slurm" => Ok(Launcher::Slurm),
            "external" => Ok(Launcher::External),
            _ => Err("unknown launcher: use local, slurm or external".to_string()),
        }
    }
    fn text(&self) -> String {
        self.name().to_string()
    }
}
