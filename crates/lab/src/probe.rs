//! Kernel features a lab needs, tried before `up` builds anything: netem and
//! fq (a root qdisc of that kind on the loopback device), per-device NAPI
//! deferral (its sysfs files) and, for each IPsec
//! algorithm a link uses, an ESP SA. Tried in a scratch network namespace
//! that a short-lived thread unshares, so nothing is left behind (the
//! namespace, and the test SA and qdisc in it, die with the thread). A kernel
//! without the feature is refused in one line naming its kernel option, and
//! no half-built lab remains.

use std::net::{IpAddr, Ipv4Addr};

use crate::error::{LabError, Result};
use crate::ipsec;
use crate::nl::{netlink, nl_error, qdisc_error};
use crate::spec::{IpsecAlgorithm, IpsecMode, Lab, LinkQdisc, Netem};
use crate::{netem, qdisc, rtnl, xfrm};

/// What the lab needs of the kernel beyond namespaces, veth and tbf.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Needs {
    pub netem: bool,
    pub fq: bool,
    /// `(algorithm, IPv6)` of every IPsec link.
    pub ipsec: Vec<(IpsecAlgorithm, bool)>,
}

/// The features lab `lab` uses.
pub fn needs(lab: &Lab) -> Needs {
    let mut out = Needs::default();
    for (i, link) in lab.links.iter().enumerate() {
        out.netem |= link.netem.active();
        out.fq |= link.qdisc == LinkQdisc::Fq;
        if link.ipsec != IpsecAlgorithm::Off {
            for (a, _) in ipsec::address_pairs(lab, i) {
                let need = (link.ipsec, a.is_ipv6());
                if !out.ipsec.contains(&need) {
                    out.ipsec.push(need);
                }
            }
        }
    }
    out
}

/// Per-device NAPI deferral, when a link asks for it: the files are per
/// kernel, so the host's loopback device shows whether the lab's veths have
/// them (no namespace needed).
fn napi(lab: &Lab) -> Result<()> {
    if lab
        .links
        .iter()
        .all(|l| l.napi == crate::napi::Napi::default())
    {
        return Ok(());
    }
    if std::path::Path::new("/sys/class/net/lo/napi_defer_hard_irqs").exists() {
        return Ok(());
    }
    Err(LabError::KernelFeature {
        action: format!("lab {}: set napi_defer_hard_irqs", lab.name),
        feature: "per-device NAPI deferral (napi_defer_hard_irqs, gro_flush_timeout)".into(),
        config: "Linux 5.10 or later".into(),
    })
}

/// Tries every feature `lab` needs in a scratch namespace (module doc).
pub fn features(lab: &Lab) -> Result<()> {
    napi(lab)?;
    let needs = needs(lab);
    if needs == Needs::default() {
        return Ok(());
    }
    std::thread::scope(|s| {
        s.spawn(|| {
            // SAFETY: unshare(2) moves this short-lived thread only.
            if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
                return Err(LabError::os(
                    "make a scratch namespace to check the kernel's features",
                    std::io::Error::last_os_error(),
                ));
            }
            try_all(&lab.name, &needs)
        })
        .join()
        .unwrap_or_else(|p| std::panic::resume_unwind(p))
    })
}

fn try_all(lab: &str, needs: &Needs) -> Result<()> {
    let mut nl = netlink()?;
    let lo = rtnl::link(&mut nl, "lo")
        .map_err(|e| nl_error("scratch namespace: read lo", e))?
        .map_or(1, |l| l.index);
    let uses = [
        ("netem", needs.netem, "delay, jitter or loss"),
        ("fq", needs.fq, "pacing (qdisc fq)"),
    ];
    for (kind, needed, what) in uses {
        if needed {
            let action = format!("lab {lab}: {kind} qdisc for a link's {what}");
            qdisc::replace_root(&mut nl, lo, kind, |m| {
                if kind == "netem" {
                    netem::netem_options(m, &Netem::default(), 1000);
                }
            })
            .map_err(|e| qdisc_error(kind, &action, e))?;
            qdisc::delete_root(&mut nl, lo).map_err(|e| nl_error(action, e))?;
        }
    }
    for &(algorithm, v6) in &needs.ipsec {
        try_sa(lab, algorithm, v6)?;
    }
    Ok(())
}

/// Adds one SA of `algorithm` in the scratch namespace.
fn try_sa(lab: &str, algorithm: IpsecAlgorithm, v6: bool) -> Result<()> {
    let action = format!("lab {lab}: IPsec {}", algorithm.name());
    let mut nl = ipsec::open(&action)?;
    let (src, dst) = if v6 {
        (
            "fd00::1".parse().expect("IPv6"),
            "fd00::2".parse().expect("IPv6"),
        )
    } else {
        (
            IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
            IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)),
        )
    };
    let sa = xfrm::Sa {
        src,
        dst,
        spi: 0x5b00_ffff,
        reqid: 1,
        mode: IpsecMode::Transport,
        algorithm,
        key: vec![0x5b; xfrm::key_len(algorithm)],
    };
    xfrm::add_sa(&mut nl, &sa).map_err(|e| ipsec::xfrm_error(&action, algorithm, v6, e, false))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn needs_follow_the_links() {
        let text = r#"name = "n"
[[host]]
name = "a"
address = "10.77.1.1/24"
[[host]]
name = "b"
address = "10.77.1.2/24"
[[link]]
a = "a"
b = "b"
delay = "10ms"
ipsec = "aes-gcm-128"
"#;
        let lab = crate::parse_lab(text, "t.toml").unwrap();
        let n = needs(&lab);
        assert!(n.netem && !n.fq);
        assert_eq!(n.ipsec, [(IpsecAlgorithm::AesGcm128, false)]);
    }
}
