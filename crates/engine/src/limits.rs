//! File-descriptor budget: every data connection is one fd on each side, so a
//! run of N connections needs RLIMIT_NOFILE above N in both processes.
//!
//! Each user of connections (a driver run, a responder test) reserves its
//! count for as long as it needs them; the soft limit is raised to cover all
//! reservations of the process at once (a driver and an in-process responder
//! share one process in tests), then the hard limit where the process may
//! (root, up to `fs.nr_open`). When neither works the error is one line naming
//! the limit and the fix. Limits are never lowered again: fds of a finished
//! test may still be closing.

use std::sync::{Mutex, OnceLock};

/// Descriptors kept free for everything that is not a data connection:
/// stdio, epoll instances, control connections, listeners, /proc reads.
const SPARE_FDS: u64 = 256;

/// Sum of the live reservations of this process.
static RESERVED: Mutex<u64> = Mutex::new(0);

/// Connections reserved until dropped.
#[derive(Debug)]
pub struct FdReservation {
    count: u64,
}

impl Drop for FdReservation {
    fn drop(&mut self) {
        let mut total = RESERVED.lock().unwrap_or_else(|p| p.into_inner());
        *total = total.saturating_sub(self.count);
    }
}

/// Reserves descriptors for `connections` more connections, raising
/// RLIMIT_NOFILE as needed. The error says which limit is short and how to
/// raise it.
pub fn reserve_fds(connections: u64) -> Result<FdReservation, String> {
    let mut total = RESERVED.lock().unwrap_or_else(|p| p.into_inner());
    let need = baseline_fds() + SPARE_FDS + *total + connections;
    raise_nofile(need).map_err(|(soft, hard)| limit_message(connections, need, soft, hard))?;
    *total += connections;
    Ok(FdReservation { count: connections })
}

/// Descriptors the process had open when it first reserved any.
fn baseline_fds() -> u64 {
    static BASE: OnceLock<u64> = OnceLock::new();
    *BASE.get_or_init(|| std::fs::read_dir("/proc/self/fd").map_or(64, |d| d.count() as u64))
}

/// Makes the soft limit at least `need`; `Err((soft, hard))` when not allowed.
fn raise_nofile(need: u64) -> Result<(), (u64, u64)> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit fills the struct.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Err((0, 0));
    }
    let (soft, hard) = (lim.rlim_cur, lim.rlim_max);
    if soft >= need {
        return Ok(());
    }
    let set = |cur: u64, max: u64| {
        let l = libc::rlimit {
            rlim_cur: cur,
            rlim_max: max,
        };
        // SAFETY: setrlimit reads the struct.
        unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &l) == 0 }
    };
    // Within the hard limit anyone may raise; above it only a process with
    // CAP_SYS_RESOURCE (up to fs.nr_open), and then the hard limit moves with
    // it. Root in a container may lack it (this sandbox does: EPERM).
    if (need <= hard && set(need, hard)) || set(need, need.max(hard)) {
        Ok(())
    } else {
        Err((soft, hard))
    }
}

/// How many connections one process can hold under the hard open-file
/// limit (what it may raise its soft limit to), after what it already has
/// open and the spare kept for everything else: above it, a run needs
/// several processes (agents).
pub fn connections_per_process() -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return u64::MAX;
    }
    lim.rlim_max.saturating_sub(baseline_fds() + SPARE_FDS)
}

fn limit_message(connections: u64, need: u64, soft: u64, hard: u64) -> String {
    let nr_open = std::fs::read_to_string("/proc/sys/fs/nr_open")
        .ok()
        .and_then(|t| t.trim().parse::<u64>().ok());
    let root = match nr_open {
        Some(n) if n < need => format!(
            "; root may go above the hard limit only up to fs.nr_open = {n}: first \
             `sysctl -w fs.nr_open={need}`"
        ),
        Some(n) => format!(
            "; a process with CAP_SYS_RESOURCE (root, unless a container drops it) may raise \
             the hard limit up to fs.nr_open = {n}"
        ),
        None => "; a process with CAP_SYS_RESOURCE may raise the hard limit up to fs.nr_open"
            .to_string(),
    };
    format!(
        "{connections} connections need {need} file descriptors but RLIMIT_NOFILE is {soft} \
         (hard limit {hard}): raise it with `ulimit -n {need}` or use fewer clients{root}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_reservations_fit_and_are_released() {
        let r = reserve_fds(10).unwrap();
        assert_eq!(r.count, 10);
        drop(r);
    }

    #[test]
    fn an_impossible_reservation_names_the_limit_and_the_fix() {
        // More than any kernel allows (fs.nr_open is at most 2^30 or so).
        let e = reserve_fds(1 << 40).unwrap_err();
        assert!(
            e.contains("RLIMIT_NOFILE") && e.contains("ulimit -n"),
            "{e}"
        );
        assert!(e.contains("fs.nr_open"), "{e}");
        assert!(!e.contains('\n'));
    }
}
