//! The transport seam: data connections are opened ([`Dialer`]), accepted
//! ([`DataListener`]), read, written and closed ([`DataStream`]) through this
//! module only, for the transport chosen per run — `tcp`, `unix` (AF_UNIX
//! stream sockets: the memory-to-memory path without TCP/IP), `mptcp`
//! (IPPROTO_MPTCP), `tls` (OpenSSL over TCP, [`tls`]) or `smc` (AF_SMC where
//! the kernel has it, [`smc`]). The driver and responder state machines do
//! not know which one they drive.
//!
//! What differs between transports is one row each of the transport table
//! ([`TransportOps`], looked up with [`row`]): how the responder listens,
//! how the driver dials, which options apply (those that do not — TCP_NODELAY
//! on AF_UNIX, TCP_QUICKACK on MPTCP sockets here — are not set, and each is
//! named in a note for the run's warnings, never silently pretended), the
//! check before a run and the fallback check after it. Endpoints travel in
//! the control protocol: `IP:port` or a unix socket path.

mod dialer;
pub mod ktls;
mod listen;
mod mptcp;
mod ops;
mod rows;
pub mod smc;
pub mod smc_reason;
mod stream;
mod tcp;
pub mod tls;
pub mod tls_acct;
mod tls_row;
mod unix;
mod unix_dir;

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use dialer::{connections_per_path, Dialer, Spread};
pub use listen::listen_inet;
pub use ops::{spread, DataListener, ListenRequest, Listening, TransportOps};
pub use rows::{check_priority, row, row_for};
pub use stackbench_model::Transport;
pub use stream::DataStream;
pub use unix_dir::{SocketDir, MAX_PATH_BYTES};

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

#[cfg(test)]
mod tests {
    use super::*;
    use stackbench_model::SocketOptions;

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
            assert!(row(t).effective_options(&plain).0.cork, "{t:?}");
        }
        assert!(!row(Transport::Unix).effective_options(&plain).0.cork);
        let nodelay = SocketOptions {
            nodelay: true,
            ..plain
        };
        assert!(!row(Transport::Tcp).effective_options(&nodelay).0.cork);
    }
}
