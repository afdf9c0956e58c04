//! The kernel memory of the run's own sockets, read with sock_diag
//! (`NETLINK_SOCK_DIAG`): one dump of the TCP sockets (`inet_diag`, with
//! `INET_DIAG_SKMEMINFO`) of this network namespace, of which only the run's
//! data connections on one side are summed.
//!
//! Which sockets are the run's is decided by the responder's endpoints, as
//! `ss` would: on the driver's side the sockets whose remote port is one of
//! them, on the responder's the (non-listening) sockets whose local port is.
//! On loopback both sides' sockets are in one namespace and this split keeps
//! them apart; in a lab each side's process asks its own namespace.
//!
//! AF_UNIX runs are not read yet: `unix_diag` would find them (an accepted
//! socket carries its listener's path as its name, a client socket is the
//! peer of one), but the crate's AF_UNIX `MemInfo` reads the write queue
//! where the kernel keeps a UNIX socket's memory in `wmem_alloc`, so the sum
//! would be 0; such runs say the figure is missing instead.
//!
//! The message layouts come from `netlink-packet-sock-diag` (the
//! rust-netlink project's); this module only builds the request, walks the
//! multipart reply and sums.

use std::collections::HashSet;
use std::io;

use netlink_packet_core::{
    NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_DUMP, NLM_F_REQUEST,
};
use netlink_packet_sock_diag::constants::{AF_INET, AF_INET6, IPPROTO_TCP};
use netlink_packet_sock_diag::inet::{
    self, ExtensionFlags, InetRequest, InetResponse, SocketId, StateFlags,
};
use netlink_packet_sock_diag::SockDiagMessage;
use netlink_sys::{protocols::NETLINK_SOCK_DIAG, Socket, SocketAddr as NetlinkAddr};
use stackbench_metrics::{procfs, OwnSockets, SockKind};
use stackbench_record::SkMemInfo;

use crate::transport::Endpoint;

/// Which end of the run's connections this process holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The driver: its sockets' remote end is a responder endpoint.
    Driver,
    /// The responder: its sockets' local end is one of its endpoints.
    Responder,
}

/// The kernel memory of this side's sockets of the run whose responder
/// listens at `endpoints`. `Ok(None)` with no endpoint (no run yet).
pub fn own_sockets(endpoints: &[Endpoint], side: Side) -> io::Result<Option<OwnSockets>> {
    let mut ports = HashSet::new();
    let mut ipv6 = false;
    for e in endpoints {
        if let Endpoint::Inet(a) = e {
            ports.insert(a.port());
            ipv6 |= a.is_ipv6();
        }
    }
    if ports.is_empty() {
        // AF_UNIX: not read yet (see the module doc).
        return Ok(None);
    }
    let family = if ipv6 { AF_INET6 } else { AF_INET };
    let kind = SockKind::Tcp;
    // One dump per port: the kernel skips the sockets whose port differs
    // from the request's, so a host with many other sockets sends few.
    let mut messages = Vec::new();
    for &port in &ports {
        messages.extend(dump(inet_request(family, side, port))?);
    }
    let (sockets, meminfo) = sum_inet(&messages, &ports, side);
    Ok(Some(OwnSockets {
        kind,
        sockets,
        meminfo,
        object_bytes_per_socket: procfs::read_slab_object_bytes(&kind.slab_caches(ipv6)),
    }))
}

/// The TCP sockets of `family` with `port` at `side`'s end, but the
/// listeners (a listener is not a connection; TIME_WAIT sockets come back
/// without memory and are skipped). A dump honours the request's ports
/// (`inet_diag_dump_icsk` skips sockets whose non-zero `idiag_sport` or
/// `idiag_dport` differs).
fn inet_request(family: u8, side: Side, port: u16) -> SockDiagMessage {
    let mut socket_id = if family == AF_INET6 {
        SocketId::new_v6()
    } else {
        SocketId::new_v4()
    };
    match side {
        Side::Driver => socket_id.destination_port = port,
        Side::Responder => socket_id.source_port = port,
    }
    SockDiagMessage::InetRequest(InetRequest {
        family,
        protocol: IPPROTO_TCP,
        extensions: ExtensionFlags::SKMEMINFO,
        states: StateFlags::all() - StateFlags::LISTEN,
        socket_id,
    })
}

/// Sends one dump request and returns every reply message until `Done`
/// (also for `stackbench_applicability`'s census of all TCP sockets).
pub fn dump(request: SockDiagMessage) -> io::Result<Vec<SockDiagMessage>> {
    let mut socket = Socket::new(NETLINK_SOCK_DIAG)?;
    socket.bind_auto()?;
    socket.connect(&NetlinkAddr::new(0, 0))?;
    let mut header = NetlinkHeader::default();
    header.flags = NLM_F_REQUEST | NLM_F_DUMP;
    let mut packet = NetlinkMessage::new(header, request.into());
    packet.finalize();
    let mut buf = vec![0; packet.buffer_len()];
    packet.serialize(&mut buf);
    socket.send(&buf, 0)?;
    let mut out = Vec::new();
    // Large enough for the kernel's multipart batches (it fills up to 32 kB).
    let mut rx = vec![0u8; 64 * 1024];
    loop {
        let n = socket.recv(&mut &mut rx[..], 0)?;
        if parse_batch(&rx[..n], &mut out)? {
            return Ok(out);
        }
    }
}

