//! Starting a controller's agents (the `launcher` setting): `local` starts
//! them as child processes of this one, `slurm` as the tasks of one `srun`
//! job step, `external` not at all (a cluster engine does, e.g. a
//! Kubernetes Indexed Job, and they connect to `agent_listen`). What was
//! started is stopped when the handle drops, so a run leaves nothing behind.
//! Local agents of a lab run start inside their lab hosts' network
//! namespaces, as the lab's responder does ([`crate::spawn`]).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use stackbench_engine::token::{Token, TOKEN_ENV};
use stackbench_model::settings::Launcher;

use crate::error::RunError;

/// The agents this process started (none for `external`).
pub struct Launched {
    kind: Launcher,
    children: Vec<(String, Child)>,
    /// The agents' job step (launcher slurm); cancelled when dropped.
    srun: Option<crate::agents::slurm::Launched>,
}

/// Where a local agent runs: a lab host's network namespace, and the
/// controller's address as seen from there.
#[derive(Debug, Clone)]
pub struct AgentHost {
    /// The namespace file (`/run/netns/sb-LAB-HOST`).
    pub netns: PathBuf,
    /// HOST:PORT the agent dials.
    pub controller: String,
}

/// Starts `count` agents of `program` that connect to `controller`
/// (HOST:PORT); local agent i runs in `hosts[i % len]` when `hosts` is not
/// empty. Each gets the run `token` as its platform passes secrets: in its
/// environment (local and lab agents; srun exports its own environment to
/// the tasks), never as an argument, which `ps` shows to every user.
pub fn launch(
    kind: Launcher,
    count: u32,
    (program, controller): (&Path, &str),
    hosts: &[AgentHost],
    token: &Token,
) -> Result<Launched, RunError> {
    let mut launched = Launched {
        kind,
        children: Vec::new(),
        srun: None,
    };
    match kind {
        Launcher::Local => {
            for i in 0..count {
                let host = (!hosts.is_empty()).then(|| &hosts[i as usize % hosts.len()]);
                let dial = host.map_or(controller, |h| h.controller.as_str());
                let mut cmd = Command::new(program);
                cmd.args(["agent", "--controller", dial, "--segment"])
                    .arg(format!("{i}/{count}"))
                    .env(TOKEN_ENV, token.to_hex());
                let netns = host.map(|h| h.netns.as_path());
                let child = crate::spawn::spawn_owned(cmd.stdout(Stdio::null()), netns)
                    .map_err(|e| RunError::runtime("cannot start a local agent process", e))?;
                let place = match host {
                    Some(h) => format!(" in {}", h.netns.display()),
                    None => String::new(),
                };
                launched
                    .children
                    .push((format!("local agent {i}/{count}{place}"), child));
            }
        }
        Launcher::Slurm => {
            // From the thread that runs the session: srun gets SIGTERM when
            // the thread that spawned it ends (see crate::agents::slurm).
            let srun = crate::agents::slurm::launch_agents(program, count, controller, token)
                .map_err(RunError::Input)?;
            launched.srun = Some(srun);
        }
        Launcher::External => {}
    }
    Ok(launched)
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
