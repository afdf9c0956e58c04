//! The wire half of the crypto census: an `AF_PACKET` socket in the
//! observed namespace receives every TCP frame of its interfaces while the
//! window runs, and each TCP connection that starts inside it (its SYN is
//! seen) has the first bytes of both directions put back in order, until
//! [`super::hello`] has read the ClientHello and the server's choice or
//! found the stream is not TLS. Connections that were open before the
//! window show only later segments: one whose segments are TLS records is
//! counted as TLS whose handshake was not seen.
//!
//! The socket needs CAP_NET_RAW; it copies every frame to user space, which
//! costs CPU in proportion to the traffic (a busy window may drop frames:
//! the kernel's count is reported). On loopback each packet is seen twice
//! (leaving and arriving): the leaving copy is skipped there.
//!
//! What it holds is bounded: [`MAX_FLOWS`] connections followed at once
//! and [`MAX_BUFFERED`] bytes across them; a connection that ends (RST,
//! both FINs) frees its slot, a direction that is read frees its bytes.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};

use etherparse::{NetSlice, SlicedPacket, TransportSlice};

use super::hello::{client_offer, server_choice, Choice, Offer, Read};

/// Bytes of each direction kept for the handshake: a ClientHello with a
/// post-quantum key share and a TLS 1.2 server flight with a certificate
/// chain fit well inside.
const KEEP_BYTES: usize = 32 * 1024;
/// Segments kept past a hole in a direction (reordered, or lost and
/// retransmitted later) until the hole fills; more than this and the
/// direction is given up as a gap.
const MAX_AHEAD: usize = 16;
/// Payload segments of a connection open before the window looked at for
/// a run of TLS record headers (bulk TLS is mostly mid-record).
const MAX_SCAN: u32 = 64;
/// Connections followed at once: a SYN flood or a window of very many
/// short connections cannot grow the capture past this (each open flow is
/// a few hundred bytes without its buffered bytes). Connections past it
/// are counted and read `unknown` (not seen).
pub const MAX_FLOWS: usize = 64 * 1024;
/// Bytes buffered across all connections (first bytes not read yet and
/// reordered segments): past it a direction is given up (`capture full`).
const MAX_BUFFERED: usize = 64 << 20;
/// The largest TLS record body: 2^14 bytes plus the expansion TLS 1.2
/// allows a ciphertext (RFC 5246 section 6.2.3).
const MAX_RECORD: usize = (1 << 14) + 2048;
const PACKET_OUTGOING: u8 = 4;
const ARPHRD_LOOPBACK: u16 = 772;
const ARPHRD_ETHER: u16 = 1;

/// What the wire showed of one connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// The end that sent the SYN (or, for a connection open before the
    /// window, the end whose port is the higher one).
    pub client: SocketAddr,
    pub server: SocketAddr,
    /// The SYN was captured: the handshake, if any, was inside the window.
    pub from_start: bool,
    pub offer: Option<Offer>,
    pub choice: Option<Choice>,
    /// Without the start: its segments carried TLS records.
    pub tls_records: bool,
    /// The client's first bytes, read from stream offset 0, are not TLS:
    /// the only evidence that reads as clear text.
    pub not_tls: bool,
    /// Why neither TLS nor clear text was found, when neither was.
    pub unread: Option<Unread>,
}

/// Why the wire did not tell whether a connection is protected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Unread {
    /// A hole in the client's bytes the capture never filled (a frame it
    /// missed, or more reordered segments than are kept).
    Gap,
    /// The bytes kept of the client's stream hold no complete hello.
    Cap,
    /// The window ended before the client sent its first bytes.
    WindowEnded,
    /// Open before the window: no run of TLS record headers among the
    /// segments looked at.
    MidStream,
    /// The capture's bound on buffered bytes was reached.
    Full,
}

impl Unread {
    /// How the census summary names it.
    pub fn name(self) -> &'static str {
        match self {
            Unread::Gap => "gap",
            Unread::Cap => "cap reached",
            Unread::WindowEnded => "window ended",
            Unread::MidStream => "open before the window",
            Unread::Full => "capture full",
        }
    }
}

/// The captured connections and the socket's counts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Capture {
    pub seen: Vec<Seen>,
    /// Frames read, and those the kernel dropped (a full receive buffer).
    pub frames: u64,
    pub dropped: u64,
    /// Connections not followed because [`MAX_FLOWS`] were open.
    pub untracked: u64,
}

