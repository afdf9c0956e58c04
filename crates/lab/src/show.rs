//! `lab show`: the lab as configured and as the kernel reports it. The
//! kernel's values are the truth (a rate read from the qdisc, an MTU from
//! the link, offloads from ethtool); each one that differs from the file is
//! printed with the configured value beside it, and the last line counts the
//! differences.

use std::collections::HashMap;
use std::fs;

use serde::Serialize;
use stackbench_model::units::{format_bit_rate, format_size};

use crate::error::Result;
use crate::htb::{self, ClassStats};
use crate::layout::{layout, End, Layout};
use crate::netem::NetemState;
use crate::nl::nl_error;
use crate::parse::cpus_text;
use crate::spec::{IpNet, Lab, Offloads};
use crate::xfrm::SaState;
use crate::{ethtool, netem, netns, qdisc, rtnl};

/// The kernel's view of a lab.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Readback {
    /// In layout order.
    pub namespaces: Vec<NsState>,
    /// Every veth end, in layout order.
    pub ends: Vec<EndState>,
}

/// One namespace as read back.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NsState {
    pub name: String,
    pub present: bool,
    /// IPv4 forwarding (`net.ipv4.ip_forward`).
    pub forwarding: bool,
    /// Routes through a gateway, as `DEST via GATEWAY dev NAME`.
    pub routes: Vec<String>,
    /// The namespace's macvlan interfaces (virtual MACs).
    pub macvlans: Vec<crate::macvlan::MacvlanState>,
}

/// One veth end as read back; `present == false` leaves the rest empty.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EndState {
    pub link: usize,
    pub ns: String,
    pub ifname: String,
    pub present: bool,
    pub up: bool,
    /// Carrier on: the link passes packets.
    pub running: bool,
    pub mtu: u32,
    /// The device's transmit queue length, packets (`None`: not reported).
    pub txqueuelen: Option<u32>,
    pub addresses: Vec<IpNet>,
    /// Root qdisc kind (`tbf`, `noqueue`), empty when none is reported.
    pub qdisc: String,
    /// The tbf's rate, bucket and queue, when the root qdisc is a tbf.
    pub rate_bps: Option<u64>,
    pub burst_bytes: Option<u64>,
    pub limit_bytes: Option<u64>,
    /// The htb's classes with their counters, when the root qdisc is an htb
    /// (priority classes); `rate_bps` is then its link class's rate.
    pub classes: Vec<ClassStats>,
    pub offloads: Option<Offloads>,
    /// The qdisc chain, root first (`tbf`, `netem`, `fq`; see [`crate::netem`]).
    pub qdiscs: Vec<String>,
    /// netem's delay, jitter, loss and queue, when the chain has one.
    pub netem: Option<NetemState>,
    /// Whether the chain has an fq, and its per-flow cap.
    pub fq: bool,
    pub fq_maxrate_bps: Option<u64>,
    /// The IPsec SAs of the end's namespace, with their counters.
    pub sas: Vec<SaState>,
    /// NAPI deferral, GRO flush timeout and `ethtool -C` coalescing;
    /// `None` when sysfs has no such files (or the end is absent).
    pub napi: Option<crate::napi::NapiState>,
}

/// Reads the lab's namespaces and interfaces from the kernel.
pub fn read(lab: &Lab) -> Result<Readback> {
    let plan = layout(lab);
    let mut out = Readback {
        namespaces: Vec::new(),
        ends: Vec::new(),
    };
    let mut by_end: HashMap<(String, String), EndState> = HashMap::new();
    for ns in &plan.namespaces {
        let ends: Vec<(usize, &End)> = ends_in(&plan, &ns.name);
        if !netns::exists(&ns.name) {
            out.namespaces.push(NsState {
                name: ns.name.clone(),
                present: false,
                forwarding: false,
                routes: Vec::new(),
                macvlans: Vec::new(),
            });
            continue;
        }
        let (state, read) = netns::run_in(&ns.name, || read_namespace(&ns.name, &ends))?;
        out.namespaces.push(state);
        for end in read {
            by_end.insert((end.ns.clone(), end.ifname.clone()), end);
        }
    }
    for pair in &plan.pairs {
        for end in &pair.ends {
            let key = (end.ns.clone(), end.ifname.clone());
            out.ends.push(
                by_end
                    .remove(&key)
                    .unwrap_or_else(|| absent(pair.link, end)),
            );
        }
    }
    Ok(out)
}

