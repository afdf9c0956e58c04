//! Slurm as a launcher of agents: whether this host can start a job step
//! ([`check`]), the `srun` command that starts N agents as the N tasks of one
//! step ([`agents_command`], built on [`srun_command`]), and the handle that
//! owns the running step ([`Launched`]) and leaves no job or process behind
//! when it is dropped.
//!
//! Each agent is one task: Slurm sets `SLURM_PROCID` (0..N-1) and
//! `SLURM_NTASKS` (N) in its environment, which the agent takes as its
//! segment. The controller reads nothing from the tasks' output — agents
//! speak over the control connection — so their stdout is discarded and
//! their stderr (an agent's one-line failure) reaches the controller's
//! stderr, each line prefixed with its task number (`--label`).
//!
//! When the controller dies, the agents must end within a bounded time and
//! leave nothing behind. Three things see to it, each verified on Slurm
//! 22.05 (Debian bookworm's slurm-wlm) with `.ci/slurm-up`'s cluster:
//! - srun runs in its own process group, so a Ctrl-C at the terminal reaches
//!   the controller alone (a first SIGINT at srun would only print the
//!   step's status), with `PR_SET_PDEATHSIG` = SIGTERM: a controller that
//!   dies without dropping its [`Launched`] (SIGINT, SIGKILL) still sends
//!   srun SIGTERM, on which srun cancels the step (the tier's test: job and
//!   tasks gone ~0.2 s after the controller's SIGKILL).
//! - srun forks a shepherd process that cancels the job allocation when
//!   srun itself dies, even by SIGKILL (SchedMD slurm,
//!   src/srun/libsrun/srun_job.c, `_shepherd_spawn`; seen: the job left
//!   `squeue` within a second of `kill -9` on srun). The shepherd is in
//!   srun's process group, which is why [`Launched`] signals srun's pid and
//!   never the group.
//! - the agents exit when the controller's control connection closes.

use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use stackbench_engine::token::{Token, TOKEN_ENV};

/// The job name every stackbench agent step starts with; [`srun_command`]
/// adds the controller's pid and a sequence number so that [`Launched`]
/// cancels its own job by name and nobody else's.
pub const JOB_NAME_PREFIX: &str = "stackbench-agents";

/// The node states (`sinfo -o %t`) in which a node takes tasks: `comp`
/// (a job's tasks being cleaned up) too, as sinfo shows a node that way for
/// a moment after each job — one launch must not be refused because another
/// just ended. A state with a suffix (`idle*`: not responding, `idle~`:
/// powered down) does not take tasks.
const UP_STATES: [&str; 4] = ["idle", "mix", "alloc", "comp"];

/// How long [`Launched`]'s drop waits for srun to end and for the job to
/// leave the queue before it stops waiting.
const TEARDOWN_WAIT: Duration = Duration::from_secs(15);

/// Whether this host can start agents with srun, the tools taken from the
/// `PATH` of this process. The error is one line naming what to run.
pub fn check() -> Result<(), String> {
    check_in(&std::env::var_os("PATH").unwrap_or_default())
}

/// [`check`] with the tools taken from `path` (a `PATH` value), which the
/// commands it runs also get.
pub fn check_in(path: &OsStr) -> Result<(), String> {
    let tool = |name: &str, fix: &str| {
        find_in(path, name).ok_or_else(|| format!("{name} not found on PATH: {fix}"))
    };
    const SLURM_FIX: &str = "install slurm-wlm (apt-get install slurm-wlm; .ci/slurm-up \
                             installs and starts a one-node cluster), or use --launcher local";
    tool("srun", SLURM_FIX)?;
    let sinfo = tool("sinfo", SLURM_FIX)?;
    tool("scancel", SLURM_FIX)?;
    check_munge(path)?;
    check_nodes(path, &sinfo)
}

