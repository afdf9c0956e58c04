//! The stored form of `stackbench applicability` (the Linux analogue of
//! z/OS's SMC Applicability Tool, SMCAT): what TCP traffic was observed per
//! destination subnet, how much of it could take a faster path (same host:
//! AF_UNIX or SMC-D loopback; same subnet: SMC), how much is well-suited by
//! its lifetime and volume, the application message sizes, and the projected
//! CPU gain of the observed mix over AF_UNIX. It is kept in the environment
//! of the two projection runs (`env.applicability`), so a store holds the
//! observation beside the runs that measured its gain.
//! Filling it in is `stackbench_applicability`; this module holds the stored
//! form only.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One observation window and what it projects.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct Applicability {
    /// Where the connections were observed: `this host`, or `lab FILE host
    /// NAME` (that host's network namespace).
    pub scope: String,
    /// Only connections to or from these prefixes were counted (empty: all).
    pub filter_subnets: Vec<String>,
    /// Only connections with this local or remote port were counted.
    pub filter_port: Option<u16>,
    /// When the window started, seconds since the Unix epoch.
    pub started_unix_s: f64,
    /// The observation window, seconds.
    pub window_s: f64,
    /// The interval between two sock_diag dumps, ms.
    pub interval_ms: f64,
    /// Dumps taken inside the window.
    pub samples: u64,
    /// The longest dump, ms: a dump takes time in proportion to the TCP
    /// sockets of the whole machine (the kernel walks one table for every
    /// namespace), and sights are at least this far apart.
    pub slowest_dump_ms: f64,
    /// Close events received (the sock_diag destroy multicast groups): the
    /// final counters of connections that closed inside the window, also of
    /// those that lived between two dumps.
    pub close_events: u64,
    /// False when the kernel refused the close-event subscription: then a
    /// connection that opened and closed between two dumps was not seen.
    pub close_events_subscribed: bool,
    /// The thresholds a connection must reach to count as well-suited.
    pub thresholds: Thresholds,
    /// One row per destination subnet, most connections first.
    pub subnets: Vec<SubnetFigures>,
    /// All subnets together (`subnet` = `all`).
    pub total: SubnetFigures,
    /// The projected gain of the observed mix over AF_UNIX; absent with
    /// `--no-project` or when no eligible traffic was seen.
    pub projection: Option<Projection>,
    /// The crypto census of the same connections (`--census`): each one's
    /// protection, summed per server port and client subnet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub census: Option<CryptoCensus>,
}

/// What makes an eligible connection well-suited.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct Thresholds {
    /// The least time from a connection's first to its last sight, seconds
    /// (a connection still open at the window's end counts what it lived inside it).
    pub min_lifetime_s: f64,
    /// The least payload bytes, both directions, the connection moved inside the window.
    pub min_bytes: u64,
}

/// SMCAT's figures for the connections to one destination subnet.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct SubnetFigures {
    /// The destination subnet (`10.77.1.0/24`, `fd77:1::/64`, a given
    /// `--subnet`), or `all`.
    pub subnet: String,
    /// Connections seen (a same-host connection once, by its client end).
    pub connections: u64,
    /// Eligible: same host or same subnet, not IPsec-protected.
    pub eligible: u64,
    /// Of the eligible, same host (loopback or a local address): candidates
    /// for AF_UNIX or SMC-D loopback.
    pub same_host: u64,
    /// Of the eligible, on the subnet of a local interface (SMC-R, SMC-D).
    pub same_subnet: u64,
    /// Excluded: an IPsec SA protects the pair of addresses.
    pub excluded_ipsec: u64,
    /// Excluded: the peer is reached through a router (another subnet).
    pub excluded_routed: u64,
    /// Eligible connections that reached both thresholds.
    pub well_suited: u64,
    /// `well_suited` / `connections` × 100.
    pub well_suited_pct: f64,
    /// Segments sent and received (`tcp_info` `segs_out` + `segs_in`) inside the window.
    pub segments: u64,
    /// Share of `segments` that flowed over well-suited connections, percent.
    pub well_suited_segments_pct: f64,
    /// Payload bytes sent (acknowledged) and received inside the window.
    pub bytes: u64,
    /// Share of `bytes` that flowed over well-suited connections, percent.
    pub well_suited_bytes_pct: f64,
    /// Estimated application send sizes (see docs/applicability.md).
    pub send_sizes: Vec<SizeBucket>,
    /// Estimated application receive sizes.
    pub receive_sizes: Vec<SizeBucket>,
}

/// One bucket of the application message size distribution.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct SizeBucket {
    /// The bucket's upper bound, bytes; `None` for messages larger than one
    /// segment (MSS), whose size cannot be told from the counters.
    pub up_to_bytes: Option<u64>,
    /// Estimated messages in the bucket.
    pub messages: u64,
    /// Payload bytes in the bucket.
    pub bytes: u64,
}

/// The observed eligible mix as stackbench workloads, run over TCP and
/// AF_UNIX here, and the CPU the unix path would save.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct Projection {
    /// One entry per projected class.
    pub classes: Vec<ProjectedClass>,
    /// The projection runs' window each, seconds.
    pub run_window_s: f64,
    /// CPU saved per observed transaction (weighted by the classes'
    /// observed transactions), µs; `None` when a run gave no CPU figure.
    pub saved_cpu_us_per_tran: Option<f64>,
    /// CPU saved per second of the observed traffic (its transaction rates
    /// times the saving per transaction), µs per s.
    pub saved_cpu_us_per_s: Option<f64>,
}

