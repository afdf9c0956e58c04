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
use crate::layout::{layout, End, Layout};
use crate::parse::cpus_text;
use crate::spec::{IpNet, Lab, Offloads};
use crate::up::nl_error;
use crate::{ethtool, netns, qdisc, rtnl};

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
    pub addresses: Vec<IpNet>,
    /// Root qdisc kind (`tbf`, `noqueue`), empty when none is reported.
    pub qdisc: String,
    /// The tbf's rate, bucket and queue, when the root qdisc is a tbf.
    pub rate_bps: Option<u64>,
    pub burst_bytes: Option<u64>,
    pub limit_bytes: Option<u64>,
    pub offloads: Option<Offloads>,
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
        addresses: Vec::new(),
        qdisc: String::new(),
        rate_bps: None,
        burst_bytes: None,
        limit_bytes: None,
        offloads: None,
    }
}

/// Reads one namespace (on a thread inside it).
fn read_namespace(name: &str, ends: &[(usize, &End)]) -> Result<(NsState, Vec<EndState>)> {
    let mut nl = crate::up::netlink()?;
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
    let mut states = Vec::new();
    for &(link, end) in ends {
        let Some(info) = links.iter().find(|l| l.name == end.ifname) else {
            states.push(absent(link, end));
            continue;
        };
        let root = qdisc::root(&mut nl, info.index)
            .map_err(|e| nl_error(format!("{name}/{}: read qdisc", end.ifname), e))?;
        let tbf = root.as_ref().and_then(|q| q.tbf);
        states.push(EndState {
            link,
            ns: end.ns.clone(),
            ifname: end.ifname.clone(),
            present: true,
            up: info.up,
            running: info.running,
            mtu: info.mtu,
            addresses: rtnl::addresses(&mut nl, info.index)
                .map_err(|e| nl_error(format!("{name}/{}: read addresses", end.ifname), e))?,
            qdisc: root.map(|q| q.kind).unwrap_or_default(),
            rate_bps: tbf.map(|t| t.rate_bps),
            burst_bytes: tbf.map(|t| t.burst_bytes),
            limit_bytes: tbf.map(|t| t.limit_bytes),
            offloads: ethtool::get(&end.ifname).ok(),
        });
    }
    let state = NsState {
        name: name.to_string(),
        present: true,
        forwarding,
        routes,
    };
    Ok((state, states))
}

/// Renders the lab and its readback as text, one line per namespace, link,
/// interface and route, then the count of differences.
pub fn render(lab: &Lab, back: &Readback) -> String {
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
        out.push_str(&format!(
            "link {i}: {} <-> {}{via}: rate {rate}, mtu {}, offloads {}\n",
            link.a, link.b, link.mtu, link.offloads
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
        }
    }
    diffs += route_lines(&plan, back, &mut out);
    out.push_str(&match diffs {
        0 => "state: as configured\n".to_string(),
        n => format!(
            "state: {n} differences from the lab file (run `stackbench lab up` to apply it)\n"
        ),
    });
    out
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
        _ if s.qdisc.is_empty() || s.qdisc == "noqueue" => "unshaped".to_string(),
        _ => format!("qdisc {}", s.qdisc),
    };
    let rate = format!("{rate}{}", mark(s.rate_bps == link.rate_bps, want_rate));
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
    (
        format!("{name}: {up}, {mtu}, {rate}, {addrs}, {offloads}\n"),
        diffs,
    )
}
