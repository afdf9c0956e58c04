//! NETLINK_XFRM messages for IPsec (linux/xfrm.h): security associations
//! (`XFRM_MSG_NEWSA` with `struct xfrm_usersa_info` and the algorithm
//! attributes), policies (`XFRM_MSG_UPDPOLICY` with `struct
//! xfrm_userpolicy_info` and one `struct xfrm_user_tmpl`), flushes, and the
//! SA dump whose `curlft` carries each SA's packet and byte counters. The
//! byte layouts are the x86_64 (and every 64-bit Linux) ones, checked by the
//! tests against the kernel's struct sizes: 224, 168 and 64 bytes.

use std::net::IpAddr;

use crate::netlink::{attrs, text, Message, Netlink, NlError, F_CREATE, F_EXCL};
use crate::spec::{IpsecAlgorithm, IpsecMode};

/// The netlink family of xfrm (linux/netlink.h).
pub const NETLINK_XFRM: libc::c_int = 6;
const XFRM_MSG_NEWSA: u16 = 16;
const XFRM_MSG_GETSA: u16 = 18;
const XFRM_MSG_UPDPOLICY: u16 = 25;
const XFRM_MSG_FLUSHSA: u16 = 28;
const XFRM_MSG_FLUSHPOLICY: u16 = 29;
const XFRMA_ALG_AUTH_TRUNC: u16 = 20;
const XFRMA_ALG_CRYPT: u16 = 2;
const XFRMA_ALG_AEAD: u16 = 18;
const XFRMA_TMPL: u16 = 5;
const IPPROTO_ESP: u8 = 50;
/// `IPSEC_PROTO_ANY`: a flush of every protocol's SAs.
const PROTO_ANY: u8 = 255;
const XFRM_INF: u64 = u64::MAX;
pub const SA_INFO_LEN: usize = 224;
pub const POLICY_INFO_LEN: usize = 168;
pub const TMPL_LEN: usize = 64;
const ALG_NAME_LEN: usize = 64;

/// Policy directions (`XFRM_POLICY_IN`, `_OUT`, `_FWD`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    In = 0,
    Out = 1,
    Fwd = 2,
}

/// One security association to install.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sa {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub spi: u32,
    pub reqid: u32,
    pub mode: IpsecMode,
    pub algorithm: IpsecAlgorithm,
    /// Key material: AES key then salt (GCM) or AES key then HMAC key (CBC).
    pub key: Vec<u8>,
}

/// Key bytes each algorithm takes (see [`Sa::key`]).
pub fn key_len(algorithm: IpsecAlgorithm) -> usize {
    match algorithm {
        IpsecAlgorithm::Off => 0,
        IpsecAlgorithm::AesGcm128 => 16 + 4,
        IpsecAlgorithm::AesCbc128Sha256 => 16 + 32,
    }
}

fn family(a: IpAddr) -> u16 {
    match a {
        IpAddr::V4(_) => libc::AF_INET as u16,
        IpAddr::V6(_) => libc::AF_INET6 as u16,
    }
}

/// `xfrm_address_t`: 16 bytes, an IPv4 address in the first four.
fn address(a: IpAddr) -> [u8; 16] {
    let mut b = [0u8; 16];
    match a {
        IpAddr::V4(v4) => b[..4].copy_from_slice(&v4.octets()),
        IpAddr::V6(v6) => b.copy_from_slice(&v6.octets()),
    }
    b
}

fn mode_byte(mode: IpsecMode) -> u8 {
    match mode {
        IpsecMode::Transport => 0,
        IpsecMode::Tunnel => 1,
    }
}

/// `struct xfrm_lifetime_cfg`: the byte and packet limits infinite
/// (`XFRM_INF`), the four time limits 0 = none (a time of `XFRM_INF` would
/// overflow the kernel's expiry sum and expire the SA at once), as `ip
/// xfrm` writes it.
fn infinite_lifetime(b: &mut [u8]) {
    for i in 0..4 {
        b[i * 8..i * 8 + 8].copy_from_slice(&XFRM_INF.to_ne_bytes());
    }
}

