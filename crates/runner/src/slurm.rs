//! Slurm as a launcher of agents (placeholder until the Slurm helper lands).

use std::path::Path;
use std::process::Command;

pub fn check() -> Result<(), String> {
    which("srun").ok_or_else(|| {
        "launcher slurm: srun not found: install slurm-wlm, or use launcher local".to_string()
    })?;
    Ok(())
}

fn which(name: &str) -> Option<std::path::PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
}

pub fn agents_command(program: &Path, agents: u32, controller: &str) -> Command {
    let mut cmd = Command::new("srun");
    cmd.arg(format!("--ntasks={agents}"))
        .args(["--overcommit", "--kill-on-bad-exit=1", "--quiet"])
        .arg(program)
        .args(["agent", "--controller", controller]);
    cmd
}
