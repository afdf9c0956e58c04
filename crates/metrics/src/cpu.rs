//! CPU accounting per side: snapshots ([`CpuSample`]) taken at the same
//! instants as the transaction counts, and the pure arithmetic that turns two
//! snapshots into CPU-seconds, utilisation and CPU cost per transaction
//! ([`SideCpu`]), the "CPU Cost/Tran" of z/OS Communications Server
//! performance reports.
//!
//! Two views, as RMF has them:
//! - CPU-set view (RMF "LPAR busy"): per-CPU `/proc/stat` deltas over the CPUs a
//!   side is pinned to. It includes interrupt and softirq work done on those
//!   CPUs, which is most of the network stack and is charged to no process —
//!   the reason netperf dropped getrusage as "hopelessly inaccurate".
//! - Process view (RMF workload activity): utime + stime of the side's own
//!   processes, or its cgroup v2 `cpu.stat`.
//!
//! What counts as busy. busy = user + nice + system + irq + softirq + steal;
//! idle = idle + iowait. netperf counts everything but `idle` as busy; we
//! differ on iowait: a CPU in iowait ran nothing (any runnable task could have
//! used it), the kernel documents the counter as unreliable and able to go
//! backwards, and a network workload does no block I/O, so iowait on the
//! measured CPUs is some other process's disk wait that must not be charged to
//! the stack. Steal stays busy, as in netperf: the virtual CPU wanted to run and
//! was not available to anything else; it is broken out in the breakdown and
//! the `steal_present` warning says when it is there. Utilisation is
//! busy / all ticks of the set (netperf's per-CPU rule, averaged), so it runs
//! 0–100 whatever the number of CPUs.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use stackbench_model::size::MIB;

use crate::procfs::{self, CpuTimes, DiskBytes, ProcError};
use stackbench_record::{
    CpuAttribution, CpuBreakdown, CpuMethod, DiskIo, ProcessCpu, ProcessCpuMethod, SideCpu,
};

/// Which processes make up a side, for the process view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProcessSource {
    /// Do not sample processes.
    None,
    /// Sum `/proc/<pid>/stat` utime + stime over these processes.
    Pids(Vec<u32>),
    /// A process tree (roots and their living descendants): the sum of
    /// utime, stime, cutime and cstime over it, so the CPU of a descendant
    /// that ended and was waited for within the tree stays counted, in its
    /// parent's cutime/cstime: vsftpd's and inetd's per-session processes,
    /// born and ended between two samples, are never seen living. Summed
    /// over the whole tree no time counts twice: a living process's cutime
    /// holds only children that left the tree.
    Tree(Vec<u32>),
    /// The cgroup v2 `cpu.stat` of the cgroup this process is in; falls back
    /// to its `/proc/<pid>/stat` where there is no unified hierarchy.
    CgroupOf(u32),
}

/// Cumulative CPU time of a side's processes at one instant, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ProcessTimes {
    pub method: ProcessCpuMethod,
    pub user_us: u64,
    pub system_us: u64,
}

/// A snapshot of the accounting counters at one instant. Serializable, so the
/// responder can send its own samples (or the [`SideCpu`] computed from them)
/// over the control connection.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CpuSample {
    /// `CLOCK_MONOTONIC` of the host that took the sample, ns.
    pub monotonic_ns: u64,
    /// Clock ticks per second of the `/proc/stat` counters.
    pub ticks_per_s: u64,
    /// Counters of every online CPU (the set is chosen when computing).
    /// Serialised as a list of `[cpu, counters]` pairs: JSON object keys are
    /// strings, which serde cannot turn back into numbers inside the control
    /// protocol's tagged messages.
    #[serde(with = "cpu_map_as_pairs")]
    pub cpus: BTreeMap<usize, CpuTimes>,
    /// The side's processes, when sampled.
    pub process: Option<ProcessTimes>,
    /// Storage bytes of the side's processes, when sampled (a plain
    /// server's: [`CpuSample::with_disk`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk: Option<DiskBytes>,
}

