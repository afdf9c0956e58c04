//! The transport seam: data connections are opened ([`Dialer`]), accepted
//! ([`DataListener`]), read, written and closed ([`DataStream`]) through this
//! module only, for the transport chosen per run — `tcp`, `unix` (AF_UNIX
//! stream sockets: the memory-to-memory path without TCP/IP), `mptcp`
//! (IPPROTO_MPTCP), `tls` (OpenSSL over TCP, [`tls`]) or `smc` (AF_SMC where
//! the kernel has it, [`smc`]). The driver and responder state machines do
//! not know which one they drive.
//!
//! What each transport supports is decided once per run by
//! [`effective_options`]: options that do not apply (TCP_NODELAY on AF_UNIX,
//! TCP_QUICKACK on MPTCP sockets here) are not set, and each is named in a
//! note for the run's warnings — never silently pretended. Endpoints travel in
//! the control protocol: `IP:port` or a unix socket path.

mod dialer;
pub mod ktls;
mod mptcp;
pub mod smc;
pub mod smc_reason;
mod stream;
pub mod tls;
pub mod tls_acct;
mod unix_dir;

use std::fmt;
use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use socket2::{Domain, Protocol, Socket};
use stackbench_model::{CrrClose, SocketOptions};

pub use dialer::{connections_per_path, spread, Dialer, Spread};
pub use stackbench_model::Transport;
pub use stream::{DataListener, DataStream};
pub use unix_dir::{SocketDir, MAX_PATH_BYTES};

use crate::sockopt;

/// Listen backlog of data listeners: CRR with many clients connects in bursts.
const DATA_BACKLOG: i32 = 4096;

/// Where a test's data connections go: the `ready` reply lists one or more.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Endpoint {
    /// TCP or MPTCP: an IP address and port.
    Inet(SocketAddr),
    /// AF_UNIX: a socket path on the responder's (= the driver's) host.
    Unix(PathBuf),
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Endpoint::Inet(a) => write!(f, "{a}"),
            Endpoint::Unix(p) => write!(f, "unix:{}", p.display()),
        }
    }
}

/// The options `transport` can honour, and a note for each it cannot (one
/// clause each: the option, why, what is done instead). Both sides apply the
/// reduced options; the driver reports the notes as a warning.
pub fn effective_options(
    transport: Transport,
    opts: &SocketOptions,
) -> (SocketOptions, Vec<String>) {
    let mut eff = *opts;
    let mut notes = Vec::new();
    match transport {
        Transport::Tcp | Transport::Tls | Transport::Smc => {}
        Transport::Unix => {
            if eff.priority.take().is_some() {
                notes.push(
                    "priority not set: AF_UNIX has no IP header (DSCP) and no qdisc".to_string(),
                );
            }
            if eff.nodelay {
                eff.nodelay = false;
                notes.push("nodelay not set: AF_UNIX has no Nagle algorithm".to_string());
            }
            if eff.quickack {
                eff.quickack = false;
                notes.push("quickack not set: AF_UNIX has no delayed ACK".to_string());
            }
            if eff.busy_poll_us.take().is_some() {
                notes.push("busy_poll not set: AF_UNIX has no device queue to poll".to_string());
            }
            if eff.rcvbuf_bytes.take().is_some() {
                notes.push(
                    "rcvbuf not set: AF_UNIX stream data is bounded by the sender's sndbuf"
                        .to_string(),
                );
            }
            if eff.waitall {
                notes.push(
                    "waitall: MSG_WAITALL applies, but AF_UNIX epoll ignores SO_RCVLOWAT \
                     (a receiver may wake per chunk)"
                        .to_string(),
                );
            }
            if eff.crr_close == CrrClose::Abort {
                eff.crr_close = CrrClose::Client;
                notes.push(
                    "crr_close abort runs as client: AF_UNIX has no reset (SO_LINGER 0 does \
                     nothing) and no TIME_WAIT"
                        .to_string(),
                );
            }
        }
        Transport::Mptcp => {
            if eff.quickack && mptcp::supports_quickack() == Some(false) {
                eff.quickack = false;
                notes.push(
                    "quickack not set: this kernel's MPTCP sockets refuse TCP_QUICKACK".to_string(),
                );
            }
        }
    }
    // Long messages are corked wherever Nagle holds small segments (see
    // `SocketOptions::cork`); with nodelay nothing is held.
    eff.cork = transport != Transport::Unix && !eff.nodelay;
    (eff, notes)
}

/// Checks before a run that `transport` can reach a responder whose control
/// address is `target`: `unix` needs it on this host (loopback) and a
/// writable socket directory with room for the paths (the responder, on the
/// same host, makes its directories where this check does), `mptcp` a kernel
/// with MPTCP enabled. The error is one line with the fix.
pub fn check_usable(transport: Transport, target: SocketAddr) -> Result<(), String> {
    match transport {
        Transport::Tcp | Transport::Tls => Ok(()),
        Transport::Unix if target.ip().is_loopback() => {
            // The longest name a responder worker's socket gets.
            SocketDir::create()?.socket_path("w1023.sock").map(drop)
        }
        Transport::Unix => Err(format!(
            "transport unix needs the responder on this host, but the target {target} is not \
             loopback: use a loopback target (127.0.0.1:PORT or [::1]:PORT), drop --target, \
             or use --transport tcp"
        )),
        Transport::Mptcp => mptcp::probe(Domain::for_address(target)),
        Transport::Smc => smc::probe(Domain::for_address(target)),
    }
}