/// `munge -n | unmunge`: a credential made and decoded by munged, as every
/// Slurm command's authentication (auth/munge) needs.
fn check_munge(path: &OsStr) -> Result<(), String> {
    const FIX: &str = "install munge and start munged (.ci/slurm-up does both), \
                       or use --launcher local";
    let munge = find_in(path, "munge").ok_or(format!("munge not found on PATH: {FIX}"))?;
    let unmunge = find_in(path, "unmunge").ok_or(format!("unmunge not found on PATH: {FIX}"))?;
    let failed = |why: String| {
        if key_missing() {
            format!(
                "no munge key ({MUNGE_KEY}): create one as root with `mungekey --create` \
                 (or .ci/slurm-up), start munged, or use --launcher local"
            )
        } else {
            format!(
                "munged not answering (munge -n | unmunge: {why}): start munged \
                 (`runuser -u munge -- munged`, or .ci/slurm-up), or use --launcher local"
            )
        }
    };
    let mut cred = Command::new(&munge)
        .arg("-n")
        .env("PATH", path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| failed(format!("{}: {e}", munge.display())))?;
    let decoded = Command::new(&unmunge)
        .env("PATH", path)
        .stdin(cred.stdout.take().expect("piped"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output();
    let mut munge_err = String::new();
    if let Some(mut e) = cred.stderr.take() {
        let _ = e.read_to_string(&mut munge_err);
    }
    let made = cred.wait().map_err(|e| failed(e.to_string()))?;
    if !made.success() {
        return Err(failed(first_line(&munge_err, made)));
    }
    let decoded = decoded.map_err(|e| failed(format!("{}: {e}", unmunge.display())))?;
    if !decoded.status.success() {
        let err = String::from_utf8_lossy(&decoded.stderr);
        return Err(failed(first_line(&err, decoded.status)));
    }
    Ok(())
}

const MUNGE_KEY: &str = "/etc/munge/munge.key";

/// Whether munge's key is known to be missing (a key this user may not see —
/// /etc/munge is munge's alone — is not "missing").
fn key_missing() -> bool {
    matches!(
        std::fs::metadata(MUNGE_KEY),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound
    )
}

/// `sinfo -h -o %t`: at least one node in a state that takes tasks.
fn check_nodes(path: &OsStr, sinfo: &Path) -> Result<(), String> {
    let out = Command::new(sinfo)
        .args(["-h", "-o", "%t"])
        .env("PATH", path)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| {
            format!(
                "sinfo failed ({}: {e}): reinstall slurm-client",
                sinfo.display()
            )
        })?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!(
            "sinfo failed ({}): start slurmctld and slurmd (.ci/slurm-up), or use --launcher local",
            first_line(&err, out.status)
        ));
    }
    let states: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(String::from)
        .collect();
    if states.iter().any(|s| UP_STATES.contains(&s.as_str())) {
        return Ok(());
    }
    let shown = if states.is_empty() {
        "no nodes".to_string()
    } else {
        states.join(",")
    };
    Err(format!(
        "no Slurm node up (sinfo shows {shown}, none idle, mix, alloc or comp): start slurmd \
         (.ci/slurm-up), or `scontrol update nodename=NODE state=resume`, or use --launcher local"
    ))
}

/// The first line of a tool's stderr, or its exit status when it said nothing.
fn first_line(stderr: &str, status: ExitStatus) -> String {
    match stderr.lines().map(str::trim).find(|l| !l.is_empty()) {
        Some(line) => line.to_string(),
        None => format!("exited with {status}"),
    }
}

