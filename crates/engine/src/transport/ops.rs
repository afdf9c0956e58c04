//! The transport table: one row per transport, each owning what differs
//! between transports — how the responder listens for a test, how the
//! driver dials, which socket options apply, whether the transport can be
//! used here (checked before a run) and whether the connections really were
//! of it (checked after). The driver, the responder and the cli look the row
//! up once ([`row`], [`row_for`]) and call it instead of matching on
//! [`Transport`]; what stays outside the rows is whether TLS parameters
//! apply (they are the `tls` rows' input, and `tls_mode sidecar` needs them
//! before any row is chosen).
//!
//! Design taken from fio's `struct ioengine_ops` (fio, ioengines.h: a named
//! row of hooks the core looks up once by name; hooks an engine does not
//! need stay empty) and neper's `struct neper_fn` (neper, common.h: the
//! per-test hooks a shared thread/flow core calls, e.g. `fn_post_listen` and
//! `fn_pre_connect`). Here a row is a unit struct behind a trait object, so
//! hooks a row does not need are default methods. Cost: one indirect call
//! per hook use; on a data path only [`TransportOps::accepted`], once per
//! accepted connection (next to an accept4 system call).
//!
//! Adding a transport: a variant of [`Transport`] (the model's settings
//! table gives it its name), a row implementing [`TransportOps`] in its own
//! module, one arm in [`row`], its tests, and the docs.
//!
//! `tls_mode sidecar` is not a row: it is a process arrangement on top of
//! the tcp row (the workers listen and the driver dials in clear text, a
//! proxy per side does TLS; see `crate::sidecar`).
//!
//! The trait and the listener a row opens ([`DataListener`], which keeps its
//! row for [`TransportOps::accepted`]) name each other, so they share this
//! file; so do the row-dependent halves of dialing ([`spread`],
//! [`dialer_for`]), which leave `dialer.rs` free of the trait. The files
//! below the trait (`stream`, `dialer`, `tls`) import none of the rows.

use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use mio::event::Source;
use mio::unix::SourceFd;
use mio::{Interest, Registry, Token};
use openssl::ssl::SslContext;
use socket2::{Domain, Protocol, SockAddr, SockRef, Socket};
use stackbench_model::{SocketOptions, TlsParams, Transport};
use stackbench_record::KtlsCounters;

use super::dialer::{connections_per_path, MAX_SOURCES};
use super::tls::TlsConn;
use super::{DataStream, Dialer, Endpoint, SocketDir, Spread};
use crate::test_stats::ServerTestStats;

/// What the responder opens for one test: per worker its listeners, the
/// endpoints the `ready` reply announces, and the socket directory to
/// remove when the test ends (AF_UNIX).
pub struct Listening {
    pub per_worker: Vec<Vec<DataListener>>,
    pub endpoints: Vec<Endpoint>,
    pub dir: Option<SocketDir>,
}

/// What a test asks of [`TransportOps::listen`].
#[derive(Debug, Clone, Copy)]
pub struct ListenRequest<'a> {
    /// Responder workers serving the test (each gets its listeners).
    pub workers: usize,
    /// The responder's address on the control connection: data listeners
    /// bind to it.
    pub ip: IpAddr,
    /// Ports the driver asked for (see `spread`).
    pub ports: u32,
    /// The test's effective socket options.
    pub socket: &'a SocketOptions,
    /// The test's TLS parameters (transport tls).
    pub tls: Option<&'a TlsParams>,
}

/// One transport's row. Methods with a default give the TCP family's
/// behaviour; a row overrides what differs.
pub trait TransportOps: Sync + std::fmt::Debug {
    /// The setting value this row serves (`tls` and `ktls` serve `tls`).
    fn transport(&self) -> Transport;

