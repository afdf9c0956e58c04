//! Socket options z/OS Communications Server's performance best practices name,
//! and how a CRR connection is closed, and the transport that carries data
//! connections. They are derived from the run settings
//! ([`super::RunSettings::socket_options`]) and sent to the responder.

use serde::{Deserialize, Serialize};

/// Who closes a CRR connection first, which decides where TIME_WAIT lands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CrrClose {
    /// The responder closes right after the response (as an HTTP/1.0 server
    /// does): TIME_WAIT lands on the server, which does not consume the
    /// client's ephemeral ports, so CRR can run for as long as asked.
    #[default]
    Server,
    /// The client closes first after reading the response: TIME_WAIT lands on
    /// the client and holds one ephemeral port for 60 s (Linux reuses them on
    /// loopback only with `net.ipv4.tcp_tw_reuse` = 1 or 2).
    Client,
    /// The client closes abortively (SO_LINGER 0, RST): no TIME_WAIT anywhere.
    /// This is what neper's `tcp_crr` does unless given `--time-wait`.
    Abort,
}

impl CrrClose {
    pub fn name(self) -> &'static str {
        match self {
            CrrClose::Server => "server",
            CrrClose::Client => "client",
            CrrClose::Abort => "abort",
        }
    }
}

/// Defines [`Transport`] from one table: each variant with its doc and its
/// setting value (also its JSON spelling), so that the name, the parser and
/// the allowed values cannot disagree. What a transport does is its row in
/// the engine's transport table (`stackbench_engine::transport::row`).
macro_rules! transports {
    ($($(#[$meta:meta])* $variant:ident = $name:literal,)+) => {
        /// How data connections are carried. Chosen per run; the driver and
        /// responder state machines do not depend on it (the engine's
        /// `transport` module does, through one row per transport).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
        pub enum Transport {
            $($(#[$meta])* #[serde(rename = $name)] $variant,)+
        }

        impl Transport {
            /// Every transport, in the table's order.
            pub const ALL: &'static [Transport] = &[$(Transport::$variant),+];
            /// Their setting values, in the same order.
            pub const NAMES: &'static [&'static str] = &[$($name),+];

            pub fn name(self) -> &'static str {
                match self {
                    $(Transport::$variant => $name,)+
                }
            }
        }
    };
}

transports! {
    /// TCP over IPv4 or IPv6.
    #[default]
    Tcp = "tcp",
    /// AF_UNIX stream sockets: the memory-to-memory path without TCP/IP (the
    /// analogue of the mainframe's SMC-D against HiperSockets, both
    /// memory-to-memory within one machine). Same host only.
    Unix = "unix",
    /// Multipath TCP (IPPROTO_MPTCP, Linux 5.6 or later with
    /// `net.mptcp.enabled` = 1).
    Mptcp = "mptcp",
    /// TLS over TCP (OpenSSL inside driver and responder; see `TlsParams`).
    Tls = "tls",
    /// AF_SMC (SMC-R over RoCE, SMC-D over ISM), where the kernel has it: a TCP
    /// handshake, then data over RDMA or ISM; falls back to TCP otherwise.
    Smc = "smc",
}

/// How the driver and responder workers wait for and do their socket I/O.
/// A run asks for one; cases the io_uring backend does not cover run on
/// epoll, and the effective value (never `auto`) is stored with the result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IoMode {
    /// Readiness (edge-triggered epoll) plus one send or recv call each.
    Epoll,
    /// Completions: sends and receives queued on an io_uring, submitted in
    /// batches with one `io_uring_enter` per loop turn.
    Uring,
    /// Whichever measured better for the run's workloads (the engine's
    /// `iomode::auto_choice`): io_uring for request/response with several
    /// connections per worker, epoll for the rest.
    #[default]
    Auto,
}

impl IoMode {
    pub fn name(self) -> &'static str {
        match self {
            IoMode::Epoll => "epoll",
            IoMode::Uring => "uring",
            IoMode::Auto => "auto",
        }
    }
}

/// Socket options applied on both sides of every data connection. The driver
/// sends them to the responder over the control connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SocketOptions {
    /// TCP_NODELAY: Nagle's algorithm off.
    pub nodelay: bool,
    /// Receive whole messages: recv(MSG_WAITALL) plus SO_RCVLOWAT set to the
    /// message size (capped), so a non-blocking receiver is woken once per
    /// message rather than once per segment.
    pub waitall: bool,
    /// TCP_QUICKACK re-armed after every receive: delayed ACK off.
    pub quickack: bool,
    /// SO_SNDBUF in bytes, `None` = kernel default (autotuning).
    pub sndbuf_bytes: Option<u32>,
    /// SO_RCVBUF in bytes, `None` = kernel default (autotuning).
    pub rcvbuf_bytes: Option<u32>,
    /// How CRR connections are closed.
    pub crr_close: CrrClose,
    /// SO_BUSY_POLL in µs, `None` = off (the kernel's `net.core.busy_read`).
    #[serde(default)]
    pub busy_poll_us: Option<u32>,
    /// Priority level of this test's sockets (one class): DSCP and
    /// SO_PRIORITY as `settings::priority` documents; `None` = untouched.
    /// In a run's options, the first class's level (the driver sets each
    /// class's own), so a transport without priorities can drop them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<u8>,
    /// TCP_CORK around every message longer than one write (chunks of
    /// `IO_CHUNK_BYTES`), lifted after its last chunk. Not a setting: the
    /// transport decides (`effective_options`: TCP-family transports with
    /// Nagle on). Why: without it each write's sub-MSS tail leaves as a small
    /// segment, and Nagle (Minshall's form) holds the message's final small
    /// segment until the receiver ACKs that earlier one, which it delays
    /// 40 ms — `RR4(300kB/1B)` measured p90 44 ms on loopback. A message
    /// written in one call does not meet this, so neither should one the
    /// tool writes in pieces.
    #[serde(default)]
    pub cork: bool,
}
