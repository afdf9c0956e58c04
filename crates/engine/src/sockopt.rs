//! Socket set-up and the raw I/O calls of the hot path, shared by every
//! fd-based transport (see `transport`, which owns which of them apply where:
//! AF_UNIX has no TCP options, MPTCP refuses TCP_QUICKACK).
//!
//! The options are the ones z/OS Communications Server's performance best
//! practices name (delayed ACK, MSG_WAITALL, buffer sizes). How each maps to
//! Linux:
//! - `nodelay` → TCP_NODELAY on every data socket, both sides.
//! - `waitall` → receives pass MSG_WAITALL, and SO_RCVLOWAT is set to the
//!   message size (when it is at most [`RCVLOWAT_CAP_BYTES`]). On a non-blocking
//!   socket MSG_WAITALL alone changes nothing; SO_RCVLOWAT is what makes epoll
//!   report the socket readable only once the whole message is there, which is
//!   the wake-up saving MSG_WAITALL gives a blocking receiver.
//! - `quickack` → TCP_QUICKACK re-armed after every receive (the kernel clears
//!   it by itself, so once per connection would not keep delayed ACK off).
//! - `sndbuf`/`rcvbuf` → SO_SNDBUF/SO_RCVBUF before connect or listen, so the
//!   window scale is negotiated for them; setting them turns off autotuning.
//! - `busy_poll` → SO_BUSY_POLL (µs) on every data socket, both sides: a
//!   blocking receive polls the device queue before sleeping. It needs root (or
//!   CAP_NET_ADMIN) to exceed `net.core.busy_read`, and only NAPI devices are
//!   polled (loopback is not one, so on loopback it costs nothing and gains nothing).
//! - `priority` (per class) → IP_TOS / IPV6_TCLASS = DSCP CS<level>, then
//!   SO_PRIORITY = htb class id `1:1<level>` (see
//!   `stackbench_model::settings::priority_class`), on every data socket of
//!   the class, both sides. The order matters: IP_TOS resets the priority.
//!   Set before connect, so the SYN is marked too; on accepted sockets from
//!   the first response on. [`check_priority`] refuses, before a run, a count
//!   that does not match the mix and a process that may not set it.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};

use socket2::{Domain, Protocol, SockRef, Socket, Type};
use stackbench_model::settings::{priority_class, priority_tos};
use stackbench_model::SocketOptions;

/// Bytes moved per `send`/`recv` call on both sides, and the size of each
/// worker's two buffers (shared by all its connections). 128 KiB, iperf3's
/// default write size: with 256 KiB the loopback sender spent ~290 µs CPU per
/// MiB against ~265 µs here; 64 KiB cost the receiver more per MiB.
pub const IO_CHUNK_BYTES: usize = 128 * 1024;

/// Largest message for which SO_RCVLOWAT is set to the whole message. The
/// kernel caps the low-water mark at half the receive buffer; beyond this size
/// a stream is bulk transfer anyway and waking per chunk costs nothing.
pub const RCVLOWAT_CAP_BYTES: u64 = 256 * 1024;

/// Creates a non-blocking stream socket with the buffer sizes applied (they
/// must precede connect/listen).
pub fn new_socket(
    domain: Domain,
    protocol: Option<Protocol>,
    opts: &SocketOptions,
) -> io::Result<Socket> {
    let socket = Socket::new(domain, Type::STREAM.nonblocking(), protocol)?;
    if let Some(bytes) = opts.sndbuf_bytes {
        socket.set_send_buffer_size(bytes as usize)?;
    }
    if let Some(bytes) = opts.rcvbuf_bytes {
        socket.set_recv_buffer_size(bytes as usize)?;
    }
    Ok(socket)
}