    /// Name in messages: the setting value, or `ktls`.
    fn name(&self) -> &'static str {
        self.transport().name()
    }

    /// The socket domain and protocol of a data socket to or from a peer of
    /// `inet` (`Domain::IPV4` or `IPV6`; ignored by path-addressed rows).
    fn socket(&self, inet: Domain) -> (Domain, Option<Protocol>) {
        (inet, Some(Protocol::TCP))
    }

    /// Endpoints are socket paths on this host, not IP addresses (AF_UNIX):
    /// no ports to spread over, no lab link to cross.
    fn paths(&self) -> bool {
        false
    }

    /// Nagle's algorithm can hold small segments (unless nodelay): where
    /// long messages are corked and the delayed-ACK stall band is counted.
    fn nagle(&self) -> bool {
        true
    }

    /// The io_uring backend serves this transport: data moves by plain
    /// send/recv on the kernel socket with no user-space layer, and nothing
    /// is noted per accepted connection (that backend's responder does not
    /// call [`Self::accepted`]). Other rows run on epoll.
    fn uring(&self) -> bool {
        false
    }

    /// Data moves by plain send/recv on the kernel socket, with no
    /// user-space session in between (`DataStream::is_plain`): what direct
    /// waiting blocks in (`crate::iomode::DIRECT`). The TLS rows are not.
    fn plain(&self) -> bool {
        true
    }

    /// Several listeners (one per responder worker) may share a port with
    /// SO_REUSEPORT; otherwise each worker gets ports of its own.
    fn reuse_port(&self) -> bool {
        true
    }

    /// The options this transport can honour, and a note for each it cannot
    /// (one clause each: the option, why, what is done instead). Both sides
    /// apply the reduced options; the driver reports the notes as a warning.
    fn effective_options(&self, opts: &SocketOptions) -> (SocketOptions, Vec<String>) {
        (cork_where_nagle(self.as_row(), *opts), Vec::new())
    }

    /// Checks before a run that this transport can reach a responder whose
    /// control address is `target` from here. The error is one line with
    /// the fix.
    fn check_usable(&self, _target: SocketAddr) -> Result<(), String> {
        Ok(())
    }

    /// Checks on the responder, before a test's listeners are opened, that
    /// this transport can serve a driver that reached it at `local` (the
    /// responder's address on the control connection). One line for the
    /// driver.
    fn check_driver(&self, _local: IpAddr) -> Result<(), String> {
        Ok(())
    }

    /// Opens a test's data listeners on the responder (the inet rows call
    /// `listen::inet_listeners`; no default here, so that this trait's
    /// module and the listener code do not import each other).
    fn listen(&self, req: &ListenRequest<'_>) -> Result<Listening, String>;

    /// The driver's dialer for one class to the endpoints `ready` named,
    /// using `sources` loopback source addresses when above 1.
    fn dial(
        &self,
        endpoints: &[Endpoint],
        sources: u32,
        _tls: Option<&TlsParams>,
    ) -> Result<Dialer, String> {
        dialer_for(self.as_row(), endpoints, sources)
    }

    /// Notes on a connection the responder accepted, in its test's
    /// counters (`stats.connections` already counts it): evidence for
    /// [`Self::fallback`].
    fn accepted(&self, _stream: &DataStream, _stats: &mut ServerTestStats) {}

    /// After a run, from the responder's counters: why the connections did
    /// not measure this transport (they fell back to another), if so. The
    /// run is then incomplete with this reason.
    fn fallback(&self, _stats: &[ServerTestStats]) -> Option<String> {
        None
    }

    /// The kernel's own counters of this transport now, read before and
    /// after a test (kTLS); `None` where the transport has none.
    fn kernel_counters(&self) -> Option<KtlsCounters> {
        None
    }

    /// This row's `static`: what the listeners it opens keep, to call
    /// [`Self::accepted`] (a default method cannot turn `&self` into a
    /// `&'static dyn` itself).
    fn as_row(&self) -> &'static dyn TransportOps;
}

/// The spread for `clients` connections of `row` to a responder at
/// `target`: one path up to [`connections_per_path`], then source addresses
/// on IPv4 loopback, responder ports otherwise. Socket paths (AF_UNIX) have
/// no ports.
pub fn spread(row: &dyn TransportOps, target: IpAddr, clients: u32) -> Spread {
    let paths = clients.div_ceil(connections_per_path()).max(1);
    match (row.paths(), target) {
        (true, _) => Spread {
            ports: 1,
            sources: 1,
        },
        (_, IpAddr::V4(ip)) if ip.is_loopback() && paths <= MAX_SOURCES => Spread {
            ports: 1,
            sources: paths,
        },
        _ => Spread {
            ports: paths,
            sources: 1,
        },
    }
}

