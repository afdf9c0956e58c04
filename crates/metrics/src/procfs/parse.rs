//! Pure parsers for the Linux `/proc` and `/sys` texts the CPU and memory
//! accounting reads. Each takes the file's text and returns typed counters, so
//! they are tested on captured samples without touching the machine.
//!
//! Layouts (proc(5), Documentation/filesystems/proc.rst):
//! - `/proc/stat` `cpuN` lines: user nice system idle iowait irq softirq steal
//!   guest guest_nice, in clock ticks (`sysconf(_SC_CLK_TCK)`, USER_HZ). Older
//!   kernels print fewer columns; missing trailing ones read as 0.
//! - `/proc/<pid>/stat`: field 2 is `(comm)`, and comm may itself hold spaces and
//!   parentheses, so the fields after it are found after the *last* `)`.
//!   utime and stime are fields 14 and 15, in clock ticks.
//! - `/proc/net/sockstat`: `TCP: inuse N orphan N tw N alloc N mem PAGES`.
//!   `mem` is the kernel's `tcp_memory_allocated`, in pages, for IPv4 and IPv6
//!   sockets together; `sockstat6` only adds `TCP6: inuse N`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::ProcError;

/// The ten per-CPU counters of one `/proc/stat` `cpuN` line, in clock ticks.
///
/// `guest` and `guest_nice` are already included in `user` and `nice` by the
/// kernel (`account_guest_time` adds to both), so sums over the states must
/// leave them out; netperf adds them again, which double-counts a host that runs
/// guests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CpuTimes {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
    pub guest: u64,
    pub guest_nice: u64,
}

/// User and system time of one process (all its threads), in clock ticks;
/// and of its children it waited for (`cutime`, `cstime`: theirs and, in
/// turn, what they waited for), where a server that forks a process per
/// session keeps its ended sessions' CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ProcessTicks {
    pub utime: u64,
    pub stime: u64,
    pub cutime: u64,
    pub cstime: u64,
}

/// The TCP lines of `/proc/net/sockstat` (and `TCP6: inuse` of `sockstat6`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SockStat {
    /// IPv4 TCP sockets in use (`TCP: inuse`).
    pub tcp_inuse: u64,
    /// IPv6 TCP sockets in use (`TCP6: inuse`); 0 when sockstat6 was not read.
    pub tcp6_inuse: u64,
    /// Sockets no longer attached to a file (closed by the application, still
    /// sending or in FIN states), IPv4 and IPv6.
    pub tcp_orphan: u64,
    /// Connections in TIME_WAIT, IPv4 and IPv6.
    pub tcp_tw: u64,
    /// TCP sockets allocated, any state, IPv4 and IPv6.
    pub tcp_alloc: u64,
    /// Kernel memory charged to TCP socket buffers, in pages.
    pub tcp_mem_pages: u64,
}

/// Counters of a cgroup v2 `cpu.stat`, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CgroupCpuStat {
    pub usage_usec: u64,
    pub user_usec: u64,
    pub system_usec: u64,
}

/// Parses the `cpuN` lines of `/proc/stat` into a map from CPU id to counters.
/// The aggregate `cpu` line and all other lines are skipped. CPUs that are
/// offline have no line and are absent from the map.
pub fn parse_proc_stat(text: &str) -> Result<BTreeMap<usize, CpuTimes>, ProcError> {
    let mut cpus = BTreeMap::new();
    for line in text.lines() {
        let mut fields = line.split_ascii_whitespace();
        let Some(id) = fields.next().and_then(|name| name.strip_prefix("cpu")) else {
            continue;
        };
        if id.is_empty() {
            continue; // the aggregate line
        }
        let id: usize = id.parse().map_err(|_| bad("/proc/stat", line))?;
        let mut values = [0u64; 10];
        let mut seen = 0;
        for (slot, field) in values.iter_mut().zip(fields) {
            *slot = field.parse().map_err(|_| bad("/proc/stat", line))?;
            seen += 1;
        }
        // Linux 2.6 has had at least user..softirq (7 columns) since 2003.
        if seen < 4 {
            return Err(bad("/proc/stat", line));
        }
        let [user, nice, system, idle, iowait, irq, softirq, steal, guest, guest_nice] = values;
        let times = CpuTimes {
            user,
            nice,
            system,
            idle,
            iowait,
            irq,
            softirq,
            steal,
            guest,
            guest_nice,
        };
        cpus.insert(id, times);
    }
    if cpus.is_empty() {
        return Err(ProcError::Malformed {
            file: "/proc/stat".into(),
            detail: "no cpuN lines".into(),
        });
    }
    Ok(cpus)
}

