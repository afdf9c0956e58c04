//! The server side of a plain target (`http://…`, `tn3270://…`, a broker):
//! when the server runs on this host, its processes are found from the
//! target's listening socket and sampled as the run's server side, as
//! stackbench's own responder samples itself — CPU (`/proc/PID/stat`),
//! memory (RSS, and the kernel memory of its connections), and storage
//! bytes (`/proc/PID/io`), which a broker's persistent messages cost.
//!
//! Finding the processes is what `ss -ltnp` does: one sock_diag dump of the
//! listening TCP sockets on the target's port gives each listener's socket
//! inode; the processes holding an fd `socket:[INODE]` (a scan of
//! `/proc/*/fd`) are the server — every nginx worker holds the listener its
//! master opened — and their descendants are added (a broker VM's helper
//! processes). The descendants are found again at each sample, so a worker
//! started during the run is counted; one that exits and is waited for by
//! its parent in the tree leaves its CPU time in the parent's
//! cutime/cstime, which the server's CPU includes (`ProcessSource::Tree`),
//! so vsftpd's per-session processes — two per session, forked at the
//! log-on and gone at its end, mostly between two samples — are counted;
//! one that is not waited for within the tree takes its CPU time with it,
//! and that window's process figure saturates at zero rather than going
//! negative. A listener in another network namespace (a container) or a
//! process whose fds this process may not read is not found: the run then
//! says so once and the server side is absent; `server_pid` names the
//! processes instead.

use std::collections::HashSet;
use std::io;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::path::Path;

use netlink_packet_sock_diag::constants::{AF_INET, AF_INET6, IPPROTO_TCP};
use netlink_packet_sock_diag::inet::{ExtensionFlags, InetRequest, SocketId, StateFlags};
use netlink_packet_sock_diag::SockDiagMessage;
use stackbench_metrics::cpu::{CpuSample, ProcessSource};
use stackbench_metrics::memory::MemorySample;
use stackbench_record::{ServerFoundBy, ServerProcess};

use crate::control::Reply;
use crate::sockdiag::{self, Side};
use crate::transport::Endpoint;

/// A TCP listener of this network namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Listener {
    pub addr: SocketAddr,
    /// The socket's inode: `/proc/PID/fd/N` of its holders reads `socket:[inode]`.
    pub inode: u64,
}

/// The listening TCP sockets on `port`, IPv4 and IPv6 (one dump each: the
/// kernel skips sockets of other ports).
pub fn listeners(port: u16) -> io::Result<Vec<Listener>> {
    let mut out = Vec::new();
    for family in [AF_INET, AF_INET6] {
        let mut socket_id = if family == AF_INET6 {
            SocketId::new_v6()
        } else {
            SocketId::new_v4()
        };
        socket_id.source_port = port;
        let request = SockDiagMessage::InetRequest(InetRequest {
            family,
            protocol: IPPROTO_TCP,
            extensions: ExtensionFlags::empty(),
            states: StateFlags::LISTEN,
            socket_id,
        });
        for m in sockdiag::dump(request)? {
            let SockDiagMessage::InetResponse(r) = m else {
                continue;
            };
            let id = &r.header.socket_id;
            if id.source_port == port {
                out.push(Listener {
                    addr: SocketAddr::new(id.source_address, id.source_port),
                    inode: u64::from(r.header.inode),
                });
            }
        }
    }
    Ok(out)
}

/// The inodes of this namespace's established TCP sockets connected to
/// `port` (their peer's port), IPv4 and IPv6: the clients of a server on
/// this host (one dump each: the kernel skips other destination ports).
pub fn connected_to(port: u16) -> io::Result<HashSet<u64>> {
    let mut out = HashSet::new();
    for family in [AF_INET, AF_INET6] {
        let mut socket_id = if family == AF_INET6 {
            SocketId::new_v6()
        } else {
            SocketId::new_v4()
        };
        socket_id.destination_port = port;
        let request = SockDiagMessage::InetRequest(InetRequest {
            family,
            protocol: IPPROTO_TCP,
            extensions: ExtensionFlags::empty(),
            states: StateFlags::ESTABLISHED,
            socket_id,
        });
        for m in sockdiag::dump(request)? {
            let SockDiagMessage::InetResponse(r) = m else {
                continue;
            };
            if r.header.socket_id.destination_port == port {
                out.insert(u64::from(r.header.inode));
            }
        }
    }
    Ok(out)
}

