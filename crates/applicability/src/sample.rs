//! One sight of one TCP socket: its addresses, its sock_diag cookie and the
//! `tcp_info` counters the observation uses. Plain data, so the tracking and
//! classification above it are tested on synthetic samples.

use std::net::SocketAddr;

use crate::protection::ktls::KtlsInfo;

/// The cumulative `tcp_info` counters of a socket (RFC 4898 names in the kernel).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counters {
    /// Payload bytes sent, each once: `tcpi_bytes_sent` − `tcpi_bytes_retrans`
    /// (not `tcpi_bytes_acked`, which also counts the SYN and the FIN).
    pub bytes_out: u64,
    /// Payload bytes sent, retransmissions included (`tcpi_bytes_sent`):
    /// counted when sent, as `data_segs_out` is, so the two pair up per interval.
    pub bytes_sent: u64,
    /// Payload bytes received (`tcpi_bytes_received`).
    pub bytes_received: u64,
    /// Segments sent, pure ACKs included (`tcpi_segs_out`).
    pub segs_out: u64,
    /// Segments received (`tcpi_segs_in`).
    pub segs_in: u64,
    /// Segments sent carrying data, counted per MSS (`tcpi_data_segs_out`).
    pub data_segs_out: u64,
    /// Segments received carrying data (`tcpi_data_segs_in`).
    pub data_segs_in: u64,
}

impl Counters {
    /// `self − earlier`, each counter saturating (a 32-bit segment counter
    /// that wrapped reads as no progress, never as a huge one).
    pub fn since(&self, earlier: &Counters) -> Counters {
        Counters {
            bytes_out: self.bytes_out.saturating_sub(earlier.bytes_out),
            bytes_sent: self.bytes_sent.saturating_sub(earlier.bytes_sent),
            bytes_received: self.bytes_received.saturating_sub(earlier.bytes_received),
            segs_out: self.segs_out.saturating_sub(earlier.segs_out),
            segs_in: self.segs_in.saturating_sub(earlier.segs_in),
            data_segs_out: self.data_segs_out.saturating_sub(earlier.data_segs_out),
            data_segs_in: self.data_segs_in.saturating_sub(earlier.data_segs_in),
        }
    }

    /// Payload bytes both ways.
    pub fn bytes(&self) -> u64 {
        self.bytes_out + self.bytes_received
    }

    /// Segments both ways.
    pub fn segments(&self) -> u64 {
        self.segs_out + self.segs_in
    }
}

/// One socket as one dump (or its close event) showed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TcpSample {
    /// The kernel's socket cookie: unique for the namespace's lifetime and
    /// still set in the close event, where the inode is already 0 (so it,
    /// not the 4-tuple and inode, keys a connection: a 4-tuple is reused by
    /// the next short connection of a client port).
    pub cookie: u64,
    pub local: SocketAddr,
    pub remote: SocketAddr,
    /// A listening socket (no connection; its port marks the server end).
    pub listening: bool,
    /// From a close event: the socket's last counters.
    pub closed: bool,
    pub counters: Counters,
    /// The MSS this end sends with, bytes.
    pub snd_mss: u32,
    /// The MSS this end advertised (`tcpi_advmss`: the largest segment the
    /// peer sends), bytes. Not `tcpi_rcv_mss`, the kernel's guess from the
    /// segments seen so far, which a flow of 4 kB messages keeps at 4 kB.
    pub rcv_mss: u32,
    /// Smoothed RTT, µs.
    pub rtt_us: u32,
    /// The kernel's TLS record layer on this socket (kTLS), if any.
    pub ktls: Option<KtlsInfo>,
}