/// Parses utime and stime from `/proc/<pid>/stat`.
pub fn parse_pid_stat(text: &str) -> Result<ProcessTicks, ProcError> {
    let file = "/proc/<pid>/stat";
    // comm is "(...)" and may contain ") " itself: the real end is the last ')'.
    let close = text.rfind(')').ok_or_else(|| bad(file, text))?;
    let rest: Vec<&str> = text[close + 1..].split_ascii_whitespace().collect();
    // rest[0] is field 3 (state), so field N is rest[N - 3].
    let field = |n: usize| -> Result<u64, ProcError> {
        rest.get(n - 3)
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| bad(file, text))
    };
    Ok(ProcessTicks {
        utime: field(14)?,
        stime: field(15)?,
        // Signed in the kernel's format, never negative in practice.
        cutime: field(16).unwrap_or(0),
        cstime: field(17).unwrap_or(0),
    })
}

/// Storage bytes of one process (`read_bytes`, `write_bytes`), all its
/// threads, living and exited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct DiskBytes {
    pub read_bytes: u64,
    pub write_bytes: u64,
}

/// Parses `read_bytes` and `write_bytes` of `/proc/<pid>/io` (what reached
/// the block layer; `rchar`/`wchar` count every read and write, sockets
/// included, and are not used).
pub fn parse_pid_io(text: &str) -> Result<DiskBytes, ProcError> {
    let field = |key: &str| -> Result<u64, ProcError> {
        text.lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
            .and_then(|v| v.trim().parse().ok())
            .ok_or_else(|| bad("/proc/<pid>/io", text))
    };
    Ok(DiskBytes {
        read_bytes: field("read_bytes")?,
        write_bytes: field("write_bytes")?,
    })
}

/// Resident set size in bytes from the `VmRSS:` line of `/proc/<pid>/status`
/// (the kernel prints it in kB = KiB). `None` for kernel threads, which have no
/// such line.
pub fn parse_status_vm_rss_bytes(text: &str) -> Result<Option<u64>, ProcError> {
    let Some(line) = text.lines().find(|l| l.starts_with("VmRSS:")) else {
        return Ok(None);
    };
    let mut fields = line["VmRSS:".len()..].split_ascii_whitespace();
    let kib: u64 = fields
        .next()
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| bad("/proc/<pid>/status", line))?;
    if fields.next() != Some("kB") {
        return Err(bad("/proc/<pid>/status", line));
    }
    Ok(Some(kib.saturating_mul(1024)))
}

/// Resident pages (second field) of `/proc/<pid>/statm`; multiply by the page
/// size for bytes.
pub fn parse_statm_resident_pages(text: &str) -> Result<u64, ProcError> {
    text.split_ascii_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| bad("/proc/<pid>/statm", text))
}

/// Parses `/proc/net/sockstat` and, when given, `/proc/net/sockstat6`.
pub fn parse_sockstat(sockstat: &str, sockstat6: Option<&str>) -> Result<SockStat, ProcError> {
    let tcp = tagged_line(sockstat, "TCP:").ok_or_else(|| ProcError::Malformed {
        file: "/proc/net/sockstat".into(),
        detail: "no 'TCP:' line".into(),
    })?;
    let pairs = key_values(tcp).ok_or_else(|| bad("/proc/net/sockstat", tcp))?;
    let get = |key: &str| pairs.get(key).copied().unwrap_or(0);
    let mut stat = SockStat {
        tcp_inuse: get("inuse"),
        tcp6_inuse: 0,
        tcp_orphan: get("orphan"),
        tcp_tw: get("tw"),
        tcp_alloc: get("alloc"),
        tcp_mem_pages: get("mem"),
    };
    if let Some(line) = sockstat6.and_then(|t| tagged_line(t, "TCP6:")) {
        let pairs = key_values(line).ok_or_else(|| bad("/proc/net/sockstat6", line))?;
        stat.tcp6_inuse = pairs.get("inuse").copied().unwrap_or(0);
    }
    Ok(stat)
}