/// Creates a data listener of `transport` on `addr` (port 0 picks one;
/// SO_REUSEPORT so every responder worker can listen on the same port,
/// except over AF_SMC, which refuses it).
pub fn listen_inet(
    transport: Transport,
    addr: SocketAddr,
    opts: &SocketOptions,
) -> std::io::Result<DataListener> {
    let (domain, protocol) = match transport {
        Transport::Mptcp => (Domain::for_address(addr), Protocol::MPTCP),
        Transport::Smc => smc::domain_protocol(Domain::for_address(addr)),
        _ => (Domain::for_address(addr), Protocol::TCP),
    };
    let socket = sockopt::new_socket(domain, Some(protocol), opts)?;
    let step = |what: &str, r: std::io::Result<()>| {
        r.map_err(|e| std::io::Error::new(e.kind(), format!("{what}: {e}")))
    };
    // AF_SMC sockets refuse SO_REUSEPORT (EOPNOTSUPP, Linux 6.1): the
    // responder gives each worker its own port instead.
    if transport != Transport::Smc {
        step("SO_REUSEPORT", socket.set_reuse_port(true))?;
    }
    step("SO_REUSEADDR", socket.set_reuse_address(true))?;
    if addr.is_ipv6() {
        socket.set_only_v6(true)?;
    }
    step("bind", socket.bind(&addr.into()))?;
    step("listen", socket.listen(DATA_BACKLOG))?;
    Ok(DataListener::from_socket(socket, transport))
}

/// Creates an AF_UNIX data listener at `path` (inside a [`SocketDir`]),
/// accessible to the owner only.
pub fn listen_unix(path: &Path, opts: &SocketOptions) -> std::io::Result<DataListener> {
    let socket: Socket = sockopt::new_socket(Domain::UNIX, None, opts)?;
    socket.bind(&socket2::SockAddr::unix(path)?)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    socket.listen(DATA_BACKLOG)?;
    Ok(DataListener::from_socket(socket, Transport::Unix))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_serialise_as_tagged_addresses() {
        let e = Endpoint::Inet("127.0.0.1:4000".parse().unwrap());
        assert_eq!(
            serde_json::to_string(&e).unwrap(),
            r#"{"inet":"127.0.0.1:4000"}"#
        );
        let u = Endpoint::Unix("/run/user/0/stackbench-a/w0.sock".into());
        assert_eq!(
            serde_json::to_string(&u).unwrap(),
            r#"{"unix":"/run/user/0/stackbench-a/w0.sock"}"#
        );
        assert_eq!(u.to_string(), "unix:/run/user/0/stackbench-a/w0.sock");
    }

    #[test]
    fn unix_drops_tcp_options_and_says_so() {
        let opts = SocketOptions {
            nodelay: true,
            quickack: true,
            sndbuf_bytes: Some(65536),
            rcvbuf_bytes: Some(65536),
            crr_close: CrrClose::Abort,
            ..SocketOptions::default()
        };
        let (eff, notes) = effective_options(Transport::Unix, &opts);
        assert!(!eff.nodelay && !eff.quickack && eff.rcvbuf_bytes.is_none());
        assert_eq!(eff.sndbuf_bytes, Some(65536));
        assert_eq!(eff.crr_close, CrrClose::Client);
        assert_eq!(notes.len(), 4, "{notes:?}");
        assert!(notes[0].starts_with("nodelay"));
        let (eff, notes) = effective_options(Transport::Tcp, &opts);
        assert_eq!(eff, opts);
        assert!(notes.is_empty());
    }

    /// Long messages are corked where Nagle could hold their tail: TCP-family
    /// transports without nodelay; never over AF_UNIX (no Nagle, and
    /// TCP_CORK is refused there).
    #[test]
    fn cork_where_nagle_holds_small_segments() {
        let plain = SocketOptions::default();
        for t in [
            Transport::Tcp,
            Transport::Mptcp,
            Transport::Tls,
            Transport::Smc,
        ] {
            assert!(effective_options(t, &plain).0.cork, "{t:?}");
        }
        assert!(!effective_options(Transport::Unix, &plain).0.cork);
        let nodelay = SocketOptions {
            nodelay: true,
            ..plain
        };
        assert!(!effective_options(Transport::Tcp, &nodelay).0.cork);
    }

    #[test]
    fn unix_needs_a_loopback_target() {
        assert!(check_usable(Transport::Unix, "127.0.0.1:1".parse().unwrap()).is_ok());
        assert!(check_usable(Transport::Unix, "[::1]:1".parse().unwrap()).is_ok());
        let e = check_usable(Transport::Unix, "192.0.2.1:12870".parse().unwrap()).unwrap_err();
        assert!(e.contains("needs the responder on this host"), "{e}");
        assert!(check_usable(Transport::Tcp, "192.0.2.1:1".parse().unwrap()).is_ok());
    }
}