/// Options applied to a data socket (before connect, or once accepted). `recv_message_bytes` is the size
/// of the message this side receives (request on the server, response on the
/// client).
pub fn apply_connected(fd: RawFd, opts: &SocketOptions, recv_message_bytes: u64) -> io::Result<()> {
    // SAFETY: `fd` is an open socket owned by the caller for the whole call.
    let fd = unsafe { BorrowedFd::borrow_raw(fd) };
    let sock = SockRef::from(&fd);
    if opts.nodelay {
        sock.set_tcp_nodelay(true)?;
    }
    if opts.waitall && recv_message_bytes <= RCVLOWAT_CAP_BYTES {
        set_int(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVLOWAT,
            recv_message_bytes as libc::c_int,
        )?;
    }
    if opts.quickack {
        quickack(fd.as_raw_fd());
    }
    if let Some(us) = opts.busy_poll_us {
        set_int(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_BUSY_POLL,
            us as libc::c_int,
        )?;
    }
    if let Some(level) = opts.priority {
        set_priority(fd.as_raw_fd(), level)?;
    }
    Ok(())
}

/// DSCP, then SO_PRIORITY, for priority level `level` (module doc).
pub(crate) fn set_priority(fd: RawFd, level: u8) -> io::Result<()> {
    let tos = libc::c_int::from(priority_tos(level));
    let (domain, protocol) = (
        get_int(fd, libc::SOL_SOCKET, libc::SO_DOMAIN)?,
        get_int(fd, libc::SOL_SOCKET, libc::SO_PROTOCOL)?,
    );
    // AF_SMC passes IP options to its TCP socket; protocol 1 is SMCPROTO_SMC6.
    let v6 = domain == libc::AF_INET6 || (domain == AF_SMC && protocol == 1);
    if v6 {
        set_int(fd, libc::IPPROTO_IPV6, libc::IPV6_TCLASS, tos)?;
    } else if domain == libc::AF_INET || domain == AF_SMC {
        set_int(fd, libc::IPPROTO_IP, libc::IP_TOS, tos)?;
    }
    set_int(
        fd,
        libc::SOL_SOCKET,
        libc::SO_PRIORITY,
        priority_class(level) as libc::c_int,
    )
}

/// `AF_SMC` (not in libc).
pub(crate) const AF_SMC: libc::c_int = 43;

/// The check of a run's priority setting before it starts lives with the
/// transport rows it asks (whether the row applies SO_PRIORITY at all);
/// named here too, beside the calls that set and probe it.
pub use crate::transport::check_priority;

/// Sets level `level` on a probe socket: whether this process may.
pub fn probe_priority(level: u8) -> Result<(), String> {
    let probe = Socket::new(Domain::IPV4, Type::STREAM, None)
        .map_err(|e| format!("priority: cannot open a probe socket: {e}"))?;
    match set_priority(probe.as_raw_fd(), level) {
        Ok(()) => Ok(()),
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => Err(format!(
            "priority level {level}: SO_PRIORITY {:#x} (htb class 1:{:x}) needs CAP_NET_ADMIN: \
             run as root (lab runs are) or drop priority",
            priority_class(level),
            priority_class(level) & 0xffff,
        )),
        Err(e) => Err(format!("priority: cannot set SO_PRIORITY: {e}")),
    }
}

