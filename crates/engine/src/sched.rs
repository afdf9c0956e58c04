//! Applies `gen_sched` ([`GenSched`]) to the calling thread with
//! `sched_setattr(2)`: each driver worker calls [`apply`] as it starts (so
//! every agent's workers are scheduled alike), and the run checks the value
//! before anything starts with [`check`], on a thread of its own that then
//! exits, so that a kernel that refuses it is named in one line instead of
//! failing the workers mid-run.
//!
//! Why per thread: a scheduling policy is a thread's, and the driver's
//! other threads (the watch, the control connection) wake rarely and need
//! no precedence over its workers.

use std::io;

use stackbench_model::settings::{GenSched, SettingValue};

/// `struct sched_attr` (SCHED_ATTR_SIZE_VER1, 56 bytes), which libc does
/// not define.
#[repr(C)]
#[derive(Default)]
struct SchedAttr {
    size: u32,
    policy: u32,
    flags: u64,
    nice: i32,
    priority: u32,
    runtime_ns: u64,
    deadline_ns: u64,
    period_ns: u64,
    util_min: u32,
    util_max: u32,
}

/// The calling thread's attributes for `s` (the default: SCHED_OTHER at
/// nice 0 with the kernel's slice, `sched_runtime` 0).
fn attr(s: GenSched) -> SchedAttr {
    let (policy, priority, runtime_ns) = match s {
        GenSched::Default => (libc::SCHED_OTHER, 0, 0),
        GenSched::Slice(d) => (libc::SCHED_OTHER, 0, d.as_nanos() as u64),
        GenSched::Fifo(p) => (libc::SCHED_FIFO, u32::from(p), 0),
        GenSched::Rr(p) => (libc::SCHED_RR, u32::from(p), 0),
    };
    SchedAttr {
        size: std::mem::size_of::<SchedAttr>() as u32,
        policy: policy as u32,
        priority,
        runtime_ns,
        ..SchedAttr::default()
    }
}

/// Schedules the calling thread as `s` says; [`GenSched::Default`] leaves
/// it as it is (the user's own policy, which may not be SCHED_OTHER).
pub fn apply(s: GenSched) -> Result<(), String> {
    if s == GenSched::Default {
        return Ok(());
    }
    let a = attr(s);
    // SAFETY: `a` is a valid sched_attr of the size it names; pid 0 is the
    // calling thread; flags 0.
    let rc = unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &a as *const SchedAttr, 0u32) };
    if rc == 0 {
        return Ok(());
    }
    Err(refusal(s, &io::Error::last_os_error()))
}

/// Whether this kernel and this process's rights take `s`: applied on a
/// short-lived thread of its own.
pub fn check(s: GenSched) -> Result<(), String> {
    if s == GenSched::Default {
        return Ok(());
    }
    std::thread::scope(|scope| {
        scope
            .spawn(|| apply(s))
            .join()
            .unwrap_or_else(|_| Err("the scheduling check panicked".to_string()))
    })
}

/// One line naming the value, what the kernel said and the fix.
fn refusal(s: GenSched, e: &io::Error) -> String {
    let value = s.text();
    let why = match (s, e.raw_os_error()) {
        (GenSched::Slice(_), Some(libc::EINVAL)) => format!(
            "this kernel ({}) takes no slice of a SCHED_OTHER thread's own (sched_runtime, \
             Linux 6.12's EEVDF): use default or fifo:N",
            kernel_release()
        ),
        (GenSched::Fifo(p) | GenSched::Rr(p), Some(libc::EPERM)) => format!(
            "the kernel refuses a real-time priority {p} to this process (RLIMIT_RTPRIO {}, \
             no CAP_SYS_NICE): raise `ulimit -r` to {p}, run with CAP_SYS_NICE, or use slice:DURATION",
            rtprio_limit()
        ),
        _ => format!("the kernel refuses it ({e})"),
    };
    format!("--gen-sched {value}: {why}")
}

fn rtprio_limit() -> String {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit fills the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_RTPRIO, &mut r) } != 0 {
        return "unknown".to_string();
    }
    r.rlim_cur.to_string()
}

fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map_or_else(|_| "unknown".to_string(), |s| s.trim().to_string())
}

/// The calling thread's policy and, for SCHED_OTHER, its slice in ns
/// (`sched_getattr`): what a test reads back.
pub fn current() -> io::Result<(i32, u32, u64)> {
    let mut a = SchedAttr::default();
    // SAFETY: `a` is writable and as large as the size passed; pid 0 is the
    // calling thread; flags 0.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_sched_getattr,
            0,
            &mut a as *mut SchedAttr,
            std::mem::size_of::<SchedAttr>() as u32,
            0u32,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((a.policy as i32, a.priority, a.runtime_ns))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Whatever this kernel allows, applying a value and reading it back
    /// agree, and a refusal is one line naming the value.
    #[test]
    fn a_slice_is_applied_or_refused_in_one_line() {
        let slice = GenSched::Slice(Duration::from_micros(100));
        std::thread::spawn(move || match apply(slice) {
            Ok(()) => {
                let (policy, _, runtime_ns) = current().unwrap();
                assert_eq!((policy, runtime_ns), (libc::SCHED_OTHER, 100_000));
            }
            Err(e) => {
                assert!(e.starts_with("--gen-sched slice:100us: "), "{e}");
                assert!(!e.contains('\n'));
            }
        })
        .join()
        .unwrap();
    }

    #[test]
    fn fifo_is_applied_or_refused_naming_the_limit() {
        std::thread::spawn(|| match apply(GenSched::Fifo(3)) {
            Ok(()) => {
                let (policy, priority, _) = current().unwrap();
                assert_eq!((policy, priority), (libc::SCHED_FIFO, 3));
            }
            Err(e) => assert!(e.starts_with("--gen-sched fifo:3: "), "{e}"),
        })
        .join()
        .unwrap();
        assert_eq!(check(GenSched::Default), Ok(()));
    }
}
