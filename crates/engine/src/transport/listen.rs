//! Data listeners: the IP listeners every TCP-family row opens (one
//! SO_REUSEPORT listener per responder worker on each port, or a port per
//! worker where the row cannot share one) and the AF_UNIX listener at a
//! socket path.

use std::io;
use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use openssl::ssl::SslContext;
use socket2::{Domain, Socket};
use stackbench_model::SocketOptions;

use super::ops::{DataListener, ListenRequest, Listening, TransportOps};
use super::Endpoint;
use crate::sockopt;

/// Listen backlog of data listeners: CRR with many clients connects in bursts.
const DATA_BACKLOG: i32 = 4096;

/// Creates a data listener of `row` on `addr` (port 0 picks one;
/// SO_REUSEPORT so every responder worker can listen on the same port,
/// where the row allows it).
pub fn listen_inet(
    row: &'static dyn TransportOps,
    addr: SocketAddr,
    opts: &SocketOptions,
) -> io::Result<DataListener> {
    let (domain, protocol) = row.socket(Domain::for_address(addr));
    let socket = sockopt::new_socket(domain, protocol, opts)?;
    let step = |what: &str, r: io::Result<()>| {
        r.map_err(|e| io::Error::new(e.kind(), format!("{what}: {e}")))
    };
    if row.reuse_port() {
        step("SO_REUSEPORT", socket.set_reuse_port(true))?;
    }
    step("SO_REUSEADDR", socket.set_reuse_address(true))?;
    if addr.is_ipv6() {
        socket.set_only_v6(true)?;
    }
    step("bind", socket.bind(&addr.into()))?;
    step("listen", socket.listen(DATA_BACKLOG))?;
    Ok(DataListener::from_socket(socket, row))
}

/// Creates an AF_UNIX data listener of `row` at `path` (inside a
/// [`super::SocketDir`]), accessible to the owner only.
pub fn listen_unix(
    row: &'static dyn TransportOps,
    path: &Path,
    opts: &SocketOptions,
) -> io::Result<DataListener> {
    let socket: Socket = sockopt::new_socket(Domain::UNIX, None, opts)?;
    socket.bind(&socket2::SockAddr::unix(path)?)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    socket.listen(DATA_BACKLOG)?;
    Ok(DataListener::from_socket(socket, row))
}

/// `req.ports` fresh ports, each with one SO_REUSEPORT listener per worker
/// (where the row cannot share a port, `req.ports` fresh ports per worker),
/// every accepted connection a TLS server connection of `tls` if given.
pub(crate) fn inet_listeners(
    row: &'static dyn TransportOps,
    req: &ListenRequest<'_>,
    tls: Option<&SslContext>,
) -> Result<Listening, String> {
    let mut per_worker: Vec<Vec<DataListener>> = (0..req.workers).map(|_| Vec::new()).collect();
    let mut endpoints = Vec::new();
    let cannot = |e: io::Error| format!("cannot open a data listener: {e}");
    // Without SO_REUSEPORT (AF_SMC): a port of its own per worker (as
    // AF_UNIX has a path per worker), the driver spreading clients over them.
    let shared = row.reuse_port();
    for _ in 0..req.ports {
        let mut addr = SocketAddr::new(req.ip, 0);
        for listeners in per_worker.iter_mut() {
            if !shared {
                addr = SocketAddr::new(req.ip, 0);
            }
            let mut l = listen_inet(row, addr, req.socket).map_err(cannot)?;
            if let Some(ctx) = tls {
                l = l.with_tls(ctx.clone());
            }
            addr = l.local_addr().map_err(cannot)?;
            listeners.push(l);
            if !shared {
                endpoints.push(Endpoint::Inet(addr));
            }
        }
        if shared {
            endpoints.push(Endpoint::Inet(addr));
        }
    }
    Ok(Listening {
        per_worker,
        endpoints,
        dir: None,
    })
}