/// Parses a cgroup v2 `cpu.stat`. Unknown keys (nr_periods, throttled_usec…)
/// are ignored; `usage_usec` must be present.
pub fn parse_cgroup_cpu_stat(text: &str) -> Result<CgroupCpuStat, ProcError> {
    let mut stat = CgroupCpuStat::default();
    let mut saw_usage = false;
    for line in text.lines() {
        let mut fields = line.split_ascii_whitespace();
        let (Some(key), Some(value)) = (fields.next(), fields.next()) else {
            continue;
        };
        let slot = match key {
            "usage_usec" => {
                saw_usage = true;
                &mut stat.usage_usec
            }
            "user_usec" => &mut stat.user_usec,
            "system_usec" => &mut stat.system_usec,
            _ => continue,
        };
        *slot = value.parse().map_err(|_| bad("cpu.stat", line))?;
    }
    if !saw_usage {
        return Err(ProcError::Malformed {
            file: "cpu.stat".into(),
            detail: "no usage_usec line".into(),
        });
    }
    Ok(stat)
}

/// The cgroup v2 path of a process from `/proc/<pid>/cgroup` (the `0::PATH`
/// line). `None` on a pure cgroup v1 system.
pub fn parse_cgroup_v2_path(text: &str) -> Option<&str> {
    text.lines()
        .find_map(|l| l.strip_prefix("0::"))
        .map(str::trim)
}

/// The cpufreq governor name, trimmed; `None` for an empty file.
pub fn parse_governor(text: &str) -> Option<String> {
    let name = text.trim();
    (!name.is_empty()).then(|| name.to_string())
}

fn tagged_line<'a>(text: &'a str, tag: &str) -> Option<&'a str> {
    text.lines().find_map(|l| l.strip_prefix(tag))
}

/// `key value key value …` into a map; `None` when a value is not a number.
fn key_values(line: &str) -> Option<BTreeMap<&str, u64>> {
    let fields: Vec<&str> = line.split_ascii_whitespace().collect();
    fields
        .chunks(2)
        .map(|pair| match pair {
            [key, value] => value.parse().ok().map(|v| (*key, v)),
            _ => None,
        })
        .collect()
}

