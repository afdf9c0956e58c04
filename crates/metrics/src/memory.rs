//! Storage per connection (the "storage requirement" of TN3270 capacity
//! planning: memory per user connection): resident memory
//! of a side's processes and the kernel memory of the run's own sockets, each
//! divided by the number of open connections, sampled inside the measurement
//! window once the connections are up.
//!
//! Kernel socket memory is counted over the run's own sockets (the engine's
//! `sockdiag` module asks the kernel for each socket's `SK_MEMINFO`): what
//! their queues and reservations hold, plus the kernel objects every socket
//! costs whatever it holds (the protocol's `struct sock`, its inode, file and
//! dentry, sized from `/sys/kernel/slab`). An idle socket's queues are empty
//! on recent kernels, so for a population of mostly idle users the objects
//! are most of the figure.
//!
//! `/proc/net/sockstat`'s `TCP: mem` pages are kept only as a secondary,
//! host-wide figure: they count every socket of the host (or network
//! namespace), so their change over a run is not the run's own — other
//! sockets closing can make it negative, and then it is `None` with a note,
//! never clamped to 0.

use serde::{Deserialize, Serialize};

use crate::procfs::{self, ProcError, SockStat};
use stackbench_record::{SideMemory, SkMemInfo};

/// Which socket family a [`OwnSockets`] sum covers; it decides which
/// `SK_MEMINFO` fields are memory the socket holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SockKind {
    /// TCP (and MPTCP subflows), IPv4 and IPv6.
    #[default]
    Tcp,
    /// AF_UNIX stream sockets.
    Unix,
}

impl SockKind {
    /// The `SK_MEMINFO` fields summed as memory held. TCP: the receive queue
    /// (`rmem_alloc`), the write queue (`wmem_queued`, which already holds
    /// the segments in flight, so `wmem_alloc` would count them twice), the
    /// forward reservation (`fwd_alloc`), option memory and the backlog.
    /// AF_UNIX: a message is charged to its sender's `wmem_alloc` until the
    /// receiver reads it; there is no write queue or reservation.
    pub fn fields(self) -> &'static [&'static str] {
        match self {
            SockKind::Tcp => &[
                "rmem_alloc",
                "wmem_queued",
                "fwd_alloc",
                "optmem",
                "backlog",
            ],
            SockKind::Unix => &["rmem_alloc", "wmem_alloc", "optmem"],
        }
    }

    /// The `/sys/kernel/slab` caches one socket of this kind holds an object
    /// of: the protocol's sock, the socket inode, the file and the dentry.
    pub fn slab_caches(self, ipv6: bool) -> [&'static str; 4] {
        let sock = match (self, ipv6) {
            (SockKind::Tcp, false) => "TCP",
            (SockKind::Tcp, true) => "TCPv6",
            (SockKind::Unix, _) => "UNIX",
        };
        [sock, "sock_inode_cache", "filp", "dentry"]
    }

    /// The sum of `m`'s fields this kind counts as memory held (see [`SockKind::fields`]).
    pub fn held_bytes(self, m: &SkMemInfo) -> u64 {
        match self {
            SockKind::Tcp => {
                m.rmem_alloc_bytes
                    + m.wmem_queued_bytes
                    + m.fwd_alloc_bytes
                    + m.optmem_bytes
                    + m.backlog_bytes
            }
            SockKind::Unix => m.rmem_alloc_bytes + m.wmem_alloc_bytes + m.optmem_bytes,
        }
    }
}

/// The kernel memory of one side's own sockets at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct OwnSockets {
    pub kind: SockKind,
    /// Sockets summed (the run's data connections on this side).
    pub sockets: u64,
    /// `SK_MEMINFO` summed over them.
    pub meminfo: SkMemInfo,
    /// Slab objects one socket holds whatever its queues hold, bytes; `None`
    /// when `/sys/kernel/slab` could not be read.
    pub object_bytes_per_socket: Option<u64>,
}

impl OwnSockets {
    /// Queues and reservations plus objects, bytes.
    pub fn total_bytes(&self) -> u64 {
        let objects = self.object_bytes_per_socket.unwrap_or(0) * self.sockets;
        self.kind.held_bytes(&self.meminfo) + objects
    }
}

