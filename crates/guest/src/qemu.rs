//! Booting the guest: qemu-system-x86_64 with the kernel, the initramfs, the
//! console on ttyS0 to a log file and the results on ttyS1 to another; no
//! network device (everything runs inside the guest). Polls the results file
//! until the guest ends, the deadline passes or qemu exits.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::error::{one_line_tail, GuestError};
use crate::frame::{decode, Frames};
use crate::initramfs::which;
use crate::kernel::Kernel;

/// How often the host looks at the results file.
const POLL: Duration = Duration::from_millis(50);

/// One boot's settings.
pub struct Boot<'a> {
    pub kernel: &'a Kernel,
    pub initramfs: &'a Path,
    pub dir: &'a Path,
    pub vcpus: u32,
    pub memory_mib: u64,
    pub kvm: bool,
}

/// How a boot ended.
pub enum Outcome {
    /// The guest wrote `SB END` (a result or a failure) and qemu exited.
    Ended { frames: Frames, boot_s: f64 },
    /// `ready_deadline` passed before the guest said ready (qemu killed).
    NotReady,
    /// The overall deadline passed (qemu killed).
    TimedOut,
    /// qemu exited without `SB END`; its stderr.
    Exited { frames: Frames, qemu_stderr: String },
}

/// `qemu-system-x86_64`, or the one-line fix.
pub fn qemu_binary() -> Result<PathBuf, GuestError> {
    which("qemu-system-x86_64").ok_or(GuestError::MissingTool {
        tool: "qemu-system-x86_64",
        package: "qemu-system-x86",
    })
}

/// The qemu version ("7.2.22"), asked once per process.
pub fn qemu_version(qemu: &Path) -> String {
    static VERSION: OnceLock<String> = OnceLock::new();
    VERSION
        .get_or_init(|| {
            let out = Command::new(qemu).arg("--version").output();
            let text = out
                .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                .unwrap_or_default();
            text.split_whitespace()
                .skip_while(|w| *w != "version")
                .nth(1)
                .unwrap_or("unknown")
                .to_string()
        })
        .clone()
}

/// The console log of a boot in `dir`.
pub fn console_path(dir: &Path) -> PathBuf {
    dir.join("console.log")
}

fn spawn(qemu: &Path, boot: &Boot) -> Result<Child, GuestError> {
    let console = console_path(boot.dir);
    let results = boot.dir.join("results.txt");
    let stderr = File::create(boot.dir.join("qemu-stderr.txt"))
        .map_err(|e| GuestError::io(format!("create a file in {}", boot.dir.display()), e))?;
    // `stackbench_accel` tells the guest how its CPU is provided (its init
    // hands it to the job as STACKBENCH_GUEST_ACCEL): timing checks that an
    // emulated CPU makes meaningless are skipped there.
    let append = format!(
        "console=ttyS0 quiet panic=-1 8250.nr_uarts=2 rdinit=/init stackbench_accel={}",
        if boot.kvm { "kvm" } else { "tcg" }
    );
    let mut cmd = Command::new(qemu);
    cmd.args([
        "-nodefaults",
        "-display",
        "none",
        "-no-reboot",
        "-monitor",
        "none",
    ])
    .args(["-accel", if boot.kvm { "kvm" } else { "tcg" }])
    .args([
        "-m",
        &boot.memory_mib.to_string(),
        "-smp",
        &boot.vcpus.to_string(),
    ])
    .arg("-kernel")
    .arg(&boot.kernel.vmlinuz)
    .arg("-initrd")
    .arg(boot.initramfs)
    .args(["-append", &append])
    .arg("-serial")
    .arg(format!("file:{}", console.display()))
    .arg("-serial")
    .arg(format!("file:{}", results.display()));
    if boot.kvm {
        cmd.args(["-cpu", "host"]);
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr);
    cmd.spawn()
        .map_err(|e| GuestError::io(format!("start {}", qemu.display()), e))
}

/// Boots and waits: for `SB READY` until `ready_deadline` (when given), for
/// the end until `deadline`.
pub fn boot_and_wait(
    qemu: &Path,
    boot: &Boot,
    ready_deadline: Option<Duration>,
    deadline: Duration,
) -> Result<Outcome, GuestError> {
    let start = Instant::now();
    let mut child = spawn(qemu, boot)?;
    let results = boot.dir.join("results.txt");
    let mut boot_s = None;
    loop {
        let frames = decode(&std::fs::read(&results).unwrap_or_default());
        if frames.ready && boot_s.is_none() {
            boot_s = Some(start.elapsed().as_secs_f64());
        }
        let exited = child
            .try_wait()
            .map_err(|e| GuestError::io("wait for qemu", e))?;
        if let Some(_status) = exited {
            // Re-read: the guest may have written its last lines just before powering off.
            let frames = decode(&std::fs::read(&results).unwrap_or_default());
            if frames.end {
                let boot_s = boot_s.unwrap_or_else(|| start.elapsed().as_secs_f64());
                return Ok(Outcome::Ended { frames, boot_s });
            }
            let qemu_stderr =
                std::fs::read_to_string(boot.dir.join("qemu-stderr.txt")).unwrap_or_default();
            return Ok(Outcome::Exited {
                frames,
                qemu_stderr,
            });
        }
        let elapsed = start.elapsed();
        if ready_deadline.is_some_and(|d| boot_s.is_none() && elapsed > d) {
            kill(&mut child);
            return Ok(Outcome::NotReady);
        }
        if elapsed > deadline {
            kill(&mut child);
            return Ok(Outcome::TimedOut);
        }
        std::thread::sleep(POLL);
    }
}

fn kill(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// The last `lines` lines of the console log in `dir`.
pub fn console_tail(dir: &Path, lines: usize) -> String {
    let text = std::fs::read(console_path(dir)).unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    let all: Vec<&str> = text.lines().map(|l| l.trim_end_matches('\r')).collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// A one-line summary of the console's end, for error messages.
pub fn console_summary(dir: &Path) -> String {
    one_line_tail(&console_tail(dir, 40), 4)
}
