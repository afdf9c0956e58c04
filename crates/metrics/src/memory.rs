//! Storage per connection (seed 003's "storage requirement"): resident memory
//! of a side's processes and the kernel's TCP socket memory, each divided by
//! the number of open connections, sampled once the connections are up and
//! the rate is steady.
//!
//! Kernel socket memory comes from `/proc/net/sockstat` (`TCP: mem` pages ×
//! page size). It is host-wide (per network namespace) and covers both IPv4
//! and IPv6: when driver and responder share a host, both sides report the
//! same figure, which then holds both ends of each connection.

use serde::{Deserialize, Serialize};

use crate::procfs::{self, ProcError, SockStat};
use crate::record::SideMemory;

/// Memory counters of one side at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct MemorySample {
    /// Resident set size summed over the side's processes, bytes.
    pub rss_bytes: u64,
    /// The host's TCP socket counters.
    pub sockstat: SockStat,
    /// Page size of the host that took the sample, bytes.
    pub page_size_bytes: u64,
}

impl MemorySample {
    /// Reads the RSS of `pids` and the host's sockstat now.
    pub fn take(pids: &[u32]) -> Result<MemorySample, ProcError> {
        let mut rss_bytes = 0u64;
        for &pid in pids {
            rss_bytes = rss_bytes.saturating_add(procfs::read_rss_bytes(pid)?);
        }
        Ok(MemorySample {
            rss_bytes,
            sockstat: procfs::read_sockstat()?,
            page_size_bytes: procfs::page_size_bytes(),
        })
    }

    /// Kernel TCP socket memory in bytes.
    pub fn kernel_sock_bytes(&self) -> u64 {
        self.sockstat
            .tcp_mem_pages
            .saturating_mul(self.page_size_bytes)
    }
}

/// `bytes / connections`; `None` with no connection.
pub fn per_conn(bytes: u64, connections: u64) -> Option<f64> {
    (connections > 0).then(|| bytes as f64 / connections as f64)
}

/// One side's memory figures from a steady-state sample and the number of
/// connections open at that moment.
/// One side's memory at the steady state, `sample`, against its `baseline`
/// taken before the run's connections were opened: the per-connection
/// figures are (steady − baseline) ÷ connections, so the fixed part (the
/// binary, worker buffers that exist anyway) is not charged to connections.
/// Without a baseline they are plain averages.
pub fn side_memory(
    sample: &MemorySample,
    baseline: Option<&MemorySample>,
    connections: u64,
) -> SideMemory {
    let kernel_sock_bytes = sample.kernel_sock_bytes();
    let rss_base = baseline.map(|b| b.rss_bytes);
    let sock_base = baseline.map(MemorySample::kernel_sock_bytes);
    let grown = |now: u64, base: Option<u64>| now.saturating_sub(base.unwrap_or(0));
    let sock = &sample.sockstat;
    SideMemory {
        rss_bytes: sample.rss_bytes,
        rss_baseline_bytes: rss_base,
        rss_bytes_per_conn: per_conn(grown(sample.rss_bytes, rss_base), connections),
        kernel_sock_bytes,
        kernel_sock_baseline_bytes: sock_base,
        kernel_sock_bytes_per_conn: per_conn(grown(kernel_sock_bytes, sock_base), connections),
        connections,
        tcp_inuse: sock.tcp_inuse + sock.tcp6_inuse,
        tcp_orphan: sock.tcp_orphan,
        tcp_tw: sock.tcp_tw,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> MemorySample {
        MemorySample {
            rss_bytes: 40 << 20,
            sockstat: SockStat {
                tcp_inuse: 2_000,
                tcp6_inuse: 2,
                tcp_orphan: 1,
                tcp_tw: 30,
                tcp_alloc: 2_010,
                tcp_mem_pages: 1_000,
            },
            page_size_bytes: 4096,
        }
    }

    #[test]
    fn per_connection_figures_exclude_the_baseline() {
        let mut base = sample();
        base.rss_bytes = 8 << 20;
        base.sockstat.tcp_mem_pages = 100;
        let m = side_memory(&sample(), Some(&base), 1_000);
        assert_eq!(m.rss_baseline_bytes, Some(8 << 20));
        assert_eq!(m.rss_bytes_per_conn, Some((32 << 20) as f64 / 1000.0));
        assert_eq!(m.kernel_sock_baseline_bytes, Some(409_600));
        assert_eq!(
            m.kernel_sock_bytes_per_conn,
            Some((4_096_000.0 - 409_600.0) / 1000.0)
        );
        // Memory that shrank below the baseline is zero per connection, not negative.
        let m = side_memory(&base, Some(&sample()), 10);
        assert_eq!(m.rss_bytes_per_conn, Some(0.0));
    }

    #[test]
    fn per_connection_division() {
        let m = side_memory(&sample(), None, 1_000);
        assert_eq!(m.kernel_sock_bytes, 4_096_000);
        assert_eq!(m.kernel_sock_bytes_per_conn, Some(4_096.0));
        assert_eq!(m.rss_bytes_per_conn, Some((40 << 20) as f64 / 1000.0));
        assert_eq!(m.tcp_inuse, 2_002);
        assert_eq!(m.tcp_tw, 30);
    }

    #[test]
    fn zero_connections_give_none() {
        let m = side_memory(&sample(), None, 0);
        assert_eq!(m.rss_bytes_per_conn, None);
        assert_eq!(m.kernel_sock_bytes_per_conn, None);
    }

    #[test]
    fn real_sample_of_this_machine() {
        if !std::path::Path::new("/proc/net/sockstat").exists() {
            eprintln!("skipped: /proc is not mounted");
            return;
        }
        let m = MemorySample::take(&[std::process::id()]).unwrap();
        assert!(m.rss_bytes > 0);
        assert!(m.page_size_bytes >= 4096);
    }
}
