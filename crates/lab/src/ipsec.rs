//! IPsec (ESP) on a lab link: `ipsec = "aes-gcm-128" | "aes-cbc-128-sha256"`
//! and `ipsec_mode = "transport" | "tunnel"`, built over NETLINK_XFRM
//! ([`crate::xfrm`]); nothing shells out to `ip xfrm`.
//!
//! - **States.** Two SAs per address family both hosts have (IPv4, IPv6):
//!   A→B and B→A, each installed in both hosts' namespaces (out in one, in
//!   in the other). SPI `0x5b00_LLFD` (link `LL`, family `F` 0/1, direction
//!   `D` 0 = A→B), reqid 1000 + link. Keys are random, made by `lab up`
//!   (getrandom(2)) when the SAs are created; a later `up` whose SAs already
//!   have the right SPIs, algorithm and mode keeps them (and their keys and
//!   counters), so a study's steps do not re-key the link.
//! - **Policies.** In each host: `out` for its address → the peer's, `in`
//!   for the reverse, and in tunnel mode `fwd` as `in`; each with one ESP
//!   template between the two hosts' addresses (tunnel mode: host to host,
//!   an outer header with the same addresses). Routers on a `via` link
//!   forward ESP and hold no state.
//! - **Removal.** A host with IPsec is on one link (the lab check refuses
//!   ESP on a host with several), so its namespace's SAs and
//!   policies are the link's: a changed configuration flushes them and
//!   installs anew; `ipsec` off flushes them; `lab down` deletes the
//!   namespaces, and the kernel frees their SAs and policies with them.
//! - **Evidence.** [`read`] gives each SA's packet and byte counters
//!   (`curlft`), which a run reads before and after its window.

use std::net::IpAddr;

use crate::error::{LabError, Result};
use crate::netlink::{Netlink, NlError};
use crate::nl::nl_error;
use crate::spec::{IpsecAlgorithm, Lab};
use crate::xfrm::{self, Dir, Sa, SaState, NETLINK_XFRM};

/// A NETLINK_XFRM socket in the calling thread's namespace.
pub fn open(action: &str) -> Result<Netlink> {
    Netlink::open_protocol(NETLINK_XFRM).map_err(|e| {
        xfrm_error(
            action,
            IpsecAlgorithm::AesGcm128,
            false,
            NlError::from(e),
            true,
        )
    })
}

/// Maps an xfrm error to the kernel option that is missing, when that is
/// the cause: no NETLINK_XFRM (`open`), no ESP, or no cipher.
pub fn xfrm_error(
    action: &str,
    algorithm: IpsecAlgorithm,
    ipv6: bool,
    e: NlError,
    open: bool,
) -> LabError {
    let feature = |feature: &str, config: &str| LabError::KernelFeature {
        action: action.to_string(),
        feature: feature.to_string(),
        config: config.to_string(),
    };
    match e.errno() {
        Some(libc::EPROTONOSUPPORT) if open => feature(
            "xfrm netlink interface (IPsec configuration)",
            "CONFIG_XFRM_USER",
        ),
        Some(libc::EPROTONOSUPPORT) | Some(libc::EAFNOSUPPORT) => match ipv6 {
            false => feature("IPv4 ESP (IPsec)", "CONFIG_INET_ESP"),
            true => feature("IPv6 ESP (IPsec)", "CONFIG_INET6_ESP"),
        },
        Some(libc::ENOSYS) | Some(libc::ENOENT) => match algorithm {
            IpsecAlgorithm::AesCbc128Sha256 => feature(
                "cbc(aes) or hmac(sha256) cipher",
                "CONFIG_CRYPTO_CBC and CONFIG_CRYPTO_SHA256",
            ),
            _ => feature("rfc4106(gcm(aes)) cipher", "CONFIG_CRYPTO_GCM"),
        },
        _ => nl_error(action, e),
    }
}