fn ends_in<'a>(plan: &'a Layout, ns: &str) -> Vec<(usize, &'a End)> {
    plan.pairs
        .iter()
        .flat_map(|p| p.ends.iter().map(move |e| (p.link, e)))
        .filter(|(_, e)| e.ns == ns)
        .collect()
}

fn absent(link: usize, end: &End) -> EndState {
    EndState {
        link,
        ns: end.ns.clone(),
        ifname: end.ifname.clone(),
        present: false,
        up: false,
        running: false,
        mtu: 0,
        txqueuelen: None,
        addresses: Vec::new(),
        qdisc: String::new(),
        rate_bps: None,
        burst_bytes: None,
        limit_bytes: None,
        classes: Vec::new(),
        offloads: None,
        qdiscs: Vec::new(),
        netem: None,
        fq: false,
        napi: None,
        fq_maxrate_bps: None,
        sas: Vec::new(),
    }
}

/// The qdisc chain of link `index`: kinds, netem, fq and its cap.
type ChainState = (Vec<String>, Option<NetemState>, bool, Option<u64>);

fn read_chain(
    nl: &mut crate::netlink::Netlink,
    index: u32,
) -> Result<ChainState, crate::netlink::NlError> {
    let all = qdisc::qdiscs(nl, index)?;
    let chain = netem::chain(&all);
    let find = |kind: &str| chain.iter().find(|q| q.kind == kind);
    Ok((
        chain.iter().map(|q| q.kind.clone()).collect(),
        find("netem").and_then(|q| netem::parse_netem(&q.options)),
        find("fq").is_some(),
        find("fq").and_then(|q| netem::parse_fq_maxrate(&q.options)),
    ))
}

