//! Two guests on one wire: the driver's guest and the responder's guest,
//! each with its own kernel and a virtio-net adapter, joined by qemu's
//! `dgram` backend (see [`Wire`]). Both kernels are resolved, checked for
//! virtio-net and packed before either qemu starts (bad input costs no
//! boot); both boot at once; once the driver's guest ends, the responder's
//! has [`PEER_GRACE`] to end on its own (its job is told over the wire)
//! before it is killed. Every qemu is killed on every early return (see
//! `qemu::Running`).

use std::path::Path;
use std::time::{Duration, Instant};

use crate::error::GuestError;
use crate::kernel::{resolve_kernel, Kernel};
use crate::qemu::{self, Boot, Outcome, Running, Wire, POLL};
use crate::{died_before_init, finish, initramfs, kvm_failure, open_kvm, Accel, GuestSpec};
use crate::{kvm_hangs_cached, remember_kvm_hangs, tempfile_dir, Job, JobOutput, KVM_READY};

/// The driver guest's address on the wire.
pub const DRIVER_ADDRESS: &str = "10.77.0.1";
/// The responder guest's address on the wire.
pub const RESPONDER_ADDRESS: &str = "10.77.0.2";
/// The wire's prefix length.
const PREFIX: u8 = 24;

/// How long the responder's guest may take to power off after the
/// driver's ended (its job ends when the driver says goodbye; an emulated
/// kernel powers off in a second or two).
const PEER_GRACE: Duration = Duration::from_secs(30);

/// What came back from a pair.
#[derive(Debug)]
pub struct PairOutput {
    pub driver: JobOutput,
    /// The responder's guest: its output, or why there is none (the
    /// driver's result stands without it).
    pub responder: Result<JobOutput, GuestError>,
}

/// One side, packed and ready to boot.
struct Side {
    kernel: Kernel,
    dir: tempfile::TempDir,
    initramfs: std::path::PathBuf,
    wire: Wire,
}

/// Boots the driver's guest (`driver`, `driver_job`) and the responder's
/// (`responder`, `responder_job`) on one wire and runs each job.
pub fn run_pair(
    driver: &GuestSpec,
    driver_job: &Job,
    responder: &GuestSpec,
    responder_job: &Job,
) -> Result<PairOutput, GuestError> {
    let qemu = qemu::qemu_binary()?;
    let sockets = tempfile_dir()?;
    let a_sock = sockets.path().join("driver.sock");
    let b_sock = sockets.path().join("responder.sock");
    // Both kernels first: a peer kernel that does not exist costs no packing.
    let ka = checked_kernel(driver)?;
    let kb = checked_kernel(responder)?;
    let a = pack(ka, driver_job, DRIVER_ADDRESS, 1, &a_sock, &b_sock)?;
    let b = pack(kb, responder_job, RESPONDER_ADDRESS, 2, &b_sock, &a_sock)?;
    let version = qemu::qemu_version(&qemu);
    let timeout = driver_job.timeout;
    let accel = pair_accel(driver.accel, responder.accel)?;
    let try_kvm = match accel {
        Accel::Tcg => false,
        Accel::Kvm => true,
        Accel::Auto => open_kvm().is_ok() && !kvm_hangs_cached(&version),
    };
    if try_kvm {
        let (ba, bb) = (vm(&a, driver, true), vm(&b, responder, true));
        let (oa, ob) = boot_pair(&qemu, &ba, &bb, Some(KVM_READY), timeout)?;
        match kvm_failure(&oa).or_else(|| kvm_failure(&ob)) {
            None => return outputs(driver_job, responder_job, (&ba, oa), (&bb, ob), &version),
            Some(why) if accel == Accel::Kvm => return Err(GuestError::Kvm(why)),
            Some(_) => {
                remember_kvm_hangs(&version);
                eprintln!("{}", crate::KVM_FALLBACK);
            }
        }
    }
    let (ba, bb) = (vm(&a, driver, false), vm(&b, responder, false));
    let (mut oa, mut ob) = boot_pair(&qemu, &ba, &bb, None, timeout)?;
    if died_before_init(&oa) || died_before_init(&ob) {
        // As for one guest (see `run_job`): an emulated kernel that stopped
        // before its init ran nothing; both boot again, as the wire's other
        // end saw nobody.
        let dir = if died_before_init(&oa) {
            ba.dir
        } else {
            bb.dir
        };
        eprintln!(
            "stackbench: a guest kernel of the pair stopped before its init started ({}); \
             booting the pair once more",
            qemu::console_summary(dir)
        );
        (oa, ob) = boot_pair(&qemu, &ba, &bb, None, timeout)?;
    }
    outputs(driver_job, responder_job, (&ba, oa), (&bb, ob), &version)
}

