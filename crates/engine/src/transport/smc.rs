//! AF_SMC (Shared Memory Communications, SMC-R over RDMA / SMC-D over ISM,
//! the mainframe's memory-to-memory path, measured there against TCP and
//! HiperSockets), where the kernel has it.
//!
//! An SMC socket is `socket(AF_SMC = 43, SOCK_STREAM, SMCPROTO_SMC = 0)` for
//! IPv4 or `SMCPROTO_SMC6 = 1` for IPv6; it binds, listens and connects with
//! ordinary `sockaddr_in`/`sockaddr_in6` addresses and forwards IP and TCP
//! options to its internal TCP socket, so the rest of the transport seam
//! (options, spreading, the responder's listeners) treats it as TCP.
//!
//! Detection is at run time: a kernel without CONFIG_SMC answers socket()
//! with EAFNOSUPPORT (no address family 43) or EPROTONOSUPPORT, and [`probe`]
//! turns that into one line naming the option. An SMC connection that finds
//! no SMC-capable device on both hosts (an RDMA NIC with RoCE, or ISM on
//! s390) falls back to TCP during the handshake and still works.
//!
//! Fallback: SOL_SMC has no getsockopt that reports it, so [`diag_of`]
//! asks the SMC_DIAG sock_diag family (CONFIG_SMC_DIAG; what `smcss` uses):
//! a `SOCK_DIAG_BY_FAMILY` dump for AF_SMC, whose `struct smc_diag_msg` rows
//! carry `diag_mode` (0 SMC-R, 1 fallback to TCP, 2 SMC-D), the socket's
//! inode and, after a fallback, its decline reason and the peer's diagnosis
//! (named in `smc_reason`), matched against the connection's `fstat` inode. The responder checks
//! the first [`CHECKED_PER_TEST`] connections of each test (a dump lists every
//! SMC socket of the namespace, too dear per CRR connection), and a fallback
//! makes the run incomplete, as for MPTCP. Written against the uapi headers
//! (linux/smc_diag.h, linux/inet_diag.h); this machine's kernel has no SMC, so
//! only the message layout is tested here.

use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use socket2::{Domain, Protocol, Socket, Type};
use stackbench_model::Transport;

use super::ops::{ListenRequest, Listening, TransportOps};
use super::DataStream;
use crate::sockopt::AF_SMC;
use crate::test_stats::ServerTestStats;

/// The `smc` row: TCP's options and spreading over AF_SMC sockets, a port
/// per responder worker (no SO_REUSEPORT), the first connections of each
/// test checked for a fallback to TCP.
#[derive(Debug)]
pub struct Smc;

pub static SMC: Smc = Smc;

impl TransportOps for Smc {
    fn listen(&self, req: &ListenRequest<'_>) -> Result<Listening, String> {
        super::listen::inet_listeners(self.as_row(), req, None)
    }

    fn transport(&self) -> Transport {
        Transport::Smc
    }

    fn socket(&self, inet: Domain) -> (Domain, Option<Protocol>) {
        let (domain, protocol) = domain_protocol(inet);
        (domain, Some(protocol))
    }

    /// AF_SMC sockets refuse SO_REUSEPORT (EOPNOTSUPP, Linux 6.1): the
    /// responder gives each worker its own port instead.
    fn reuse_port(&self) -> bool {
        false
    }

    fn check_usable(&self, target: SocketAddr) -> Result<(), String> {
        probe(Domain::for_address(target))
    }

    fn accepted(&self, stream: &DataStream, stats: &mut ServerTestStats) {
        if stats.connections <= CHECKED_PER_TEST {
            match diag_of(stream.as_raw_fd()) {
                Some(Diag {
                    fell_back: true,
                    reason,
                }) => {
                    stats.smc_fallbacks += 1;
                    if let Some((r, p)) = reason {
                        stats.add_smc_fallback(r, p, 1);
                    }
                }
                Some(_) => {}
                None => stats.smc_unchecked += 1,
            }
        }
    }

    /// A run whose checked connections fell back to TCP measured TCP; one
    /// whose connections could not be checked is not claimed as SMC either.
    fn fallback(&self, stats: &[ServerTestStats]) -> Option<String> {
        let fallbacks: u64 = stats.iter().map(|s| s.smc_fallbacks).sum();
        let unchecked: u64 = stats.iter().map(|s| s.smc_unchecked).sum();
        if fallbacks > 0 {
            let mut why = ServerTestStats::default();
            for (r, p, n) in stats.iter().flat_map(|s| s.smc_reasons()) {
                why.add_smc_fallback(r, p, n);
            }
            let reasons: Vec<String> = why
                .smc_reasons()
                .map(|(r, p, n)| format!("{n}: {}", super::smc_reason::explain(r, p)))
                .collect();
            let reasons = if reasons.is_empty() {
                String::new()
            } else {
                format!(" ({})", reasons.join("; "))
            };
            return Some(format!(
                "transport smc: {fallbacks} checked data connections fell back to TCP{reasons}, \
                 so the figures are not SMC's: both hosts need an SMC-capable device (RoCE RDMA \
                 or ISM) on the path, and `smcss` shows each connection's mode"
            ));
        }
        // Never claim SMC on no evidence.
        (unchecked > 0).then(|| {
            format!(
                "transport smc: SMC_DIAG did not give the mode of {unchecked} checked data \
                 connections, so they are not known to have run over SMC: load smc_diag \
                 (CONFIG_SMC_DIAG) and check with `smcss`"
            )
        })
    }

