//! Booting the guest: qemu-system-x86_64 with the kernel, the initramfs, the
//! console on ttyS0 to a log file and the results on ttyS1 to another; no
//! network device for a lone guest (everything runs inside it), one
//! virtio-net adapter on a wire to its peer for a pair (see [`Wire`]). Polls
//! the results file until the guest ends, the deadline passes or qemu exits.
//! Every qemu is started with `PR_SET_PDEATHSIG` = SIGKILL: if stackbench
//! dies (a signal, a panic that aborts), the kernel ends its guests too.

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
pub const POLL: Duration = Duration::from_millis(50);

/// One boot's settings.
pub struct Boot<'a> {
    pub kernel: &'a Kernel,
    pub initramfs: &'a Path,
    pub dir: &'a Path,
    pub vcpus: u32,
    pub memory_mib: u64,
    pub kvm: bool,
    /// The guest's end of a wire to its peer, if it has one.
    pub wire: Option<Wire>,
}

/// One guest's end of the virtual wire between a pair: a virtio-net-pci
/// adapter on qemu's `-netdev dgram` backend over two unix datagram sockets
/// (each qemu binds its own path and sends to the other's). Unix sockets
/// rather than UDP ports: nothing to collide with, nothing reachable beyond
/// the two guests, and neither qemu needs the other to be up first (`stream`
/// in qemu 7.2 has a listener and a connector and no reconnect; `socket,mcast`
/// reaches every host process in the group). `dgram` carries one queue pair:
/// multiqueue virtio-net needs a backend with queues (tap, vhost-user).
#[derive(Debug, Clone, PartialEq)]
pub struct Wire {
    /// This guest's socket (qemu binds it).
    pub local: PathBuf,
    /// The peer's socket.
    pub remote: PathBuf,
    /// The adapter's MAC address, 52:54:00:… (qemu's locally administered prefix).
    pub mac: String,
    /// The guest's address on the wire, e.g. 10.77.0.1/24 (its init sets it on eth0).
    pub address: String,
}

impl Wire {
    /// What the record calls the backend.
    pub const BACKEND: &'static str = "qemu -netdev dgram (unix datagram sockets), virtio-net-pci";
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
    // A second boot in the same directory (the retry after a kernel that
    // died before its init) must not read the first one's `SB READY`.
    let _ = std::fs::remove_file(&results);
    let _ = std::fs::remove_file(&console);
    let stderr = File::create(boot.dir.join("qemu-stderr.txt"))
        .map_err(|e| GuestError::io(format!("create a file in {}", boot.dir.display()), e))?;
    // `stackbench_accel` tells the guest how its CPU is provided (its init
    // hands it to the job as STACKBENCH_GUEST_ACCEL): timing checks that an
    // emulated CPU makes meaningless are skipped there.
    let mut append = format!(
        "console=ttyS0 quiet panic=-1 8250.nr_uarts=2 rdinit=/init stackbench_accel={}",
        if boot.kvm { "kvm" } else { "tcg" }
    );
    if let Some(wire) = &boot.wire {
        append.push_str(&format!(" {}={}", crate::init::ADDRESS_PARAM, wire.address));
    }
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
    if let Some(wire) = &boot.wire {
        cmd.arg("-netdev").arg(format!(
            "dgram,id=wire,local.type=unix,local.path={},remote.type=unix,remote.path={}",
            wire.local.display(),
            wire.remote.display()
        ));
        cmd.arg("-device")
            .arg(format!("virtio-net-pci,netdev=wire,mac={}", wire.mac));
    }
    die_with_parent(&mut cmd);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr);
    cmd.spawn()
        .map_err(|e| GuestError::io(format!("start {}", qemu.display()), e))
}

/// The child gets SIGKILL when the thread that started it ends (stackbench
/// exiting or killed): no qemu outlives the run that booted it.
fn die_with_parent(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// A qemu that was started: polled until it ends, killed when dropped (an
/// error or a panic on the host's side leaves no guest running).
pub struct Running<'a> {
    boot: &'a Boot<'a>,
    child: Child,
    start: Instant,
    boot_s: Option<f64>,
    done: bool,
}

impl<'a> Running<'a> {
    pub fn start(qemu: &Path, boot: &'a Boot<'a>) -> Result<Running<'a>, GuestError> {
        let child = spawn(qemu, boot)?;
        Ok(Running {
            boot,
            child,
            start: Instant::now(),
            boot_s: None,
            done: false,
        })
    }

    /// Whether the guest has said ready.
    pub fn ready(&self) -> bool {
        self.boot_s.is_some()
    }

    pub fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }

    /// Looks once: `Some` when qemu has exited.
    pub fn poll(&mut self) -> Result<Option<Outcome>, GuestError> {
        let results = self.boot.dir.join("results.txt");
        if self.boot_s.is_none() && decode(&std::fs::read(&results).unwrap_or_default()).ready {
            self.boot_s = Some(self.start.elapsed().as_secs_f64());
        }
        let exited = self
            .child
            .try_wait()
            .map_err(|e| GuestError::io("wait for qemu", e))?;
        if exited.is_none() {
            return Ok(None);
        }
        self.done = true;
        // Re-read: the guest may have written its last lines just before powering off.
        let frames = decode(&std::fs::read(&results).unwrap_or_default());
        if frames.end {
            let boot_s = self
                .boot_s
                .unwrap_or_else(|| self.start.elapsed().as_secs_f64());
            return Ok(Some(Outcome::Ended { frames, boot_s }));
        }
        let qemu_stderr =
            std::fs::read_to_string(self.boot.dir.join("qemu-stderr.txt")).unwrap_or_default();
        Ok(Some(Outcome::Exited {
            frames,
            qemu_stderr,
        }))
    }

    /// Ends qemu (SIGKILL) and reaps it.
    pub fn kill(&mut self) {
        if !self.done {
            let _ = self.child.kill();
            let _ = self.child.wait();
            self.done = true;
        }
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Boots and waits: for `SB READY` until `ready_deadline` (when given), for
/// the end until `deadline`.
pub fn boot_and_wait(
    qemu: &Path,
    boot: &Boot,
    ready_deadline: Option<Duration>,
    deadline: Duration,
) -> Result<Outcome, GuestError> {
    let mut guest = Running::start(qemu, boot)?;
    loop {
        if let Some(outcome) = guest.poll()? {
            return Ok(outcome);
        }
        let elapsed = guest.elapsed();
        if ready_deadline.is_some_and(|d| !guest.ready() && elapsed > d) {
            guest.kill();
            return Ok(Outcome::NotReady);
        }
        if elapsed > deadline {
            guest.kill();
            return Ok(Outcome::TimedOut);
        }
        std::thread::sleep(POLL);
    }
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