/// Memory counters of one side at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct MemorySample {
    /// Resident set size summed over the side's processes, bytes.
    pub rss_bytes: u64,
    /// The host's TCP socket counters.
    pub sockstat: SockStat,
    /// Page size of the host that took the sample, bytes.
    pub page_size_bytes: u64,
    /// The run's own sockets on this side (`None`: none asked for, as in a
    /// baseline taken before the run's connections exist, or sock_diag was
    /// not usable). Absent from responders older than the field.
    #[serde(default)]
    pub own_sockets: Option<OwnSockets>,
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
            own_sockets: None,
        })
    }

    /// The host's TCP socket memory (sockstat pages × page size), bytes.
    pub fn host_sock_mem_bytes(&self) -> u64 {
        self.sockstat
            .tcp_mem_pages
            .saturating_mul(self.page_size_bytes)
    }
}

/// `bytes / connections`; `None` with no connection.
pub fn per_conn(bytes: u64, connections: u64) -> Option<f64> {
    (connections > 0).then(|| bytes as f64 / connections as f64)
}

/// `(now − base) / connections`, or a note when `now` fell below `base`:
/// the figure then says nothing about the run (other memory was freed
/// meanwhile), and 0 would read as a measurement. `what` names the figure
/// in the note (a merge of agents says it is their sum).
pub fn grown_per_conn(
    what: &str,
    now: u64,
    base: Option<u64>,
    connections: u64,
    notes: &mut Vec<String>,
) -> Option<f64> {
    let base = base.unwrap_or(0);
    if now < base {
        notes.push(format!(
            "{what} fell during the run ({base} B before the connections opened, {now} B with \
             them open): other memory of the host or process was freed meanwhile, so no \
             per-connection figure is given"
        ));
        return None;
    }
    per_conn(now - base, connections)
}