/// Reads one namespace (on a thread inside it).
fn read_namespace(name: &str, ends: &[(usize, &End)]) -> Result<(NsState, Vec<EndState>)> {
    let mut nl = crate::nl::netlink()?;
    let links = rtnl::links(&mut nl).map_err(|e| nl_error(format!("{name}: list links"), e))?;
    let dev = |index: u32| {
        links
            .iter()
            .find(|l| l.index == index)
            .map_or("?".to_string(), |l| l.name.clone())
    };
    let routes = rtnl::gateway_routes(&mut nl)
        .map_err(|e| nl_error(format!("{name}: list routes"), e))?
        .iter()
        .map(|r| format!("{} via {} dev {}", r.dest, r.gateway, dev(r.oif)))
        .collect();
    let forwarding =
        fs::read_to_string("/proc/sys/net/ipv4/ip_forward").is_ok_and(|s| s.trim() == "1");
    let sas = crate::ipsec::read_sas(name)?.unwrap_or_default();
    // This thread ends with the read, so its own sysfs mount goes with it.
    let sysfs = crate::napi::private_sysfs().is_ok();
    let mut states = Vec::new();
    for &(link, end) in ends {
        let Some(info) = links.iter().find(|l| l.name == end.ifname) else {
            states.push(absent(link, end));
            continue;
        };
        let root = qdisc::root(&mut nl, info.index)
            .map_err(|e| nl_error(format!("{name}/{}: read qdisc", end.ifname), e))?;
        let tbf = root.as_ref().and_then(|q| q.tbf);
        let classes = if root.as_ref().is_some_and(|q| q.kind == "htb") {
            htb::classes(&mut nl, info.index)
                .map_err(|e| nl_error(format!("{name}/{}: read classes", end.ifname), e))?
        } else {
            Vec::new()
        };
        let htb_rate = classes.iter().find(|c| c.id == htb::LINK_CLASS);
        let (qdiscs, netem, fq, fq_maxrate_bps) = read_chain(&mut nl, info.index)
            .map_err(|e| nl_error(format!("{name}/{}: read qdiscs", end.ifname), e))?;
        states.push(EndState {
            link,
            ns: end.ns.clone(),
            ifname: end.ifname.clone(),
            present: true,
            up: info.up,
            running: info.running,
            mtu: info.mtu,
            txqueuelen: info.txqueuelen,
            addresses: rtnl::addresses(&mut nl, info.index)
                .map_err(|e| nl_error(format!("{name}/{}: read addresses", end.ifname), e))?,
            qdisc: root.map(|q| q.kind).unwrap_or_default(),
            rate_bps: tbf.map(|t| t.rate_bps).or(htb_rate.map(|c| c.rate_bps)),
            burst_bytes: tbf.map(|t| t.burst_bytes),
            limit_bytes: tbf.map(|t| t.limit_bytes),
            classes,
            offloads: ethtool::get(&end.ifname).ok(),
            qdiscs,
            netem,
            fq,
            fq_maxrate_bps,
            sas: sas.clone(),
            napi: napi_of(&end.ifname, sysfs),
        });
    }
    let state = NsState {
        name: name.to_string(),
        present: true,
        forwarding,
        routes,
        macvlans: crate::macvlan::read(&mut nl, name)?,
    };
    Ok((state, states))
}

/// The NAPI values of `ifname` from this thread's sysfs (`sysfs`: it was
/// mounted); `None` on a kernel without the files. Every lab interface is
/// a veth, which the coalescing message names.
fn napi_of(ifname: &str, sysfs: bool) -> Option<crate::napi::NapiState> {
    if !sysfs {
        return None;
    }
    let napi = crate::napi::get(ifname).ok()?;
    Some(crate::napi::NapiState {
        napi,
        coalesce: crate::napi::coalesce(ifname, "veth"),
    })
}

/// Renders the lab and its readback as text, one line per namespace, link,
/// interface and route, then the count of differences.
pub fn render(lab: &Lab, back: &Readback) -> String {
    render_counted(lab, back).0
}

/// [`render`]'s text and its number of differences from the file, so that
/// `lab show` can exit non-zero when the kernel is not as configured.
pub fn render_counted(lab: &Lab, back: &Readback) -> (String, usize) {
    let plan = layout(lab);
    let count = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    let description = if lab.description.is_empty() {
        String::new()
    } else {
        format!(" ({})", lab.description)
    };
    let mut out = format!(
        "lab {}: {}, {}, {}{description}\n",
        lab.name,
        count(lab.hosts.len(), "host"),
        count(lab.routers.len(), "router"),
        count(lab.links.len(), "link"),
    );
    let mut diffs = namespace_lines(lab, &plan, back, &mut out);
    for (i, link) in lab.links.iter().enumerate() {
        let via = link
            .via
            .as_ref()
            .map(|r| format!(" via {r}"))
            .unwrap_or_default();
        let rate = link
            .rate_bps
            .map_or("unshaped".to_string(), format_bit_rate);
        let classes = if link.priority_classes {
            ", priority classes 1:10-1:16"
        } else {
            ""
        };
        out.push_str(&format!(
            "link {i}: {} <-> {}{via}: rate {rate}{classes}, mtu {}, offloads {}{}\n",
            link.a,
            link.b,
            link.mtu,
            link.offloads,
            configured_properties(link)
        ));
        let ends = plan
            .pairs
            .iter()
            .filter(|p| p.link == i)
            .flat_map(|p| p.ends.iter());
        for end in ends {
            let state = back
                .ends
                .iter()
                .find(|s| s.ns == end.ns && s.ifname == end.ifname);
            let (line, n) = end_line(end, state, link);
            diffs += n;
            out.push_str(&line);
            let host_end = plan
                .namespaces
                .iter()
                .any(|n| n.name == end.ns && !n.router);
            if let Some(s) = state.filter(|s| s.present) {
                let (line, n) = property_line(s, link, host_end);
                diffs += n;
                out.push_str(&line);
            }
        }
    }
    diffs += route_lines(&plan, back, &mut out);
    out.push_str(&match diffs {
        0 => "state: as configured\n".to_string(),
        n => format!(
            "state: {n} differences from the lab file (run `stackbench lab up` to apply it)\n"
        ),
    });
    (out, diffs)
}

