//! Starts the responder as a separate `stackbench serve` process on loopback,
//! pinned to the server CPU set, so that each side's CPU is accounted apart.
//!
//! In a lab run (`--lab`) the child is started inside host B's network
//! namespace: the parent opens the namespace file before forking and the
//! child calls setns(2) between fork and exec, so `serve` binds B's address.
//!
//! The child runs in its own process group (a terminal Ctrl-C reaches only the
//! driver, which then ends the run cleanly) and gets SIGKILL from the kernel if
//! the driver dies (PR_SET_PDEATHSIG), so no orphan responder is left behind.

use std::io::{BufRead, BufReader};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use stackbench_engine::affinity::format_cpu_list;
use stackbench_engine::token::{Token, TOKEN_ENV};

use crate::error::RunError;

/// The first line `stackbench serve` prints on stdout, before its address:
/// how the parent learns which port the responder bound.
pub const LISTENING_PREFIX: &str = "stackbench serve: listening on ";

/// A responder child process; killed when dropped.
pub struct SpawnedResponder {
    child: Child,
    /// The control address it listens on.
    pub addr: String,
}

impl SpawnedResponder {
    /// Spawns `stackbench serve` (`program`, else this process's
    /// executable) on `listen` (port 0), inside the network namespace file
    /// `netns` when given, with every test's listeners also in the
    /// namespaces `mirrors` (load distribution), and waits for its address.
    /// It holds the run `token`, passed in its environment (never an
    /// argument, which `ps` shows to every user).
    pub fn start(
        listen: &str,
        cpus: &[usize],
        threads: usize,
        (netns, program): (Option<&Path>, Option<&Path>),
        mirrors: &[std::path::PathBuf],
        token: &Token,
    ) -> Result<SpawnedResponder, RunError> {
        let exe = match program {
            Some(p) => p.to_path_buf(),
            None => std::env::current_exe()
                .map_err(|e| RunError::runtime("cannot find the stackbench executable", e))?,
        };
        let mut cmd = Command::new(exe);
        cmd.args([
            "serve",
            "--listen",
            listen,
            "--threads",
            &threads.to_string(),
        ]);
        if !cpus.is_empty() {
            cmd.args(["--cpus", &format_cpu_list(cpus)]);
        }
        if !mirrors.is_empty() {
            let list: Vec<String> = mirrors.iter().map(|p| p.display().to_string()).collect();
            cmd.args(["--mirror-netns", &list.join(",")]);
        }
        cmd.env(TOKEN_ENV, token.to_hex());
        cmd.stdout(Stdio::piped()).stderr(Stdio::inherit());
        let mut child = spawn_owned(&mut cmd, netns).map_err(|e| {
            let doing = match netns {
                Some(p) => format!("cannot start the responder process in {}", p.display()),
                None => "cannot start the responder process".to_string(),
            };
            RunError::runtime(&doing, e)
        })?;
        let stdout = child.stdout.take().expect("stdout is piped");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .map_err(|e| RunError::runtime("reading the responder's address", e))?;
        let Some(rest) = line.strip_prefix(LISTENING_PREFIX) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(RunError::Runtime(format!(
                "the responder process did not start (it printed {:?})",
                line.trim()
            )));
        };
        let addr = rest
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_string();
        Ok(SpawnedResponder { child, addr })
    }
}

impl Drop for SpawnedResponder {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Spawns a child in its own process group (a terminal's Ctrl-C reaches
/// only the controller, which then stops the agents cleanly) that the kernel
/// kills if this process dies (PR_SET_PDEATHSIG), inside the network
/// namespace file `netns` when given (opened here, entered by the child
/// between fork and exec). Its stdin is closed; stdout and stderr are as
/// `cmd` sets them (inherited by default).
pub fn spawn_owned(cmd: &mut Command, netns: Option<&Path>) -> std::io::Result<Child> {
    let ns: Option<OwnedFd> = match netns {
        Some(p) => Some(
            std::fs::File::open(p)
                .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", p.display())))?
                .into(),
        ),
        None => None,
    };
    let ns_fd = ns.as_ref().map(|f| f.as_raw_fd());
    cmd.stdin(Stdio::null()).process_group(0);
    // SAFETY: prctl and setns are async-signal-safe system calls; nothing
    // else runs between fork and exec. `ns` outlives the spawn below.
    unsafe {
        cmd.pre_exec(move || {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            if let Some(fd) = ns_fd {
                if libc::setns(fd, libc::CLONE_NEWNET) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    let child = cmd.spawn();
    drop(ns);
    child
}
