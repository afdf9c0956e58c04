//! The driver's side of a transport: opening data connections to the
//! endpoints a test's `ready` named, spread so that one driver can hold more
//! connections than one source address has ephemeral ports.
//!
//! Design note: a TCP connection is unique by its 4-tuple, and Linux picks an
//! ephemeral port per (source address, destination) pair, so one source
//! address reaches ~28K connections to one responder port (32768–60999).
//! But connect() looks first at the ports of one parity only (even ones,
//! leaving odd ones to bind(); Linux 4.6's "better use of ephemeral ports in
//! connect()", net/ipv4/inet_hashtables.c `__inet_hash_connect`), so once a
//! (source, destination) pair holds half the range every further connect()
//! walks all of that half before trying the other: measured here, 8 agents of
//! 16K clients each stalled at ~108K connections with their workers inside
//! `__inet_hash_connect`. A path therefore carries under half the range. A
//! class with more clients uses several *paths*: on IPv4 loopback several
//! source addresses (127.0.0.1 … 127.0.0.N, bound with
//! IP_BIND_ADDRESS_NO_PORT so the port is still chosen at connect, per
//! destination); elsewhere (IPv6 has only ::1, a remote responder sees one
//! driver address) several responder ports. Client `route` uses source
//! `route % sources` and endpoint `route % endpoints`; the driver passes the
//! connection's slot, fixed for the client's life, so paths fill evenly.

use std::io;
use std::os::fd::AsRawFd;

use socket2::{Domain, Protocol, SockAddr};
use stackbench_model::SocketOptions;

use openssl::ssl::{SslContext, SslSession};

use super::tls::TlsConn;
use super::DataStream;
use crate::sockopt;

/// Most loopback source addresses used (127.0.0.1 … 127.0.0.254).
pub(super) const MAX_SOURCES: u32 = 254;
/// Connections per path when the port range cannot be read (7/16 of the
/// default range 32768–60999, which holds 28,232 ports).
const DEFAULT_PER_PATH: u32 = 12_348;

/// How a class's connections are spread: listener ports asked of the
/// responder, and source addresses the driver binds to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spread {
    pub ports: u32,
    pub sources: u32,
}

/// Connections one path carries: 7/16 of the ephemeral port range, under
/// the half that connect() searches first (see the module notes).
pub fn connections_per_path() -> u32 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|t| {
            let mut it = t.split_whitespace().map(|n| n.parse::<u32>().ok());
            let (lo, hi) = (it.next()??, it.next()??);
            Some((hi.saturating_sub(lo) + 1) / 16 * 7)
        })
        .filter(|&n| n > 0)
        .unwrap_or(DEFAULT_PER_PATH)
}

/// Opens data connections of one class.
#[derive(Debug, Clone)]
pub struct Dialer {
    domain: Domain,
    protocol: Option<Protocol>,
    targets: Vec<SockAddr>,
    /// Empty: the kernel picks the source address.
    sources: Vec<SockAddr>,
    /// The client context of a `tls` class.
    tls: Option<SslContext>,
    /// Share of connections that offer the last session (0 to 1).
    resume_ratio: f64,
    /// A foreign server's name: SNI and the certificate's name.
    server_name: Option<std::sync::Arc<str>>,
}

impl Dialer {
    /// A dialer of `protocol` sockets in `domain` to `targets`, bound to
    /// `sources` (empty: the kernel picks). A row's dialer is made from its
    /// endpoints by `ops::dialer_for`, beside the row trait, so that this
    /// file does not import the trait that names it.
    pub(super) fn new(
        domain: Domain,
        protocol: Option<Protocol>,
        targets: Vec<SockAddr>,
        sources: Vec<SockAddr>,
    ) -> Dialer {
        Dialer {
            domain,
            protocol,
            targets,
            sources,
            tls: None,
            resume_ratio: 0.0,
            server_name: None,
        }
    }

    /// Makes every connection a TLS client connection of `ctx`, a share
    /// `resume_ratio` of them offering the client's last session.
    pub fn with_tls(mut self, ctx: SslContext, resume_ratio: f64) -> Dialer {
        self.tls = Some(ctx);
        self.resume_ratio = resume_ratio;
        self
    }

    /// Names the foreign server every TLS connection goes to (SNI, and
    /// the name its certificate must carry).
    pub fn with_server_name(mut self, name: Option<&str>) -> Dialer {
        self.server_name = name.map(Into::into);
        self
    }

    /// Share of connections that offer a previous TLS session.
    pub fn resume_ratio(&self) -> f64 {
        self.resume_ratio
    }

    /// Whether connections are TLS.
    pub fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// Source addresses in use (0: the kernel's choice).
    pub fn sources(&self) -> usize {
        self.sources.len()
    }

    /// Starts a non-blocking connect for client `route`, with every socket
    /// option set before it. A connect still in progress is not an error: the
    /// first send says EAGAIN, or reports the failure.
    pub fn connect(
        &self,
        route: usize,
        opts: &SocketOptions,
        recv_message_bytes: u64,
    ) -> io::Result<DataStream> {
        self.connect_resuming(route, opts, recv_message_bytes, None)
    }

