//! The data stream every transport hands to the state machines (its
//! listener, which remembers the row that opened it, is in `ops.rs`). The state machines call only the methods here (send, recv,
//! quickack, abortive close, mio registration), never a syscall on a raw fd,
//! so a transport whose read and write are not plain socket calls (TLS next)
//! fits behind the same methods.
//!
//! Design note on size: every transport so far (tcp, unix, mptcp) is a kernel
//! stream socket driven by send/recv on its fd, so a stream is just its fd —
//! 4 bytes, and `Option<DataStream>` is 4 bytes too (the fd's niche), which
//! keeps the driver's per-connection state small. Which TCP options apply is
//! decided once per run (the row's
//! [`effective_options`](super::TransportOps::effective_options)), not per
//! call. A TLS stream is a boxed OpenSSL session instead (the enum is 16
//! bytes), justified by the session's own kilobytes.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use mio::event::Source;
use mio::unix::SourceFd;
use mio::{Interest, Registry, Token};
use socket2::Socket;
use stackbench_model::SocketOptions;

use openssl::ssl::SslSession;

use super::tls::{Handshake, TlsConn};
use crate::sockopt;

/// One connected data socket of any transport, non-blocking.
#[derive(Debug)]
pub enum DataStream {
    /// A kernel stream socket read and written with recv/send.
    Plain(OwnedFd),
    /// TLS over a TCP socket.
    Tls(Box<TlsConn>),
}

impl DataStream {
    pub(crate) fn from_socket(socket: Socket) -> DataStream {
        DataStream::Plain(socket.into())
    }

    /// The finished TLS handshake, once per connection (`None` for clear
    /// text, before the handshake ends, and after it was taken).
    #[inline]
    pub fn take_handshake(&mut self) -> Option<Handshake> {
        match self {
            DataStream::Plain(_) => None,
            DataStream::Tls(t) => t.take_handshake(),
        }
    }

    /// TLS key updates this side started since the last call (0 for clear
    /// text and without `--rekey`).
    #[inline]
    pub fn take_rekeys(&mut self) -> u32 {
        match self {
            DataStream::Plain(_) => 0,
            DataStream::Tls(t) => t.take_rekeys(),
        }
    }

    /// The TLS session to offer on the next connection (client side).
    pub fn tls_session(&self) -> Option<SslSession> {
        match self {
            DataStream::Plain(_) => None,
            DataStream::Tls(t) => t.session(),
        }
    }

    /// Applies the per-connection options (`opts` already reduced to those
    /// the run's transport supports). `recv_message_bytes` is the size of the
    /// message this side receives.
    pub fn apply_options(&self, opts: &SocketOptions, recv_message_bytes: u64) -> io::Result<()> {
        sockopt::apply_connected(self.as_raw_fd(), opts, recv_message_bytes)
    }

    /// Sends what the socket takes of `buf` (never raises SIGPIPE).
    #[inline]
    pub fn send(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            DataStream::Plain(fd) => sockopt::send(fd.as_raw_fd(), buf),
            DataStream::Tls(t) => t.send(buf),
        }
    }

    /// Receives into `buf`; `Ok(0)` at end of stream. `waitall` passes
    /// MSG_WAITALL (clear text; TLS reads until `buf` is full or the
    /// socket is drained).
    #[inline]
    pub fn recv(&mut self, buf: &mut [u8], waitall: bool) -> io::Result<usize> {
        match self {
            DataStream::Plain(fd) => sockopt::recv(fd.as_raw_fd(), buf, waitall),
            DataStream::Tls(t) => t.recv(buf),
        }
    }

    /// Re-arms TCP_QUICKACK (call only when the run's options ask for it).
    #[inline]
    pub fn quickack(&self) {
        sockopt::quickack(self.as_raw_fd());
    }

    /// Makes dropping this stream reset the connection (SO_LINGER 0) instead
    /// of closing it in order.
    pub fn set_abortive_close(&self) -> io::Result<()> {
        sockopt::set_abortive_close(self.as_raw_fd())
    }

    /// Direct waiting (`driver::direct`, `responder::direct`): takes the
    /// stream out of `registry` and, with `Some(wait)`, makes it blocking,
    /// each send or recv giving up after `wait` (EAGAIN, as when
    /// non-blocking), so one call both waits and moves the bytes; with
    /// `None` (busy-polling) it stays non-blocking and the caller spins on
    /// its calls. `Ok(false)`: not entered (a TLS
    /// stream, whose reads and writes are several calls, or a step that
    /// failed), the stream registered and non-blocking as before; `Err`:
    /// the stream could not be put back and is unusable.
    pub fn enter_direct(
        &mut self,
        registry: &Registry,
        token: Token,
        wait: Option<std::time::Duration>,
    ) -> io::Result<bool> {
        let DataStream::Plain(fd) = self else {
            return Ok(false);
        };
        let fd = fd.as_raw_fd();
        if registry.deregister(self).is_err() {
            return Ok(false);
        }
        if wait.is_none() || sockopt::set_direct_wait(fd, wait).is_ok() {
            return Ok(true);
        }
        self.leave_direct(registry, token).map(|()| false)
    }

    /// Ends direct waiting: non-blocking and in `registry` again, for read
    /// and write readiness as every data stream is.
    pub fn leave_direct(&mut self, registry: &Registry, token: Token) -> io::Result<()> {
        sockopt::set_direct_wait(self.as_raw_fd(), None)?;
        registry.register(self, token, Interest::READABLE | Interest::WRITABLE)
    }

    /// Whether this is a kernel socket driven by plain send/recv calls.
    pub fn is_plain(&self) -> bool {
        matches!(self, DataStream::Plain(_))
    }

    /// Ends this side's sending (a FIN; TLS sends close_notify first) and
    /// keeps receiving: the half-close a transparent proxy passes through.
    pub fn close_write(&mut self) -> io::Result<()> {
        match self {
            DataStream::Plain(fd) => sockopt::shutdown_write(fd.as_raw_fd()),
            DataStream::Tls(t) => t.close_write(),
        }
    }
}

impl AsRawFd for DataStream {
    fn as_raw_fd(&self) -> RawFd {
        match self {
            DataStream::Plain(fd) => fd.as_raw_fd(),
            DataStream::Tls(t) => t.raw_fd(),
        }
    }
}

impl Source for DataStream {
    fn register(&mut self, r: &Registry, token: Token, interest: Interest) -> io::Result<()> {
        SourceFd(&self.as_raw_fd()).register(r, token, interest)
    }
    fn reregister(&mut self, r: &Registry, token: Token, interest: Interest) -> io::Result<()> {
        SourceFd(&self.as_raw_fd()).reregister(r, token, interest)
    }
    fn deregister(&mut self, r: &Registry) -> io::Result<()> {
        SourceFd(&self.as_raw_fd()).deregister(r)
    }
}