/// `name` in the directories of `path`, where it is an executable file.
fn find_in(path: &OsStr, name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(path)
        .map(|dir| dir.join(name))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// `srun … PROGRAM agent --controller ADDR`: N agents as the N tasks of one
/// job step, each taking its segment from `SLURM_PROCID`/`SLURM_NTASKS`.
pub fn agents_command(program: &Path, agents: u32, controller: &str) -> Command {
    srun_command(
        agents,
        program,
        [
            OsStr::new("agent"),
            OsStr::new("--controller"),
            OsStr::new(controller),
        ],
    )
}

/// Starts `agents` agents of `program` through srun (after [`check`]), told
/// to reach the controller at `controller`, with the run `token` in the
/// job's environment (srun `--export=ALL` hands srun's environment to every
/// task; an argument would show in `ps` and in `scontrol show job`). The
/// error is one line: what is missing and how to fix it, or why srun did not
/// start; nothing is left running on error.
pub fn launch_agents(
    program: &Path,
    agents: u32,
    controller: &str,
    token: &Token,
) -> Result<Launched, String> {
    check()?;
    let mut cmd = agents_command(program, agents, controller);
    cmd.env(TOKEN_ENV, token.to_hex());
    Launched::spawn(cmd)
        .map_err(|e| format!("srun did not start ({e}): check `srun -n 1 true` on this host"))
}

/// `srun` running `program args…` as `tasks` tasks of one new job, with the
/// flags the agents need (Slurm 22.05's srun(1), checked against `man srun`
/// of Debian bookworm's slurm-client and against its cluster):
/// - `--ntasks=N --overcommit`: N tasks even where N exceeds the CPUs
///   allocated (agents wait on sockets more than they compute; without it,
///   `srun -n 4` on a 2-CPU node waits for resources forever).
/// - `--kill-on-bad-exit=0`: an agent that fails must not take the others
///   with it — the controller keeps their results and names the dead one;
///   stated explicitly because a cluster's KillOnBadExit may say otherwise.
/// - `--quiet`: no srun chatter on stderr; errors still show.
/// - `--label`: each task's stderr line starts with its task number.
/// - `--input=none`: no task reads the controller's stdin.
/// - `--export=ALL`: the agents see the controller's environment (the
///   default, stated so that a site's SLURM_EXPORT_ENV cannot change it).
/// - `--job-name=stackbench-agents-PID-SEQ`: what [`Launched`] cancels.
///
/// Its stdout is discarded and its stderr inherited; srun gets its own
/// process group and SIGTERM when the thread that spawned it ends (see the
/// module doc). Callers may override stdout/stderr before spawning.
pub fn srun_command<I, S>(tasks: u32, program: &Path, args: I) -> Command
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    static SEQ: AtomicU32 = AtomicU32::new(0);
    let name = format!(
        "{JOB_NAME_PREFIX}-{}-{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    );
    let mut cmd = Command::new("srun");
    cmd.arg(format!("--ntasks={tasks}"))
        .args([
            "--overcommit",
            "--kill-on-bad-exit=0",
            "--quiet",
            "--label",
            "--input=none",
            "--export=ALL",
        ])
        .arg(format!("--job-name={name}"))
        .arg(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .process_group(0);
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and
    // exec. The death signal follows the spawning thread (prctl(2)): the
    // controller spawns from the thread that owns the run.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        });
    }
    cmd
}

/// The job name a command from [`srun_command`] carries.
pub fn job_name_of(cmd: &Command) -> Option<String> {
    cmd.get_args()
        .filter_map(|a| a.to_str())
        .find_map(|a| a.strip_prefix("--job-name="))
        .map(String::from)
}

/// A running srun job step. Dropping it cancels the job (`scancel --name`),
/// ends srun, and waits (bounded) until the job has left the queue, so
/// nothing is left behind whatever state the agents are in.
#[derive(Debug)]
pub struct Launched {
    child: Child,
    job_name: String,
    /// The PATH srun was found on, for scancel and squeue.
    path: OsString,
    /// Set when this handle cancels the step at its end: slurmstepd's
    /// "CANCELLED" line that follows is this controller's own act, not an
    /// error, and is not passed on.
    cancelling: Arc<AtomicBool>,
    /// srun's stderr relay ends (its lines all passed on).
    relayed: Option<mpsc::Receiver<()>>,
}

/// Whether `line` is slurmstepd's report of a cancelled step
/// (`slurmstepd: error: *** STEP 12.0 ON node CANCELLED AT … ***`, with
/// srun's `--label` task prefix or none).
fn is_step_cancelled(line: &str) -> bool {
    line.contains("slurmstepd: error: *** STEP") && line.contains(" CANCELLED AT ")
}

/// Passes srun's stderr on to this process's, line by line, leaving out
/// slurmstepd's "STEP … CANCELLED" once `cancelling` is set (the step's
/// cancel at the end of a run); every other line, and that one when
/// someone else cancelled the step, is kept.
fn relay_stderr(
    from: std::process::ChildStderr,
    cancelling: Arc<AtomicBool>,
) -> mpsc::Receiver<()> {
    use std::io::{BufRead, BufReader, Write};
    let (done, relayed) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(from).lines().map_while(Result::ok) {
            if cancelling.load(Ordering::SeqCst) && is_step_cancelled(&line) {
                continue;
            }
            let _ = writeln!(std::io::stderr(), "{line}");
        }
        let _ = done.send(());
    });
    relayed
}

