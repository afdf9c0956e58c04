//! Starting a controller's agents (the `launcher` setting): `local` starts
//! them as child processes of this one, `slurm` as the tasks of one `srun`
//! job step, `external` not at all (a cluster engine does, e.g. a
//! Kubernetes Indexed Job, and they connect to `agent_listen`). What was
//! started is stopped when the handle drops, so a run leaves nothing behind.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use stackbench_model::settings::Launcher;

use crate::error::RunError;

/// The agents this process started (none for `external`).
pub struct Launched {
    kind: Launcher,
    children: Vec<(String, Child)>,
    /// The agents' job step (launcher slurm); cancelled when dropped.
    srun: Option<crate::slurm::Launched>,
}

/// Starts `count` agents that connect to `controller` (HOST:PORT).
pub fn launch(
    kind: Launcher,
    count: u32,
    program: &Path,
    controller: &str,
) -> Result<Launched, RunError> {
    let mut launched = Launched {
        kind,
        children: Vec::new(),
        srun: None,
    };
    match kind {
        Launcher::Local => {
            for i in 0..count {
                let mut cmd = Command::new(program);
                cmd.args(["agent", "--controller", controller, "--segment"])
                    .arg(format!("{i}/{count}"));
                let child = spawn_owned(cmd)
                    .map_err(|e| RunError::runtime("cannot start a local agent process", e))?;
                launched
                    .children
                    .push((format!("local agent {i}/{count}"), child));
            }
        }
        Launcher::Slurm => {
            // From the thread that runs the session: srun gets SIGTERM when
            // the thread that spawned it ends (see crate::slurm).
            let srun =
                crate::slurm::launch_agents(program, count, controller).map_err(RunError::Input)?;
            launched.srun = Some(srun);
        }
        Launcher::External => {}
    }
    Ok(launched)
}

/// Spawns a child in its own process group (a terminal's Ctrl-C reaches
/// only the controller, which then stops the agents cleanly) that the kernel
/// kills if this process dies (PR_SET_PDEATHSIG).
fn spawn_owned(mut cmd: Command) -> std::io::Result<Child> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .process_group(0);
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    cmd.spawn()
}

impl Launched {
    /// A started process that has already ended, described with its status.
    pub fn exited(&mut self) -> Option<String> {
        if let Some(srun) = self.srun.as_mut() {
            if let Some(status) = srun.try_wait().ok().flatten() {
                return Some(format!("srun (job {}) exited ({status})", srun.job_name()));
            }
        }
        self.children.iter_mut().find_map(|(name, child)| {
            let status = child.try_wait().ok().flatten()?;
            Some(format!("{name} exited ({status})"))
        })
    }

    /// Who was to start the agents, for a message about missing ones.
    pub fn describe(&self) -> String {
        match self.kind {
            Launcher::Local => {
                format!("{} local agent processes were started", self.children.len())
            }
            Launcher::Slurm => "srun started the agents; see its stderr and squeue".to_string(),
            Launcher::External => {
                "launcher external: start them with `stackbench agent --controller ADDR`"
                    .to_string()
            }
        }
    }
}

impl Drop for Launched {
    fn drop(&mut self) {
        // The agents exit on the controller's bye or its closed connection;
        // give them a moment, then make sure.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        for (_, child) in &mut self.children {
            while std::time::Instant::now() < deadline {
                if child.try_wait().ok().flatten().is_some() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