/// One direction's first bytes in stream order.
#[derive(Debug, Default)]
struct Half {
    /// The sequence number of the stream's first byte (the SYN's plus one).
    base: Option<u32>,
    /// The stream from its first byte, without holes, up to [`KEEP_BYTES`].
    bytes: Vec<u8>,
    /// Segments past a hole, by stream offset, until the hole fills.
    ahead: BTreeMap<usize, Vec<u8>>,
    /// Read: the hello found, not TLS, or given up (`gave_up` says why).
    settled: bool,
    gave_up: Option<Unread>,
}

impl Half {
    /// Read to its end: its bytes are dropped, so a window of many
    /// connections keeps a few hundred bytes per connection, not 32 kB.
    fn settle(&mut self, why: Option<Unread>) {
        self.settled = true;
        self.gave_up = why;
        self.bytes = Vec::new();
        self.ahead = BTreeMap::new();
    }

    /// Adds a segment's payload at its place in the stream: after the
    /// bytes so far it extends them (and the kept segments it reaches);
    /// past a hole it waits among the kept segments.
    fn add(&mut self, seq: u32, payload: &[u8]) {
        let Some(base) = self.base else { return };
        if self.settled || payload.is_empty() {
            return;
        }
        let rel = seq.wrapping_sub(base);
        let (offset, data) = if rel > u32::MAX / 2 {
            // Starts before the stream's first byte: a repeat of the start.
            let skip = base.wrapping_sub(seq) as usize;
            if skip >= payload.len() {
                return;
            }
            (0, &payload[skip..])
        } else {
            (rel as usize, payload)
        };
        if offset >= KEEP_BYTES {
            return;
        }
        let data = &data[..data.len().min(KEEP_BYTES - offset)];
        if offset > self.bytes.len() {
            if self.ahead.len() >= MAX_AHEAD && !self.ahead.contains_key(&offset) {
                self.settle(Some(Unread::Gap));
                return;
            }
            let kept = self.ahead.entry(offset).or_default();
            if data.len() > kept.len() {
                *kept = data.to_vec();
            }
            return;
        }
        self.extend(offset, data);
        while let Some(next) = self.ahead.first_entry() {
            if *next.key() > self.bytes.len() {
                break;
            }
            let (offset, data) = next.remove_entry();
            self.extend(offset, &data);
        }
    }

    /// `data` at `offset`, which is not past the end of `bytes`.
    fn extend(&mut self, offset: usize, data: &[u8]) {
        let end = offset + data.len();
        if end > self.bytes.len() {
            let from = self.bytes.len() - offset;
            self.bytes.extend_from_slice(&data[from..]);
        }
    }

    /// Bytes it holds.
    fn held(&self) -> usize {
        self.bytes.len() + self.ahead.values().map(Vec::len).sum::<usize>()
    }

    /// Why the direction was not read, when it ends unsettled.
    fn unread(&self) -> Unread {
        match self.gave_up {
            Some(why) => why,
            None if !self.ahead.is_empty() => Unread::Gap,
            None if self.bytes.is_empty() => Unread::WindowEnded,
            // Part of a hello: the rest came after the window.
            None => Unread::WindowEnded,
        }
    }
}

/// Looking for TLS records in a connection open before the window, whose
/// segments mostly start inside a record.
#[derive(Debug, Default)]
struct Scan {
    /// Payload segments looked at.
    segments: u32,
    /// Per direction (client, server): where the record whose header was
    /// seen ends, so where the next header is due.
    due: [Option<u32>; 2],
}

/// The records whose headers chain from the start of `payload`: `None`
/// when a header is not a TLS one, else how many and where the last
/// record ends (past the payload when it continues in later segments).
fn record_run(payload: &[u8]) -> Option<(usize, usize)> {
    let mut at = 0;
    let mut headers = 0;
    while at + 5 <= payload.len() {
        let h = &payload[at..at + 5];
        let len = usize::from(u16::from_be_bytes([h[3], h[4]]));
        if !is_tls_record(h) || len > MAX_RECORD {
            return None;
        }
        headers += 1;
        at += 5 + len;
    }
    (headers > 0).then_some((headers, at))
}