/// `struct xfrm_usersa_info` for `sa`: selector left open (any traffic the
/// policies send to it), id (daddr, spi, ESP), saddr, infinite lifetime,
/// reqid, family, mode.
pub fn sa_info(sa: &Sa) -> [u8; SA_INFO_LEN] {
    let mut b = [0u8; SA_INFO_LEN];
    b[56..72].copy_from_slice(&address(sa.dst));
    b[72..76].copy_from_slice(&sa.spi.to_be_bytes());
    b[76] = IPPROTO_ESP;
    b[80..96].copy_from_slice(&address(sa.src));
    infinite_lifetime(&mut b[96..160]);
    b[208..212].copy_from_slice(&sa.reqid.to_ne_bytes());
    b[212..214].copy_from_slice(&family(sa.dst).to_ne_bytes());
    b[214] = mode_byte(sa.mode);
    b
}

/// `struct xfrm_algo` / `_aead` / `_auth`: name (64 bytes), key length in
/// bits, `extra` (ICV or truncation length in bits, if any), key.
fn algo(name: &str, key: &[u8], extra: Option<u32>) -> Vec<u8> {
    let mut b = vec![0u8; ALG_NAME_LEN];
    b[..name.len()].copy_from_slice(name.as_bytes());
    b.extend_from_slice(&(key.len() as u32 * 8).to_ne_bytes());
    if let Some(bits) = extra {
        b.extend_from_slice(&bits.to_ne_bytes());
    }
    b.extend_from_slice(key);
    b
}

/// The algorithm attributes of `sa`: AEAD `rfc4106(gcm(aes))` with a
/// 128-bit ICV, or `cbc(aes)` plus `hmac(sha256)` truncated to 128 bits.
pub fn algorithm_attrs(sa: &Sa) -> Vec<(u16, Vec<u8>)> {
    match sa.algorithm {
        IpsecAlgorithm::Off => Vec::new(),
        IpsecAlgorithm::AesGcm128 => vec![(
            XFRMA_ALG_AEAD,
            algo("rfc4106(gcm(aes))", &sa.key, Some(128)),
        )],
        IpsecAlgorithm::AesCbc128Sha256 => vec![
            (XFRMA_ALG_CRYPT, algo("cbc(aes)", &sa.key[..16], None)),
            (
                XFRMA_ALG_AUTH_TRUNC,
                algo("hmac(sha256)", &sa.key[16..], Some(128)),
            ),
        ],
    }
}

/// Adds `sa` (an SA of that SPI and address must not exist).
pub fn add_sa(nl: &mut Netlink, sa: &Sa) -> Result<(), NlError> {
    let mut msg = Message::new(XFRM_MSG_NEWSA, F_CREATE | F_EXCL, &sa_info(sa));
    for (kind, data) in algorithm_attrs(sa) {
        msg.attr(kind, &data);
    }
    nl.request(msg)
}

/// `struct xfrm_user_tmpl`: ESP from `src` to `dst` in `mode`, any algorithm.
pub fn tmpl(src: IpAddr, dst: IpAddr, reqid: u32, mode: IpsecMode) -> [u8; TMPL_LEN] {
    let mut b = [0u8; TMPL_LEN];
    b[0..16].copy_from_slice(&address(dst));
    b[20] = IPPROTO_ESP;
    b[24..26].copy_from_slice(&family(dst).to_ne_bytes());
    b[28..44].copy_from_slice(&address(src));
    b[44..48].copy_from_slice(&reqid.to_ne_bytes());
    b[48] = mode_byte(mode);
    for at in [52, 56, 60] {
        b[at..at + 4].copy_from_slice(&u32::MAX.to_ne_bytes());
    }
    b
}

/// `struct xfrm_userpolicy_info`: traffic from `src` to `dst` (host
/// addresses, full prefixes, any protocol) in direction `dir`, allowed.
pub fn policy_info(src: IpAddr, dst: IpAddr, dir: Dir) -> [u8; POLICY_INFO_LEN] {
    let mut b = [0u8; POLICY_INFO_LEN];
    let bits = if src.is_ipv4() { 32 } else { 128 };
    b[0..16].copy_from_slice(&address(dst));
    b[16..32].copy_from_slice(&address(src));
    b[40..42].copy_from_slice(&family(dst).to_ne_bytes());
    b[42] = bits;
    b[43] = bits;
    infinite_lifetime(&mut b[56..120]);
    b[160] = dir as u8;
    b
}

/// Adds or replaces the policy for `src` → `dst` in `dir`, using `tmpl`.
pub fn update_policy(
    nl: &mut Netlink,
    (src, dst, dir): (IpAddr, IpAddr, Dir),
    template: &[u8; TMPL_LEN],
) -> Result<(), NlError> {
    let mut msg = Message::new(XFRM_MSG_UPDPOLICY, F_CREATE, &policy_info(src, dst, dir));
    msg.attr(XFRMA_TMPL, template);
    nl.request(msg)
}