mod cpu_map_as_pairs {
    use std::collections::BTreeMap;

    use serde::{Deserialize, Deserializer, Serializer};

    use crate::procfs::CpuTimes;

    pub fn serialize<S: Serializer>(
        map: &BTreeMap<usize, CpuTimes>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.collect_seq(map.iter())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<BTreeMap<usize, CpuTimes>, D::Error> {
        Ok(Vec::<(usize, CpuTimes)>::deserialize(d)?
            .into_iter()
            .collect())
    }
}

/// Why a CPU figure cannot be computed.
#[derive(Debug, thiserror::Error)]
pub enum CpuError {
    #[error(transparent)]
    Proc(#[from] ProcError),
    #[error(
        "CPU {cpu} of the measured set is not in /proc/stat (offline or not present): \
         pin the side to online CPUs (see /sys/devices/system/cpu/online)"
    )]
    CpuMissing { cpu: usize },
    #[error("the two CPU samples come from different hosts or clocks (ticks/s {a} vs {b})")]
    Mismatched { a: u64, b: u64 },
}

impl CpuSample {
    /// Reads `/proc/stat` and the side's processes now.
    pub fn take(process: &ProcessSource) -> Result<CpuSample, CpuError> {
        let ticks_per_s = procfs::clock_ticks_per_s();
        let process = sample_processes(process, ticks_per_s)?;
        Ok(CpuSample {
            monotonic_ns: procfs::monotonic_ns(),
            ticks_per_s,
            cpus: procfs::read_proc_stat()?,
            process,
            disk: None,
        })
    }

    /// This sample with the storage bytes of `pids` summed (`/proc/PID/io`);
    /// unchanged when one cannot be read (no ptrace access to it).
    pub fn with_disk(self, pids: &[u32]) -> CpuSample {
        let mut sum = DiskBytes::default();
        for &pid in pids {
            let Ok(io) = procfs::read_pid_io(pid) else {
                return self;
            };
            sum.read_bytes += io.read_bytes;
            sum.write_bytes += io.write_bytes;
        }
        CpuSample {
            disk: Some(sum),
            ..self
        }
    }
}

fn sample_processes(
    source: &ProcessSource,
    ticks_per_s: u64,
) -> Result<Option<ProcessTimes>, ProcError> {
    let ticks_to_us = |t: u64| t.saturating_mul(1_000_000) / ticks_per_s.max(1);
    let pids = match source {
        ProcessSource::None => return Ok(None),
        ProcessSource::CgroupOf(pid) => {
            if let Some(stat) = procfs::read_cgroup_cpu_stat(*pid)? {
                return Ok(Some(ProcessTimes {
                    method: ProcessCpuMethod::Cgroup,
                    user_us: stat.user_usec,
                    system_us: stat.system_usec,
                }));
            }
            vec![*pid]
        }
        ProcessSource::Pids(pids) | ProcessSource::Tree(pids) => pids.clone(),
    };
    let reaped = matches!(source, ProcessSource::Tree(_));
    let mut times = ProcessTimes::default();
    for pid in pids {
        let ticks = procfs::read_pid_ticks(pid)?;
        let (cu, cs) = if reaped {
            (ticks.cutime, ticks.cstime)
        } else {
            (0, 0)
        };
        times.user_us += ticks_to_us(ticks.utime + cu);
        times.system_us += ticks_to_us(ticks.stime + cs);
    }
    Ok(Some(times))
}

/// The work done in a window, to divide CPU by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Work {
    /// Transactions completed in the window.
    pub transactions: u64,
    /// Payload bytes moved in the window (both directions), for CPU per MiB.
    pub payload_bytes: u64,
}

/// CPU-seconds from an RMF-style utilisation: `util_pct`% of `cpus` CPUs over
/// `window_s` seconds (e.g. 25% of 4 CPs over 10 s = 10 CPU-s).
pub fn cpu_seconds_from_util(util_pct: f64, cpus: usize, window_s: f64) -> f64 {
    util_pct / 100.0 * cpus as f64 * window_s
}

