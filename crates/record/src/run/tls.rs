//! The TLS part of a class's result: what was negotiated (never just what
//! was asked for), the handshakes and their CPU, key updates, and — with
//! `tls_mode ktls` — the kernel's part ([`super::KtlsFigures`]).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{KtlsFigures, LatencyUs};

/// What a class's TLS connections negotiated, as OpenSSL reported it on the
/// driver's side, and its handshakes in the window.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct TlsFigures {
    /// Protocol version, e.g. "1.2".
    pub version: String,
    /// IANA name of the negotiated suite.
    pub cipher: String,
    /// Its IANA code in hex, e.g. "C02F".
    pub cipher_code: String,
    /// Connections whose handshake was full ("long") or abbreviated
    /// ("short", a resumed session), completed in the window.
    pub full_handshakes: u64,
    /// Abbreviated (resumed-session) handshakes completed in the window.
    pub resumed_handshakes: u64,
    /// From connect to the handshake's end, apart from transaction latency;
    /// `None` (null) when no handshake completed in the window (an RR run's
    /// connections all handshake before it opens).
    pub handshake_latency_us: Option<LatencyUs>,
    /// `--rekey`: key updates the driver's connections of the class started
    /// in the window (0 without it, and in records older than it).
    #[serde(default)]
    pub rekeys: u64,
    /// Key updates the responder's connections of the class started, over
    /// the test's whole life (warm-up included).
    #[serde(default)]
    pub server_rekeys: u64,
    /// Thread CPU µs per handshake, per side; absent in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handshake_cpu_us: Option<HandshakeCpuUs>,
    /// `tls_mode ktls`: the kernel's part; absent in other modes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ktls: Option<KtlsFigures>,
    /// The ALPN protocol the server selected (e.g. "http/1.1"); absent
    /// where none was offered or the server selected none, and in older
    /// records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alpn: Option<String>,
    /// A foreign server (an https:// target): true when its certificate
    /// was verified (chain and name), false under `--insecure` (with the
    /// `tls_unverified` warning); absent against stackbench's own
    /// responder, whose certificate is never verified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_verified: Option<bool>,
}

/// Mean thread CPU µs of one handshake, full ("long") or resumed ("short"),
/// on each side: the CPU of the calls that advanced it (key exchange,
/// signatures, certificate), not the connect or accept. The driver's are
/// over the window's handshakes, the responder's over the test's whole life.
/// `None` where no handshake of that kind happened, and for the responder
/// also where none of that kind completed in the window: its figure would
/// then come only from handshakes outside it (an RR run's set-up, where the
/// first carries OpenSSL's one-time initialisation: 55,752 µs was seen).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct HandshakeCpuUs {
    /// The driver's full handshakes, µs each.
    pub client_full: Option<f64>,
    /// The driver's resumed handshakes, µs each.
    pub client_resumed: Option<f64>,
    /// The responder's full handshakes, µs each.
    pub server_full: Option<f64>,
    /// The responder's resumed handshakes, µs each.
    pub server_resumed: Option<f64>,
}

impl HandshakeCpuUs {
    /// Mean µs of `count` handshakes that took `total_ns`.
    pub fn per_handshake(total_ns: u64, count: u64) -> Option<f64> {
        (count > 0).then(|| total_ns as f64 / count as f64 / 1e3)
    }
}
