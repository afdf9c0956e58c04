//! The kernel's view of the TCP sockets of the calling thread's network
//! namespace, read with sock_diag (`NETLINK_SOCK_DIAG`): a dump of every
//! TCP socket with its `struct tcp_info` (`INET_DIAG_INFO`), and the close
//! events of the destroy multicast groups (`SKNLGRP_INET_TCP_DESTROY`,
//! `SKNLGRP_INET6_TCP_DESTROY`, Linux 4.9 and later, CAP_NET_ADMIN), whose
//! messages carry the same `tcp_info` as the socket's last word. Nothing
//! here changes a socket: both are read-only views, as `ss` has.
//!
//! The message layouts come from `netlink-packet-sock-diag` (its
//! `rich_nlas` feature parses `tcp_info`); the dump itself is the engine's
//! ([`stackbench_engine::sockdiag::dump`]).

use std::io;
use std::net::SocketAddr;

use netlink_packet_core::{NetlinkMessage, NetlinkPayload, Nla as _};
use netlink_packet_sock_diag::constants::{
    AF_INET, AF_INET6, IPPROTO_TCP, TCP_CLOSE_WAIT, TCP_CLOSING, TCP_LAST_ACK, TCP_LISTEN,
    TCP_TIME_WAIT,
};
use netlink_packet_sock_diag::inet::{
    nlas::Nla, ExtensionFlags, InetRequest, InetResponse, SocketId, StateFlags,
};
use netlink_packet_sock_diag::SockDiagMessage;
use netlink_sys::{protocols::NETLINK_SOCK_DIAG, Socket};

use crate::protection::ktls::{decode_ulp_info, KtlsInfo, INET_DIAG_ULP_INFO};
use crate::sample::{Counters, TcpSample};

/// `enum sknetlink_groups` of `linux/sock_diag.h`.
const SKNLGRP_INET_TCP_DESTROY: u32 = 1;
const SKNLGRP_INET6_TCP_DESTROY: u32 = 3;

/// Every TCP socket of this namespace (both families), listeners included
/// (they tell which end of a connection is the server's); TIME_WAIT and
/// SYN_RECV entries are left out (they are not full sockets and carry no
/// `tcp_info`).
pub fn dump_tcp() -> io::Result<Vec<TcpSample>> {
    let mut out = Vec::new();
    for family in [AF_INET, AF_INET6] {
        let socket_id = if family == AF_INET6 {
            SocketId::new_v6()
        } else {
            SocketId::new_v4()
        };
        let request = SockDiagMessage::InetRequest(InetRequest {
            family,
            protocol: IPPROTO_TCP,
            extensions: ExtensionFlags::INFO,
            states: StateFlags::all() - StateFlags::TIME_WAIT - StateFlags::SYN_RECV,
            socket_id,
        });
        for m in stackbench_engine::sockdiag::dump(request)? {
            if let SockDiagMessage::InetResponse(r) = m {
                out.extend(sample_of(&r, false));
            }
        }
    }
    Ok(out)
}

/// The kTLS state of a dump entry or close event (`INET_DIAG_ULP_INFO`,
/// which the `rich_nlas` parser leaves as an unknown attribute).
fn ktls_of(r: &InetResponse) -> Option<KtlsInfo> {
    r.nlas.iter().find_map(|n| match n {
        Nla::Other(a) if a.kind() & 0x3fff == INET_DIAG_ULP_INFO => {
            let mut value = vec![0; a.value_len()];
            a.emit_value(&mut value);
            decode_ulp_info(&value)
        }
        _ => None,
    })
}

/// One socket's sample from a dump entry or a close event.
pub fn sample_of(r: &InetResponse, closed: bool) -> Option<TcpSample> {
    let id = &r.header.socket_id;
    let info = r.nlas.iter().find_map(|n| match n {
        Nla::TcpInfo(i) => Some(i),
        _ => None,
    });
    let listening = r.header.state == TCP_LISTEN;
    // `tcpi_bytes_received` counts a received FIN as one byte (the kernel
    // advances it with `rcv_nxt`). A socket past the peer's FIN, and one
    // destroyed (an orderly close received it; a reset did not, and then
    // reads one byte short), has it taken off.
    let fin_in = closed
        || matches!(
            r.header.state,
            TCP_CLOSE_WAIT | TCP_LAST_ACK | TCP_CLOSING | TCP_TIME_WAIT
        );
    let counters = info.map_or_else(Counters::default, |i| Counters {
        bytes_out: i.bytes_sent.saturating_sub(i.bytes_retrans),
        bytes_sent: i.bytes_sent,
        bytes_received: i.bytes_received.saturating_sub(u64::from(fin_in)),
        segs_out: u64::from(i.segs_out),
        segs_in: u64::from(i.segs_in),
        data_segs_out: u64::from(i.data_segs_out),
        data_segs_in: u64::from(i.data_segs_in),
    });
    Some(TcpSample {
        cookie: u64::from_ne_bytes(id.cookie),
        local: SocketAddr::new(id.source_address, id.source_port),
        remote: SocketAddr::new(id.destination_address, id.destination_port),
        listening,
        closed,
        counters,
        snd_mss: info.map_or(0, |i| i.snd_mss),
        rcv_mss: info.map_or(0, |i| i.advmss),
        rtt_us: info.map_or(0, |i| i.rtt),
        ktls: ktls_of(r),
    })
}