/// One connection being read.
#[derive(Debug)]
struct Flow {
    seen: Seen,
    /// The client's initial sequence number (`None` when the SYN was not
    /// seen): a SYN carrying it again is the same connection repeated.
    isn: Option<u32>,
    client: Half,
    server: Half,
    scan: Scan,
    /// FINs seen: 1 the client's, 2 the server's.
    fins: u8,
}

impl Flow {
    fn read(&mut self) {
        if !self.client.settled && !self.client.bytes.is_empty() {
            match client_offer(&self.client.bytes) {
                // No hello in all the bytes kept: give up on it.
                Read::More | Read::Partial(_) if self.client.bytes.len() >= KEEP_BYTES => {
                    self.client.settle(Some(Unread::Cap));
                }
                Read::More | Read::Partial(_) => {}
                Read::NotTls => {
                    // Read from offset 0: clear text, unless it is framed as
                    // TLS records (a handshake that is not a ClientHello).
                    if is_tls_record(&self.client.bytes) {
                        self.seen.tls_records = true;
                    } else {
                        self.seen.not_tls = true;
                    }
                    self.client.settle(None);
                }
                Read::Done(o) => {
                    self.seen.offer = Some(o);
                    self.client.settle(None);
                }
            }
        }
        if !self.server.settled && !self.server.bytes.is_empty() {
            match server_choice(&self.server.bytes) {
                // All the bytes kept: the choice found so far stands (its
                // group unknown when the ServerKeyExchange was past them).
                Read::Partial(c) if self.server.bytes.len() >= KEEP_BYTES => {
                    self.seen.choice = Some(c);
                    self.server.settle(Some(Unread::Cap));
                }
                Read::More if self.server.bytes.len() >= KEEP_BYTES => {
                    self.server.settle(Some(Unread::Cap));
                }
                Read::More | Read::Partial(_) => {}
                Read::NotTls => self.server.settle(None),
                Read::Done(c) => {
                    self.seen.choice = Some(c);
                    self.server.settle(None);
                }
            }
        }
    }

    /// A payload segment of a connection open before the window: TLS
    /// records once a header is where the record before it ended, or a
    /// segment holds whole records (or several headers) end to end.
    fn scan(&mut self, from_client: bool, seq: u32, payload: &[u8]) {
        if self.seen.tls_records || self.scan.segments >= MAX_SCAN || payload.is_empty() {
            return;
        }
        self.scan.segments += 1;
        let due = &mut self.scan.due[usize::from(!from_client)];
        let Some((headers, end)) = record_run(payload) else {
            return;
        };
        if *due == Some(seq) || headers >= 2 || end == payload.len() {
            self.seen.tls_records = true;
        } else {
            *due = Some(seq.wrapping_add(end as u32));
        }
    }

    fn held(&self) -> usize {
        self.client.held() + self.server.held()
    }

    /// A FIN or RST from one end: what that end sent is all there is, so
    /// its bytes are let go; true once the connection is over (an RST, or
    /// both FINs).
    fn end(&mut self, from_client: bool, rst: bool) -> bool {
        self.fins |= if from_client { 1 } else { 2 };
        let halves = [
            (&mut self.client, from_client || rst),
            (&mut self.server, !from_client || rst),
        ];
        for (half, ended) in halves {
            if ended && !half.settled {
                let why = half.unread();
                half.settle(Some(why));
            }
        }
        rst || self.fins == 3
    }

    /// What the wire showed, with why it is neither TLS nor clear when so.
    fn close(self) -> Seen {
        let mut seen = self.seen;
        let found = seen.offer.is_some() || seen.choice.is_some() || seen.tls_records;
        if !found && !seen.not_tls {
            seen.unread = Some(if seen.from_start {
                self.client.unread()
            } else {
                Unread::MidStream
            });
        }
        seen
    }
}

/// How much the reassembly holds at most.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub flows: usize,
    pub bytes: usize,
}

/// TCP segments folded into flows, keyed by (client, server).
#[derive(Debug)]
pub struct Reassembly {
    flows: HashMap<(SocketAddr, SocketAddr), Flow>,
    done: Vec<Seen>,
    limits: Limits,
    /// Bytes the open flows hold.
    buffered: usize,
    untracked: u64,
}

impl Default for Reassembly {
    fn default() -> Self {
        Reassembly::with_limits(Limits {
            flows: MAX_FLOWS,
            bytes: MAX_BUFFERED,
        })
    }
}

