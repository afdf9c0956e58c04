//! Reading the kernel's accounting files: `/proc/stat`, `/proc/<pid>/stat`,
//! `/proc/<pid>/status`, `/proc/<pid>/io`, `/proc/net/sockstat{,6}`, cgroup v2 `cpu.stat`, the
//! cpufreq governor and SLUB's object sizes. The parsers in [`parse`] are pure; the `read_*` functions
//! here are thin wrappers that read the real files, plus the two `sysconf`
//! values (clock ticks per second, page size) the counters are scaled by.
//!
//! Counter differences go through [`counter_delta`], which handles wrap the way
//! netperf's `tick_subtract` does and saturates where netperf would not.

mod error;
pub mod parse;

use std::collections::BTreeMap;
use std::path::Path;

pub use error::ProcError;
pub use parse::{
    parse_cgroup_cpu_stat, parse_cgroup_v2_path, parse_governor, parse_pid_io, parse_pid_stat,
    parse_proc_stat, parse_sockstat, parse_statm_resident_pages, parse_status_vm_rss_bytes,
    CgroupCpuStat, CpuTimes, DiskBytes, ProcessTicks, SockStat,
};

/// `end - start` of a monotonically increasing kernel counter.
///
/// - `end >= start`: the plain difference.
/// - `end < start` with `start` inside 32 bits: a 32-bit kernel counter wrapped
///   (netperf's `tick_subtract` rule), so the difference is taken modulo 2³² —
///   but only when that difference is under 2³¹. A larger one cannot be a wrap
///   within one measurement window (2³¹ ticks is 248 days of one CPU at
///   100 Hz); it is a counter that stepped backwards, which the kernel
///   documents for `iowait`, and reads as 0.
/// - `end < start` with `start` beyond 32 bits: a 64-bit counter cannot wrap
///   in practice, so the counter was reset (CPU hot-unplugged and back): 0,
///   where netperf would report an absurd 2⁶⁴-sized value.
pub fn counter_delta(start: u64, end: u64) -> u64 {
    if end >= start {
        return end - start;
    }
    if start <= u64::from(u32::MAX) {
        let wrapped = (end.wrapping_sub(start)) & u64::from(u32::MAX);
        if wrapped < 1 << 31 {
            return wrapped;
        }
    }
    0
}

impl CpuTimes {
    /// Per-field [`counter_delta`] from `self` (earlier) to `later`.
    pub fn delta_to(&self, later: &CpuTimes) -> CpuTimes {
        let d = counter_delta;
        CpuTimes {
            user: d(self.user, later.user),
            nice: d(self.nice, later.nice),
            system: d(self.system, later.system),
            idle: d(self.idle, later.idle),
            iowait: d(self.iowait, later.iowait),
            irq: d(self.irq, later.irq),
            softirq: d(self.softirq, later.softirq),
            steal: d(self.steal, later.steal),
            guest: d(self.guest, later.guest),
            guest_nice: d(self.guest_nice, later.guest_nice),
        }
    }

    /// Ticks spent doing work: user + nice + system + irq + softirq + steal
    /// (guest time is inside user and nice already). See the `cpu` module for
    /// why iowait is idle and steal is busy.
    pub fn busy(&self) -> u64 {
        self.user + self.nice + self.system + self.irq + self.softirq + self.steal
    }

    /// Ticks the CPU had nothing to run: idle + iowait.
    pub fn idle_total(&self) -> u64 {
        self.idle + self.iowait
    }

    /// All ticks that elapsed on this CPU.
    pub fn total(&self) -> u64 {
        self.busy() + self.idle_total()
    }

    /// Field-wise sum, for adding up the CPUs of a set.
    pub fn add(&mut self, other: &CpuTimes) {
        self.user += other.user;
        self.nice += other.nice;
        self.system += other.system;
        self.idle += other.idle;
        self.iowait += other.iowait;
        self.irq += other.irq;
        self.softirq += other.softirq;
        self.steal += other.steal;
        self.guest += other.guest;
        self.guest_nice += other.guest_nice;
    }
}