fn bad(file: &str, text: &str) -> ProcError {
    let mut detail: String = text.chars().take(120).collect();
    if detail.len() < text.len() {
        detail.push('…');
    }
    ProcError::Malformed {
        file: file.into(),
        detail: format!("unexpected text '{detail}'"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `/proc/<pid>/io` as Linux 6.x prints it (a broker's, after writes).
    #[test]
    fn pid_io_reads_storage_bytes_not_chars() {
        let text = "rchar: 4096\nwchar: 999999\nsyscr: 5\nsyscw: 9\n\
                    read_bytes: 8192\nwrite_bytes: 1228800\ncancelled_write_bytes: 4096\n";
        let io = parse_pid_io(text).unwrap();
        assert_eq!((io.read_bytes, io.write_bytes), (8192, 1_228_800));
        assert!(parse_pid_io("rchar: 1\n").is_err());
    }

    // Captured from the 2-CPU build machine (Linux 6.x), trimmed after `ctxt`.
    const PROC_STAT: &str = "\
cpu  8511 0 3328 199001 346 0 57 13 0 0
cpu0 3950 0 1342 100300 50 0 9 4 0 0
cpu1 4560 0 1985 98701 295 0 47 8 0 0
intr 147836 0 0 0 0 0 0 0 0 0 0 0
ctxt 246759
btime 1700000000
processes 8443
procs_running 1
procs_blocked 0
softirq 11111 0 222 0 333 0 0 0 444 0 555
";

    #[test]
    fn proc_stat_reads_every_cpu_line_and_skips_the_aggregate() {
        let cpus = parse_proc_stat(PROC_STAT).unwrap();
        assert_eq!(cpus.len(), 2);
        let cpu1 = cpus[&1];
        assert_eq!(
            cpu1,
            CpuTimes {
                user: 4560,
                nice: 0,
                system: 1985,
                idle: 98701,
                iowait: 295,
                irq: 0,
                softirq: 47,
                steal: 8,
                guest: 0,
                guest_nice: 0,
            }
        );
    }

    #[test]
    fn proc_stat_keeps_sparse_cpu_ids_and_short_old_lines() {
        let text = "cpu 1 2 3 4\ncpu0 1 2 3 4 5 6 7\ncpu3 10 20 30 40 50 60 70 80 90 100\n";
        let cpus = parse_proc_stat(text).unwrap();
        assert_eq!(cpus.keys().copied().collect::<Vec<_>>(), vec![0, 3]);
        assert_eq!(cpus[&0].softirq, 7);
        assert_eq!(cpus[&0].steal, 0);
        assert_eq!(cpus[&3].guest_nice, 100);
    }

    #[test]
    fn proc_stat_rejects_garbage() {
        assert!(parse_proc_stat("cpu0 1 x 3 4\n").is_err());
        assert!(parse_proc_stat("cpu0 1 2\n").is_err());
        assert!(parse_proc_stat("intr 1 2 3\n").is_err());
        assert!(parse_proc_stat("cpuX 1 2 3 4\n").is_err());
    }

    #[test]
    fn pid_stat_reads_utime_and_stime() {
        // /proc/self/stat of `cat` on the build machine, utime/stime edited to 7/3.
        let text = "8443 (cat) R 8437 8437 5278 0 -1 4194304 101 0 0 0 7 3 5 2 20 0 1 0 \
                    105957 3133440 410 18446744073709551615 94694448340992 94694448360873 \
                    140732179047792 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n";
        assert_eq!(
            parse_pid_stat(text).unwrap(),
            ProcessTicks {
                utime: 7,
                stime: 3,
                cutime: 5,
                cstime: 2
            }
        );
    }

    #[test]
    fn pid_stat_comm_with_spaces_and_parentheses() {
        let text = "42 (my (odd) prog) S 1 42 42 0 -1 0 0 0 0 0 1234 567 0 0 20 0 4 0 99\n";
        assert_eq!(
            parse_pid_stat(text).unwrap(),
            ProcessTicks {
                utime: 1234,
                stime: 567,
                cutime: 0,
                cstime: 0
            }
        );
        assert!(parse_pid_stat("42 (short) S 1 2 3\n").is_err());
        assert!(parse_pid_stat("no parenthesis at all").is_err());
    }

    #[test]
    fn vm_rss_and_statm() {
        let status = "Name:\tcat\nVmPeak:\t    3060 kB\nVmRSS:\t    1940 kB\nThreads:\t1\n";
        assert_eq!(
            parse_status_vm_rss_bytes(status).unwrap(),
            Some(1940 * 1024)
        );
        assert_eq!(
            parse_status_vm_rss_bytes("Name:\tkthreadd\n").unwrap(),
            None
        );
        assert!(parse_status_vm_rss_bytes("VmRSS:\t 12 MB\n").is_err());
        assert_eq!(
            parse_statm_resident_pages("765 454 426 5 0 123 0\n").unwrap(),
            454
        );
        assert!(parse_statm_resident_pages("765\n").is_err());
    }

    #[test]
    fn sockstat_v4_and_v6() {
        let v4 = "sockets: used 11\nTCP: inuse 1 orphan 2 tw 3 alloc 4 mem 124\n\
                  UDP: inuse 0 mem 0\nUDPLITE: inuse 0\nRAW: inuse 0\nFRAG: inuse 0 memory 0\n";
        let v6 = "TCP6: inuse 5\nUDP6: inuse 0\nUDPLITE6: inuse 0\nRAW6: inuse 0\n\
                  FRAG6: inuse 0 memory 0\n";
        let stat = parse_sockstat(v4, Some(v6)).unwrap();
        assert_eq!(
            stat,
            SockStat {
                tcp_inuse: 1,
                tcp6_inuse: 5,
                tcp_orphan: 2,
                tcp_tw: 3,
                tcp_alloc: 4,
                tcp_mem_pages: 124,
            }
        );
        assert_eq!(parse_sockstat(v4, None).unwrap().tcp6_inuse, 0);
        assert!(parse_sockstat("UDP: inuse 0\n", None).is_err());
        assert!(parse_sockstat("TCP: inuse x\n", None).is_err());
    }

    #[test]
    fn cgroup_cpu_stat_and_path() {
        let text = "usage_usec 123456\nuser_usec 100000\nsystem_usec 23456\n\
                    nr_periods 0\nnr_throttled 0\nthrottled_usec 0\n";
        assert_eq!(
            parse_cgroup_cpu_stat(text).unwrap(),
            CgroupCpuStat {
                usage_usec: 123456,
                user_usec: 100000,
                system_usec: 23456
            }
        );
        assert!(parse_cgroup_cpu_stat("nr_periods 0\n").is_err());
        let cgroup = "9:name=systemd:/\n1:cpu:/\n0::/user.slice/run-1.scope\n";
        assert_eq!(
            parse_cgroup_v2_path(cgroup),
            Some("/user.slice/run-1.scope")
        );
        assert_eq!(parse_cgroup_v2_path("1:cpu:/\n"), None);
    }

    #[test]
    fn governor() {
        assert_eq!(
            parse_governor("performance\n").as_deref(),
            Some("performance")
        );
        assert_eq!(parse_governor("\n"), None);
    }
}
