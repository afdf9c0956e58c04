//! The `mptcp` row: Multipath TCP (IPPROTO_MPTCP). Whether this kernel
//! offers it (detected at run time, with a message naming what is missing
//! and how to enable it), and whether each accepted connection really is
//! MPTCP (MPTCP_INFO), so a run labelled `mptcp` is never silently plain TCP.

use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};

use socket2::{Domain, Protocol, Socket, Type};
use stackbench_model::{SocketOptions, Transport};

use super::ops::{cork_where_nagle, ListenRequest, Listening, TransportOps};
use super::DataStream;
use crate::test_stats::ServerTestStats;

#[derive(Debug)]
pub struct Mptcp;

pub static MPTCP: Mptcp = Mptcp;

impl TransportOps for Mptcp {
    fn listen(&self, req: &ListenRequest<'_>) -> Result<Listening, String> {
        super::listen::inet_listeners(self.as_row(), req, None)
    }

    fn transport(&self) -> Transport {
        Transport::Mptcp
    }

    fn socket(&self, inet: Domain) -> (Domain, Option<Protocol>) {
        (inet, Some(Protocol::MPTCP))
    }

    fn effective_options(&self, opts: &SocketOptions) -> (SocketOptions, Vec<String>) {
        let mut eff = *opts;
        let mut notes = Vec::new();
        if eff.quickack && supports_quickack() == Some(false) {
            eff.quickack = false;
            notes.push(
                "quickack not set: this kernel's MPTCP sockets refuse TCP_QUICKACK".to_string(),
            );
        }
        (cork_where_nagle(self, eff), notes)
    }

    fn check_usable(&self, target: SocketAddr) -> Result<(), String> {
        probe(Domain::for_address(target))
    }

    fn accepted(&self, stream: &DataStream, stats: &mut ServerTestStats) {
        // The stream's own fd: the MPTCP check is this row's, not the
        // stream's, so the stream needs no knowledge of MPTCP.
        if !is_mptcp(stream.as_raw_fd()) {
            stats.mptcp_fallbacks += 1;
        }
    }

    /// A run whose connections fell back to plain TCP measured TCP: say so
    /// rather than label TCP figures as MPTCP's.
    fn fallback(&self, stats: &[ServerTestStats]) -> Option<String> {
        let (fallbacks, connections) = stats.iter().fold((0, 0), |(f, c), s| {
            (f + s.mptcp_fallbacks, c + s.connections)
        });
        (fallbacks > 0).then(|| {
            format!(
                "transport mptcp: {fallbacks} of {connections} data connections fell back to \
                 plain TCP, so the figures are not MPTCP's: check net.mptcp.enabled on both \
                 hosts and any middlebox between them"
            )
        })
    }

    fn as_row(&self) -> &'static dyn TransportOps {
        &MPTCP
    }
}

/// `SOL_MPTCP` and `MPTCP_INFO` from `linux/mptcp.h` (not in libc).
const SOL_MPTCP: libc::c_int = 284;
const MPTCP_INFO: libc::c_int = 1;
/// `mptcpi_flags` bits.
const MPTCP_INFO_FLAG_FALLBACK: u32 = 1 << 0;
const MPTCP_INFO_FLAG_REMOTE_KEY_RECEIVED: u32 = 1 << 1;
/// Offset of `mptcpi_flags` in `struct mptcp_info`: six u8 counters, then
/// the u32 flags at its natural alignment.
const FLAGS_OFFSET: usize = 8;

/// Where the kernel's switch lives.
const ENABLED_SYSCTL: &str = "/proc/sys/net/mptcp/enabled";

/// Opens (and closes) one MPTCP socket of `domain`. The error is one line
/// naming what is missing and the fix.
pub fn probe(domain: Domain) -> Result<(), String> {
    match Socket::new(domain, Type::STREAM, Some(Protocol::MPTCP)) {
        Ok(_) => Ok(()),
        Err(e) => Err(explain(&e, std::fs::read_to_string(ENABLED_SYSCTL).ok())),
    }
}