/// A TLS record header: content type 20–23 and a 3.x version.
fn is_tls_record(payload: &[u8]) -> bool {
    payload.len() >= 5 && (20..=23).contains(&payload[0]) && payload[1] == 3 && payload[2] <= 4
}

impl Reassembly {
    pub fn with_limits(limits: Limits) -> Reassembly {
        Reassembly {
            flows: HashMap::new(),
            done: Vec::new(),
            limits,
            buffered: 0,
            untracked: 0,
        }
    }

    /// Connections not followed because the flow bound was reached.
    pub fn untracked(&self) -> u64 {
        self.untracked
    }

    /// One TCP segment from `src` to `dst`.
    pub fn segment(&mut self, src: SocketAddr, dst: SocketAddr, t: &Tcp, payload: &[u8]) {
        if t.syn && !t.ack {
            // The same SYN again (retransmitted after a full accept queue
            // dropped it, or one frame shown on a stacked device and its
            // lower device) is the same connection, not a reuse of the
            // 4-tuple: replacing the flow would leave an empty sighting the
            // census takes first.
            if self
                .flows
                .get(&(src, dst))
                .is_some_and(|f| f.isn == Some(t.seq))
            {
                return;
            }
            // A new connection from src: a reused 4-tuple ends the last one.
            if let Some(old) = self.flows.remove(&(src, dst)) {
                self.buffered -= old.held();
                self.done.push(old.close());
            }
            if self.flows.len() >= self.limits.flows {
                self.untracked += 1;
                return;
            }
            let mut flow = Flow {
                seen: Seen {
                    client: src,
                    server: dst,
                    from_start: true,
                    offer: None,
                    choice: None,
                    tls_records: false,
                    not_tls: false,
                    unread: None,
                },
                isn: Some(t.seq),
                client: Half::default(),
                server: Half::default(),
                scan: Scan::default(),
                fins: 0,
            };
            flow.client.base = Some(t.seq.wrapping_add(1));
            // TCP Fast Open: the SYN carries the first bytes (the SYN's own
            // sequence number is before them).
            flow.client.add(t.seq.wrapping_add(1), payload);
            flow.read();
            self.buffered += flow.held();
            self.flows.insert((src, dst), flow);
            return;
        }
        let key = if self.flows.contains_key(&(src, dst)) {
            (src, dst)
        } else if self.flows.contains_key(&(dst, src)) {
            (dst, src)
        } else {
            if payload.is_empty() || self.flows.len() >= self.limits.flows {
                return;
            }
            // Open before the window: the higher port is the client's.
            let (client, server) = if src.port() > dst.port() {
                (src, dst)
            } else {
                (dst, src)
            };
            let seen = Seen {
                client,
                server,
                from_start: false,
                offer: None,
                choice: None,
                tls_records: false,
                not_tls: false,
                unread: None,
            };
            let mut flow = Flow {
                seen,
                isn: None,
                client: Half {
                    settled: true,
                    ..Half::default()
                },
                server: Half {
                    settled: true,
                    ..Half::default()
                },
                scan: Scan::default(),
                fins: 0,
            };
            flow.scan(src == client, t.seq, payload);
            self.flows.insert((client, server), flow);
            return;
        };
        let flow = self.flows.get_mut(&key).expect("found above");
        let from_client = src == flow.seen.client;
        let before = flow.held();
        if !flow.seen.from_start {
            flow.scan(from_client, t.seq, payload);
        } else {
            let half = if from_client {
                &mut flow.client
            } else {
                &mut flow.server
            };
            if !from_client && t.syn && t.ack {
                half.base = Some(t.seq.wrapping_add(1));
            }
            let seq = if t.syn { t.seq.wrapping_add(1) } else { t.seq };
            if !half.settled && !payload.is_empty() {
                if self.buffered + payload.len() > self.limits.bytes {
                    half.settle(Some(Unread::Full));
                } else {
                    half.add(seq, payload);
                    flow.read();
                }
            }
        }
        let over = (t.fin || t.rst) && flow.end(from_client, t.rst);
        self.buffered = self.buffered + flow.held() - before;
        if over {
            // Over: its slot and bytes are free for the next connections.
            let flow = self.flows.remove(&key).expect("found above");
            self.buffered -= flow.held();
            self.done.push(flow.close());
        }
    }