/// Transactions per second; `None` for an empty window.
pub fn rate_per_s(transactions: u64, window_s: f64) -> Option<f64> {
    (window_s > 0.0).then(|| transactions as f64 / window_s)
}

/// CPU µs per transaction (e.g. 10 CPU-s / 1,000,000 tr = 10 µs/tran);
/// `None` when no transaction completed, never NaN or infinity.
pub fn cpu_us_per_tran(cpu_seconds: f64, transactions: u64) -> Option<f64> {
    (transactions > 0).then(|| cpu_seconds * 1e6 / transactions as f64)
}

/// CPU µs per MiB (the notation's binary MB) of payload; `None` when no payload moved.
pub fn cpu_us_per_mb(cpu_seconds: f64, payload_bytes: u64) -> Option<f64> {
    (payload_bytes > 0).then(|| cpu_seconds * 1e6 / (payload_bytes as f64 / MIB as f64))
}

/// True when two CPU sets on the same host share a CPU. An empty set means
/// "not pinned: every CPU", which shares with anything.
pub fn cpu_sets_overlap(a: &[usize], b: &[usize]) -> bool {
    if a.is_empty() || b.is_empty() {
        return true;
    }
    let a: BTreeSet<_> = a.iter().collect();
    b.iter().any(|cpu| a.contains(cpu))
}

/// The union of two CPU sets, sorted; empty (every CPU) if either is empty.
pub fn cpu_set_union(a: &[usize], b: &[usize]) -> Vec<usize> {
    if a.is_empty() || b.is_empty() {
        return Vec::new();
    }
    let set: BTreeSet<usize> = a.iter().chain(b).copied().collect();
    set.into_iter().collect()
}

/// One side's CPU between two samples over `cpus` (empty: every CPU present in
/// both samples), for the `work` done in between.
pub fn side_cpu(
    start: &CpuSample,
    end: &CpuSample,
    cpus: &[usize],
    work: Work,
) -> Result<SideCpu, CpuError> {
    if start.ticks_per_s != end.ticks_per_s {
        return Err(CpuError::Mismatched {
            a: start.ticks_per_s,
            b: end.ticks_per_s,
        });
    }
    let (set, method) = if cpus.is_empty() {
        let all = start.cpus.keys().filter(|c| end.cpus.contains_key(c));
        (all.copied().collect(), CpuMethod::ProcStatAllCpus)
    } else {
        let mut set = cpus.to_vec();
        set.sort_unstable();
        set.dedup();
        (set, CpuMethod::ProcStatCpuset)
    };
    let mut delta = CpuTimes::default();
    for &cpu in &set {
        let (Some(a), Some(b)) = (start.cpus.get(&cpu), end.cpus.get(&cpu)) else {
            return Err(CpuError::CpuMissing { cpu });
        };
        delta.add(&a.delta_to(b));
    }
    let tick_s = 1.0 / start.ticks_per_s.max(1) as f64;
    let window_s = end.monotonic_ns.saturating_sub(start.monotonic_ns) as f64 / 1e9;
    let tick_busy_s = delta.busy() as f64 * tick_s;
    let tick_util_pct = if delta.total() == 0 {
        0.0
    } else {
        100.0 * delta.busy() as f64 / delta.total() as f64
    };
    // Busy time is the window minus the idle time, not the sum of the busy
    // ticks. On NOHZ kernels idle (and iowait) are measured with a clock,
    // while user/system/irq/softirq are sampled by the scheduler tick, which
    // misses busy slices shorter than a tick: on the development VM a loop of
    // 30 µs busy / 60 µs asleep showed 0.80 s of busy ticks for 1.57 s of
    // process CPU time and 1.64 s of window-minus-idle. Request/response
    // loads are made of such slices. netperf's procstat method (busy ticks /
    // all ticks, `tick_util_pct`) inherits the undercount; it is kept for
    // comparison, with the share of the window the ticks covered.
    let capacity_s = window_s * set.len() as f64;
    let idle_s = delta.idle_total() as f64 * tick_s;
    let (cpu_seconds, util_pct, tick_coverage) = if capacity_s > 0.0 {
        let busy_s = (capacity_s - idle_s).clamp(0.0, capacity_s);
        let covered = delta.total() as f64 * tick_s / capacity_s;
        // Clamped again: when no idle tick moved in a short window, busy_s is
        // the capacity and 100·x/x may round to just above 100.
        let util = (100.0 * busy_s / capacity_s).clamp(0.0, 100.0);
        (busy_s, util, Some(covered))
    } else {
        (tick_busy_s, tick_util_pct, None)
    };
    let scale = if tick_busy_s > 0.0 {
        cpu_seconds / tick_busy_s
    } else {
        1.0
    };
    let process = process_delta(start.process, end.process);
    Ok(SideCpu {
        cpus: set,
        method,
        window_s,
        cpu_seconds,
        util_pct,
        cpu_us_per_tran: cpu_us_per_tran(cpu_seconds, work.transactions),
        cpu_us_per_mb: cpu_us_per_mb(cpu_seconds, work.payload_bytes),
        breakdown: breakdown(&delta, tick_s, scale),
        tick_busy_s,
        tick_util_pct,
        tick_coverage,
        process,
        process_cpu_us_per_tran: process
            .and_then(|p| cpu_us_per_tran(p.cpu_seconds, work.transactions)),
        attribution: CpuAttribution::Class,
        disk: disk_delta(start.disk, end.disk, work.transactions),
    })
}