/// One line per namespace; returns the differences from the file.
fn namespace_lines(lab: &Lab, plan: &Layout, back: &Readback, out: &mut String) -> usize {
    let mut diffs = 0;
    out.push_str("namespaces:\n");
    for (ns, state) in plan.namespaces.iter().zip(&back.namespaces) {
        let role = if ns.router {
            "router".to_string()
        } else {
            let cpus = lab.host(&ns.member).and_then(|h| h.cpus.clone());
            format!("host, cpus {}", cpus_text(&cpus))
        };
        let status = match (state.present, ns.router, state.forwarding) {
            (false, _, _) => "absent",
            (true, true, true) => "present, forwarding on",
            (true, true, false) => "present, forwarding OFF (configured on)",
            (true, false, _) => "present",
        };
        diffs += usize::from(!state.present || (ns.router && !state.forwarding));
        out.push_str(&format!("  {} ({role}): {status}\n", ns.name));
        diffs += macvlan_lines(lab, ns, state, out);
    }
    diffs
}

/// One line per macvlan the host has or should have; returns how many
/// differ from the file (missing, another mode or address).
fn macvlan_lines(
    lab: &Lab,
    ns: &crate::layout::Namespace,
    state: &NsState,
    out: &mut String,
) -> usize {
    let host = lab.host(&ns.member).filter(|_| !ns.router);
    let want = host.map(|h| (h.macvlans.clone(), h.macvlan_mode));
    let names = crate::macvlan::names_in(lab, &ns.name);
    let mut diffs = 0;
    for (i, name) in names.iter().enumerate() {
        let Some((addresses, mode)) = &want else {
            continue;
        };
        let found = state.macvlans.iter().find(|m| &m.name == name);
        let line = match found {
            None => {
                diffs += 1;
                "absent".to_string()
            }
            Some(m) => {
                let same = m.mode == Some(*mode) && m.addresses == [addresses[i]];
                diffs += usize::from(!same);
                let have: Vec<String> = m.addresses.iter().map(ToString::to_string).collect();
                format!(
                    "macvlan {} on {}, mac {}, {}{}",
                    m.mode.map_or("?", |m| m.name()),
                    m.parent,
                    m.mac,
                    have.join(" "),
                    if same {
                        String::new()
                    } else {
                        format!(" (configured {} {})", mode.name(), addresses[i])
                    }
                )
            }
        };
        out.push_str(&format!("    {}/{name}: {line}\n", ns.name));
    }
    diffs
}

/// One line per configured route; returns how many are missing.
fn route_lines(plan: &Layout, back: &Readback, out: &mut String) -> usize {
    let mut missing = 0;
    for (ns, state) in plan.namespaces.iter().zip(&back.namespaces) {
        for route in &ns.routes {
            let want = format!("{} via {} dev {}", route.dest, route.gateway, route.dev);
            let found = state.routes.contains(&want);
            missing += usize::from(!found);
            let mark = if found { "" } else { ": MISSING" };
            out.push_str(&format!("route in {}: {want}{mark}\n", ns.name));
        }
    }
    missing
}

