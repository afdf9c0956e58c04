//! kTLS as sock_diag shows it: a socket whose upper-layer protocol is `tls`
//! carries `INET_DIAG_ULP_INFO` in its dump entry (and in its close event),
//! a nest holding the ULP's name (`INET_ULP_INFO_NAME`) and, for TLS, a
//! nest `INET_ULP_INFO_TLS` with the record layer's version, cipher and
//! where each direction's crypto runs (`TLS_INFO_*` of linux/tls.h). The
//! kernel writes them in `tcp_diag_put_ulp` (net/ipv4/tcp_diag.c) and
//! `tls_get_info` (net/tls/tls_main.c); it does so only for a requester
//! with CAP_NET_ADMIN and only with the `INET_DIAG_INFO` extension asked,
//! which [`crate::sockets::dump_tcp`] asks.
//!
//! The kernel knows the record cipher only (AES-GCM-128 and so on), not
//! the handshake's key exchange: a kTLS row names what the kernel knows.

use netlink_packet_core::{NlaBuffer, NlasIterator};

/// `INET_DIAG_ULP_INFO` of `enum inet_diag_attr` (linux/inet_diag.h).
pub const INET_DIAG_ULP_INFO: u16 = 19;
/// `INET_ULP_INFO_NAME`, `INET_ULP_INFO_TLS` (linux/inet_diag.h).
const INET_ULP_INFO_NAME: u16 = 1;
const INET_ULP_INFO_TLS: u16 = 2;
/// `TLS_INFO_VERSION`, `_CIPHER`, `_TXCONF`, `_RXCONF` (linux/tls.h).
const TLS_INFO_VERSION: u16 = 1;
const TLS_INFO_CIPHER: u16 = 2;
const TLS_INFO_TXCONF: u16 = 3;
const TLS_INFO_RXCONF: u16 = 4;
/// An attribute type without the `NLA_F_NESTED` and byte-order flags.
const NLA_TYPE_MASK: u16 = 0x3fff;

/// What the kernel tells about a kTLS socket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KtlsInfo {
    /// `1.2`, `1.3`, or the version's hex code when neither.
    pub version: String,
    /// The kernel's cipher (`AES_GCM_128`, …), or its number when unknown.
    pub cipher: String,
    /// Where each direction's records are handled: `sw`, `hw`,
    /// `hw-record`, `base` (not yet handed to the kernel).
    pub tx: String,
    pub rx: String,
}

fn u16_of(value: &[u8]) -> Option<u16> {
    Some(u16::from_ne_bytes(value.get(..2)?.try_into().ok()?))
}

/// The attributes of a nest: (type without flags, value).
fn attrs(bytes: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    NlasIterator::new(bytes)
        .map_while(Result::ok)
        .map(|a: NlaBuffer<&[u8]>| {
            // `value()` borrows the buffer; its bytes outlive it.
            let (kind, len) = (a.kind() & NLA_TYPE_MASK, usize::from(a.length()));
            let bytes = a.into_inner();
            (kind, &bytes[4.min(len)..len.min(bytes.len())])
        })
}

/// `TLS_1_2_VERSION` (0x0303) and `TLS_1_3_VERSION` (0x0304) as the
/// settings name them.
pub fn version_name(code: u16) -> String {
    match code {
        0x0303 => "1.2".into(),
        0x0304 => "1.3".into(),
        c => format!("0x{c:04x}"),
    }
}

/// `TLS_CIPHER_*` of linux/tls.h.
fn cipher_name(code: u16) -> String {
    match code {
        51 => "AES_GCM_128".into(),
        52 => "AES_GCM_256".into(),
        53 => "AES_CCM_128".into(),
        54 => "CHACHA20_POLY1305".into(),
        55 => "SM4_GCM".into(),
        56 => "SM4_CCM".into(),
        57 => "ARIA_GCM_128".into(),
        58 => "ARIA_GCM_256".into(),
        c => format!("cipher {c}"),
    }
}

/// `TLS_CONF_*` of linux/tls.h.
fn conf_name(code: Option<u16>) -> String {
    match code {
        Some(1) => "base".into(),
        Some(2) => "sw".into(),
        Some(3) => "hw".into(),
        Some(4) => "hw-record".into(),
        Some(c) => format!("conf {c}"),
        None => "-".into(),
    }
}

/// The IANA suite of a TLS 1.3 kTLS socket, which its record cipher
/// fixes (RFC 8446 B.4); `None` for TLS 1.2, whose suite also names a key
/// exchange the kernel does not know.
pub fn tls13_suite(k: &KtlsInfo) -> Option<u16> {
    if k.version != "1.3" {
        return None;
    }
    match k.cipher.as_str() {
        "AES_GCM_128" => Some(0x1301),
        "AES_GCM_256" => Some(0x1302),
        "CHACHA20_POLY1305" => Some(0x1303),
        "AES_CCM_128" => Some(0x1304),
        _ => None,
    }
}