/// The message for a failed MPTCP socket(): EPROTONOSUPPORT means the kernel
/// has no MPTCP at all; ENOPROTOOPT (or `enabled` = 0) that it is switched off.
fn explain(e: &io::Error, enabled: Option<String>) -> String {
    let off = enabled.as_deref().map(str::trim) == Some("0");
    match e.raw_os_error() {
        Some(libc::ENOPROTOOPT) | Some(libc::EPROTONOSUPPORT) if off => {
            "transport mptcp: MPTCP is disabled in this kernel (net.mptcp.enabled = 0): \
             enable it with `sysctl -w net.mptcp.enabled=1`, or use --transport tcp"
                .to_string()
        }
        Some(libc::EPROTONOSUPPORT) | Some(libc::ENOPROTOOPT) => format!(
            "transport mptcp: this kernel has no Multipath TCP (socket(IPPROTO_MPTCP): {e}): \
             use Linux 5.6 or later built with CONFIG_MPTCP=y, or --transport tcp"
        ),
        _ => format!("transport mptcp: cannot open an MPTCP socket: {e}"),
    }
}

/// Whether `fd` is a Multipath TCP connection that did not fall back to
/// plain TCP (MPTCP_INFO: no fallback flag, the peer's key received);
/// false for every other kind of socket.
pub fn is_mptcp(fd: RawFd) -> bool {
    let mut info = [0u8; 256];
    let mut len = info.len() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `info`.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            SOL_MPTCP,
            MPTCP_INFO,
            info.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if rc != 0 || (len as usize) < FLAGS_OFFSET + 4 {
        return false;
    }
    let flags = u32::from_ne_bytes(
        info[FLAGS_OFFSET..FLAGS_OFFSET + 4]
            .try_into()
            .expect("4 bytes"),
    );
    flags & MPTCP_INFO_FLAG_FALLBACK == 0 && flags & MPTCP_INFO_FLAG_REMOTE_KEY_RECEIVED != 0
}

/// Whether MPTCP sockets accept TCP_QUICKACK on this kernel (6.18 refuses it
/// with ENOPROTOOPT); `None` when MPTCP itself is missing.
pub fn supports_quickack() -> Option<bool> {
    let s = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::MPTCP)).ok()?;
    Some(
        crate::sockopt::set_int(
            std::os::fd::AsRawFd::as_raw_fd(&s),
            libc::IPPROTO_TCP,
            libc::TCP_QUICKACK,
            1,
        )
        .is_ok(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_what_is_missing_and_the_fix() {
        let off = explain(
            &io::Error::from_raw_os_error(libc::ENOPROTOOPT),
            Some("0\n".into()),
        );
        assert!(off.contains("sysctl -w net.mptcp.enabled=1"), "{off}");
        let none = explain(&io::Error::from_raw_os_error(libc::EPROTONOSUPPORT), None);
        assert!(none.contains("CONFIG_MPTCP=y"), "{none}");
        assert!(!none.contains('\n'));
    }

    #[test]
    fn fallbacks_make_the_run_say_it_measured_tcp() {
        let stats = |mptcp_fallbacks, connections| ServerTestStats {
            mptcp_fallbacks,
            connections,
            ..ServerTestStats::default()
        };
        assert_eq!(MPTCP.fallback(&[stats(0, 10), stats(0, 5)]), None);
        let why = MPTCP.fallback(&[stats(1, 10), stats(2, 5)]).unwrap();
        assert!(
            why.starts_with("transport mptcp: 3 of 15 data connections fell back"),
            "{why}"
        );
        // Only the mptcp row reads these counters.
        assert_eq!(
            crate::transport::row(Transport::Tcp).fallback(&[stats(1, 1)]),
            None
        );
    }

    #[test]
    fn plain_tcp_is_not_mptcp() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        assert!(!is_mptcp(std::os::fd::AsRawFd::as_raw_fd(&c)));
    }

    #[test]
    fn an_mptcp_loopback_connection_is_mptcp() {
        if let Err(e) = probe(Domain::IPV4) {
            let test = "an_mptcp_loopback_connection_is_mptcp";
            return stackbench_testkit::skip(stackbench_testkit::Tier::Mptcp, test, &e.to_string());
        }
        let addr: std::net::SocketAddr = "127.0.0.1:0".parse().unwrap();
        let l = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::MPTCP)).unwrap();
        l.bind(&addr.into()).unwrap();
        l.listen(1).unwrap();
        let c = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::MPTCP)).unwrap();
        c.connect(&l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        use std::os::fd::AsRawFd;
        assert!(is_mptcp(c.as_raw_fd()), "client side");
        assert!(is_mptcp(s.as_raw_fd()), "server side");
    }
}