/// Appends the messages of one received batch to `out`; true at `Done`.
fn parse_batch(mut bytes: &[u8], out: &mut Vec<SockDiagMessage>) -> io::Result<bool> {
    while !bytes.is_empty() {
        let msg = NetlinkMessage::<SockDiagMessage>::deserialize(bytes)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
        let len = msg.header.length as usize;
        match msg.payload {
            NetlinkPayload::Done(_) => return Ok(true),
            NetlinkPayload::Error(e) => return Err(e.to_io()),
            NetlinkPayload::InnerMessage(m) => out.push(m),
            _ => {}
        }
        // Messages are 4-byte aligned; a zero length would never advance.
        let step = len.next_multiple_of(4);
        if step == 0 || step > bytes.len() {
            break;
        }
        bytes = &bytes[step..];
    }
    Ok(false)
}

/// The `SK_MEMINFO` array of one TCP socket, if the reply carried it.
fn inet_meminfo(r: &InetResponse) -> Option<SkMemInfo> {
    r.nlas.iter().find_map(|nla| match nla {
        inet::nlas::Nla::MemInfo(m) => Some(SkMemInfo {
            rmem_alloc_bytes: m.receive_queue.into(),
            rcvbuf_bytes: m.receive_queue_max.into(),
            wmem_alloc_bytes: m.bottom_send_queues.into(),
            sndbuf_bytes: m.send_queue_max.into(),
            fwd_alloc_bytes: m.cache.into(),
            wmem_queued_bytes: m.send_queue.into(),
            optmem_bytes: m.options.into(),
            backlog_bytes: m.backlog_queue_length.into(),
            drops: m.drops.into(),
        }),
        _ => None,
    })
}

/// Sums the TCP sockets of one side: remote port in `ports` (driver) or
/// local port in `ports` (responder).
fn sum_inet(messages: &[SockDiagMessage], ports: &HashSet<u16>, side: Side) -> (u64, SkMemInfo) {
    let mut total = SkMemInfo::default();
    let mut sockets = 0;
    for m in messages {
        let SockDiagMessage::InetResponse(r) = m else {
            continue;
        };
        let id = &r.header.socket_id;
        let port = match side {
            Side::Driver => id.destination_port,
            Side::Responder => id.source_port,
        };
        if !ports.contains(&port) {
            continue;
        }
        if let Some(mem) = inet_meminfo(r) {
            total.add(&mem);
            sockets += 1;
        }
    }
    (sockets, total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};

    /// A sock_diag reply captured on Linux 6.18 (kept to the sockets of one
    /// listener, port 38001, then `NLMSG_DONE`): two connections whose
    /// driver ends hold an unread 800 B reply each, as `ss -tm` showed:
    /// responder ends `skmem:(r0,rb131072,t0,tb3939840,f0,…)`, driver ends
    /// `skmem:(r1632,rb131072,t0,tb3939840,f2464,…)`.
    const CAPTURED: &[u8] = include_bytes!("../tests/data/sockdiag_loopback.bin");

    #[test]
    fn captured_reply_is_parsed_and_summed_per_side() {
        let mut messages = Vec::new();
        assert!(
            parse_batch(CAPTURED, &mut messages).unwrap(),
            "NLMSG_DONE ends it"
        );
        assert_eq!(messages.len(), 4);
        let ports = HashSet::from([38001]);
        let (n, driver) = sum_inet(&messages, &ports, Side::Driver);
        assert_eq!(n, 2);
        assert_eq!(driver.rmem_alloc_bytes, 2 * 1632);
        assert_eq!(driver.fwd_alloc_bytes, 2 * 2464);
        assert_eq!(driver.rcvbuf_bytes, 2 * 131_072);
        assert_eq!(driver.sndbuf_bytes, 2 * 3_939_840);
        assert_eq!(SockKind::Tcp.held_bytes(&driver), 2 * (1632 + 2464));
        let (n, responder) = sum_inet(&messages, &ports, Side::Responder);
        assert_eq!(n, 2);
        assert_eq!(SockKind::Tcp.held_bytes(&responder), 0);
        assert_eq!(responder.rcvbuf_bytes, 2 * 131_072);
        // Another run's port matches nothing.
        assert_eq!(
            sum_inet(&messages, &HashSet::from([38002]), Side::Driver).0,
            0
        );
    }

    /// Open connections on loopback, each with a request answered and a
    /// reply left unread (so each side's queues hold something).
    #[test]
    fn both_sides_of_loopback_connections_are_found_and_summed() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let mut pairs = Vec::new();
        for _ in 0..40 {
            let mut c = TcpStream::connect(addr).unwrap();
            let (mut s, _) = listener.accept().unwrap();
            c.write_all(&[1; 100]).unwrap();
            let mut req = [0; 100];
            s.read_exact(&mut req).unwrap();
            s.write_all(&[2; 800]).unwrap();
            pairs.push((c, s));
        }
        let endpoints = [Endpoint::Inet(addr)];
        let driver = own_sockets(&endpoints, Side::Driver).unwrap().unwrap();
        let responder = own_sockets(&endpoints, Side::Responder).unwrap().unwrap();
        assert_eq!((driver.sockets, responder.sockets), (40, 40));
        // The 800 B replies wait in the driver's receive queues.
        assert!(driver.meminfo.rmem_alloc_bytes >= 40 * 800, "{driver:?}");
        assert!(responder.meminfo.sndbuf_bytes > 0, "{responder:?}");
        assert_eq!(responder.meminfo.rmem_alloc_bytes, 0, "{responder:?}");
        drop(pairs);
    }
}