/// Whether a connection to `target` can be accepted by `listener`: the same
/// address, or a wildcard of its family (an IPv6 wildcard also takes IPv4
/// unless it is V6ONLY, which sock_diag does not say; taken).
pub fn accepts(listener: &Listener, target: SocketAddr) -> bool {
    if listener.addr.port() != target.port() {
        return false;
    }
    let (l, t) = (listener.addr.ip(), target.ip());
    let mapped = |ip: IpAddr| match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    };
    mapped(l) == mapped(t) || (l.is_unspecified() && (l.is_ipv6() || t.is_ipv4()))
}

/// Whether `ip` is an address of this host (loopback, or one a socket may
/// bind to here): only then is a listener found here the target's.
pub fn is_local(ip: IpAddr) -> bool {
    ip.is_loopback() || UdpSocket::bind(SocketAddr::new(ip, 0)).is_ok()
}

/// Every process (`/proc/PID`) with an fd on one of `inodes`, sorted.
pub fn holders(inodes: &HashSet<u64>) -> Vec<u32> {
    let mut pids = Vec::new();
    for pid in proc_pids() {
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue; // gone, or not ours to read
        };
        let holds = fds.flatten().any(|fd| {
            std::fs::read_link(fd.path()).is_ok_and(|link| {
                socket_inode(&link.to_string_lossy()).is_some_and(|i| inodes.contains(&i))
            })
        });
        if holds {
            pids.push(pid);
        }
    }
    pids.sort_unstable();
    pids
}

/// The inode of an fd link `socket:[12345]`.
fn socket_inode(link: &str) -> Option<u64> {
    link.strip_prefix("socket:[")?
        .strip_suffix(']')?
        .parse()
        .ok()
}

fn proc_pids() -> impl Iterator<Item = u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
}

/// The parent pid from `/proc/PID/stat` (field 4, after the `(comm)`).
fn parent_of(pid: u32) -> Option<u32> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &text[text.rfind(')')? + 1..];
    rest.split_ascii_whitespace().nth(1)?.parse().ok()
}

/// `roots` that still exist and all their descendants, sorted.
pub fn with_descendants(roots: &[u32]) -> Vec<u32> {
    let parents: Vec<(u32, u32)> = proc_pids()
        .filter_map(|p| Some((p, parent_of(p)?)))
        .collect();
    let mut set: HashSet<u32> = roots
        .iter()
        .copied()
        .filter(|p| Path::new(&format!("/proc/{p}")).exists())
        .collect();
    // Each pass adds one generation; a process tree is shallow.
    loop {
        let before = set.len();
        for &(pid, parent) in &parents {
            if set.contains(&parent) {
                set.insert(pid);
            }
        }
        if set.len() == before {
            break;
        }
    }
    let mut pids: Vec<u32> = set.into_iter().collect();
    pids.sort_unstable();
    pids
}

/// The CPUs `pid` may run on (its affinity).
fn affinity(pid: u32) -> Option<Vec<usize>> {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity fills it for `pid`.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        let size = std::mem::size_of::<libc::cpu_set_t>();
        if libc::sched_getaffinity(pid as libc::pid_t, size, &mut set) != 0 {
            return None;
        }
        Some(
            (0..libc::CPU_SETSIZE as usize)
                .filter(|&c| libc::CPU_ISSET(c, &set))
                .collect(),
        )
    }
}

/// The processes of a plain server on this host, sampled as its side.
#[derive(Debug, Clone)]
pub struct ServerSide {
    /// The listener's holders, or the given pids; their descendants are
    /// found again at each sample.
    roots: Vec<u32>,
    /// The target: the server's connections are the sockets with this local port.
    target: SocketAddr,
    /// What the record says about them.
    pub identity: ServerProcess,
}

/// Why a server's processes were not found (a note for the record, not an
/// error: the run goes on without a server side).
pub type NotFound = String;

impl ServerSide {
    /// Finds the processes listening at `target` on this host.
    pub fn find(target: SocketAddr) -> Result<ServerSide, NotFound> {
        if !is_local(target.ip()) {
            return Err(format!(
                "{target} is not an address of this host: the server's CPU is not measured \
                 (run stackbench serve there, or give server_pid when it runs here)"
            ));
        }
        let found: Vec<Listener> = listeners(target.port())
            .map_err(|e| format!("sock_diag dump of the listeners on {target}: {e}"))?
            .into_iter()
            .filter(|l| accepts(l, target))
            .collect();
        let Some(first) = found.first() else {
            return Err(format!(
                "no listening socket for {target} in this network namespace (a server in a \
                 container or another namespace): its CPU is not measured; give server_pid"
            ));
        };
        let inodes: HashSet<u64> = found.iter().map(|l| l.inode).collect();
        let roots = holders(&inodes);
        if roots.is_empty() {
            return Err(format!(
                "no process whose fds this one may read holds the listener {}: the server's \
                 CPU is not measured (run as root, or give server_pid)",
                first.addr
            ));
        }
        Ok(Self::of(
            roots,
            target,
            ServerFoundBy::ListeningSocket,
            Some(first.addr),
        ))
    }

