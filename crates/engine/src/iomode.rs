//! Which I/O backend a run actually gets. `io = uring` covers closed-loop RR
//! and STR over the fd-based transports `tcp` and `unix`, driver and
//! responder; every other case (TLS and MPTCP, think time, open loop, ramp,
//! CRR) and a kernel without io_uring run on epoll, and [`effective`] says
//! which case it was, so the stored setting is the one measured. `io = auto`
//! (the default) takes the backend that measured better for the workload
//! ([`auto_choice`]), silently.
//!
//! io_uring is detected at run time, once per process: the
//! `kernel.io_uring_disabled` sysctl (2: off for everyone; 1: only for the
//! `kernel.io_uring_group`, which the probe then settles) and a real
//! `io_uring_setup` call (ENOSYS: not built in; EPERM: refused, e.g. by a
//! seccomp filter in a container).

use std::io;
use std::sync::OnceLock;
use std::time::Duration;

use io_uring::{types, IoUring};

use stackbench_model::{IoMode, Kind};

use crate::driver::RunConfig;

/// Whether this process can use io_uring; the error says why not.
pub fn uring_available() -> Result<(), String> {
    static PROBE: OnceLock<Result<(), String>> = OnceLock::new();
    PROBE.get_or_init(probe).clone()
}

fn probe() -> Result<(), String> {
    let disabled = std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled")
        .ok()
        .and_then(|t| t.trim().parse::<u32>().ok());
    if disabled == Some(2) {
        return Err("this kernel has io_uring switched off (kernel.io_uring_disabled = 2)".into());
    }
    match io_uring::IoUring::new(2) {
        Ok(_) => Ok(()),
        Err(e) => Err(match e.raw_os_error() {
            Some(libc::ENOSYS) => "this kernel has no io_uring (io_uring_setup: ENOSYS)".into(),
            Some(libc::EPERM) => {
                "io_uring_setup is not permitted here (EPERM: kernel.io_uring_disabled, \
                 or a seccomp filter)"
                    .into()
            }
            _ => format!("io_uring_setup failed: {e}"),
        }),
    }
}

/// The backend `cfg` runs with, and when it is not the one asked for, why
/// (one line naming the case, for the run's warnings; `auto` never warns).
pub fn effective(cfg: &RunConfig) -> (IoMode, Option<String>) {
    match cfg.io {
        IoMode::Epoll => return (IoMode::Epoll, None),
        IoMode::Auto => return (auto_choice(cfg), None),
        IoMode::Uring => {}
    }
    match uring_unsupported(cfg).map_or_else(uring_available, Err) {
        Ok(()) => (IoMode::Uring, None),
        Err(why) => (
            IoMode::Epoll,
            Some(format!("io uring not used, this run measured epoll: {why}")),
        ),
    }
}

/// What `io = auto` picks for `cfg`, from bench/ab.sh on the 2-CPU reference
/// VM (7 interleaved pairs, one driver thread, uring against epoll):
/// RR100(1kB/1kB) +27% rate and -21% CPU per transaction each side, RR10(4kB/4kB)
/// +6% and -8%, but STR3(1B/20MB) -21% rate at +36% client CPU. So io_uring
/// for closed-loop RR whose workers each hold 2 or more connections, when
/// this kernel has it; epoll otherwise — streams, CRR, paced classes, TLS,
/// and a lone connection per worker, which epoll's direct waiting serves
/// with two syscalls per transaction (`driver::direct`).
pub fn auto_choice(cfg: &RunConfig) -> IoMode {
    let rr_only = cfg.workload.classes.iter().all(|c| c.kind == Kind::Rr);
    let shared = cfg.workload.total_clients() >= 2 * cfg.threads.max(1) as u64;
    if rr_only && shared && uring_unsupported(cfg).is_none() && uring_available().is_ok() {
        IoMode::Uring
    } else {
        IoMode::Epoll
    }
}

/// The first case of `cfg` the io_uring backend does not cover.
fn uring_unsupported(cfg: &RunConfig) -> Option<String> {
    if !crate::transport::row(cfg.transport).uring() {
        return Some(format!(
            "transport {} is not covered by the io_uring backend (tcp and unix are)",
            cfg.transport.name()
        ));
    }
    if cfg.pacing.ramp.is_some() {
        return Some("a connection ramp is not covered by the io_uring backend".into());
    }
    let paced = cfg.workload.classes.iter().find(|c| {
        stackbench_model::Pacing::effective(c.pacing, cfg.pacing.think, cfg.pacing.rate).is_some()
    });
    if paced.is_some() {
        return Some(
            "think time and open-loop rates are not covered by the io_uring backend (closed \
             loop is)"
                .into(),
        );
    }
    if cfg.workload.classes.iter().any(|c| c.kind == Kind::Crr) {
        return Some("CRR is not covered by the io_uring backend (RR and STR are)".into());
    }
    None
}

/// A ring with the cheapest completion handling this kernel offers: task
/// work run only when this (single) thread enters to reap (Linux 6.1), else
/// cooperative task work (5.19), else the plain ring. Every enter of both
/// sides asks for completions ([`enter`]), busy-polling ones with a zero
/// wait, so deferred work is always run.
pub(crate) fn build(entries: u32) -> io::Result<IoUring> {
    let cq = entries * 2;
    let deferred = IoUring::builder()
        .setup_cqsize(cq)
        .setup_single_issuer()
        .setup_defer_taskrun()
        .build(entries);
    if let Ok(r) = deferred {
        return Ok(r);
    }
    IoUring::builder()
        .setup_cqsize(cq)
        .setup_coop_taskrun()
        .build(entries)
        .or_else(|_| IoUring::builder().setup_cqsize(cq).build(entries))
}

/// Submits what is queued on `ring` and waits up to `wait` (zero: not at
/// all, but completions are still reaped) for a completion, in one
/// `io_uring_enter`. ETIME (the wait ended), EINTR and EBUSY (completions to
/// reap first) all mean: go on with the loop.
pub(crate) fn enter(ring: &IoUring, wait: Duration) {
    let ts = types::Timespec::from(wait);
    let _ = ring
        .submitter()
        .submit_with_args(1, &types::SubmitArgs::new().timespec(&ts));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_kernel_has_io_uring_or_says_why_not() {
        match uring_available() {
            Ok(()) => {}
            Err(e) => {
                eprintln!("io_uring unavailable here: {e}");
                assert!(!e.contains('\n'));
            }
        }
    }
}