/// `1:10 N pkts, …, 1:16 N pkts`: where each level's packets went.
fn class_counts(classes: &[ClassStats]) -> String {
    let leaves: Vec<String> = classes
        .iter()
        .filter(|c| htb::leaf_ids().any(|id| id == c.id))
        .map(|c| format!("{} {} pkts", c.name(), c.packets))
        .collect();
    leaves.join(", ")
}

/// One interface's line and its number of differences from the file.
fn end_line(end: &End, state: Option<&EndState>, link: &crate::spec::Link) -> (String, usize) {
    let name = format!("  {}/{}", end.ns, end.ifname);
    let Some(s) = state.filter(|s| s.present) else {
        return (format!("{name}: absent\n"), 1);
    };
    let mut diffs = 0;
    let mut mark = |same: bool, configured: String| {
        diffs += usize::from(!same);
        if same {
            String::new()
        } else {
            format!(" (configured {configured})")
        }
    };
    let state = match (s.up, s.running) {
        (true, true) => "up",
        (true, false) => "up, NO CARRIER",
        _ => "DOWN",
    };
    let up = format!("{state}{}", mark(s.up && s.running, "up".into()));
    let mtu = format!(
        "mtu {}{}",
        s.mtu,
        mark(s.mtu == link.mtu, link.mtu.to_string())
    );
    let want_rate = link
        .rate_bps
        .map_or("unshaped".to_string(), format_bit_rate);
    let rate = match (s.rate_bps, s.burst_bytes, s.limit_bytes) {
        (Some(r), Some(b), Some(l)) => format!(
            "tbf {} burst {} limit {}",
            format_bit_rate(r),
            format_size(b),
            format_size(l)
        ),
        (Some(r), _, _) if s.qdisc == "htb" => format!("htb {}", format_bit_rate(r)),
        _ if ["", "noqueue", "netem", "fq"].contains(&s.qdisc.as_str()) => "unshaped".to_string(),
        _ => format!("qdisc {}", s.qdisc),
    };
    let rate = format!("{rate}{}", mark(s.rate_bps == link.rate_bps, want_rate));
    let has_classes = s.qdisc == "htb" && s.classes.len() > htb::leaf_ids().count();
    let rate = match (link.priority_classes, has_classes) {
        (true, true) => format!("{rate} [{}]", class_counts(&s.classes)),
        (want, has) => {
            let configured = if want { "with" } else { "without" };
            let note = mark(want == has, format!("{configured} priority classes"));
            format!("{rate}{note}")
        }
    };
    let addrs: Vec<String> = s.addresses.iter().map(ToString::to_string).collect();
    let want_addrs: Vec<String> = end.addresses.iter().map(ToString::to_string).collect();
    let same_addrs = s.addresses.len() == end.addresses.len()
        && end.addresses.iter().all(|a| s.addresses.contains(a));
    let addrs = format!(
        "{}{}",
        addrs.join(" "),
        mark(same_addrs, want_addrs.join(" "))
    );
    let offloads = match s.offloads {
        Some(o) => format!("{o}{}", mark(o == link.offloads, link.offloads.to_string())),
        None => format!(
            "offloads unreadable{}",
            mark(false, link.offloads.to_string())
        ),
    };
    // Shown when set or off the kernel's default, so labs without it read as before.
    let napi = match &s.napi {
        Some(n) if n.napi != link.napi || link.napi != crate::napi::Napi::default() => format!(
            ", napi defer {} flush {} ns{}, coalescing {}",
            n.napi.defer_hard_irqs,
            n.napi.gro_flush_timeout_ns,
            mark(
                n.napi == link.napi,
                format!(
                    "defer {} flush {} ns",
                    link.napi.defer_hard_irqs, link.napi.gro_flush_timeout_ns
                )
            ),
            n.coalesce
        ),
        Some(_) => String::new(),
        None if link.napi != crate::napi::Napi::default() => {
            format!(", napi unreadable{}", mark(false, "napi settings".into()))
        }
        None => String::new(),
    };
    (
        format!("{name}: {up}, {mtu}, {rate}, {addrs}, {offloads}{napi}\n"),
        diffs,
    )
}