/// Removes every SA and every policy of the calling thread's namespace.
pub fn flush(nl: &mut Netlink) -> Result<(), NlError> {
    nl.request(Message::new(XFRM_MSG_FLUSHSA, 0, &[PROTO_ANY, 0, 0, 0]))?;
    nl.request(Message::new(XFRM_MSG_FLUSHPOLICY, 0, &[]))
}

/// One SA as the kernel reports it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SaState {
    pub spi: u32,
    pub src: IpAddr,
    pub dst: IpAddr,
    /// `esp`, `ah` or `comp` (`id.proto`), else the protocol number.
    pub protocol: String,
    /// The kernel's algorithm names, e.g. `rfc4106(gcm(aes))`, or
    /// `cbc(aes)+hmac(sha256)`.
    pub algorithm: String,
    pub mode: String,
    /// Packets and bytes the SA protected (out) or accepted (in).
    pub packets: u64,
    pub bytes: u64,
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8)
        .map_or(0, |s| u64::from_ne_bytes(s.try_into().expect("8 bytes")))
}

fn read_address(b: &[u8], family: u16) -> IpAddr {
    if family == libc::AF_INET6 as u16 {
        let o: [u8; 16] = b[..16].try_into().expect("16 bytes");
        IpAddr::from(o)
    } else {
        let o: [u8; 4] = b[..4].try_into().expect("4 bytes");
        IpAddr::from(o)
    }
}

/// An SA from a `XFRM_MSG_NEWSA` payload (a dump's entry).
pub fn parse_sa(p: &[u8]) -> Option<SaState> {
    let info = p.get(..SA_INFO_LEN)?;
    let fam = u16::from_ne_bytes([info[212], info[213]]);
    // In a fixed order (the kernel dumps authentication before encryption).
    let mut names = Vec::new();
    for want in [XFRMA_ALG_AEAD, XFRMA_ALG_CRYPT, XFRMA_ALG_AUTH_TRUNC] {
        for (kind, data) in attrs(&p[SA_INFO_LEN..]) {
            if kind == want {
                names.push(text(data.get(..ALG_NAME_LEN).unwrap_or(data)));
            }
        }
    }
    Some(SaState {
        spi: u32::from_be_bytes(info[72..76].try_into().expect("4 bytes")),
        src: read_address(&info[80..96], fam),
        dst: read_address(&info[56..72], fam),
        protocol: match info[76] {
            IPPROTO_ESP => "esp".into(),
            51 => "ah".into(),
            108 => "comp".into(),
            p => format!("protocol {p}"),
        },
        algorithm: names.join("+"),
        mode: match info[214] {
            0 => "transport".into(),
            1 => "tunnel".into(),
            m => format!("mode {m}"),
        },
        bytes: u64_at(info, 160),
        packets: u64_at(info, 168),
    })
}

/// Every SA of the calling thread's namespace, with its counters.
pub fn sas(nl: &mut Netlink) -> Result<Vec<SaState>, NlError> {
    let replies = nl.dump(Message::new(XFRM_MSG_GETSA, 0, &[]))?;
    Ok(replies.iter().filter_map(|p| parse_sa(p)).collect())
}

/// The kernel's name of `algorithm` as [`SaState::algorithm`] reads it.
pub fn kernel_name(algorithm: IpsecAlgorithm) -> &'static str {
    match algorithm {
        IpsecAlgorithm::Off => "",
        IpsecAlgorithm::AesGcm128 => "rfc4106(gcm(aes))",
        IpsecAlgorithm::AesCbc128Sha256 => "cbc(aes)+hmac(sha256)",
    }
}

