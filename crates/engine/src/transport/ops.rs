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

use std::net::{IpAddr, SocketAddr};

use socket2::{Domain, Protocol};
use stackbench_model::{SocketOptions, TlsParams, Transport};
use stackbench_record::KtlsCounters;

use super::{DataListener, DataStream, Dialer, Endpoint, SocketDir};
use crate::control::ServerTestStats;

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
        Dialer::new(self.as_row(), endpoints, sources)
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

/// Long messages are corked wherever Nagle holds small segments (see
/// `SocketOptions::cork`); with nodelay nothing is held.
pub(crate) fn cork_where_nagle(row: &dyn TransportOps, mut opts: SocketOptions) -> SocketOptions {
    opts.cork = row.nagle() && !opts.nodelay;
    opts
}