    fn as_row(&self) -> &'static dyn TransportOps {
        &SMC
    }
}

/// Connections checked with [`diag_of`] per responder test.
pub const CHECKED_PER_TEST: u64 = 64;
const NETLINK_SOCK_DIAG: i32 = 4;
const SOCK_DIAG_BY_FAMILY: u16 = 20;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const NLM_F_REQUEST: u16 = 1;
const NLM_F_DUMP: u16 = 0x300;
/// `struct smc_diag_req`: family, 2 pad, ext, `struct inet_diag_sockid` (48).
const REQ_BYTES: usize = 52;
/// `struct smc_diag_msg` up to and including `diag_inode` (offset 56).
const MSG_MIN_BYTES: usize = 64;
const SMC_DIAG_MODE_FALLBACK_TCP: u8 = 1;

/// `SMCPROTO_SMC` and `SMCPROTO_SMC6` from `linux/smc.h`.
const SMCPROTO_SMC: i32 = 0;
const SMCPROTO_SMC6: i32 = 1;

/// The socket domain and protocol of an SMC socket for `inet` (the
/// address family of the peer's address).
pub fn domain_protocol(inet: Domain) -> (Domain, Protocol) {
    let proto = if inet == Domain::IPV6 {
        SMCPROTO_SMC6
    } else {
        SMCPROTO_SMC
    };
    (Domain::from(AF_SMC), Protocol::from(proto))
}

/// Opens (and closes) one SMC socket for peers of `inet`. The error is one
/// line naming what is missing and the fix.
pub fn probe(inet: Domain) -> Result<(), String> {
    let (domain, protocol) = domain_protocol(inet);
    match Socket::new(domain, Type::STREAM, Some(protocol)) {
        Ok(_) => Ok(()),
        Err(e) => Err(explain(&e)),
    }
}

/// The message for a failed AF_SMC socket().
fn explain(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::EAFNOSUPPORT) | Some(libc::EPROTONOSUPPORT) => format!(
            "transport smc: this kernel has no AF_SMC (socket(AF_SMC): {e}; {}): use a kernel \
             built with CONFIG_SMC (and CONFIG_SMC_DIAG; `modprobe smc` where it is a module), \
             plus an RDMA (RoCE) or ISM device on both hosts for SMC proper, or --transport tcp",
            crate::kmod::module_state("smc").explain("smc", "CONFIG_SMC")
        ),
        _ => format!("transport smc: cannot open an AF_SMC socket: {e}"),
    }
}

/// What SMC_DIAG says of one connection.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Diag {
    /// It fell back to TCP.
    pub fell_back: bool,
    /// (decline reason, peer's diagnosis) when it fell back and said why.
    pub reason: Option<(u32, u32)>,
}

/// What SMC_DIAG says of connection `fd`; `None` when it cannot be told
/// (no SMC_DIAG, the socket not listed).
pub fn diag_of(fd: RawFd) -> Option<Diag> {
    // SAFETY: fstat on an open descriptor into a zeroed struct.
    let inode = unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        (libc::fstat(fd, &mut st) == 0).then_some(st.st_ino)?
    };
    dump()
        .ok()?
        .into_iter()
        .find(|r| r.inode == inode)
        .map(|r| Diag {
            fell_back: r.mode == SMC_DIAG_MODE_FALLBACK_TCP,
            reason: r.reason,
        })
}

/// One row of the SMC_DIAG dump.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Row {
    inode: u64,
    mode: u8,
    reason: Option<(u32, u32)>,
}

/// Every SMC socket of this namespace.
fn dump() -> io::Result<Vec<Row>> {
    // SAFETY: socket(2) with constant arguments; the fd is owned below.
    let raw = unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
            NETLINK_SOCK_DIAG,
        )
    };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `raw` is a fresh descriptor nobody else owns.
    let sock = unsafe { OwnedFd::from_raw_fd(raw) };
    let req = request();
    // SAFETY: sends `req.len()` readable bytes to the kernel (default address).
    if unsafe { libc::send(sock.as_raw_fd(), req.as_ptr().cast(), req.len(), 0) } < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut out = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        // SAFETY: receives at most `buf.len()` bytes into `buf`.
        let n = unsafe { libc::recv(sock.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        if parse(&buf[..n as usize], &mut out)? {
            return Ok(out);
        }
    }
}

