//! Guest-kernel hosts: boot a Linux guest VM with a chosen kernel
//! and run ONE stackbench command inside it.
//!
//! Design: the guest is qemu-system-x86_64 (KVM when it works, else TCG
//! emulation) booted with a Debian kernel package (`kernel.rs`: `apt-get
//! download` + `dpkg-deb -x`, cached) and an initramfs (`initramfs.rs`,
//! `cpio.rs`) whose `/init` is this very binary, beside its shared libraries,
//! busybox (so `/sbin/modprobe` autoloads modules; `modinfo.rs` writes
//! modules.dep and modules.alias on the host) and the job's files. As PID 1
//! the binary runs `init.rs`: it mounts, says ready, runs the job as a child
//! `/init ARGS…` and sends stdout, stderr and the exit status back on the
//! second serial port (`frame.rs`), then powers off. The host side
//! (`qemu.rs`) watches that port's file. Everything the job does — a run's
//! driver and responder, a lab's namespaces — happens inside the guest
//! kernel, so the guest needs no network device. A pair (`pair.rs`) is two
//! guests, each with its own kernel, joined by a virtual wire: the driver in
//! one, the responder in the other.

mod apt_index;
mod cpio;
mod error;
mod frame;
mod init;
mod initramfs;
mod job;
mod kernel;
mod modinfo;
mod module_file;
mod pair;
mod qemu;

use std::path::{Path, PathBuf};
use std::time::Duration;

pub use error::GuestError;
pub use init::WIRE_IFNAME;
pub use init::{guest_init_main, is_guest_init};
pub use job::{Job, JobOutput};
pub use kernel::{cache_dir, resolve_kernel, Kernel};
pub use pair::{run_pair, PairOutput, DRIVER_ADDRESS, RESPONDER_ADDRESS};
pub use qemu::Wire;

use qemu::{Boot, Outcome};
use stackbench_record::GuestEnvironment;

/// Hardware virtualization or emulation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accel {
    /// KVM when /dev/kvm opens and a KVM guest boots here, else TCG.
    Auto,
    /// KVM, or an error.
    Kvm,
    /// qemu's emulation: works everywhere, 20-50x slower (timings are functional only).
    Tcg,
}

/// The guest machine.
#[derive(Debug, Clone, PartialEq)]
pub struct GuestSpec {
    /// A Debian package name (linux-image-6.1.0-53-cloud-amd64-unsigned) or
    /// a path to `…/boot/vmlinuz-REL` of an unpacked package tree, with
    /// `…/lib/modules/REL` beside.
    pub kernel: String,
    pub vcpus: u32,
    pub memory_mib: u64,
    pub accel: Accel,
}

/// How long a KVM guest may take to say ready before Auto gives up on KVM.
pub(crate) const KVM_READY: Duration = Duration::from_secs(15);

pub(crate) const KVM_FALLBACK: &str =
    "KVM guests do not boot here; using TCG (emulated: timings are functional only)";

/// Boots a guest per `spec` and runs `job` in it.
pub fn run_job(spec: &GuestSpec, job: &Job) -> Result<JobOutput, GuestError> {
    let qemu = qemu::qemu_binary()?;
    let kernel = resolve_kernel(&spec.kernel)?;
    let dir = tempfile_dir()?;
    let initramfs = initramfs::build(&kernel, job, dir.path())?;
    let version = qemu::qemu_version(&qemu);
    let mut boot = Boot {
        kernel: &kernel,
        initramfs: &initramfs,
        dir: dir.path(),
        vcpus: spec.vcpus.max(1),
        memory_mib: spec.memory_mib,
        kvm: false,
        wire: None,
    };
    let try_kvm = match spec.accel {
        Accel::Tcg => false,
        Accel::Kvm => {
            open_kvm().map_err(|e| GuestError::Kvm(format!("/dev/kvm: {e}")))?;
            true
        }
        Accel::Auto => open_kvm().is_ok() && !kvm_hangs_cached(&version),
    };
    if try_kvm {
        boot.kvm = true;
        let outcome = qemu::boot_and_wait(&qemu, &boot, Some(KVM_READY), job.timeout)?;
        match kvm_failure(&outcome) {
            None => return finish(job, &boot, &version, outcome),
            Some(why) if spec.accel == Accel::Kvm => return Err(GuestError::Kvm(why)),
            Some(_) => {
                remember_kvm_hangs(&version);
                eprintln!("{KVM_FALLBACK}");
                boot.kvm = false;
            }
        }
    }
    let mut outcome = qemu::boot_and_wait(&qemu, &boot, None, job.timeout)?;
    if died_before_init(&outcome) {
        // An emulated kernel that dies before its init (seen here: 6.12
        // under TCG, now and then, "Fatal exception in interrupt") ran none
        // of the job: booting it again loses nothing, and says so.
        eprintln!(
            "stackbench: the guest kernel stopped before its init started ({}); booting it \
             once more",
            qemu::console_summary(boot.dir)
        );
        outcome = qemu::boot_and_wait(&qemu, &boot, None, job.timeout)?;
    }
    finish(job, &boot, &version, outcome)
}