fn netem_text(delay: std::time::Duration, jitter: std::time::Duration, loss_pct: f64) -> String {
    let ms = |d: std::time::Duration| format!("{}ms", d.as_secs_f64() * 1000.0);
    let jitter = if jitter.is_zero() {
        String::new()
    } else {
        format!(" ± {}", ms(jitter))
    };
    format!("delay {}{jitter}, loss {loss_pct}%", ms(delay))
}

/// `, delay 10ms, loss 0%, fq, ipsec aes-gcm-128 transport` for the link line.
fn configured_properties(link: &crate::spec::Link) -> String {
    let mut out = String::new();
    let n = &link.netem;
    if n.active() {
        out.push_str(&format!(", {}", netem_text(n.delay, n.jitter, n.loss_pct)));
    }
    if link.qdisc == crate::spec::LinkQdisc::Fq {
        out.push_str(", fq");
        if let Some(r) = link.fq_maxrate_bps {
            out.push_str(&format!(" maxrate {}", format_bit_rate(r)));
        }
    }
    if link.ipsec != crate::spec::IpsecAlgorithm::Off {
        out.push_str(&format!(
            ", ipsec {} {}",
            link.ipsec.name(),
            link.ipsec_mode.name()
        ));
    }
    out
}

/// The end's qdisc chain, netem, fq and IPsec SAs as read back (a line
/// when any is present or configured) and its differences from the file.
fn property_line(s: &EndState, link: &crate::spec::Link, host_end: bool) -> (String, usize) {
    let want: Vec<&str> = link.qdisc_chain(host_end);
    let mut diffs = 0;
    let mut parts = Vec::new();
    if want.len() > 1 || s.qdiscs.len() > 1 || s.netem.is_some() || s.fq {
        let same = s.qdiscs.iter().map(String::as_str).eq(want.iter().copied());
        diffs += usize::from(!same);
        let note = if same {
            String::new()
        } else {
            format!(" (configured {})", want.join(" > "))
        };
        parts.push(format!("qdiscs {}{note}", s.qdiscs.join(" > ")));
    }
    if let Some(n) = &s.netem {
        let same = n.delay == link.netem.delay
            && n.jitter == link.netem.jitter
            && (n.loss_pct - link.netem.loss_pct).abs() < 1e-6;
        diffs += usize::from(!same);
        let note = if same { "" } else { " (differs from the file)" };
        parts.push(format!(
            "netem {}, limit {} pkts{note}",
            netem_text(n.delay, n.jitter, n.loss_pct),
            n.limit_packets
        ));
    }
    if s.fq {
        let cap = s.fq_maxrate_bps.map_or("none".to_string(), format_bit_rate);
        diffs += usize::from(s.fq_maxrate_bps != link.fq_maxrate_bps);
        parts.push(format!("fq maxrate {cap}"));
    }
    let want_sas = host_end && link.ipsec != crate::spec::IpsecAlgorithm::Off;
    if want_sas || !s.sas.is_empty() {
        diffs += usize::from(want_sas == s.sas.is_empty());
        let sas: Vec<String> = s
            .sas
            .iter()
            .map(|sa| {
                format!(
                    "{:#x} {} -> {} {} {} {} pkts",
                    sa.spi, sa.src, sa.dst, sa.algorithm, sa.mode, sa.packets
                )
            })
            .collect();
        let text = if sas.is_empty() {
            "none (configured)".to_string()
        } else {
            sas.join("; ")
        };
        parts.push(format!("ipsec SAs: {text}"));
    }
    if parts.is_empty() {
        return (String::new(), diffs);
    }
    (format!("    {}\n", parts.join(", ")), diffs)
}