impl Launched {
    /// Spawns `cmd`, a command from [`srun_command`] or [`agents_command`].
    pub fn spawn(mut cmd: Command) -> std::io::Result<Launched> {
        let job_name = job_name_of(&cmd).ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "srun command without --job-name: build it with slurm::srun_command",
            )
        })?;
        let mut child = cmd.stderr(Stdio::piped()).spawn()?;
        let cancelling = Arc::new(AtomicBool::new(false));
        let relayed = child
            .stderr
            .take()
            .map(|e| relay_stderr(e, Arc::clone(&cancelling)));
        Ok(Launched {
            child,
            job_name,
            path: std::env::var_os("PATH").unwrap_or_default(),
            cancelling,
            relayed,
        })
    }

    /// The job's name (what `squeue --name` shows).
    pub fn job_name(&self) -> &str {
        &self.job_name
    }

    /// srun's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// srun's exit status once the step has ended (all agents exited).
    pub fn try_wait(&mut self) -> std::io::Result<Option<ExitStatus>> {
        self.child.try_wait()
    }

    /// Waits for srun, which returns once every task has exited (non-zero
    /// when any task failed).
    pub fn wait(&mut self) -> std::io::Result<ExitStatus> {
        self.child.wait()
    }

    /// Whether the job is still in the queue (any state, completing too).
    pub fn queued(&self) -> bool {
        queued(&self.path, &self.job_name)
    }
}

/// Whether `squeue` lists a job named `name`; an squeue that cannot answer
/// counts as "not listed" (there is nothing more to wait for).
fn queued(path: &OsStr, name: &str) -> bool {
    let Some(squeue) = find_in(path, "squeue") else {
        return false;
    };
    Command::new(squeue)
        .args(["-h", "-o", "%i", &format!("--name={name}")])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .is_ok_and(|o| o.status.success() && !o.stdout.trim_ascii().is_empty())
}