    /// The processes `pids` (the `server_pid` setting) and their descendants
    /// as the server at `target`.
    pub fn given(pids: &[u32], target: SocketAddr) -> ServerSide {
        Self::of(pids.to_vec(), target, ServerFoundBy::ServerPid, None)
    }

    fn of(
        roots: Vec<u32>,
        target: SocketAddr,
        found_by: ServerFoundBy,
        listener: Option<SocketAddr>,
    ) -> ServerSide {
        let pids = with_descendants(&roots);
        let first = roots.first().copied();
        let exe = first
            .and_then(|p| std::fs::read_link(format!("/proc/{p}/exe")).ok())
            .map(|p| p.display().to_string());
        let cmdline = first
            .and_then(|p| std::fs::read(format!("/proc/{p}/cmdline")).ok())
            .map(|raw| {
                let args: Vec<String> = raw
                    .split(|&b| b == 0)
                    .filter(|a| !a.is_empty())
                    .map(|a| String::from_utf8_lossy(a).into_owned())
                    .collect();
                args.join(" ")
            })
            .filter(|c| !c.is_empty());
        ServerSide {
            identity: ServerProcess {
                found_by,
                listener: listener.map(|a| a.to_string()),
                cpus: server_cpus(&pids),
                pids,
                exe,
                cmdline,
                note: None,
            },
            roots,
            target,
        }
    }

    /// A broker's other clients on this host: the processes holding a
    /// connection to `broker`'s port, less this process (the driver) and
    /// the broker's own — the responder application(s), sampled as a third
    /// side. `Err` says why none were found.
    pub fn clients_of(broker: &ServerSide) -> Result<ServerSide, NotFound> {
        let port = broker.target.port();
        let inodes = connected_to(port)
            .map_err(|e| format!("sock_diag dump of the connections to port {port}: {e}"))?;
        let own = std::process::id();
        let server = broker.pids();
        let roots: Vec<u32> = holders(&inodes)
            .into_iter()
            .filter(|p| *p != own && !server.contains(p))
            .collect();
        if roots.is_empty() {
            return Err(format!(
                "no process of this host other than the driver is connected to the broker at \
                 {}: the responder application's CPU is not measured (a remote one, or none \
                 yet: start `stackbench serve --protocol amqp --broker amqp://{}` first)",
                broker.target, broker.target
            ));
        }
        let mut side = Self::of(roots, broker.target, ServerFoundBy::ListeningSocket, None);
        side.identity.found_by = ServerFoundBy::BrokerConnections;
        Ok(side)
    }

    /// The processes' CPU counters now (with their storage bytes), `None`
    /// when they are gone or unreadable.
    pub fn cpu_sample(&self) -> Option<CpuSample> {
        match self.sample()? {
            Reply::Sample { cpu, .. } => Some(cpu),
            _ => None,
        }
    }

    /// The processes now (the roots still alive and their descendants).
    pub fn pids(&self) -> Vec<u32> {
        with_descendants(&self.roots)
    }

    /// The server's CPU, storage and memory counters now, in the shape the
    /// responder answers a `Sample` with; `None` when its processes are gone
    /// or unreadable.
    pub fn sample(&self) -> Option<Reply> {
        // A helper process that exits between the listing and the reading
        // (a broker's short-lived resolver) fails one read: list again once.
        let (pids, cpu) = (0..2).find_map(|_| {
            let pids = self.pids();
            // The tree's reaped children count too: a server that forks per
            // session (vsftpd) ends most sessions between two samples.
            let cpu = CpuSample::take(&ProcessSource::Tree(pids.clone())).ok()?;
            (!pids.is_empty()).then_some((pids, cpu))
        })?;
        let cpu = cpu.with_disk(&pids);
        let memory = MemorySample::take(&pids).ok().map(|mut m| {
            let endpoints = [Endpoint::Inet(self.target)];
            m.own_sockets = sockdiag::own_sockets(&endpoints, Side::Responder)
                .ok()
                .flatten();
            m
        });
        Some(Reply::Sample {
            cpu,
            memory,
            pids,
            test_threads: Vec::new(),
            // A plain server holds no run token: nothing refused.
            refused_peers: 0,
        })
    }
}

