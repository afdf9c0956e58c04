//! The path of a run across a lab: from host A to host B over the link that
//! joins them (directly or through a router), the interfaces on it, the
//! address B's responder listens on, and the link overrides a run applies
//! (rate, MTU, offloads) checked as the lab file's own values are. Pure:
//! nothing here touches the kernel.

use std::net::IpAddr;

use serde::Serialize;

use crate::layout::layout;
use crate::spec::{IpsecAlgorithm, IpsecMode, Lab, LinkQdisc, Offloads, IPV6_MIN_MTU, MTU_RANGE};

/// Bit rates a link may be shaped to, in bit/s (1 Mbit to 1000 Gbit; below
/// 1 Mbit tbf's burst time would not fit its 32-bit tick count), in the lab
/// file and in a run's `link_rate`.
pub const RATE_RANGE_BPS: std::ops::RangeInclusive<u64> = 1_000_000..=1_000_000_000_000;

/// How host A reaches host B.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LabPath {
    /// Index of the link in the lab file.
    pub link: usize,
    pub from: String,
    pub to: String,
    /// Routers on the path, in order (empty: a direct link).
    pub hops: Vec<String>,
    /// The interfaces on the path, `(namespace, interface)`, from A to B.
    pub interfaces: Vec<(String, String)>,
}

/// Changes to the path's link a run asks for; `None` keeps the file's.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LinkOverrides {
    pub rate_bps: Option<u64>,
    pub mtu: Option<u32>,
    /// `(name, on)` pairs, names as [`Offloads::NAMES`].
    pub offloads: [Option<bool>; 5],
    pub delay: Option<std::time::Duration>,
    pub jitter: Option<std::time::Duration>,
    pub loss_pct: Option<f64>,
    pub qdisc: Option<LinkQdisc>,
    /// Also makes the leaf qdisc fq.
    pub fq_maxrate_bps: Option<u64>,
    pub ipsec: Option<IpsecAlgorithm>,
    pub ipsec_mode: Option<IpsecMode>,
    /// `napi_defer_hard_irqs` of every interface on the link.
    pub napi_defer_hard_irqs: Option<u32>,
    /// `gro_flush_timeout` of every interface on the link.
    pub gro_flush_timeout: Option<std::time::Duration>,
    /// Transmit queue depth of every interface on the link, packets.
    pub txqueuelen: Option<u32>,
}

fn listing(lab: &Lab) -> String {
    let hosts: Vec<&str> = lab.hosts.iter().map(|h| h.name.as_str()).collect();
    let links: Vec<String> = lab
        .links
        .iter()
        .map(|l| match &l.via {
            Some(r) => format!("{} <-> {} via {r}", l.a, l.b),
            None => format!("{} <-> {}", l.a, l.b),
        })
        .collect();
    format!(
        "hosts {}; links {}",
        hosts.join(", "),
        if links.is_empty() {
            "none".to_string()
        } else {
            links.join(", ")
        }
    )
}

/// The path from host `from` to host `to`; the error (one line) lists the
/// lab's hosts and links.
pub fn path(lab: &Lab, from: &str, to: &str) -> Result<LabPath, String> {
    for (role, name) in [("lab_from", from), ("lab_to", to)] {
        if lab.host(name).is_none() {
            return Err(format!(
                "{role} '{name}' is not a host of lab {}: use one of its {}",
                lab.name,
                listing(lab)
            ));
        }
    }
    if from == to {
        return Err(format!(
            "lab_from and lab_to are both '{from}': give two hosts joined by a link ({})",
            listing(lab)
        ));
    }
    let found = lab
        .links
        .iter()
        .position(|l| (l.a == from && l.b == to) || (l.a == to && l.b == from));
    let Some(link) = found else {
        return Err(format!(
            "hosts '{from}' and '{to}' of lab {} are not joined by a link: use two ends of one link ({})",
            lab.name,
            listing(lab)
        ));
    };
    let plan = layout(lab);
    let (ns_from, ns_to) = (lab.namespace(from), lab.namespace(to));
    let mut interfaces: Vec<(String, String)> = plan
        .pairs
        .iter()
        .filter(|p| p.link == link)
        .flat_map(|p| p.ends.iter())
        .map(|e| (e.ns.clone(), e.ifname.clone()))
        .collect();
    // Layout order is a→b; the path runs from `from`.
    if interfaces.first().is_some_and(|(ns, _)| *ns != ns_from)
        || interfaces.last().is_some_and(|(ns, _)| *ns != ns_to)
    {
        interfaces.reverse();
    }
    Ok(LabPath {
        link,
        from: from.to_string(),
        to: to.to_string(),
        hops: lab.links[link].via.iter().cloned().collect(),
        interfaces,
    })
}