    /// [`Self::connect`], offering TLS `session` for resumption.
    pub fn connect_resuming(
        &self,
        route: usize,
        opts: &SocketOptions,
        recv_message_bytes: u64,
        session: Option<&SslSession>,
    ) -> io::Result<DataStream> {
        let socket = sockopt::new_socket(self.domain, self.protocol, opts)?;
        let stream = DataStream::from_socket(socket);
        stream.apply_options(opts, recv_message_bytes)?;
        if !self.sources.is_empty() {
            let fd = stream.as_raw_fd();
            sockopt::set_int(fd, libc::IPPROTO_IP, libc::IP_BIND_ADDRESS_NO_PORT, 1)?;
            bind(fd, &self.sources[route % self.sources.len()])?;
        }
        connect(
            stream.as_raw_fd(),
            &self.targets[route % self.targets.len()],
        )?;
        match (&self.tls, stream) {
            (Some(ctx), DataStream::Plain(fd)) => Ok(DataStream::Tls(Box::new(TlsConn::named(
                ctx,
                fd,
                (true, self.server_name.as_deref()),
                session,
                recv_message_bytes,
            )?))),
            (_, stream) => Ok(stream),
        }
    }
}

impl Dialer {
    /// Starts a non-blocking connect for client `route` to `port` of the
    /// address its connections go to: a data connection whose port the
    /// protocol learned on the control connection (FTP's EPSV/PASV
    /// answer). Clear text, from the same source address.
    pub fn connect_port(
        &self,
        route: usize,
        port: u16,
        opts: &SocketOptions,
        recv_message_bytes: u64,
    ) -> io::Result<DataStream> {
        let target = &self.targets[route % self.targets.len()];
        let mut addr = target.as_socket().ok_or_else(|| {
            io::Error::other(
                "a data connection needs an IP address (the control connection has none)",
            )
        })?;
        addr.set_port(port);
        let socket = sockopt::new_socket(self.domain, self.protocol, opts)?;
        let stream = DataStream::from_socket(socket);
        stream.apply_options(opts, recv_message_bytes)?;
        if !self.sources.is_empty() {
            let fd = stream.as_raw_fd();
            sockopt::set_int(fd, libc::IPPROTO_IP, libc::IP_BIND_ADDRESS_NO_PORT, 1)?;
            bind(fd, &self.sources[route % self.sources.len()])?;
        }
        connect(stream.as_raw_fd(), &SockAddr::from(addr))?;
        Ok(stream)
    }
}

fn bind(fd: i32, addr: &SockAddr) -> io::Result<()> {
    // SAFETY: `addr` is a valid socket address of `addr.len()` bytes.
    if unsafe { libc::bind(fd, addr.as_ptr().cast(), addr.len()) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn connect(fd: i32, addr: &SockAddr) -> io::Result<()> {
    // SAFETY: `addr` is a valid socket address of `addr.len()` bytes.
    if unsafe { libc::connect(fd, addr.as_ptr().cast(), addr.len()) } == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EINPROGRESS) {
        Ok(())
    } else {
        Err(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::IpAddr;

    use crate::transport::ops::dialer_for;
    use crate::transport::{row, spread, Endpoint};
    use stackbench_model::Transport;

    #[test]
    fn paths_grow_with_clients_and_follow_the_family() {
        let per = connections_per_path();
        let v4: IpAddr = "127.0.0.1".parse().unwrap();
        let v6: IpAddr = "::1".parse().unwrap();
        let one = Spread {
            ports: 1,
            sources: 1,
        };
        assert_eq!(spread(row(Transport::Tcp), v4, per), one);
        assert_eq!(spread(row(Transport::Tcp), v4, per + 1).sources, 2);
        assert_eq!(spread(row(Transport::Mptcp), v4, 3 * per).sources, 3);
        assert_eq!(
            spread(row(Transport::Tcp), v6, per + 1),
            Spread {
                ports: 2,
                sources: 1
            }
        );
        assert_eq!(spread(row(Transport::Unix), v4, 10 * per), one);
        let remote: IpAddr = "192.0.2.1".parse().unwrap();
        assert_eq!(spread(row(Transport::Tcp), remote, per + 1).ports, 2);
    }

    #[test]
    fn endpoints_must_match_the_transport() {
        let inet = Endpoint::Inet("127.0.0.1:9".parse().unwrap());
        let e = dialer_for(row(Transport::Unix), std::slice::from_ref(&inet), 1).unwrap_err();
        assert!(e.contains("for transport unix"), "{e}");
        assert!(dialer_for(row(Transport::Tcp), &[], 1).is_err());
        assert_eq!(
            dialer_for(row(Transport::Tcp), &[inet], 3)
                .unwrap()
                .sources(),
            3
        );
    }
}