impl Drop for Launched {
    fn drop(&mut self) {
        let running = matches!(self.child.try_wait(), Ok(None));
        if running {
            // scancel ends the tasks (SIGTERM, then SIGKILL after KillWait)
            // and srun returns once its step has ended. slurmstepd reports
            // the cancel as an error: it is this controller's own.
            self.cancelling.store(true, Ordering::SeqCst);
            if let Some(scancel) = find_in(&self.path, "scancel") {
                let _ = Command::new(scancel)
                    .args(["--quiet", &format!("--name={}", self.job_name)])
                    .stdin(Stdio::null())
                    .stderr(Stdio::null())
                    .status();
            }
            let deadline = Instant::now() + TEARDOWN_WAIT;
            while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            // srun's pid only: its shepherd (same group) cancels the job
            // should scancel not have reached slurmctld.
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
        if let Some(relayed) = self.relayed.take() {
            // srun's last lines, before this process goes on (or exits).
            let _ = relayed.recv_timeout(Duration::from_secs(2));
        }
        let deadline = Instant::now() + TEARDOWN_WAIT;
        while queued(&self.path, &self.job_name) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The line slurmstepd prints when the controller cancels the step at
    /// the end of a successful run (Slurm 22.05, with srun's --label).
    #[test]
    fn the_step_cancel_line_is_recognised_and_nothing_else() {
        assert!(is_step_cancelled(
            "0: slurmstepd: error: *** STEP 41.0 ON node1 CANCELLED AT 2026-11-28T08:00:01 ***"
        ));
        assert!(is_step_cancelled(
            "slurmstepd: error: *** STEP 41.0 ON node1 CANCELLED AT 2026-11-28T08:00:01 DUE TO TIME LIMIT ***"
        ));
        assert!(!is_step_cancelled(
            "1: stackbench: error: no controller answered"
        ));
        assert!(!is_step_cancelled(
            "slurmstepd: error: execve(): stackbench: No such file"
        ));
    }

    #[test]
    fn agents_command_is_srun_with_the_agent_arguments() {
        let cmd = agents_command(Path::new("/opt/sb/stackbench"), 4, "10.0.0.1:7700");
        assert_eq!(cmd.get_program(), "srun");
        let args: Vec<String> = cmd
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let name = job_name_of(&cmd).unwrap();
        assert!(
            name.starts_with(&format!("{JOB_NAME_PREFIX}-{}-", std::process::id())),
            "{name}"
        );
        assert_eq!(
            args,
            [
                "--ntasks=4",
                "--overcommit",
                "--kill-on-bad-exit=0",
                "--quiet",
                "--label",
                "--input=none",
                "--export=ALL",
                &format!("--job-name={name}"),
                "/opt/sb/stackbench",
                "agent",
                "--controller",
                "10.0.0.1:7700",
            ]
        );
        let other = agents_command(Path::new("x"), 1, "a:1");
        assert_ne!(
            job_name_of(&other).unwrap(),
            name,
            "each launch its own job name"
        );
    }

    /// A directory of stand-in tools, each a shell script.
    fn fake_tools(tools: &[(&str, &str)]) -> tempfile::TempDir {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        for (name, body) in tools {
            let p = dir.path().join(name);
            std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
            // A child another test thread forked while this file was open
            // for writing holds it until its own exec: running the script
            // then fails with ETXTBSY ("Text file busy"). Once one exec of
            // it succeeds no such writer is left, so the check under test
            // never meets one.
            for _ in 0..100 {
                match std::process::Command::new(&p)
                    .stdin(std::process::Stdio::null())
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .status()
                {
                    Err(e) if e.raw_os_error() == Some(26) => {
                        std::thread::sleep(std::time::Duration::from_millis(10))
                    }
                    _ => break,
                }
            }
        }
        dir
    }

    fn path_of(dir: &tempfile::TempDir) -> OsString {
        // /bin for the scripts' own `cat` and `sh`, which hold no Slurm tool
        // on a machine without Slurm; the test dir comes first either way.
        let mut p = dir.path().as_os_str().to_owned();
        p.push(":/nonexistent-stackbench");
        p
    }

    #[test]
    fn check_without_srun_names_the_package_and_the_local_launcher() {
        let dir = fake_tools(&[("sinfo", "echo idle")]);
        let e = check_in(&path_of(&dir)).unwrap_err();
        assert!(e.starts_with("srun not found on PATH"), "{e}");
        assert!(
            e.contains("slurm-wlm") && e.contains("--launcher local"),
            "{e}"
        );
        assert!(!e.contains('\n'), "{e}");
    }

    const SLURM: [(&str, &str); 3] = [
        ("srun", "exit 0"),
        ("sinfo", "echo idle"),
        ("scancel", "exit 0"),
    ];

    #[test]
    fn check_without_munge_names_munge() {
        let dir = fake_tools(&SLURM);
        let e = check_in(&path_of(&dir)).unwrap_err();
        assert!(e.starts_with("munge not found on PATH"), "{e}");
        assert!(e.contains("munged"), "{e}");
    }

    #[test]
    fn check_with_munged_not_answering_says_so() {
        let mut tools = SLURM.to_vec();
        tools.push((
            "munge",
            "echo 'munge: Error: Failed to access \"/run/munge/munge.socket.2\": No such file' >&2; exit 1",
        ));
        tools.push(("unmunge", "exit 1"));
        let dir = fake_tools(&tools);
        let e = check_in(&path_of(&dir)).unwrap_err();
        // Which of the two depends on this machine's /etc/munge; both name
        // the fix in one line.
        assert!(
            e.starts_with("munged not answering (munge -n | unmunge: munge: Error: Failed")
                || e.starts_with("no munge key (/etc/munge/munge.key)"),
            "{e}"
        );
        assert!(!e.contains('\n'), "{e}");
    }

    fn with_nodes(states: &str) -> Result<(), String> {
        let sinfo = format!("printf '{states}'");
        let dir = fake_tools(&[
            ("srun", "exit 0"),
            ("sinfo", &sinfo),
            ("scancel", "exit 0"),
            ("munge", "echo cred"),
            ("unmunge", "read x; exit 0"),
        ]);
        check_in(&path_of(&dir))
    }

    #[test]
    fn check_wants_a_node_that_takes_tasks() {
        assert_eq!(with_nodes("idle\\n"), Ok(()));
        assert_eq!(with_nodes("down*\\nmix\\n"), Ok(()));
        assert_eq!(with_nodes("comp\\n"), Ok(()));
        let e = with_nodes("down*\\nidle*\\ndrain\\n").unwrap_err();
        assert!(
            e.starts_with("no Slurm node up (sinfo shows down*,idle*,drain, none idle, mix"),
            "{e}"
        );
        assert!(e.contains("slurmd"), "{e}");
        let e = with_nodes("").unwrap_err();
        assert!(e.contains("sinfo shows no nodes"), "{e}");
    }

    #[test]
    fn check_reports_sinfo_failing() {
        let dir = fake_tools(&[
            ("srun", "exit 0"),
            (
                "sinfo",
                "echo 'slurm_load_partitions: Unable to contact slurm controller (connect failure)' >&2; exit 1",
            ),
            ("scancel", "exit 0"),
            ("munge", "echo cred"),
            ("unmunge", "read x; exit 0"),
        ]);
        let e = check_in(&path_of(&dir)).unwrap_err();
        assert!(
            e.starts_with("sinfo failed (slurm_load_partitions: Unable to contact"),
            "{e}"
        );
        assert!(e.contains("slurmctld"), "{e}");
    }
}