/// The SA payload's u32 at `at` (for tests of the layout).
#[cfg(test)]
fn field(b: &[u8], at: usize) -> u32 {
    crate::netlink::u32_at(b, at)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sa(algorithm: IpsecAlgorithm) -> Sa {
        Sa {
            src: "10.77.1.1".parse().unwrap(),
            dst: "10.77.1.2".parse().unwrap(),
            spi: 0x5b00_0100,
            reqid: 1000,
            mode: IpsecMode::Tunnel,
            algorithm,
            key: (0..key_len(algorithm) as u8).collect(),
        }
    }

    #[test]
    fn sa_info_has_the_kernels_layout() {
        let s = sa(IpsecAlgorithm::AesGcm128);
        let b = sa_info(&s);
        assert_eq!(b.len(), 224, "sizeof(struct xfrm_usersa_info) on x86_64");
        assert_eq!(&b[56..60], &[10, 77, 1, 2], "id.daddr");
        assert_eq!(&b[72..76], &[0x5b, 0, 1, 0], "id.spi, big-endian");
        assert_eq!(b[76], 50, "id.proto ESP");
        assert_eq!(&b[80..84], &[10, 77, 1, 1], "saddr");
        assert_eq!(u64_at(&b, 96), u64::MAX, "lft.soft_byte_limit");
        assert_eq!(u64_at(&b, 120), u64::MAX, "lft.hard_packet_limit");
        assert_eq!(u64_at(&b, 128), 0, "lft.soft_add_expires_seconds: none");
        assert_eq!(u64_at(&b, 152), 0, "lft.hard_use_expires_seconds: none");
        assert_eq!(u64_at(&b, 160), 0, "curlft.bytes");
        assert_eq!(field(&b, 208), 1000, "reqid");
        assert_eq!(u16::from_ne_bytes([b[212], b[213]]), 2, "family AF_INET");
        assert_eq!(b[214], 1, "mode tunnel");
        let back = parse_sa(&b).unwrap();
        assert_eq!((back.spi, back.mode.as_str()), (0x5b00_0100, "tunnel"));
        assert_eq!(back.protocol, "esp");
        assert_eq!(back.dst, s.dst);
        // Names in a fixed order, whatever the kernel's attribute order.
        let cbc = sa(IpsecAlgorithm::AesCbc128Sha256);
        let mut msg = Message::new(0, 0, &sa_info(&cbc));
        for (kind, data) in algorithm_attrs(&cbc).into_iter().rev() {
            msg.attr(kind, &data);
        }
        let back = parse_sa(msg.body()).unwrap();
        assert_eq!(back.algorithm, kernel_name(IpsecAlgorithm::AesCbc128Sha256));
    }

    #[test]
    fn policy_and_template_have_the_kernels_layout() {
        let (a, b): (IpAddr, IpAddr) = ("fd77:1::1".parse().unwrap(), "fd77:1::2".parse().unwrap());
        let p = policy_info(a, b, Dir::Fwd);
        assert_eq!(p.len(), 168, "sizeof(struct xfrm_userpolicy_info)");
        assert_eq!(&p[0..16], &address(b), "sel.daddr");
        assert_eq!(&p[16..32], &address(a), "sel.saddr");
        assert_eq!(
            u16::from_ne_bytes([p[40], p[41]]),
            10,
            "sel.family AF_INET6"
        );
        assert_eq!((p[42], p[43]), (128, 128), "prefix lengths");
        assert_eq!(p[160], 2, "dir fwd");
        assert_eq!(p[161], 0, "action allow");
        let t = tmpl(a, b, 7, IpsecMode::Transport);
        assert_eq!(t.len(), 64, "sizeof(struct xfrm_user_tmpl)");
        assert_eq!(t[20], 50);
        assert_eq!(u16::from_ne_bytes([t[24], t[25]]), 10);
        assert_eq!(&t[28..44], &address(a), "saddr at 28");
        assert_eq!(field(&t, 44), 7);
        assert_eq!(t[48], 0, "mode transport");
        assert_eq!(field(&t, 56), u32::MAX, "ealgos");
    }

    #[test]
    fn algorithms_carry_names_key_bits_and_icv() {
        let gcm = algorithm_attrs(&sa(IpsecAlgorithm::AesGcm128));
        assert_eq!(gcm.len(), 1);
        let (kind, data) = &gcm[0];
        assert_eq!(*kind, XFRMA_ALG_AEAD);
        assert_eq!(
            data.len(),
            72 + 20,
            "struct xfrm_algo_aead + 128-bit key + salt"
        );
        assert_eq!(text(&data[..64]), "rfc4106(gcm(aes))");
        assert_eq!((field(data, 64), field(data, 68)), (160, 128));
        let cbc = algorithm_attrs(&sa(IpsecAlgorithm::AesCbc128Sha256));
        assert_eq!(cbc[0].1.len(), 68 + 16, "struct xfrm_algo + AES key");
        assert_eq!(field(&cbc[0].1, 64), 128);
        assert_eq!(text(&cbc[1].1[..64]), "hmac(sha256)");
        assert_eq!((field(&cbc[1].1, 64), field(&cbc[1].1, 68)), (256, 128));
        assert_eq!(cbc[1].1.len(), 72 + 32);
    }
}