/// The dialer of `row` for `endpoints` (all of its kind, as `ready` gave
/// them) using `sources` loopback source addresses when above 1: the
/// default [`TransportOps::dial`], and the tls rows' before their context.
pub(super) fn dialer_for(
    row: &dyn TransportOps,
    endpoints: &[Endpoint],
    sources: u32,
) -> Result<Dialer, String> {
    let first = endpoints
        .first()
        .ok_or("the responder offered no data endpoint")?;
    let domain = match (row.paths(), first) {
        (true, Endpoint::Unix(_)) => Domain::UNIX,
        (false, Endpoint::Inet(a)) => Domain::for_address(*a),
        (_, e) => {
            return Err(format!(
                "the responder offered endpoint {e} for transport {}",
                row.name()
            ))
        }
    };
    let mut targets = Vec::with_capacity(endpoints.len());
    for e in endpoints {
        targets.push(match (e, domain) {
            (Endpoint::Unix(p), Domain::UNIX) => SockAddr::unix(p)
                .map_err(|err| format!("bad unix endpoint {}: {err}", p.display()))?,
            (Endpoint::Inet(a), d) if d == Domain::for_address(*a) => SockAddr::from(*a),
            _ => return Err(format!("the responder offered mixed endpoints ({e})")),
        });
    }
    let loopback_v4 = matches!(first, Endpoint::Inet(a) if a.is_ipv4() && a.ip().is_loopback());
    let sources = if sources > 1 && loopback_v4 {
        (1..=sources.min(MAX_SOURCES) as u8)
            .map(|i| SockAddr::from(SocketAddr::new(Ipv4Addr::new(127, 0, 0, i).into(), 0)))
            .collect()
    } else {
        Vec::new()
    };
    // AF_SMC connects to the same sockaddr_in/in6 targets.
    let (domain, protocol) = row.socket(domain);
    Ok(Dialer::new(domain, protocol, targets, sources))
}

/// Long messages are corked wherever Nagle holds small segments (see
/// `SocketOptions::cork`); with nodelay nothing is held.
pub(crate) fn cork_where_nagle(row: &dyn TransportOps, mut opts: SocketOptions) -> SocketOptions {
    opts.cork = row.nagle() && !opts.nodelay;
    opts
}

/// A listening data socket of any transport, non-blocking.
#[derive(Debug)]
pub struct DataListener {
    fd: OwnedFd,
    /// The row that opened it: what the responder notes on each accept.
    row: &'static dyn TransportOps,
    /// The server context of a `tls` listener.
    tls: Option<SslContext>,
}

impl DataListener {
    pub(crate) fn from_socket(socket: Socket, row: &'static dyn TransportOps) -> DataListener {
        DataListener {
            fd: socket.into(),
            row,
            tls: None,
        }
    }

    /// Makes every accepted connection a TLS server connection.
    pub fn with_tls(mut self, ctx: SslContext) -> DataListener {
        self.tls = Some(ctx);
        self
    }

    pub fn row(&self) -> &'static dyn TransportOps {
        self.row
    }

    /// The bound address of an IP listener.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        SockRef::from(&self.fd)
            .local_addr()?
            .as_socket()
            .ok_or_else(|| io::Error::other("not an IP listener"))
    }

    /// Accepts one connection, already non-blocking (one accept4 call).
    pub fn accept(&self) -> io::Result<DataStream> {
        // SAFETY: accept4 on an open listening socket; no peer address is
        // asked for, so the null pointers are allowed.
        let fd = unsafe {
            libc::accept4(
                self.fd.as_raw_fd(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: accept4 returned a new fd that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(match &self.tls {
            None => DataStream::Plain(fd),
            Some(ctx) => DataStream::Tls(Box::new(TlsConn::new(ctx, fd, false, None, 0)?)),
        })
    }
}

impl AsRawFd for DataListener {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

impl Source for DataListener {
    fn register(&mut self, r: &Registry, token: Token, interest: Interest) -> io::Result<()> {
        SourceFd(&self.fd.as_raw_fd()).register(r, token, interest)
    }
    fn reregister(&mut self, r: &Registry, token: Token, interest: Interest) -> io::Result<()> {
        SourceFd(&self.fd.as_raw_fd()).reregister(r, token, interest)
    }
    fn deregister(&mut self, r: &Registry) -> io::Result<()> {
        SourceFd(&self.fd.as_raw_fd()).deregister(r)
    }
}