/// The kTLS state in the value of an `INET_DIAG_ULP_INFO` attribute;
/// `None` for another ULP (`mptcp`, …) or a TLS nest without version and
/// cipher (a socket with the ULP set but no key installed yet).
pub fn decode_ulp_info(value: &[u8]) -> Option<KtlsInfo> {
    let mut name = None;
    let mut tls = None;
    for (kind, v) in attrs(value) {
        match kind {
            INET_ULP_INFO_NAME => {
                let end = v.iter().position(|&b| b == 0).unwrap_or(v.len());
                name = Some(String::from_utf8_lossy(&v[..end]).into_owned());
            }
            INET_ULP_INFO_TLS => tls = Some(v),
            _ => {}
        }
    }
    if name.as_deref() != Some("tls") {
        return None;
    }
    let (mut version, mut cipher, mut tx, mut rx) = (None, None, None, None);
    for (kind, v) in attrs(tls?) {
        match kind {
            TLS_INFO_VERSION => version = u16_of(v),
            TLS_INFO_CIPHER => cipher = u16_of(v),
            TLS_INFO_TXCONF => tx = u16_of(v),
            TLS_INFO_RXCONF => rx = u16_of(v),
            _ => {}
        }
    }
    Some(KtlsInfo {
        version: version_name(version?),
        cipher: cipher_name(cipher?),
        tx: conf_name(tx),
        rx: conf_name(rx),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One netlink attribute as the kernel lays it out: length (header
    /// included, unpadded), type, value, padding to 4 bytes.
    fn nla(kind: u16, value: &[u8]) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&(4 + value.len() as u16).to_ne_bytes());
        b.extend_from_slice(&kind.to_ne_bytes());
        b.extend_from_slice(value);
        b.resize(b.len().next_multiple_of(4), 0);
        b
    }

    /// The value of `INET_DIAG_ULP_INFO` as `tcp_diag_put_ulp` and
    /// `tls_get_info` write it for a kTLS socket with both directions in
    /// software: `nla_put_string(INET_ULP_INFO_NAME, "tls")`, then the nest
    /// `INET_ULP_INFO_TLS` (opened with `nla_nest_start_noflag`, so no
    /// `NLA_F_NESTED`) holding version, cipher, TX and RX conf as u16s and
    /// the flag `TLS_INFO_ZC_RO_TX` (an empty attribute). No kernel of
    /// this machine has kTLS, so these are the bytes the kernel's source
    /// says it sends, not a capture.
    fn ulp_info(version: u16, cipher: u16, nested_flag: bool) -> Vec<u8> {
        let mut tls = Vec::new();
        tls.extend(nla(TLS_INFO_VERSION, &version.to_ne_bytes()));
        tls.extend(nla(TLS_INFO_CIPHER, &cipher.to_ne_bytes()));
        tls.extend(nla(TLS_INFO_TXCONF, &2u16.to_ne_bytes()));
        tls.extend(nla(TLS_INFO_RXCONF, &3u16.to_ne_bytes()));
        tls.extend(nla(5, &[]));
        let flag = if nested_flag { 0x8000 } else { 0 };
        let mut v = nla(INET_ULP_INFO_NAME, b"tls\0");
        v.extend(nla(INET_ULP_INFO_TLS | flag, &tls));
        v
    }

    #[test]
    fn a_ktls_socket_reads_as_its_version_cipher_and_offload() {
        let k = decode_ulp_info(&ulp_info(0x0304, 51, false)).unwrap();
        assert_eq!(
            k,
            KtlsInfo {
                version: "1.3".into(),
                cipher: "AES_GCM_128".into(),
                tx: "sw".into(),
                rx: "hw".into(),
            }
        );
        // A nest marked NLA_F_NESTED reads the same.
        let k = decode_ulp_info(&ulp_info(0x0303, 54, true)).unwrap();
        assert_eq!(
            (k.version.as_str(), k.cipher.as_str()),
            ("1.2", "CHACHA20_POLY1305")
        );
    }

    #[test]
    fn another_ulp_or_a_tls_socket_without_keys_is_not_ktls() {
        assert_eq!(decode_ulp_info(&nla(INET_ULP_INFO_NAME, b"mptcp\0")), None);
        // The ULP set, no key yet: tls_get_info writes the conf only.
        let mut v = nla(INET_ULP_INFO_NAME, b"tls\0");
        v.extend(nla(
            INET_ULP_INFO_TLS,
            &nla(TLS_INFO_TXCONF, &1u16.to_ne_bytes()),
        ));
        assert_eq!(decode_ulp_info(&v), None);
        // Truncated bytes end the walk instead of panicking.
        let full = ulp_info(0x0304, 52, false);
        assert_eq!(decode_ulp_info(&full[..10]), None);
    }
}