/// The address of host `host` to listen on for peers on link `link`: its
/// first IPv6 address on that link when `ipv6`, else its first IPv4 one (a
/// host on several links has one per link, see [`Lab::link_addresses`]).
pub fn address(lab: &Lab, link: usize, host: &str, ipv6: bool) -> Result<IpAddr, String> {
    if lab.host(host).is_none() {
        return Err(format!("no host '{host}' in lab {}", lab.name));
    }
    lab.link_addresses(link, host)
        .iter()
        .map(|n| n.addr)
        .find(|a| a.is_ipv6() == ipv6)
        .ok_or_else(|| {
            let family = if ipv6 { "IPv6" } else { "IPv4" };
            format!(
                "host '{host}' of lab {} has no {family} address: add one to its address list{}",
                lab.name,
                if ipv6 { " or drop ipv6" } else { "" }
            )
        })
}

/// The lab with the overrides applied to link `link`, checked as the lab
/// file's values are (rate range, MTU range, IPv6's minimum MTU, TSO needing
/// checksum offload); the error is one line naming the setting.
pub fn with_overrides(lab: &Lab, link: usize, o: &LinkOverrides) -> Result<Lab, String> {
    let mut out = lab.clone();
    let l = &mut out.links[link];
    if let Some(rate) = o.rate_bps {
        if !RATE_RANGE_BPS.contains(&rate) {
            return Err(format!("link_rate {rate} bit/s: use 1Mbit to 1000Gbit"));
        }
        l.rate_bps = Some(rate);
    }
    if let Some(mtu) = o.mtu {
        if !MTU_RANGE.contains(&mtu) {
            return Err(format!(
                "link_mtu {mtu}: use {} to {}",
                MTU_RANGE.start(),
                MTU_RANGE.end()
            ));
        }
        let ipv6 = [&l.a, &l.b]
            .iter()
            .filter_map(|h| lab.host(h))
            .any(|h| h.addresses.iter().any(|a| a.addr.is_ipv6()));
        if ipv6 && mtu < IPV6_MIN_MTU {
            return Err(format!(
                "link_mtu {mtu}: the hosts have IPv6 addresses, which need an MTU of at least {IPV6_MIN_MTU}"
            ));
        }
        l.mtu = mtu;
    }
    for (name, value) in Offloads::NAMES.iter().zip(o.offloads) {
        if let Some(on) = value {
            l.offloads.set(name, on);
        }
    }
    properties(l, o)?;
    if let Some(n) = o.txqueuelen {
        if !(1..=crate::spec::MAX_TXQUEUELEN).contains(&n) {
            return Err(format!(
                "link_txqueuelen {n}: use 1 to {}",
                crate::spec::MAX_TXQUEUELEN
            ));
        }
        l.txqueuelen = Some(n);
    }
    if let Some(n) = o.napi_defer_hard_irqs {
        if n > crate::napi::DEFER_MAX {
            return Err(format!(
                "link_napi_defer_hard_irqs {n}: use 0 to {}",
                crate::napi::DEFER_MAX
            ));
        }
        l.napi.defer_hard_irqs = n;
    }
    if let Some(t) = o.gro_flush_timeout {
        l.napi.gro_flush_timeout_ns = t
            .as_nanos()
            .try_into()
            .map_err(|_| format!("link_gro_flush_timeout {t:?}: use 0s to 1s"))?;
    }
    if l.ipsec != IpsecAlgorithm::Off {
        if let Some(h) = [&l.a, &l.b].into_iter().find(|h| lab.links_of(h) > 1) {
            return Err(format!(
                "link_ipsec: host '{h}' is on several links, and a link's SAs replace its hosts' others: drop link_ipsec, or use a lab whose hosts have one link each"
            ));
        }
    }
    if l.offloads.tso && !l.offloads.tx_csum {
        return Err(format!(
            "link_offloads: tso on needs tx_csum on (the kernel drops TSO without checksum offload); the link has {}: add tso=off or tx_csum=on",
            l.offloads
        ));
    }
    Ok(out)
}

