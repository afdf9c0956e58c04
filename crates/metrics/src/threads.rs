//! CPU time of a set of threads of this process: how a class of a mix that
//! runs on worker threads of its own (`class_workers`) is measured. The CPU-set
//! view cannot split a mix whose classes share the side's CPUs; the threads'
//! own run time can.
//!
//! Run time is the first field of `/proc/<pid>/task/<tid>/schedstat`: the
//! nanoseconds the scheduler ran the thread (user and kernel mode, clock
//! measured, not tick sampled). The user/system split comes from the thread's
//! `stat` (utime, stime in ticks) and is scaled to the run time. What this view
//! leaves out: softirq work done in interrupt context on behalf of the class's
//! sockets (on loopback most receive work runs in the sending thread's own
//! context, so is counted), and the CPU of threads that serve no class (the
//! driver's coordinator, the responder's control threads).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::cpu::{self, Work};
use crate::procfs::{self, ProcError};
use stackbench_record::{CpuAttribution, CpuBreakdown, CpuMethod, SideCpu};

/// Cumulative CPU time of a set of threads at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ThreadTimes {
    /// Scheduler run time summed over the threads, ns.
    pub run_ns: u64,
    /// utime summed over the threads, clock ticks.
    pub user_ticks: u64,
    /// stime summed over the threads, clock ticks.
    pub system_ticks: u64,
}

impl ThreadTimes {
    /// One thread of this process now.
    pub fn of_thread(tid: u32) -> Result<ThreadTimes, ProcError> {
        let dir = PathBuf::from(format!("/proc/self/task/{tid}"));
        let read = |name: &str| {
            let path = dir.join(name);
            std::fs::read_to_string(&path).map_err(|source| ProcError::Io { path, source })
        };
        let schedstat = read("schedstat")?;
        let run_ns = parse_schedstat_run_ns(&schedstat).ok_or_else(|| ProcError::Malformed {
            file: "/proc/<pid>/task/<tid>/schedstat".to_string(),
            detail: format!("{schedstat:?}"),
        })?;
        let ticks = procfs::parse_pid_stat(&read("stat")?)?;
        Ok(ThreadTimes {
            run_ns,
            user_ticks: ticks.utime,
            system_ticks: ticks.stime,
        })
    }

    pub fn add(&mut self, o: &ThreadTimes) {
        self.run_ns += o.run_ns;
        self.user_ticks += o.user_ticks;
        self.system_ticks += o.system_ticks;
    }
}

/// The run time (first field, ns) of a `schedstat` line.
pub fn parse_schedstat_run_ns(text: &str) -> Option<u64> {
    text.split_ascii_whitespace().next()?.parse().ok()
}

/// A side's CPU from its class's threads between two instants `window_s`
/// apart, on the side's `cpus` (its pinned set, or every CPU it may use):
/// `util_pct` is the threads' share of those CPUs. The per-CPU-state
/// breakdown has only user and system (scaled so that they add up to the run
/// time); the tick figures and the process view do not apply.
pub fn threads_side_cpu(
    start: &ThreadTimes,
    end: &ThreadTimes,
    cpus: &[usize],
    window_s: f64,
    work: Work,
) -> SideCpu {
    let cpu_seconds = end.run_ns.saturating_sub(start.run_ns) as f64 / 1e9;
    let user = end.user_ticks.saturating_sub(start.user_ticks) as f64;
    let system = end.system_ticks.saturating_sub(start.system_ticks) as f64;
    let (user_share, system_share) = if user + system > 0.0 {
        (user / (user + system), system / (user + system))
    } else {
        (0.0, 0.0)
    };
    let capacity_s = window_s * cpus.len().max(1) as f64;
    SideCpu {
        cpus: cpus.to_vec(),
        method: CpuMethod::Threads,
        window_s,
        cpu_seconds,
        util_pct: if capacity_s > 0.0 {
            100.0 * cpu_seconds / capacity_s
        } else {
            0.0
        },
        cpu_us_per_tran: cpu::cpu_us_per_tran(cpu_seconds, work.transactions),
        cpu_us_per_mb: cpu::cpu_us_per_mb(cpu_seconds, work.payload_bytes),
        breakdown: CpuBreakdown {
            user: cpu_seconds * user_share,
            system: cpu_seconds * system_share,
            ..CpuBreakdown::default()
        },
        attribution: CpuAttribution::Class,
        ..SideCpu::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedstat_run_time_is_the_first_field() {
        assert_eq!(parse_schedstat_run_ns("1234567 890 12\n"), Some(1_234_567));
        assert_eq!(parse_schedstat_run_ns(""), None);
    }

    #[test]
    fn this_thread_has_run() {
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() } as u32;
        // Some work, then a sleep: the running thread's sum is brought up
        // to date when it leaves the CPU.
        let mut x = 0u64;
        for i in 0..1_000_000u64 {
            x = std::hint::black_box(x.wrapping_add(i));
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
        let t = ThreadTimes::of_thread(tid).unwrap();
        assert!(t.run_ns > 0);
    }

    #[test]
    fn threads_figures_divide_run_time_by_the_class_work() {
        let start = ThreadTimes {
            run_ns: 1_000_000_000,
            user_ticks: 10,
            system_ticks: 10,
        };
        let end = ThreadTimes {
            run_ns: 1_500_000_000,
            user_ticks: 20,
            system_ticks: 40,
        };
        let work = Work {
            transactions: 1000,
            payload_bytes: 0,
        };
        let s = threads_side_cpu(&start, &end, &[0, 1], 1.0, work);
        assert_eq!(s.method, CpuMethod::Threads);
        assert_eq!(s.cpu_seconds, 0.5);
        assert_eq!(s.util_pct, 25.0);
        assert_eq!(s.cpu_us_per_tran, Some(500.0));
        assert_eq!(s.cpu_us_per_mb, None);
        assert!((s.breakdown.user - 0.125).abs() < 1e-12);
        assert!((s.breakdown.system - 0.375).abs() < 1e-12);
    }
}