/// Whether the guest's kernel stopped before its init said ready, with
/// nothing from qemu itself: the job never started.
pub(crate) fn died_before_init(outcome: &Outcome) -> bool {
    matches!(
        outcome,
        Outcome::Exited { frames, qemu_stderr }
            if !frames.ready && qemu_stderr.trim().is_empty()
    )
}

pub(crate) fn tempfile_dir() -> Result<tempfile::TempDir, GuestError> {
    tempfile::Builder::new()
        .prefix("stackbench-guest-")
        .tempdir()
        .map_err(|e| GuestError::io("create a temporary directory for the guest", e))
}

pub(crate) fn finish(
    job: &Job,
    boot: &Boot,
    version: &str,
    outcome: Outcome,
) -> Result<JobOutput, GuestError> {
    let tail = || qemu::console_summary(boot.dir);
    match outcome {
        Outcome::Ended { frames, boot_s } => {
            if let Some(detail) = frames.failure {
                return Err(GuestError::Init {
                    detail,
                    tail: tail(),
                });
            }
            let info = GuestEnvironment {
                // The package booted (a pattern resolved) or the path.
                kernel: boot.kernel.source.clone(),
                kernel_release: frames
                    .release
                    .unwrap_or_else(|| boot.kernel.release.clone()),
                accel: if boot.kvm { "kvm" } else { "tcg" }.to_string(),
                emulated: !boot.kvm,
                vcpus: boot.vcpus,
                memory_mib: boot.memory_mib,
                qemu_version: version.to_string(),
                host_kernel_release: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                    .map(|t| t.trim().to_string())
                    .unwrap_or_default(),
                boot_s,
                wire: match boot.wire {
                    Some(_) => Wire::BACKEND.to_string(),
                    None => String::new(),
                },
                adapter: None,
                peer: None,
            };
            Ok(JobOutput {
                status: frames.status.unwrap_or(-1),
                stdout: frames.stdout,
                stderr: frames.stderr,
                info,
                console_tail: qemu::console_tail(boot.dir, 40),
            })
        }
        Outcome::TimedOut | Outcome::NotReady => Err(GuestError::Timeout {
            timeout_s: job.timeout.as_secs(),
            tail: tail(),
        }),
        Outcome::Exited {
            frames,
            qemu_stderr,
        } => {
            let detail = match qemu_stderr.lines().find(|l| !l.trim().is_empty()) {
                Some(line) => format!("qemu: {}", line.trim()),
                None if frames.ready => "the guest powered off or panicked during the job".into(),
                None => "the kernel did not start the guest's init".into(),
            };
            Err(GuestError::NoResult {
                detail,
                tail: tail(),
            })
        }
    }
}

/// Why a KVM boot failed before the guest said ready, if it did.
pub(crate) fn kvm_failure(outcome: &Outcome) -> Option<String> {
    match outcome {
        Outcome::NotReady => Some(format!(
            "the guest did not boot within {} s",
            KVM_READY.as_secs()
        )),
        Outcome::Exited {
            frames,
            qemu_stderr,
        } if !frames.ready => {
            let line = qemu_stderr.lines().find(|l| !l.trim().is_empty());
            Some(
                line.map_or("qemu exited before the guest booted".into(), |l| {
                    format!("qemu: {}", l.trim())
                }),
            )
        }
        _ => None,
    }
}

pub(crate) fn open_kvm() -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
}

/// The cached verdict "KVM guests do not boot here", per host kernel and qemu version.
fn kvm_verdict_path(qemu_version: &str) -> PathBuf {
    let host = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    cache_dir().join(format!("kvm-hangs-{}-qemu-{qemu_version}", host.trim()))
}

pub(crate) fn kvm_hangs_cached(qemu_version: &str) -> bool {
    kvm_verdict_path(qemu_version).exists()
}

pub(crate) fn remember_kvm_hangs(qemu_version: &str) {
    let path = kvm_verdict_path(qemu_version);
    let _ = std::fs::create_dir_all(path.parent().unwrap_or(Path::new(".")));
    let _ = std::fs::write(
        path,
        "KVM guests did not signal ready within 15 s; Accel::Auto uses TCG\n",
    );
}