/// The delay, loss, fq and IPsec overrides, checked as the file's are.
fn properties(l: &mut crate::spec::Link, o: &LinkOverrides) -> Result<(), String> {
    l.netem.delay = o.delay.unwrap_or(l.netem.delay);
    l.netem.jitter = o.jitter.unwrap_or(l.netem.jitter);
    l.netem.loss_pct = o.loss_pct.unwrap_or(l.netem.loss_pct);
    l.qdisc = o.qdisc.unwrap_or(l.qdisc);
    if let Some(rate) = o.fq_maxrate_bps {
        l.fq_maxrate_bps = Some(rate);
        l.qdisc = LinkQdisc::Fq;
    }
    if l.qdisc != LinkQdisc::Fq {
        l.fq_maxrate_bps = None; // link_qdisc fifo drops the file's fq_maxrate
    }
    l.ipsec = o.ipsec.unwrap_or(l.ipsec);
    l.ipsec_mode = o.ipsec_mode.unwrap_or(l.ipsec_mode);
    l.check_properties().map_err(|m| {
        format!(
            "link overrides (link_delay, link_jitter, link_loss, link_qdisc, link_fq_maxrate): {m}"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_lab;

    const ROUTED: &str = r#"name = "hop"
[[host]]
name = "client"
address = ["10.77.1.1/24", "fd77:1::1/64"]
[[host]]
name = "server"
address = ["10.77.2.1/24"]
[[host]]
name = "lonely"
address = ["10.77.3.1/24"]
[[router]]
name = "r1"
[[link]]
a = "client"
b = "server"
via = "r1"
"#;

    #[test]
    fn paths_run_from_a_to_b_through_routers() {
        let lab = parse_lab(ROUTED, "t.toml").unwrap();
        let p = path(&lab, "server", "client").unwrap();
        assert_eq!(p.hops, ["r1"]);
        let names: Vec<&str> = p.interfaces.iter().map(|(_, i)| i.as_str()).collect();
        assert_eq!(names, ["hop-0b", "hop-0rb", "hop-0ra", "hop-0a"]);
        assert_eq!(p.interfaces[0].0, "sb-hop-server");
        let e = path(&lab, "client", "nobody").unwrap_err();
        assert!(
            e.contains("lab_to 'nobody'") && e.contains("hosts client, server, lonely"),
            "{e}"
        );
        let e = path(&lab, "client", "lonely").unwrap_err();
        assert!(
            e.contains("not joined") && e.contains("client <-> server via r1"),
            "{e}"
        );
        assert_eq!(
            address(&lab, 0, "client", true).unwrap().to_string(),
            "fd77:1::1"
        );
        assert!(address(&lab, 0, "server", true)
            .unwrap_err()
            .contains("no IPv6"));
    }

    #[test]
    fn overrides_are_checked_like_the_file() {
        let lab = parse_lab(ROUTED, "t.toml").unwrap();
        let o = LinkOverrides {
            rate_bps: Some(10_000_000_000),
            mtu: Some(9000),
            offloads: [Some(false), None, Some(false), None, None],
            ..LinkOverrides::default()
        };
        let changed = with_overrides(&lab, 0, &o).unwrap();
        assert_eq!(changed.links[0].rate_bps, Some(10_000_000_000));
        assert_eq!(changed.links[0].mtu, 9000);
        assert!(!changed.links[0].offloads.tso && changed.links[0].offloads.gso);
        let small = LinkOverrides {
            mtu: Some(1000),
            ..LinkOverrides::default()
        };
        assert!(with_overrides(&lab, 0, &small)
            .unwrap_err()
            .contains("IPv6"));
        let no_csum = LinkOverrides {
            offloads: [None, None, None, Some(false), None],
            ..LinkOverrides::default()
        };
        assert!(with_overrides(&lab, 0, &no_csum)
            .unwrap_err()
            .contains("tso on needs tx_csum"));
    }

    #[test]
    fn property_overrides_apply_and_are_checked() {
        let lab = parse_lab(ROUTED, "t.toml").unwrap();
        let ms = std::time::Duration::from_millis;
        let o = LinkOverrides {
            delay: Some(ms(10)),
            loss_pct: Some(0.5),
            fq_maxrate_bps: Some(1_000_000_000),
            ipsec: Some(IpsecAlgorithm::AesGcm128),
            ..LinkOverrides::default()
        };
        let l = &with_overrides(&lab, 0, &o).unwrap().links[0];
        assert_eq!(l.netem.delay, ms(10));
        assert_eq!(l.qdisc, LinkQdisc::Fq);
        assert_eq!(l.qdisc_chain(true), ["netem", "fq"]);
        assert_eq!(l.ipsec_mode, IpsecMode::Transport);
        let bad = LinkOverrides {
            jitter: Some(ms(5)),
            ..LinkOverrides::default()
        };
        let e = with_overrides(&lab, 0, &bad).unwrap_err();
        assert!(
            e.contains("jitter") && e.contains("larger than the delay"),
            "{e}"
        );
    }

    /// `link_txqueuelen 100`: the link's queue is 100 packets, and its tbf
    /// holds 100 MTU-sized packets instead of its burst + 20 ms at the rate.
    #[test]
    fn txqueuelen_override_sets_the_queue_depth_and_is_checked() {
        let lab = parse_lab(ROUTED, "t.toml").unwrap();
        let o = LinkOverrides {
            rate_bps: Some(100_000_000),
            txqueuelen: Some(100),
            ..LinkOverrides::default()
        };
        let changed = with_overrides(&lab, 0, &o).unwrap();
        let link = &changed.links[0];
        assert_eq!(link.txqueuelen, Some(100));
        assert_eq!(link.tbf(0).limit_bytes, 100 * u64::from(link.mtu));
        let default = with_overrides(
            &lab,
            0,
            &LinkOverrides {
                txqueuelen: None,
                ..o
            },
        )
        .unwrap();
        assert_eq!(
            default.links[0].tbf(0).limit_bytes,
            crate::qdisc::tbf_for(100_000_000, link.mtu).limit_bytes
        );
        for bad in [0, crate::spec::MAX_TXQUEUELEN + 1] {
            let e = with_overrides(
                &lab,
                0,
                &LinkOverrides {
                    txqueuelen: Some(bad),
                    ..o
                },
            );
            assert!(e
                .unwrap_err()
                .starts_with(&format!("link_txqueuelen {bad}: use 1 to")));
        }
    }

    #[test]
    fn napi_overrides_reach_the_link_and_are_checked() {
        let lab = parse_lab(ROUTED, "t.toml").unwrap();
        let o = LinkOverrides {
            napi_defer_hard_irqs: Some(2),
            gro_flush_timeout: Some(std::time::Duration::from_micros(200)),
            ..LinkOverrides::default()
        };
        let changed = with_overrides(&lab, 0, &o).unwrap();
        assert_eq!(changed.links[0].napi.defer_hard_irqs, 2);
        assert_eq!(changed.links[0].napi.gro_flush_timeout_ns, 200_000);
        assert_eq!(lab.links[0].napi, crate::napi::Napi::default());
        let too_many = LinkOverrides {
            napi_defer_hard_irqs: Some(crate::napi::DEFER_MAX + 1),
            ..LinkOverrides::default()
        };
        let e = with_overrides(&lab, 0, &too_many).unwrap_err();
        assert!(e.contains("link_napi_defer_hard_irqs"), "{e}");
    }
}