/// The dump request: `nlmsghdr` + `struct smc_diag_req` for AF_SMC.
fn request() -> Vec<u8> {
    let len = 16 + REQ_BYTES;
    let mut b = vec![0u8; len];
    b[0..4].copy_from_slice(&(len as u32).to_ne_bytes());
    b[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    b[6..8].copy_from_slice(&(NLM_F_REQUEST | NLM_F_DUMP).to_ne_bytes());
    b[16] = AF_SMC as u8;
    b
}

/// Adds the rows of one datagram; `true` at the dump's end.
fn parse(mut data: &[u8], out: &mut Vec<Row>) -> io::Result<bool> {
    while data.len() >= 16 {
        let len = u32::from_ne_bytes(data[0..4].try_into().expect("4 bytes")) as usize;
        let kind = u16::from_ne_bytes([data[4], data[5]]);
        if len < 16 || len > data.len() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "bad netlink length",
            ));
        }
        let payload = &data[16..len];
        match kind {
            NLMSG_DONE => return Ok(true),
            NLMSG_ERROR => {
                let errno = payload
                    .get(..4)
                    .map_or(0, |e| i32::from_ne_bytes(e.try_into().expect("4 bytes")));
                return Err(io::Error::from_raw_os_error(-errno));
            }
            SOCK_DIAG_BY_FAMILY if payload.len() >= MSG_MIN_BYTES => {
                let inode = u64::from_ne_bytes(payload[56..64].try_into().expect("8 bytes"));
                let reason = super::smc_reason::fallback_of(&payload[MSG_MIN_BYTES..]);
                out.push(Row {
                    inode,
                    mode: payload[2],
                    reason,
                });
            }
            _ => {}
        }
        data = &data[((len + 3) & !3).min(data.len())..];
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_family_names_the_kernel_option() {
        let e = explain(&std::io::Error::from_raw_os_error(libc::EAFNOSUPPORT));
        assert!(
            e.starts_with("transport smc: this kernel has no AF_SMC"),
            "{e}"
        );
        assert!(
            e.contains("CONFIG_SMC") && e.contains("--transport tcp"),
            "{e}"
        );
        assert!(!e.contains('\n'));
        assert_eq!(domain_protocol(Domain::IPV6).1, Protocol::from(1));
    }

    #[test]
    fn fallbacks_and_unchecked_connections_are_not_claimed_as_smc() {
        let stats = |smc_fallbacks, smc_unchecked| ServerTestStats {
            connections: 10,
            smc_fallbacks,
            smc_unchecked,
            ..ServerTestStats::default()
        };
        assert_eq!(SMC.fallback(&[stats(0, 0)]), None);
        let fell = SMC.fallback(&[stats(1, 0), stats(2, 4)]).unwrap();
        assert!(
            fell.starts_with("transport smc: 3 checked data connections fell back"),
            "{fell}"
        );
        // The reasons SMC_DIAG gave, merged over tests and named.
        let (mut a, mut b) = (stats(1, 0), stats(2, 0));
        a.add_smc_fallback(0x0500_0000, 0x0303_0000, 1);
        b.add_smc_fallback(0x0500_0000, 0x0303_0000, 1);
        b.add_smc_fallback(0x0201_0000, 0, 1);
        let why = SMC.fallback(&[a, b]).unwrap();
        assert!(
            why.contains(
                "fell back to TCP (2: decline 0x05000000 (the peer declined during the \
                 handshake), peer's diagnosis 0x03030000 (no SMC device found (RoCE or ISM)); \
                 1: decline 0x02010000"
            ),
            "{why}"
        );
        let unknown = SMC.fallback(&[stats(0, 4)]).unwrap();
        assert!(
            unknown.contains("did not give the mode of 4 checked"),
            "{unknown}"
        );
        assert!(!SMC.reuse_port() && SMC.socket(Domain::IPV4).0 == Domain::from(AF_SMC));
    }

    #[test]
    fn diag_rows_give_inode_mode_and_reason() {
        let req = request();
        assert_eq!(req.len(), 68);
        assert_eq!(req[16], 43);
        // The message, then an SMC_DIAG_FALLBACK attribute (len 12, type 5).
        let mut row = vec![0u8; 16 + 64 + 12];
        row[0..4].copy_from_slice(&92u32.to_ne_bytes());
        row[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
        row[16 + 2] = SMC_DIAG_MODE_FALLBACK_TCP;
        row[16 + 56..16 + 64].copy_from_slice(&4711u64.to_ne_bytes());
        row[80..82].copy_from_slice(&12u16.to_ne_bytes());
        row[82..84].copy_from_slice(&5u16.to_ne_bytes());
        row[84..88].copy_from_slice(&0x0201_0000u32.to_ne_bytes());
        let mut done = vec![0u8; 20];
        done[0..4].copy_from_slice(&20u32.to_ne_bytes());
        done[4..6].copy_from_slice(&NLMSG_DONE.to_ne_bytes());
        let mut out = Vec::new();
        assert!(!parse(&row, &mut out).unwrap());
        assert!(parse(&done, &mut out).unwrap());
        let want = Row {
            inode: 4711,
            mode: SMC_DIAG_MODE_FALLBACK_TCP,
            reason: Some((0x0201_0000, 0)),
        };
        assert_eq!(out, vec![want]);
        // No SMC here: the dump fails or lists nothing, never panics.
        let _ = dump();
    }
}
