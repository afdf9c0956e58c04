//! AF_SMC (Shared Memory Communications, SMC-R over RDMA / SMC-D over ISM,
//! seed 000's SMC-Rv2 and HiperSockets comparisons), where the kernel has it.
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
//! Fallback: not yet checked per connection. The kernel reports it through
//! the SMC_DIAG sock_diag family (`smc_diag_msg.diag_mode` =
//! `SMC_DIAG_MODE_FALLBACK_TCP`, with `diag_fallback` holding the reason
//! code), keyed by inode; that needs a kernel with SMC to develop against, and
//! this machine's lacks it. Until then a run over `smc` on a kernel that has
//! it may be TCP figures under the smc label: `smcss` (smc-tools) shows the
//! mode of each connection.

use socket2::{Domain, Protocol, Socket, Type};

use crate::sockopt::AF_SMC;

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
            "transport smc: this kernel has no AF_SMC (socket(AF_SMC): {e}): use a kernel built \
             with CONFIG_SMC (and CONFIG_SMC_DIAG; `modprobe smc` where it is a module), plus an \
             RDMA (RoCE) or ISM device on both hosts for SMC proper, or --transport tcp"
        ),
        _ => format!("transport smc: cannot open an AF_SMC socket: {e}"),
    }
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
}