/// One side's memory at the steady state, `sample`, against its `baseline`
/// taken before the run's connections were opened.
///
/// - RSS per connection: (steady − baseline) ÷ connections, so the fixed part
///   (the binary, worker buffers that exist anyway) is not charged to
///   connections.
/// - Kernel socket memory: the run's own sockets (`sample.own_sockets`) ÷
///   connections; no baseline is needed, the sum holds only the run's
///   sockets.
/// - Host-wide sockstat memory: (steady − baseline) ÷ connections, kept as a
///   secondary figure.
///
/// A figure that fell below its baseline is `None` with a note.
pub fn side_memory(
    sample: &MemorySample,
    baseline: Option<&MemorySample>,
    connections: u64,
) -> SideMemory {
    let mut notes = Vec::new();
    let rss_base = baseline.map(|b| b.rss_bytes);
    let host = sample.host_sock_mem_bytes();
    let host_base = baseline.map(MemorySample::host_sock_mem_bytes);
    let rss_bytes_per_conn =
        grown_per_conn("RSS", sample.rss_bytes, rss_base, connections, &mut notes);
    let host_sock_mem_bytes_per_conn = grown_per_conn(
        "the host's socket memory (sockstat)",
        host,
        host_base,
        connections,
        &mut notes,
    );
    let own = sample.own_sockets;
    if own.is_none() {
        notes.push(
            "the run's own sockets were not read (an AF_UNIX run, which is not read yet; \
             sock_diag unusable here; or a responder older than the figure): no kernel socket \
             memory per connection"
                .to_string(),
        );
    }
    if own.is_some_and(|o| o.object_bytes_per_socket.is_none()) {
        notes.push(
            "/sys/kernel/slab is unreadable: kernel socket memory counts the sockets' queues \
             only, not their objects"
                .to_string(),
        );
    }
    let sock = &sample.sockstat;
    SideMemory {
        rss_bytes: sample.rss_bytes,
        rss_baseline_bytes: rss_base,
        rss_bytes_per_conn,
        kernel_sock_bytes: own.map(|o| o.total_bytes()),
        kernel_sock_bytes_per_conn: own.and_then(|o| per_conn(o.total_bytes(), connections)),
        kernel_sock_sockets: own.map(|o| o.sockets),
        kernel_sock_method: own.map(|_| "sock_diag".to_string()),
        kernel_sock_fields: own
            .map(|o| o.kind.fields().iter().map(|f| f.to_string()).collect())
            .unwrap_or_default(),
        kernel_sock_meminfo: own.map(|o| o.meminfo),
        kernel_sock_object_bytes_per_socket: own.and_then(|o| o.object_bytes_per_socket),
        host_sock_mem_bytes: host,
        host_sock_mem_baseline_bytes: host_base,
        host_sock_mem_bytes_per_conn,
        connections,
        tcp_inuse: sock.tcp_inuse + sock.tcp6_inuse,
        tcp_orphan: sock.tcp_orphan,
        tcp_tw: sock.tcp_tw,
        notes,
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
            own_sockets: Some(OwnSockets {
                kind: SockKind::Tcp,
                sockets: 1_000,
                meminfo: SkMemInfo {
                    rmem_alloc_bytes: 100_000,
                    wmem_queued_bytes: 200_000,
                    fwd_alloc_bytes: 50_000,
                    // Not memory held: limits, and wmem_alloc inside wmem_queued.
                    rcvbuf_bytes: 1 << 30,
                    sndbuf_bytes: 1 << 30,
                    wmem_alloc_bytes: 1 << 20,
                    ..SkMemInfo::default()
                },
                object_bytes_per_socket: Some(3_584),
            }),
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
        assert_eq!(m.host_sock_mem_baseline_bytes, Some(409_600));
        assert_eq!(
            m.host_sock_mem_bytes_per_conn,
            Some((4_096_000.0 - 409_600.0) / 1000.0)
        );
        assert!(m.notes.is_empty(), "{:?}", m.notes);
    }

    #[test]
    fn figures_that_fell_below_the_baseline_are_none_with_a_note_not_zero() {
        // Figures from an 8K-user think-time run: the host's sockstat memory
        // was 6.1 MB before the workload's connections and 856 kB during it.
        let mut base = sample();
        base.sockstat.tcp_mem_pages = 6_100_000 / 4096;
        let mut now = sample();
        now.sockstat.tcp_mem_pages = 856_000 / 4096;
        now.rss_bytes = 1 << 20;
        let m = side_memory(&now, Some(&base), 8_000);
        assert_eq!(m.host_sock_mem_bytes_per_conn, None);
        assert_eq!(m.rss_bytes_per_conn, None);
        assert_eq!(m.notes.len(), 2, "{:?}", m.notes);
        assert!(m.notes[1].contains("sockstat"), "{:?}", m.notes);
        // The own-socket figure needs no baseline and stands.
        assert!(m.kernel_sock_bytes_per_conn.is_some());
    }

    #[test]
    fn own_socket_memory_sums_the_held_fields_and_the_objects() {
        let m = side_memory(&sample(), None, 1_000);
        let held = 100_000 + 200_000 + 50_000;
        assert_eq!(m.kernel_sock_bytes, Some(held + 3_584 * 1_000));
        assert_eq!(
            m.kernel_sock_bytes_per_conn,
            Some((held + 3_584_000) as f64 / 1000.0)
        );
        assert_eq!(m.kernel_sock_sockets, Some(1_000));
        assert_eq!(m.kernel_sock_method.as_deref(), Some("sock_diag"));
        assert_eq!(
            m.kernel_sock_fields,
            [
                "rmem_alloc",
                "wmem_queued",
                "fwd_alloc",
                "optmem",
                "backlog"
            ]
        );
        assert_eq!(m.host_sock_mem_bytes, 4_096_000);
        assert_eq!(m.tcp_inuse, 2_002);
        assert_eq!(m.tcp_tw, 30);
    }

    #[test]
    fn unix_sockets_count_the_senders_wmem_alloc() {
        let mut s = sample();
        let own = s.own_sockets.as_mut().unwrap();
        own.kind = SockKind::Unix;
        own.object_bytes_per_socket = None;
        let m = side_memory(&s, None, 1_000);
        assert_eq!(m.kernel_sock_bytes, Some(100_000 + (1 << 20)));
        assert!(m.notes[0].contains("/sys/kernel/slab"), "{:?}", m.notes);
    }

    #[test]
    fn unread_sockets_give_none_and_say_why() {
        let mut s = sample();
        s.own_sockets = None;
        let m = side_memory(&s, None, 1_000);
        assert_eq!(m.kernel_sock_bytes, None);
        assert_eq!(m.kernel_sock_bytes_per_conn, None);
        assert!(m.notes[0].contains("sock_diag"), "{:?}", m.notes);
    }

    #[test]
    fn zero_connections_give_none() {
        let m = side_memory(&sample(), None, 0);
        assert_eq!(m.rss_bytes_per_conn, None);
        assert_eq!(m.kernel_sock_bytes_per_conn, None);
    }

    #[test]
    fn real_sample_of_this_machine() {
        let m = MemorySample::take(&[std::process::id()]).unwrap();
        assert!(m.rss_bytes > 0);
        assert!(m.page_size_bytes >= 4096);
    }
}