/// The union of the processes' affinities when it is narrower than this
/// host's online CPUs (the server is pinned); empty otherwise (not pinned).
fn server_cpus(pids: &[u32]) -> Vec<usize> {
    let mut union: Vec<usize> = pids.iter().filter_map(|&p| affinity(p)).flatten().collect();
    union.sort_unstable();
    union.dedup();
    let online = stackbench_metrics::procfs::read_proc_stat()
        .map(|m| m.len())
        .unwrap_or(0);
    if union.is_empty() || union.len() >= online {
        Vec::new()
    } else {
        union
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr, TcpListener, TcpStream};

    /// A listener of this test is found by its port: its inode by
    /// sock_diag, this process as its holder.
    #[test]
    fn a_listener_of_this_process_is_found_by_its_port() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let found = listeners(addr.port()).unwrap();
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].addr, addr);
        let side = ServerSide::find(addr).unwrap();
        let me = std::process::id();
        assert_eq!(side.identity.found_by, ServerFoundBy::ListeningSocket);
        assert_eq!(side.identity.listener, Some(addr.to_string()));
        assert!(side.identity.pids.contains(&me), "{:?}", side.identity);
        // (A child another test forks holds the fd until its exec: `contains`.)
        assert!(side.roots.contains(&me), "{:?}", side.roots);
        let exe = std::env::current_exe().unwrap().display().to_string();
        assert_eq!(side.identity.exe.as_deref(), Some(exe.as_str()));
        // A connection accepted: the sample holds this process's CPU and
        // the server end of the connection.
        let _c = TcpStream::connect(addr).unwrap();
        let (_s, _) = listener.accept().unwrap();
        let Some(Reply::Sample {
            cpu, memory, pids, ..
        }) = side.sample()
        else {
            panic!("no sample");
        };
        assert!(pids.contains(&me));
        assert!(cpu.process.is_some_and(|p| p.user_us + p.system_us > 0));
        assert!(cpu.disk.is_some());
        let sockets = memory.unwrap().own_sockets.unwrap();
        assert_eq!(sockets.sockets, 1);
    }

    /// Once closed, the port has no listener: a note, not a process.
    #[test]
    fn a_closed_port_is_not_found_and_says_why() {
        let addr = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let why = ServerSide::find(addr).unwrap_err();
        assert!(why.contains("no listening socket"), "{why}");
        // An address of no host here: not looked for.
        let remote = SocketAddr::from(([192, 0, 2, 1], 80));
        let why = ServerSide::find(remote).unwrap_err();
        assert!(why.contains("not an address of this host"), "{why}");
    }

    #[test]
    fn wildcards_accept_their_family_and_v6_accepts_both() {
        let l = |ip: IpAddr| Listener {
            addr: SocketAddr::new(ip, 80),
            inode: 1,
        };
        let v4 = SocketAddr::from((Ipv4Addr::LOCALHOST, 80));
        let v6 = SocketAddr::from((Ipv6Addr::LOCALHOST, 80));
        assert!(accepts(&l(Ipv4Addr::LOCALHOST.into()), v4));
        assert!(accepts(&l(Ipv4Addr::UNSPECIFIED.into()), v4));
        assert!(accepts(&l(Ipv6Addr::UNSPECIFIED.into()), v4));
        assert!(accepts(&l(Ipv6Addr::UNSPECIFIED.into()), v6));
        assert!(!accepts(&l(Ipv4Addr::UNSPECIFIED.into()), v6));
        assert!(!accepts(&l(Ipv4Addr::new(127, 0, 0, 2).into()), v4));
        let mapped = Ipv4Addr::LOCALHOST.to_ipv6_mapped().into();
        assert!(accepts(&l(mapped), v4));
        assert!(!accepts(
            &l(Ipv4Addr::LOCALHOST.into()),
            SocketAddr::from((Ipv4Addr::LOCALHOST, 81))
        ));
    }

    #[test]
    fn fd_links_name_socket_inodes() {
        assert_eq!(socket_inode("socket:[12345]"), Some(12345));
        assert_eq!(socket_inode("pipe:[12345]"), None);
        assert_eq!(socket_inode("/dev/null"), None);
    }

    /// A child process of a root is part of the server.
    #[test]
    fn descendants_are_included_and_the_dead_left_out() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let me = std::process::id();
        let pids = with_descendants(&[me]);
        assert!(pids.contains(&me) && pids.contains(&child.id()), "{pids:?}");
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(!with_descendants(&[me]).contains(&child.id()));
        assert!(with_descendants(&[u32::MAX - 1]).is_empty());
    }
}