/// getsockopt(2) of an int option.
fn get_int(fd: RawFd, level: libc::c_int, name: libc::c_int) -> io::Result<libc::c_int> {
    let mut value: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `value`.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            level,
            name,
            (&mut value as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if rc == 0 {
        Ok(value)
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Whether a message of `message_bytes` is corked while it is written: the
/// transport asked for corking (`SocketOptions::cork`) and the message takes
/// more than one write.
#[inline]
pub(crate) fn corks(opts: &SocketOptions, message_bytes: u64) -> bool {
    opts.cork && message_bytes > IO_CHUNK_BYTES as u64
}

/// Corks (`true`) or uncorks a socket around a message written in several
/// calls (see `SocketOptions::cork` for why). Failure is ignored: it costs
/// at worst the stall the cork avoids, which `delayed_ack_stall` reports.
#[inline]
pub(crate) fn cork(fd: RawFd, on: bool) {
    let _ = set_int(fd, libc::IPPROTO_TCP, libc::TCP_CORK, libc::c_int::from(on));
}

/// Re-arms TCP_QUICKACK. Failure is ignored: it only loses an optimisation.
#[inline]
pub(crate) fn quickack(fd: RawFd) {
    let _ = set_int(fd, libc::IPPROTO_TCP, libc::TCP_QUICKACK, 1);
}

/// setsockopt(2) with an int value, for options socket2 does not wrap.
pub(crate) fn set_int(
    fd: RawFd,
    level: libc::c_int,
    name: libc::c_int,
    value: libc::c_int,
) -> io::Result<()> {
    // SAFETY: plain setsockopt on an open fd with a valid int option value.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Makes the next close send RST instead of FIN (SO_LINGER 0): no TIME_WAIT.
pub(crate) fn set_abortive_close(fd: RawFd) -> io::Result<()> {
    // SAFETY: `fd` is an open socket owned by the caller for the whole call.
    let fd = unsafe { BorrowedFd::borrow_raw(fd) };
    let sock = SockRef::from(&fd);
    sock.set_linger(Some(std::time::Duration::ZERO))
}

/// `shutdown(SHUT_WR)`: a FIN, receiving goes on.
pub(crate) fn shutdown_write(fd: RawFd) -> io::Result<()> {
    // SAFETY: `fd` is an open socket owned by the caller for the whole call.
    let fd = unsafe { BorrowedFd::borrow_raw(fd) };
    SockRef::from(&fd).shutdown(std::net::Shutdown::Write)
}

/// One `recv(2)`. Returns `Ok(0)` at end of stream.
#[inline]
pub(crate) fn recv(fd: RawFd, buf: &mut [u8], waitall: bool) -> io::Result<usize> {
    let flags = if waitall { libc::MSG_WAITALL } else { 0 };
    // SAFETY: the buffer is valid for `buf.len()` writable bytes.
    let n = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), flags) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// Blocking with send and receive timeouts of `wait` (`Some`), or
/// non-blocking (`None`): see `DataStream::enter_direct`.
pub(crate) fn set_direct_wait(fd: RawFd, wait: Option<std::time::Duration>) -> io::Result<()> {
    // SAFETY: `fd` is an open socket owned by the caller for the whole call.
    let fd = unsafe { BorrowedFd::borrow_raw(fd) };
    let sock = SockRef::from(&fd);
    if wait.is_some() {
        sock.set_read_timeout(wait)?;
        sock.set_write_timeout(wait)?;
    }
    sock.set_nonblocking(wait.is_none())
}

/// One `send(2)` with MSG_NOSIGNAL, so a reset peer is an error, not SIGPIPE.
#[inline]
pub(crate) fn send(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: the buffer is valid for `buf.len()` readable bytes.
    let n = unsafe { libc::send(fd, buf.as_ptr().cast(), buf.len(), libc::MSG_NOSIGNAL) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};

    fn get(fd: RawFd, level: libc::c_int, name: libc::c_int) -> libc::c_int {
        get_int(fd, level, name).unwrap()
    }

    /// The level becomes DSCP CS<L> and SO_PRIORITY 1:1L, in that order (IP_TOS
    /// alone would leave the priority at rt_tos2priority's value); needs
    /// CAP_NET_ADMIN, else skipped.
    #[test]
    fn priority_sets_dscp_then_the_class_id() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let conn = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let fd = conn.as_raw_fd();
        match set_priority(fd, 6) {
            Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
                let why = "SO_PRIORITY above 6 needs CAP_NET_ADMIN";
                let test = "priority_sets_dscp_then_the_class_id";
                return stackbench_testkit::skip(stackbench_testkit::Tier::Root, test, why);
            }
            other => other.unwrap(),
        }
        assert_eq!(get(fd, libc::IPPROTO_IP, libc::IP_TOS) & 0xfc, 0xc0);
        assert_eq!(get(fd, libc::SOL_SOCKET, libc::SO_PRIORITY), 0x0001_0016);
        let opts = SocketOptions {
            priority: Some(0),
            ..SocketOptions::default()
        };
        apply_connected(fd, &opts, 100).unwrap();
        assert_eq!(get(fd, libc::IPPROTO_IP, libc::IP_TOS) & 0xfc, 0);
        assert_eq!(get(fd, libc::SOL_SOCKET, libc::SO_PRIORITY), 0x0001_0010);
    }
}