/// `(A's address, B's address)` for each family both hosts of link `i` have.
pub fn address_pairs(lab: &Lab, i: usize) -> Vec<(IpAddr, IpAddr)> {
    let link = &lab.links[i];
    let (a, b) = (
        lab.link_addresses(i, &link.a),
        lab.link_addresses(i, &link.b),
    );
    a.iter()
        .filter_map(|x| {
            let y = b.iter().find(|y| y.addr.is_ipv4() == x.addr.is_ipv4())?;
            Some((x.addr, y.addr))
        })
        .collect()
}

/// The SPI of link `i`'s SA for family `v6` in direction `b_to_a`.
pub fn spi(i: usize, v6: bool, b_to_a: bool) -> u32 {
    0x5b00_0000 | ((i as u32 & 0xff) << 8) | (u32::from(v6) << 4) | u32::from(b_to_a)
}

fn random_key(len: usize) -> Result<Vec<u8>> {
    let mut key = vec![0u8; len];
    // SAFETY: getrandom(2) writes at most `len` bytes into the live buffer.
    let n = unsafe { libc::getrandom(key.as_mut_ptr().cast(), len, 0) };
    if n != len as isize {
        return Err(LabError::os(
            "make IPsec keys (getrandom)",
            std::io::Error::last_os_error(),
        ));
    }
    Ok(key)
}

/// Link `i`'s SAs, with fresh keys when `keys`, else empty ones.
pub fn wanted(lab: &Lab, i: usize, keys: bool) -> Result<Vec<Sa>> {
    let link = &lab.links[i];
    let mut out = Vec::new();
    for (a, b) in address_pairs(lab, i) {
        for (src, dst, back) in [(a, b, false), (b, a, true)] {
            let len = if keys { xfrm::key_len(link.ipsec) } else { 0 };
            out.push(Sa {
                src,
                dst,
                spi: spi(i, a.is_ipv6(), back),
                reqid: 1000 + i as u32,
                mode: link.ipsec_mode,
                algorithm: link.ipsec,
                key: random_key(len)?,
            });
        }
    }
    Ok(out)
}

/// Whether the SAs read back are exactly `want` (keys aside).
fn same(have: &[SaState], want: &[Sa]) -> bool {
    have.len() == want.len()
        && want.iter().all(|w| {
            have.iter().any(|h| {
                h.spi == w.spi
                    && h.dst == w.dst
                    && h.src == w.src
                    && h.mode == w.mode.name()
                    && h.algorithm == xfrm::kernel_name(w.algorithm)
            })
        })
}

/// Makes link `i`'s hosts hold its SAs and policies (module doc).
pub fn apply(lab: &Lab, i: usize) -> Result<()> {
    let link = &lab.links[i];
    let namespaces = [lab.namespace(&link.a), lab.namespace(&link.b)];
    if link.ipsec == IpsecAlgorithm::Off {
        for ns in &namespaces {
            crate::netns::run_in(ns, || match Netlink::open_protocol(NETLINK_XFRM) {
                Err(_) => Ok(()), // no xfrm here: nothing to remove
                Ok(mut nl) => xfrm::flush(&mut nl)
                    .map_err(|e| nl_error(format!("{ns}: flush IPsec states"), e)),
            })?;
        }
        return Ok(());
    }
    let want = wanted(lab, i, false)?;
    let mut current = true;
    for ns in &namespaces {
        let have = crate::netns::run_in(ns, || read_sas(ns))?;
        current &= have.is_some_and(|h| same(&h, &want));
    }
    let sas = if current {
        Vec::new()
    } else {
        wanted(lab, i, true)?
    };
    for (ns, own) in namespaces.iter().zip([&link.a, &link.b]) {
        let own_addrs: Vec<IpAddr> = lab
            .host(own)
            .map(|h| h.addresses.iter().map(|a| a.addr).collect())
            .unwrap_or_default();
        crate::netns::run_in(ns, || install(ns, lab, i, &sas, &own_addrs))?;
    }
    Ok(())
}