fn vm<'a>(side: &'a Side, spec: &GuestSpec, kvm: bool) -> Boot<'a> {
    Boot {
        kernel: &side.kernel,
        initramfs: &side.initramfs,
        dir: side.dir.path(),
        vcpus: spec.vcpus.max(1),
        memory_mib: spec.memory_mib,
        kvm,
        wire: Some(side.wire.clone()),
    }
}

/// Both sides must agree on KVM or TCG: one emulated side would make the
/// other's timings incomparable.
fn pair_accel(a: Accel, b: Accel) -> Result<Accel, GuestError> {
    match (a, b) {
        (x, y) if x == y => Ok(x),
        (Accel::Auto, y) => Ok(y),
        (x, Accel::Auto) => Ok(x),
        _ => Err(GuestError::Kvm(
            "the pair's guests were asked for different accelerators".into(),
        )),
    }
}

/// Resolves one side's kernel (fetching it) and checks it has virtio-net.
fn checked_kernel(spec: &GuestSpec) -> Result<Kernel, GuestError> {
    let kernel = resolve_kernel(&spec.kernel)?;
    check_virtio_net(&kernel, &spec.kernel)?;
    Ok(kernel)
}

/// Writes one side's initramfs.
fn pack(
    kernel: Kernel,
    job: &Job,
    address: &str,
    index: u8,
    local: &Path,
    remote: &Path,
) -> Result<Side, GuestError> {
    let dir = tempfile_dir()?;
    let initramfs = initramfs::build(&kernel, job, dir.path())?;
    Ok(Side {
        kernel,
        dir,
        initramfs,
        wire: Wire {
            local: local.to_path_buf(),
            remote: remote.to_path_buf(),
            mac: format!("52:54:00:5b:00:{index:02x}"),
            address: format!("{address}/{PREFIX}"),
        },
    })
}

/// The kernel has virtio-net built in (modules.builtin) or as a module.
fn check_virtio_net(kernel: &Kernel, spec: &str) -> Result<(), GuestError> {
    let builtin = std::fs::read_to_string(kernel.modules.join("modules.builtin"))
        .unwrap_or_default()
        .lines()
        .any(|l| l.ends_with("/virtio_net.ko"));
    let dir = kernel.modules.join("kernel/drivers/net");
    let module = std::fs::read_dir(&dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .any(|e| e.file_name().to_string_lossy().starts_with("virtio_net.ko"))
        })
        .unwrap_or(false);
    if builtin || module {
        return Ok(());
    }
    Err(GuestError::NoVirtioNet {
        kernel: spec.to_string(),
        release: kernel.release.clone(),
    })
}

/// Boots both and waits for both (or the deadlines).
fn boot_pair(
    qemu: &Path,
    a: &Boot,
    b: &Boot,
    ready_deadline: Option<Duration>,
    deadline: Duration,
) -> Result<(Outcome, Outcome), GuestError> {
    let mut ga = Running::start(qemu, a)?;
    let mut gb = Running::start(qemu, b)?;
    let (mut oa, mut ob) = (None, None);
    let mut a_ended: Option<Instant> = None;
    loop {
        if oa.is_none() {
            oa = ga.poll()?;
            if oa.is_some() {
                a_ended = Some(Instant::now());
            }
        }
        if ob.is_none() {
            ob = gb.poll()?;
        }
        if oa.is_some() && ob.is_some() {
            break;
        }
        let elapsed = ga.elapsed();
        let not_ready = ready_deadline
            .is_some_and(|d| elapsed > d && (!ga.ready() || !gb.ready()) && oa.is_none());
        if not_ready {
            return Ok((Outcome::NotReady, Outcome::NotReady));
        }
        if elapsed > deadline {
            oa.get_or_insert(Outcome::TimedOut);
        }
        if a_ended.is_some_and(|t| t.elapsed() > PEER_GRACE) || elapsed > deadline {
            gb.kill();
            ob.get_or_insert(Outcome::TimedOut);
        }
        std::thread::sleep(POLL);
    }
    let (Some(oa), Some(ob)) = (oa, ob) else {
        unreachable!("the loop ends with both outcomes");
    };
    Ok((oa, ob))
}

fn outputs(
    driver_job: &Job,
    responder_job: &Job,
    (ba, oa): (&Boot, Outcome),
    (bb, ob): (&Boot, Outcome),
    version: &str,
) -> Result<PairOutput, GuestError> {
    let driver = finish(driver_job, ba, version, oa)?;
    let responder = finish(responder_job, bb, version, ob);
    Ok(PairOutput { driver, responder })
}