    /// Every connection seen, in the order their SYN (or first segment) came.
    pub fn finish(mut self) -> Vec<Seen> {
        let mut rest: Vec<Seen> = self.flows.into_values().map(Flow::close).collect();
        // HashMap order is arbitrary: reused 4-tuples keep their order
        // through `done`, the open ones come after.
        rest.sort_by_key(|s| (s.client, s.server));
        self.done.extend(rest);
        self.done
    }
}

/// The TCP header fields the reassembly reads.
#[derive(Debug, Clone, Copy, Default)]
pub struct Tcp {
    pub seq: u32,
    pub syn: bool,
    pub ack: bool,
    pub fin: bool,
    pub rst: bool,
}

/// One frame: its TCP segment folded in, anything else ignored.
pub fn frame(r: &mut Reassembly, bytes: &[u8], ethernet: bool) {
    let parsed = if ethernet {
        SlicedPacket::from_ethernet(bytes)
    } else {
        SlicedPacket::from_ip(bytes)
    };
    let Ok(p) = parsed else { return };
    let (src, dst): (IpAddr, IpAddr) = match &p.net {
        Some(NetSlice::Ipv4(v4)) => (
            v4.header().source_addr().into(),
            v4.header().destination_addr().into(),
        ),
        Some(NetSlice::Ipv6(v6)) => (
            v6.header().source_addr().into(),
            v6.header().destination_addr().into(),
        ),
        _ => return,
    };
    let Some(TransportSlice::Tcp(tcp)) = &p.transport else {
        return;
    };
    let t = Tcp {
        seq: tcp.sequence_number(),
        syn: tcp.syn(),
        ack: tcp.ack(),
        fin: tcp.fin(),
        rst: tcp.rst(),
    };
    r.segment(
        SocketAddr::new(src, tcp.source_port()),
        SocketAddr::new(dst, tcp.destination_port()),
        &t,
        tcp.payload(),
    );
}

/// `SO_ATTACH_FILTER` (include/uapi/asm-generic/socket.h: 26 on every
/// Linux architecture); the libc crate names it only for Android.
const SO_ATTACH_FILTER: libc::c_int = 26;

/// A classic BPF program passing TCP over IPv4 and IPv6 only, whatever the
/// link layer: it reads the packet's protocol (`SKF_AD_PROTOCOL`) and the
/// IP header's protocol field from the network header (`SKF_NET_OFF`), as
/// the kernel's Documentation/networking/filter.rst describes. IPv6 with
/// extension headers before TCP is not passed.
fn tcp_filter() -> [libc::sock_filter; 9] {
    let stmt = |code: u32, k: u32| libc::sock_filter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    };
    let jeq = |k: u32, jt: u8, jf: u8| libc::sock_filter {
        code: (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16,
        jt,
        jf,
        k,
    };
    let ld_h = libc::BPF_LD | libc::BPF_H | libc::BPF_ABS;
    let ld_b = libc::BPF_LD | libc::BPF_B | libc::BPF_ABS;
    let net = |off: i32| (libc::SKF_NET_OFF + off) as u32;
    [
        stmt(ld_h, (libc::SKF_AD_OFF + libc::SKF_AD_PROTOCOL) as u32),
        jeq(libc::ETH_P_IP as u32, 0, 2),
        stmt(ld_b, net(9)), // IPv4 protocol
        jeq(libc::IPPROTO_TCP as u32, 3, 4),
        jeq(libc::ETH_P_IPV6 as u32, 0, 3),
        stmt(ld_b, net(6)), // IPv6 next header
        jeq(libc::IPPROTO_TCP as u32, 0, 1),
        stmt(libc::BPF_RET | libc::BPF_K, u32::MAX), // pass, whole
        stmt(libc::BPF_RET | libc::BPF_K, 0),        // drop
    ]
}

/// Attaches [`tcp_filter`] to a socket.
fn attach_tcp_filter(fd: &impl AsRawFd) -> io::Result<()> {
    let mut filter = tcp_filter();
    let prog = libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_mut_ptr(),
    };
    // SAFETY: `prog` points at `filter`, alive for the call; the kernel copies it.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            SO_ATTACH_FILTER,
            (&prog as *const libc::sock_fprog).cast(),
            std::mem::size_of::<libc::sock_fprog>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// An `AF_PACKET` socket receiving every frame of this namespace.
pub struct Tap {
    fd: OwnedFd,
}