/// Storage bytes between two samples; `None` unless both have them. A
/// process that exited takes its counts with it: saturating, as for CPU.
fn disk_delta(start: Option<DiskBytes>, end: Option<DiskBytes>, trans: u64) -> Option<DiskIo> {
    let (a, b) = (start?, end?);
    let write_bytes = b.write_bytes.saturating_sub(a.write_bytes);
    Some(DiskIo {
        read_bytes: b.read_bytes.saturating_sub(a.read_bytes),
        write_bytes,
        write_bytes_per_tran: (trans > 0).then(|| write_bytes as f64 / trans as f64),
    })
}

/// The busy categories are tick-sampled shares, scaled by `busy_scale` so
/// that they add up to the side's `cpu_seconds`; idle and iowait are as counted.
fn breakdown(delta: &CpuTimes, tick_s: f64, busy_scale: f64) -> CpuBreakdown {
    let s = |ticks: u64| ticks as f64 * tick_s;
    let b = |ticks: u64| s(ticks) * busy_scale;
    CpuBreakdown {
        user: b(delta.user),
        nice: b(delta.nice),
        system: b(delta.system),
        irq: b(delta.irq),
        softirq: b(delta.softirq),
        steal: b(delta.steal),
        iowait: s(delta.iowait),
        idle: s(delta.idle),
    }
}