/// In one host: flush and add `sas` (when not empty), then the policies.
fn install(ns: &str, lab: &Lab, i: usize, sas: &[Sa], own: &[IpAddr]) -> Result<()> {
    let link = &lab.links[i];
    let mut nl = open(&format!("{ns}: open xfrm netlink socket"))?;
    if !sas.is_empty() {
        xfrm::flush(&mut nl).map_err(|e| nl_error(format!("{ns}: flush IPsec states"), e))?;
    }
    for sa in sas {
        let action = format!("{ns}: add IPsec SA {:#x} {} -> {}", sa.spi, sa.src, sa.dst);
        xfrm::add_sa(&mut nl, sa)
            .map_err(|e| xfrm_error(&action, sa.algorithm, sa.dst.is_ipv6(), e, false))?;
    }
    let reqid = 1000 + i as u32;
    for (a, b) in address_pairs(lab, i) {
        let (me, peer) = if own.contains(&a) { (a, b) } else { (b, a) };
        let mut dirs = vec![(me, peer, Dir::Out), (peer, me, Dir::In)];
        if link.ipsec_mode == crate::spec::IpsecMode::Tunnel {
            dirs.push((peer, me, Dir::Fwd));
        }
        for (src, dst, dir) in dirs {
            let t = xfrm::tmpl(src, dst, reqid, link.ipsec_mode);
            xfrm::update_policy(&mut nl, (src, dst, dir), &t)
                .map_err(|e| nl_error(format!("{ns}: IPsec policy {src} -> {dst} {dir:?}"), e))?;
        }
    }
    Ok(())
}

/// The SAs of namespace `ns` (on a thread inside it); `None` when this
/// kernel has no xfrm netlink interface.
pub fn read_sas(ns: &str) -> Result<Option<Vec<SaState>>> {
    let Ok(mut nl) = Netlink::open_protocol(NETLINK_XFRM) else {
        return Ok(None);
    };
    xfrm::sas(&mut nl)
        .map(Some)
        .map_err(|e| nl_error(format!("{ns}: read IPsec states"), e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_lab;

    const LAB: &str = r#"name = "sec"
[[host]]
name = "a"
address = ["10.77.1.1/24", "fd77:1::1/64"]
[[host]]
name = "b"
address = ["10.77.1.2/24"]
[[link]]
a = "a"
b = "b"
ipsec = "aes-cbc-128-sha256"
ipsec_mode = "tunnel"
"#;

    #[test]
    fn sas_pair_the_families_both_hosts_have() {
        let lab = parse_lab(LAB, "t.toml").unwrap();
        let sas = wanted(&lab, 0, true).unwrap();
        assert_eq!(sas.len(), 2, "IPv4 only: b has no IPv6");
        assert_eq!(sas[0].spi, 0x5b00_0000);
        assert_eq!(sas[1].spi, 0x5b00_0001);
        assert_eq!(sas[1].src.to_string(), "10.77.1.2");
        assert_eq!(sas[0].key.len(), 48);
        assert_ne!(sas[0].key, sas[1].key, "each direction its own key");
        assert_eq!(spi(3, true, false), 0x5b00_0310);
    }

    #[test]
    fn missing_kernel_parts_name_their_option() {
        let nl = |errno| NlError::from(std::io::Error::from_raw_os_error(errno));
        let gcm = IpsecAlgorithm::AesGcm128;
        let e = xfrm_error("add SA", gcm, false, nl(libc::EPROTONOSUPPORT), false);
        assert!(e.to_string().contains("CONFIG_INET_ESP"), "{e}");
        let e = xfrm_error("open", gcm, false, nl(libc::EPROTONOSUPPORT), true);
        assert!(e.to_string().contains("CONFIG_XFRM_USER"), "{e}");
        let e = xfrm_error("add SA", gcm, true, nl(libc::ENOSYS), false);
        assert!(e.to_string().contains("CONFIG_CRYPTO_GCM"), "{e}");
        let e = xfrm_error("add SA", gcm, false, nl(libc::EINVAL), false);
        assert!(!e.to_string().contains("CONFIG_"), "{e}");
    }
}