/// A subscription to the TCP close events of this namespace.
pub struct CloseEvents {
    socket: Socket,
    buf: Vec<u8>,
}

impl CloseEvents {
    /// Joins both destroy groups; the error says why the kernel refused
    /// (older than 4.9, or no CAP_NET_ADMIN).
    pub fn subscribe() -> io::Result<CloseEvents> {
        let mut socket = Socket::new(NETLINK_SOCK_DIAG)?;
        socket.bind_auto()?;
        socket.add_membership(SKNLGRP_INET_TCP_DESTROY)?;
        socket.add_membership(SKNLGRP_INET6_TCP_DESTROY)?;
        socket.set_non_blocking(true)?;
        // A burst of short connections can close thousands of sockets in
        // one interval: a large receive buffer keeps their events (the
        // kernel drops multicast to a full buffer, counted as `overruns`).
        let _ = socket.set_rx_buf_sz(8 << 20);
        Ok(CloseEvents {
            socket,
            buf: vec![0; 256 * 1024],
        })
    }

    /// Every close event queued since the last call, and whether the kernel
    /// dropped some (ENOBUFS: the buffer overran).
    pub fn drain(&mut self) -> (Vec<TcpSample>, bool) {
        let mut out = Vec::new();
        let mut overran = false;
        loop {
            match self.socket.recv(&mut &mut self.buf[..], 0) {
                Ok(0) => break,
                Ok(n) => parse_events(&self.buf[..n], &mut out),
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => overran = true,
                Err(_) => break, // EAGAIN: nothing more queued
            }
        }
        (out, overran)
    }
}

/// The close events in one datagram (the kernel sends one per message,
/// but a datagram may hold several).
fn parse_events(mut bytes: &[u8], out: &mut Vec<TcpSample>) {
    while !bytes.is_empty() {
        let Ok(msg) = NetlinkMessage::<SockDiagMessage>::deserialize(bytes) else {
            return;
        };
        let len = msg.header.length as usize;
        if let NetlinkPayload::InnerMessage(SockDiagMessage::InetResponse(r)) = msg.payload {
            out.extend(sample_of(&r, true));
        }
        let step = len.next_multiple_of(4);
        if step == 0 || step > bytes.len() {
            return;
        }
        bytes = &bytes[step..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};

    /// A loopback connection with 1000 B one way and 3000 B back shows in
    /// the dump with those payload counters at both ends, and its listener.
    #[test]
    fn a_dump_finds_both_ends_with_their_payload_bytes() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let mut c = TcpStream::connect(addr).unwrap();
        let (mut s, _) = listener.accept().unwrap();
        c.write_all(&[1; 1000]).unwrap();
        let mut req = [0; 1000];
        s.read_exact(&mut req).unwrap();
        s.write_all(&[2; 3000]).unwrap();
        let mut resp = [0; 3000];
        c.read_exact(&mut resp).unwrap();
        let all = dump_tcp().unwrap();
        // By both addresses: Linux reuses an ephemeral port towards
        // other destinations, so the local one alone may match another
        // test's (or process's) socket.
        let me = c.local_addr().unwrap();
        let client = all
            .iter()
            .find(|x| x.local == me && x.remote == addr)
            .expect("client end");
        assert_eq!(client.counters.bytes_out, 1000);
        assert_eq!(client.counters.bytes_received, 3000);
        assert!(client.cookie != 0);
        let server = all
            .iter()
            .find(|x| x.remote == me && x.local == addr)
            .expect("server end");
        assert_eq!(server.counters.bytes_received, 1000);
        assert!(all.iter().any(|x| x.listening && x.local == addr));
    }
}