fn process_delta(start: Option<ProcessTimes>, end: Option<ProcessTimes>) -> Option<ProcessCpu> {
    let (a, b) = (start?, end?);
    if a.method != b.method {
        return None;
    }
    // Saturating: a process that exited and was replaced restarts at zero.
    let user_s = b.user_us.saturating_sub(a.user_us) as f64 / 1e6;
    let system_s = b.system_us.saturating_sub(a.system_us) as f64 / 1e6;
    Some(ProcessCpu {
        method: a.method,
        user_s,
        system_s,
        cpu_seconds: user_s + system_s,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use stackbench_record::CpuFigures;

    #[test]
    fn a_mix_share_keeps_cpu_seconds_and_drops_per_transaction_figures() {
        let side = SideCpu {
            cpu_seconds: 2.0,
            util_pct: 50.0,
            cpu_us_per_tran: Some(20.0),
            cpu_us_per_mb: Some(3.0),
            process_cpu_us_per_tran: Some(10.0),
            ..SideCpu::default()
        };
        let mix = CpuFigures::combine(Some(side.clone()), Some(side), None);
        let share = mix.mix_share();
        assert_eq!(share.attribution, CpuAttribution::Mix);
        assert_eq!(share.total_cpu_seconds, Some(4.0));
        assert_eq!(share.total_cpu_us_per_tran, None);
        for s in [share.client.unwrap(), share.server.unwrap()] {
            assert_eq!(s.attribution, CpuAttribution::Mix);
            assert_eq!((s.cpu_seconds, s.util_pct), (2.0, 50.0));
            assert_eq!(s.cpu_us_per_tran, None);
            assert_eq!(s.cpu_us_per_mb, None);
            assert_eq!(s.process_cpu_us_per_tran, None);
        }
    }

    #[test]
    fn a_class_side_beside_a_mix_side_has_no_total() {
        let own = side(1.0, Some(10.0));
        let mix = SideCpu {
            attribution: CpuAttribution::Mix,
            ..side(3.0, None)
        };
        let f = CpuFigures::combine(Some(own), Some(mix), None);
        assert_eq!(f.attribution, CpuAttribution::Mix);
        assert_eq!((f.total_cpu_seconds, f.total_cpu_us_per_tran), (None, None));
    }

    #[test]
    fn seed_000_worked_example_is_exact() {
        // 25% of 4 CPs over 10 s = 100% of one CP = 10 CPU-seconds.
        let cpu_s = cpu_seconds_from_util(25.0, 4, 10.0);
        assert_eq!(cpu_s, 10.0);
        // 1,000,000 transactions in 10 s = 100,000 tr/s at 10 µs/tran.
        assert_eq!(rate_per_s(1_000_000, 10.0), Some(100_000.0));
        assert_eq!(cpu_us_per_tran(cpu_s, 1_000_000), Some(10.0));
    }

    #[test]
    fn zero_transactions_and_zero_windows_give_none_not_nan() {
        assert_eq!(cpu_us_per_tran(3.0, 0), None);
        assert_eq!(rate_per_s(10, 0.0), None);
        assert_eq!(cpu_us_per_mb(3.0, 0), None);
        assert_eq!(cpu_us_per_mb(1.0, MIB), Some(1e6));
    }

    fn times(busy_user: u64, system: u64, softirq: u64, idle: u64) -> CpuTimes {
        CpuTimes {
            user: busy_user,
            system,
            softirq,
            idle,
            ..CpuTimes::default()
        }
    }

    /// The 25%-of-4-CPs example through the /proc/stat path: 4 CPUs at 100
    /// ticks/s over 10 s (1000 ticks each), 1000 busy ticks in all = 25% = 10
    /// CPU-s.
    fn seed_samples() -> (CpuSample, CpuSample) {
        let start = CpuSample {
            monotonic_ns: 5_000_000_000,
            ticks_per_s: 100,
            cpus: (0..6).map(|c| (c, times(100, 0, 0, 100))).collect(),
            process: Some(ProcessTimes {
                method: ProcessCpuMethod::PidStat,
                user_us: 1_000_000,
                system_us: 0,
            }),
            disk: Some(DiskBytes {
                read_bytes: 4096,
                write_bytes: 1000,
            }),
        };
        let mut end = start.clone();
        end.monotonic_ns += 10_000_000_000;
        // CPU 0 fully busy (600 user + 300 system + 100 softirq), 1–3 idle.
        end.cpus.insert(0, times(700, 300, 100, 100));
        for c in 1..4 {
            end.cpus.insert(c, times(100, 0, 0, 1100));
        }
        end.process = Some(ProcessTimes {
            method: ProcessCpuMethod::PidStat,
            user_us: 5_000_000,
            system_us: 2_000_000,
        });
        end.disk = Some(DiskBytes {
            read_bytes: 4096,
            write_bytes: 1000 + 2_000_000,
        });
        (start, end)
    }

    #[test]
    fn side_cpu_reproduces_seed_000_from_proc_stat_deltas() {
        let (start, end) = seed_samples();
        let work = Work {
            transactions: 1_000_000,
            payload_bytes: 0,
        };
        let side = side_cpu(&start, &end, &[3, 2, 1, 0], work).unwrap();
        assert_eq!(side.cpus, vec![0, 1, 2, 3]);
        assert_eq!(side.method, CpuMethod::ProcStatCpuset);
        assert_eq!(side.window_s, 10.0);
        assert_eq!(side.cpu_seconds, 10.0);
        assert_eq!(side.util_pct, 25.0);
        assert_eq!(side.cpu_us_per_tran, Some(10.0));
        assert_eq!(side.cpu_us_per_mb, None);
        assert_eq!(side.breakdown.user, 6.0);
        assert_eq!(side.breakdown.system, 3.0);
        assert_eq!(side.breakdown.softirq, 1.0);
        assert_eq!(side.breakdown.idle, 30.0);
        let process = side.process.unwrap();
        assert_eq!(process.cpu_seconds, 6.0);
        assert_eq!(side.process_cpu_us_per_tran, Some(6.0));
        // 2 MB written over 1,000,000 transactions, nothing read.
        let disk = side.disk.unwrap();
        assert_eq!((disk.read_bytes, disk.write_bytes), (0, 2_000_000));
        assert_eq!(disk.write_bytes_per_tran, Some(2.0));
        // A side sampled without storage bytes has none.
        let (mut a, b) = seed_samples();
        a.disk = None;
        assert_eq!(side_cpu(&a, &b, &[0], Work::default()).unwrap().disk, None);
    }

    #[test]
    fn unpinned_side_uses_every_cpu_and_missing_cpu_is_an_error() {
        let (start, end) = seed_samples();
        let side = side_cpu(&start, &end, &[], Work::default()).unwrap();
        assert_eq!(side.method, CpuMethod::ProcStatAllCpus);
        assert_eq!(side.cpus.len(), 6);
        assert_eq!(side.cpu_us_per_tran, None);
        let err = side_cpu(&start, &end, &[0, 9], Work::default()).unwrap_err();
        assert!(err.to_string().contains("CPU 9"), "{err}");
    }

    #[test]
    fn zero_length_window_is_zero_not_nan() {
        let (start, _) = seed_samples();
        let side = side_cpu(&start, &start, &[0], Work::default()).unwrap();
        assert_eq!(side.window_s, 0.0);
        assert_eq!(side.util_pct, 0.0);
        assert_eq!(side.cpu_seconds, 0.0);
    }

    #[test]
    fn window_without_idle_ticks_is_at_most_full() {
        // CI saw 100.00000000000001: a short window in which no idle tick
        // moved makes busy equal capacity, and 100·x/x rounds above 100 for
        // some x (7 ms of one CPU is one).
        let (start, _) = seed_samples();
        let mut end = start.clone();
        end.monotonic_ns += 7_000_000;
        let side = side_cpu(&start, &end, &[0], Work::default()).unwrap();
        assert_eq!(side.util_pct, 100.0);
    }

    #[test]
    fn wrapped_counter_counts_through_the_wrap() {
        let mut start = seed_samples().0;
        start.cpus.insert(0, times(0xFFFF_FF00, 0, 0, 50));
        let mut end = start.clone();
        end.cpus.insert(0, times(0x40, 0, 0, 50)); // 0x140 = 320 ticks
        let side = side_cpu(&start, &end, &[0], Work::default()).unwrap();
        assert_eq!(side.cpu_seconds, 3.2);
        assert_eq!(side.util_pct, 100.0);
    }

    #[test]
    fn busy_time_is_window_minus_idle_when_ticks_undercount() {
        // One CPU, 10 s: the tick saw 200 busy ticks but idle (clock-measured)
        // is only 600 ticks, so 4 s were busy; ticks covered 80% of the window.
        let (start, mut end) = seed_samples();
        end.cpus.insert(0, times(100 + 150, 50, 0, 100 + 600));
        let side = side_cpu(
            &start,
            &end,
            &[0],
            Work {
                transactions: 1000,
                payload_bytes: 0,
            },
        )
        .unwrap();
        assert!(
            (side.cpu_seconds - 4.0).abs() < 1e-9,
            "{}",
            side.cpu_seconds
        );
        assert!((side.util_pct - 40.0).abs() < 1e-9);
        assert!((side.tick_busy_s - 2.0).abs() < 1e-9);
        assert!((side.tick_util_pct - 25.0).abs() < 1e-9);
        assert!((side.tick_coverage.unwrap() - 0.8).abs() < 1e-9);
        // The breakdown keeps the tick shares but adds up to cpu_seconds.
        assert!((side.breakdown.user - 3.0).abs() < 1e-9);
        assert!((side.breakdown.system - 1.0).abs() < 1e-9);
        assert_eq!(side.cpu_us_per_tran, Some(4000.0));
    }

    #[test]
    fn overlap_and_union() {
        assert!(cpu_sets_overlap(&[0], &[0]));
        assert!(cpu_sets_overlap(&[0, 1], &[1, 2]));
        assert!(!cpu_sets_overlap(&[0, 1], &[2, 3]));
        assert!(cpu_sets_overlap(&[], &[2, 3]));
        assert_eq!(cpu_set_union(&[2, 0], &[1, 2]), vec![0, 1, 2]);
        assert!(cpu_set_union(&[], &[1]).is_empty());
    }

    fn side(cpu_seconds: f64, per_tran: Option<f64>) -> SideCpu {
        SideCpu {
            cpu_seconds,
            cpu_us_per_tran: per_tran,
            ..SideCpu::default()
        }
    }

    #[test]
    fn combine_totals_separable_and_shared() {
        let f = CpuFigures::combine(Some(side(2.0, Some(4.0))), Some(side(1.0, Some(2.0))), None);
        assert!(f.separable);
        assert_eq!(f.total_cpu_seconds, Some(3.0));
        assert_eq!(f.total_cpu_us_per_tran, Some(6.0));
        let f = CpuFigures::combine(Some(side(2.0, Some(4.0))), None, None);
        assert_eq!(f.total_cpu_us_per_tran, None);
        let shared = side(2.5, Some(5.0));
        let f = CpuFigures::combine(Some(side(2.5, Some(5.0))), None, Some(shared));
        assert!(!f.separable);
        assert_eq!(f.total_cpu_us_per_tran, Some(5.0));
    }

    /// A child that burns CPU and is waited for leaves its time in this
    /// process's cutime/cstime: a tree sample counts it, a pid sample does
    /// not (vsftpd's per-session processes, born and reaped between two
    /// samples, are only ever seen this way).
    #[test]
    fn a_tree_counts_the_children_it_waited_for() {
        let me = std::process::id();
        let total = |source: &ProcessSource| {
            let p = CpuSample::take(source).unwrap().process.unwrap();
            p.user_us + p.system_us
        };
        let (tree_a, pids_a) = (
            total(&ProcessSource::Tree(vec![me])),
            total(&ProcessSource::Pids(vec![me])),
        );
        let status = std::process::Command::new("sh")
            .args(["-c", "i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done"])
            .status()
            .unwrap();
        assert!(status.success());
        let tree = total(&ProcessSource::Tree(vec![me])) - tree_a;
        let pids = total(&ProcessSource::Pids(vec![me])) - pids_a;
        // The shell's loop takes well over 50 ms of CPU anywhere.
        assert!(tree >= pids + 50_000, "tree {tree} µs, pids {pids} µs");
    }

    #[test]
    fn real_sample_of_this_machine() {
        let me = ProcessSource::Pids(vec![std::process::id()]);
        let a = CpuSample::take(&me).unwrap();
        let mut x = 0u64;
        for i in 0..3_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let b = CpuSample::take(&ProcessSource::CgroupOf(std::process::id())).unwrap();
        let b = CpuSample {
            process: CpuSample::take(&me).unwrap().process,
            ..b
        };
        let side = side_cpu(&a, &b, &[], Work::default()).unwrap();
        assert!((0.0..=100.0).contains(&side.util_pct));
        assert!(side.cpu_seconds >= 0.0 && side.window_s >= 0.0);
        assert!(side.process.is_some());
    }
}