/// Clock ticks per second of the `/proc` CPU counters (`sysconf(_SC_CLK_TCK)`,
/// USER_HZ; 100 on every mainstream Linux build).
pub fn clock_ticks_per_s() -> u64 {
    // SAFETY: sysconf has no preconditions; it returns -1 on failure.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    // USER_HZ is part of the kernel ABI and fixed at 100 on x86 and arm64;
    // fall back to it rather than fail if sysconf does.
    u64::try_from(ticks).ok().filter(|&t| t > 0).unwrap_or(100)
}

/// Page size in bytes (`sysconf(_SC_PAGESIZE)`): sockstat `mem` and statm
/// count pages, and arm64 or ppc64 kernels may use 16 or 64 KiB pages, so a
/// 4096 constant would be wrong there.
pub fn page_size_bytes() -> u64 {
    // SAFETY: sysconf has no preconditions; it returns -1 on failure.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(size).ok().filter(|&s| s > 0).unwrap_or(4096)
}

/// `CLOCK_MONOTONIC` in nanoseconds. Unlike `Instant` it is a plain number, so
/// samples carrying it can travel over the control connection; it is only
/// ever subtracted from another reading of the same host.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists
    // on Linux, so the call cannot fail.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    let secs = u64::try_from(ts.tv_sec).unwrap_or(0);
    let nanos = u64::try_from(ts.tv_nsec).unwrap_or(0);
    secs.saturating_mul(1_000_000_000).saturating_add(nanos)
}