impl Tap {
    /// Opens the socket in the calling thread's namespace (CAP_NET_RAW).
    pub fn open() -> io::Result<Tap> {
        let proto = (libc::ETH_P_ALL as u16).to_be() as libc::c_int;
        // SAFETY: a plain socket(2) call; the descriptor is owned below.
        let fd = unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
                proto,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a new descriptor nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let size: libc::c_int = 16 << 20;
        // SAFETY: setsockopt with an int option; a refusal keeps the default.
        unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVBUFFORCE,
                (&size as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            );
        }
        // Only TCP is read: the kernel keeps the rest (UDP, ARP, …) from
        // being copied to user space. A refusal keeps every frame, which
        // `frame` sorts anyway.
        let _ = attach_tcp_filter(&fd);
        Ok(Tap { fd })
    }

    /// Reads frames until `stop`, then the ones still queued.
    pub fn run(&self, stop: &AtomicBool) -> Capture {
        let mut r = Reassembly::default();
        let mut buf = vec![0u8; 256 * 1024];
        let mut frames = 0;
        loop {
            let stopping = stop.load(Ordering::Relaxed);
            while let Some((n, ll)) = self.recv(&mut buf) {
                if ll.sll_hatype == ARPHRD_LOOPBACK && ll.sll_pkttype == PACKET_OUTGOING {
                    continue;
                }
                frames += 1;
                let ethernet = matches!(ll.sll_hatype, ARPHRD_ETHER | ARPHRD_LOOPBACK);
                frame(&mut r, &buf[..n], ethernet);
            }
            if stopping {
                break;
            }
            let mut pfd = libc::pollfd {
                fd: self.fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one pollfd, 20 ms.
            unsafe { libc::poll(&mut pfd, 1, 20) };
        }
        Capture {
            untracked: r.untracked(),
            seen: r.finish(),
            frames,
            dropped: self.drops(),
        }
    }

    /// One frame and its link-layer address, `None` when none is queued.
    fn recv(&self, buf: &mut [u8]) -> Option<(usize, libc::sockaddr_ll)> {
        // SAFETY: sockaddr_ll is plain data; zero is a valid value.
        let mut ll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
        // SAFETY: `buf` and `ll` are valid for their lengths.
        let n = unsafe {
            libc::recvfrom(
                self.fd.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                0,
                (&mut ll as *mut libc::sockaddr_ll).cast(),
                &mut len,
            )
        };
        (n >= 0).then_some((n as usize, ll))
    }

    /// Frames the kernel dropped (`PACKET_STATISTICS`' `tp_drops`).
    fn drops(&self) -> u64 {
        let mut stats = libc::tpacket_stats {
            tp_packets: 0,
            tp_drops: 0,
        };
        let mut len = std::mem::size_of::<libc::tpacket_stats>() as libc::socklen_t;
        // SAFETY: getsockopt into a tpacket_stats of the right size.
        let rc = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_STATISTICS,
                (&mut stats as *mut libc::tpacket_stats).cast(),
                &mut len,
            )
        };
        if rc == 0 {
            u64::from(stats.tp_drops)
        } else {
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protection::hello::tests::{handshake, handshake_at, params};
    use stackbench_model::settings::TlsVersion;

    fn tcp(seq: u32, syn: bool, ack: bool) -> Tcp {
        Tcp {
            seq,
            syn,
            ack,
            ..Tcp::default()
        }
    }

    /// A TLS 1.2 handshake cut into segments, retransmitted and overlapping,
    /// reads as its hello; a clear connection on the same 4-tuple after it
    /// is a connection of its own; one seen only mid-stream is told by
    /// its records.
    #[test]
    fn segments_are_put_back_in_order_per_connection() {
        let (client, server) = handshake(&params(TlsVersion::V12, 0xC02F, &["P-256"]));
        let c: SocketAddr = "10.77.1.1:40000".parse().unwrap();
        let s: SocketAddr = "10.77.1.2:443".parse().unwrap();
        let mut r = Reassembly::default();
        r.segment(c, s, &tcp(1000, true, false), &[]);
        r.segment(s, c, &tcp(7000, true, true), &[]);
        // In order, once repeated whole, then overlapping what came before.
        r.segment(c, s, &tcp(1001, false, true), &client[..30]);
        r.segment(c, s, &tcp(1001, false, true), &client[..30]);
        r.segment(c, s, &tcp(1016, false, true), &client[15..60]);
        r.segment(c, s, &tcp(1031, false, true), &client[30..]);
        for (i, chunk) in server.chunks(300).enumerate() {
            r.segment(s, c, &tcp(7001 + 300 * i as u32, false, true), chunk);
        }
        // The next connection of the same ports: clear text.
        r.segment(c, s, &tcp(9000, true, false), &[]);
        r.segment(s, c, &tcp(3000, true, true), &[]);
        r.segment(c, s, &tcp(9001, false, true), b"GET / HTTP/1.1\r\n\r\n");
        // Open before the window: an application-data record.
        let (a, b): (SocketAddr, SocketAddr) = (
            "10.77.1.2:8443".parse().unwrap(),
            "10.77.1.1:50000".parse().unwrap(),
        );
        r.segment(a, b, &tcp(1, false, true), &[23, 3, 3, 0, 2, 9, 9]);
        let seen = r.finish();
        assert_eq!(seen.len(), 3, "{seen:?}");
        let tls = &seen[0];
        assert!(tls.from_start);
        let offer = tls.offer.as_ref().unwrap();
        assert!(offer.suites.contains(&0xC02F), "{offer:?}");
        assert!(offer.groups.contains(&23), "{offer:?}");
        let choice = tls.choice.as_ref().unwrap();
        assert_eq!(
            (choice.version, choice.suite, choice.group),
            (0x0303, 0xC02F, Some(23))
        );
        let clear = &seen[1];
        assert!(clear.from_start && clear.offer.is_none() && !clear.tls_records);
        assert!(clear.not_tls && clear.unread.is_none());
        let mid = seen.iter().find(|x| !x.from_start).unwrap();
        assert!(mid.tls_records);
        assert_eq!((mid.client, mid.server), (b, a));
    }

    /// The capture's memory is bounded: a connection that ends (RST, or
    /// both FINs) frees its slot and bytes, connections past the flow
    /// bound are counted, not followed, and a direction past the byte
    /// bound is given up as `capture full`.
    #[test]
    fn flows_and_buffered_bytes_are_bounded_and_freed_when_a_connection_ends() {
        let (client, _) = handshake(&params(TlsVersion::V13, 0x1301, &["X25519"]));
        let s: SocketAddr = "10.77.1.2:443".parse().unwrap();
        let c = |port: u16| SocketAddr::new("10.77.1.1".parse().unwrap(), port);
        let mut r = Reassembly::with_limits(Limits {
            flows: 1,
            bytes: 4096,
        });
        let fin = |seq: u32| Tcp {
            seq,
            ack: true,
            fin: true,
            ..Tcp::default()
        };
        // Half a hello, then both ends close: nothing stays held.
        r.segment(c(40000), s, &tcp(1000, true, false), &[]);
        r.segment(s, c(40000), &tcp(7000, true, true), &[]);
        r.segment(c(40000), s, &tcp(1001, false, true), &client[..100]);
        assert_eq!(r.buffered, 100);
        r.segment(c(40000), s, &fin(1101), &[]);
        r.segment(s, c(40000), &fin(7001), &[]);
        assert_eq!((r.buffered, r.flows.len()), (0, 0));
        // The freed slot takes the next connection; one more is untracked.
        r.segment(c(40001), s, &tcp(2000, true, false), &[]);
        r.segment(c(40002), s, &tcp(3000, true, false), &[]);
        assert_eq!(r.untracked(), 1);
        // More than the byte bound waiting for a hello: given up.
        r.segment(c(40001), s, &tcp(2001, false, true), &[0x16; 5000]);
        assert_eq!(r.buffered, 0);
        let rst = Tcp {
            seq: 7001,
            rst: true,
            ..Tcp::default()
        };
        r.segment(s, c(40001), &rst, &[]);
        assert!(r.flows.is_empty());
        let seen = r.finish();
        assert_eq!(seen.len(), 2, "{seen:?}");
        assert_eq!(seen[0].unread, Some(Unread::WindowEnded));
        assert_eq!(seen[1].unread, Some(Unread::Full));
    }

    /// A server flight longer than the bytes kept (a certificate chain
    /// past 32 kB) keeps the ServerHello's choice, its group not known,
    /// instead of no choice at all.
    #[test]
    fn a_server_flight_past_the_bytes_kept_keeps_its_choice() {
        let (client, server) = handshake(&params(TlsVersion::V12, 0xC02F, &["P-256"]));
        // The ServerHello alone: the first message of the first record.
        let body = &server[5..];
        let hello_len = 4 + usize::from(u16::from_be_bytes([body[2], body[3]]));
        let mut flight = vec![0x16, 3, 3];
        flight.extend_from_slice(&(hello_len as u16).to_be_bytes());
        flight.extend_from_slice(&body[..hello_len]);
        // A 40000-byte Certificate message in 16000-byte records.
        let mut cert = vec![11, 0x00, 0x9C, 0x40];
        cert.resize(4 + 40000, 0);
        for piece in cert.chunks(16000) {
            flight.extend_from_slice(&[0x16, 3, 3]);
            flight.extend_from_slice(&(piece.len() as u16).to_be_bytes());
            flight.extend_from_slice(piece);
        }
        let c: SocketAddr = "10.77.1.1:40000".parse().unwrap();
        let s: SocketAddr = "10.77.1.2:443".parse().unwrap();
        let mut r = Reassembly::default();
        r.segment(c, s, &tcp(1000, true, false), &[]);
        r.segment(s, c, &tcp(7000, true, true), &[]);
        r.segment(c, s, &tcp(1001, false, true), &client);
        for (i, chunk) in flight.chunks(1448).enumerate() {
            r.segment(s, c, &tcp(7001 + 1448 * i as u32, false, true), chunk);
        }
        let seen = r.finish();
        let choice = seen[0].choice.as_ref().expect("the ServerHello's choice");
        assert_eq!(
            (choice.version, choice.suite, choice.group),
            (0x0303, 0xC02F, None)
        );
    }

    /// The capture's filter passes TCP and drops the rest: the kernel
    /// runs the same program on an ordinary socket's packets, so a UDP
    /// socket with it gets nothing and a TCP connection with it still
    /// carries its bytes (no root needed).
    #[test]
    fn the_capture_filter_passes_tcp_only() {
        use std::io::{Read as _, Write as _};
        use std::net::{TcpListener, TcpStream, UdpSocket};
        let filtered = UdpSocket::bind("127.0.0.1:0").unwrap();
        let open = UdpSocket::bind("127.0.0.1:0").unwrap();
        attach_tcp_filter(&filtered).unwrap();
        let send = UdpSocket::bind("127.0.0.1:0").unwrap();
        for to in [&filtered, &open] {
            to.set_read_timeout(Some(std::time::Duration::from_millis(200)))
                .unwrap();
            send.send_to(b"x", to.local_addr().unwrap()).unwrap();
        }
        let mut buf = [0u8; 8];
        assert!(open.recv(&mut buf).is_ok());
        assert!(filtered.recv(&mut buf).is_err(), "UDP passed the filter");

        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        attach_tcp_filter(&server).unwrap();
        server
            .set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        client.write_all(b"tcp").unwrap();
        let mut got = [0u8; 3];
        server.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"tcp");
    }

    /// On loopback (root: an AF_PACKET socket) a TLS 1.3 handshake is read
    /// off the wire once, not once per copy the kernel shows (leaving and
    /// arriving).
    #[test]
    fn a_loopback_handshake_is_read_off_the_wire_once() {
        let test = "a_loopback_handshake_is_read_off_the_wire_once";
        let tap = match Tap::open() {
            Ok(t) => t,
            Err(e) => {
                let why = format!("no AF_PACKET socket ({e})");
                return stackbench_testkit::skip(stackbench_testkit::Tier::Root, test, &why);
            }
        };
        let done = AtomicBool::new(false);
        let (capture, server) = std::thread::scope(|s| {
            let reader = s.spawn(|| tap.run(&done));
            let (_, _, server) = handshake_at(&params(TlsVersion::V13, 0x1301, &["X25519"]));
            // The arriving copies of the last frames are read within a poll.
            std::thread::sleep(std::time::Duration::from_millis(100));
            done.store(true, Ordering::Relaxed);
            (reader.join().unwrap(), server)
        });
        let mine: Vec<&Seen> = capture.seen.iter().filter(|x| x.server == server).collect();
        assert_eq!(mine.len(), 1, "{mine:?}");
        let choice = mine[0].choice.as_ref().expect("the server's choice");
        assert_eq!(
            (choice.version, choice.suite, choice.group),
            (0x0304, 0x1301, Some(29))
        );
        assert!(capture.frames >= 8, "{} frames", capture.frames);
    }
}