/// One class of the projected mix.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct ProjectedClass {
    /// The class in workload notation (`RR1(4kB/4kB)`, `CRR4(64B/8kB)`).
    pub workload: String,
    /// The observed connections it stands for: long-lived ones as RR,
    /// short-lived ones (below the lifetime threshold) as CRR.
    pub connections: u64,
    /// Transactions observed (CRR: connections; RR: estimated from bytes
    /// and the request size).
    pub observed_transactions: u64,
    /// `observed_transactions` per second of the window.
    pub observed_tps: f64,
    /// Both sides' CPU per transaction over TCP, µs.
    pub tcp_cpu_us_per_tran: Option<f64>,
    /// Both sides' CPU per transaction over AF_UNIX, µs.
    pub unix_cpu_us_per_tran: Option<f64>,
    /// `tcp_cpu_us_per_tran` − `unix_cpu_us_per_tran`, µs.
    pub saved_cpu_us_per_tran: Option<f64>,
}

/// The crypto census (the analogue of z/OS zERT's interval summaries): the
/// protection of every connection the window counted, summed per server
/// port, client subnet and protection.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct CryptoCensus {
    /// Why the handshakes were not read off the wire (`AF_PACKET` refused,
    /// e.g. without CAP_NET_RAW): then user-space TLS reads as `unknown`.
    pub capture_refused: Option<String>,
    /// Frames the capture read.
    pub frames_captured: u64,
    /// Frames the kernel dropped before the capture read them (a busy
    /// window: some handshakes may be missing).
    pub frames_dropped: u64,
    /// Connections the capture did not follow because 65536 were open at
    /// once (its bound on memory): they read `unknown` (`not seen`).
    #[serde(default)]
    pub connections_untracked: u64,
    /// Connections whose TLS handshake (ClientHello and the server's
    /// choice) was read inside the window.
    pub handshakes_seen: u64,
    /// Connections read as `unknown` (neither TLS nor clear text shown),
    /// by why: `no capture`, `not seen` (the capture never showed it),
    /// `gap` (the capture missed some of the client's first bytes), `cap
    /// reached` (no complete hello in the bytes kept), `window ended`
    /// (the client sent nothing, or not all of its hello, inside the
    /// window), `open before the window` (no TLS records among the
    /// segments looked at), `capture full` (64 MiB buffered across all
    /// connections).
    #[serde(default)]
    pub unknown_reasons: BTreeMap<String, u64>,
    /// IPsec SAs of the observed host (start and end of the window).
    pub ipsec_sas: u64,
    /// One row per server port, client subnet and protection; most
    /// connections first.
    pub rows: Vec<ProtectionRow>,
    /// The suites `--disallow` named (IANA hex codes).
    #[serde(default)]
    pub disallowed_suites: Vec<String>,
    /// Per server port where a disallowed suite was chosen, the reset a
    /// lab policy would apply (nftables sees ports, not ciphers).
    #[serde(default)]
    pub resets: Vec<PortReset>,
}

/// The enforcement half for one server port: zERT resets a connection by
/// its cipher; an nftables policy cannot see the cipher (it is inside the
/// TLS handshake), so the reset is by the port the census saw it on, and
/// every other connection to that port is reset with it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct PortReset {
    /// The server port a disallowed suite was chosen on.
    pub server_port: u16,
    /// Connections to the port that chose a disallowed suite.
    pub disallowed_connections: u64,
    /// Connections to the port that did not (other suites, clear): reset too.
    pub other_connections: u64,
    /// The run setting of the lab policy that resets the port
    /// (`host_policy_reset_port=PORT`, on host `lab_to`).
    pub setting: String,
}

/// The connections of one server port and client subnet with one protection.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct ProtectionRow {
    /// The server's port (the end whose port is a listener here, else the remote one).
    pub server_port: u16,
    /// The client's /24 or /64, or the `--subnet` prefix holding it.
    pub client_subnet: String,
    /// `clear`, `tls` (user-space TLS, from the handshake on the wire),
    /// `tls-records` (TLS records seen, the handshake before the window),
    /// `ktls` (the kernel's TLS record layer, from sock_diag), `ipsec`, a
    /// TLS kind plus `+ipsec`, or `unknown` (no capture, or an idle
    /// connection open before the window).
    pub protection: String,
    /// TLS version chosen: `1.2`, `1.3`.
    pub tls_version: Option<String>,
    /// Cipher suite chosen, IANA name (`tls`), or the kernel's record
    /// cipher (`ktls`: `AES_GCM_128`, …).
    pub tls_cipher: Option<String>,
    /// The chosen suite's IANA hex code (`C02F`), as `--cipher` takes it.
    pub tls_cipher_code: Option<String>,
    /// Key-exchange group chosen (`X25519`, `P-256`); absent for RSA key
    /// exchange, for kTLS (the kernel does not know it), and for an ECDHE
    /// suite whose ServerKeyExchange was not read (past the 32 kB kept).
    pub tls_group: Option<String>,
    /// kTLS: where the records are handled, `tx sw, rx sw` (`hw`: offloaded to the NIC).
    pub ktls_offload: Option<String>,
    /// The TLS versions the row's ClientHellos offered (all of them).
    pub offered_versions: Vec<String>,
    /// The cipher suites they offered, IANA hex codes.
    pub offered_suites: Vec<String>,
    /// The key-exchange groups they offered (`supported_groups`).
    pub offered_groups: Vec<String>,
    /// The SA protecting the address pair: `esp tunnel rfc4106(gcm(aes))`.
    pub ipsec: Option<String>,
    /// Connections in the row.
    pub connections: u64,
    /// Payload bytes both ways inside the window.
    pub bytes: u64,
}