fn read(path: impl AsRef<Path>) -> Result<String, ProcError> {
    let path = path.as_ref();
    std::fs::read_to_string(path).map_err(|source| ProcError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// Per-CPU counters of every online CPU.
pub fn read_proc_stat() -> Result<BTreeMap<usize, CpuTimes>, ProcError> {
    parse_proc_stat(&read("/proc/stat")?)
}

/// utime and stime of one process (all its threads).
pub fn read_pid_ticks(pid: u32) -> Result<ProcessTicks, ProcError> {
    parse_pid_stat(&read(format!("/proc/{pid}/stat"))?)
}

/// Storage bytes read and written by one process (`/proc/<pid>/io`; another
/// user's process needs ptrace access, as root has).
pub fn read_pid_io(pid: u32) -> Result<DiskBytes, ProcError> {
    parse_pid_io(&read(format!("/proc/{pid}/io"))?)
}

/// Resident set size of one process in bytes: `VmRSS` from `status`, or
/// statm's resident pages × page size when status has no such line.
pub fn read_rss_bytes(pid: u32) -> Result<u64, ProcError> {
    if let Some(bytes) = parse_status_vm_rss_bytes(&read(format!("/proc/{pid}/status"))?)? {
        return Ok(bytes);
    }
    let pages = parse_statm_resident_pages(&read(format!("/proc/{pid}/statm"))?)?;
    Ok(pages.saturating_mul(page_size_bytes()))
}

/// TCP socket counts and memory of the host (network namespace of this
/// process). sockstat6 is optional: it is absent when IPv6 is disabled.
pub fn read_sockstat() -> Result<SockStat, ProcError> {
    let v4 = read("/proc/net/sockstat")?;
    let v6 = read("/proc/net/sockstat6").ok();
    parse_sockstat(&v4, v6.as_deref())
}

/// The bytes one object of each of `caches` takes in its slab, summed:
/// SLUB's `/sys/kernel/slab/<cache>/slab_size` (object plus metadata and
/// alignment). `None` when any cache cannot be read (no SLUB sysfs, or a
/// cache merged away under another name).
pub fn read_slab_object_bytes(caches: &[&str]) -> Option<u64> {
    caches.iter().try_fold(0u64, |sum, cache| {
        let text = std::fs::read_to_string(format!("/sys/kernel/slab/{cache}/slab_size")).ok()?;
        Some(sum + text.trim().parse::<u64>().ok()?)
    })
}

/// The cgroup v2 `cpu.stat` of the cgroup `pid` is in; `Ok(None)` when the
/// system has no unified hierarchy or the cgroup has no cpu.stat (cgroup v1
/// or hybrid layouts, some containers).
pub fn read_cgroup_cpu_stat(pid: u32) -> Result<Option<CgroupCpuStat>, ProcError> {
    let membership = read(format!("/proc/{pid}/cgroup"))?;
    let Some(rel) = parse_cgroup_v2_path(&membership) else {
        return Ok(None);
    };
    let path = Path::new("/sys/fs/cgroup")
        .join(rel.trim_start_matches('/'))
        .join("cpu.stat");
    match std::fs::read_to_string(&path) {
        Ok(text) => parse_cgroup_cpu_stat(&text).map(Some),
        Err(_) => Ok(None),
    }
}

/// The cpufreq scaling governor of one CPU; `None` where there is no cpufreq
/// driver (most VMs and containers) or the file cannot be read.
pub fn read_governor(cpu: usize) -> Option<String> {
    let path = format!("/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor");
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| parse_governor(&t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counter_delta_plain_wrap_and_backwards() {
        assert_eq!(counter_delta(10, 25), 15);
        assert_eq!(counter_delta(7, 7), 0);
        // 32-bit wrap: 0xFFFF_FFF0 → 0x10 is 0x20 ticks.
        assert_eq!(counter_delta(0xFFFF_FFF0, 0x10), 0x20);
        // A 32-bit counter stepping back a little (iowait does) is not a wrap.
        assert_eq!(counter_delta(1_000, 990), 0);
        // A 64-bit counter going backwards is a reset, never 2^64-ish.
        assert_eq!(counter_delta(5_000_000_000, 10), 0);
    }

    #[test]
    fn cpu_times_delta_busy_total() {
        let a = CpuTimes {
            user: 100,
            idle: 1000,
            ..CpuTimes::default()
        };
        let b = CpuTimes {
            user: 150,
            nice: 5,
            system: 20,
            idle: 1100,
            iowait: 3,
            irq: 1,
            softirq: 4,
            steal: 2,
            guest: 10, // inside user already: not counted again
            guest_nice: 0,
        };
        let d = a.delta_to(&b);
        assert_eq!(d.busy(), 50 + 5 + 20 + 1 + 4 + 2);
        assert_eq!(d.idle_total(), 103);
        assert_eq!(d.total(), 82 + 103);
    }

    #[test]
    fn sysconf_values_are_sane() {
        assert!((1..=10_000).contains(&clock_ticks_per_s()));
        assert!(page_size_bytes() >= 4096 && page_size_bytes().is_power_of_two());
        let t0 = monotonic_ns();
        assert!(monotonic_ns() >= t0);
    }

    /// Reads this machine's real files, with no skip: every run's CPU and
    /// memory figures come from them, so a machine without /proc is one the
    /// tool cannot measure on, and the test says so by failing.
    #[test]
    fn real_proc_files_give_sane_values() {
        let cpus = read_proc_stat().unwrap();
        assert!(!cpus.is_empty());
        assert!(cpus.values().all(|c| c.total() > 0));
        let me = std::process::id();
        let ticks = read_pid_ticks(me).unwrap();
        assert!(ticks.utime + ticks.stime < 1_000_000_000);
        let rss = read_rss_bytes(me).unwrap();
        assert!(rss > 100 * 1024 && rss < 64 << 30, "rss {rss}");
        let sock = read_sockstat().unwrap();
        assert!(sock.tcp_alloc < 100_000_000);
        // May be None (cgroup v1, no cpufreq): only the call must not fail.
        read_cgroup_cpu_stat(me).unwrap();
        let _ = read_governor(*cpus.keys().next().unwrap());
    }
}
