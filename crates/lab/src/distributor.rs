//! A lab file's `[[distributor]]`: load distribution (the analogue of z/OS's
//! Sysplex Distributor) on a host of the lab — an IPVS virtual service on
//! one of the host's addresses that spreads TCP connections over target
//! hosts, each on a direct link with it. `lab up` programs it ([`apply`],
//! over [`crate::ipvs`]), `lab show` prints IPVS's counters per target
//! ([`show_lines`]), and `lab down` removes it with the host's namespace.
//!
//! ```toml
//! [[distributor]]
//! host = "dist"              # a [[host]] of the lab
//! address = "10.80.1.254"    # the virtual address: one of the host's
//! port = 8080
//! targets = ["t1", "t2"]     # hosts on direct links with it
//! scheduler = "rr"           # rr, wrr, lc or wlc
//! forwarding = "nat"         # nat (dr: see below)
//! weights = [1, 2]           # optional, one per target (wrr, wlc)
//! ```
//!
//! # Design note
//!
//! - **Routes back.** A target answers the client through the distributor,
//!   so each target gets a route to the virtual address's subnet through
//!   the distributor's address on its link ([`routes`], added to the layout
//!   so `lab show` expects it), and the distributor forwards (IPVS's NAT
//!   rewrites replies on the forward path).
//! - **NAT** rewrites the destination to the target's address on its link;
//!   the reply comes back through the distributor, which rewrites its
//!   source back to the virtual address.
//! - **Direct routing is refused** for now, in one line: it keeps the
//!   virtual address in the packet, and the target replies from it; in a
//!   lab every host has one way out, back through the distributor, which
//!   drops a packet whose source is its own address (a martian). It needs
//!   a return path that bypasses the distributor, which lab links do not
//!   give yet. The encoding is there ([`crate::ipvs::Forwarding::Dr`]).
//! - **Counters** are IPVS's own per destination: connections scheduled,
//!   packets and bytes each way, and connections active and inactive now.

use std::net::IpAddr;

use crate::error::{LabError, Result};
use crate::ipvs::{self, Destination, DestinationCounts, Forwarding, Ipvs, Scheduler, Service};
use crate::layout::{Layout, Route};
use crate::netns;
use crate::parse::{sorted, string, unknown, Value};
use crate::source::{Source, Spans};
use crate::spec::{IpNet, Lab, MAX_HOST_NAME};

const KEYS: &str = "host, address, port, targets, scheduler, forwarding, weights";

/// One `[[distributor]]` entry.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Distributor {
    /// The host it runs on.
    pub host: String,
    /// The virtual address: one of the host's addresses.
    pub address: IpAddr,
    pub port: u16,
    /// Hosts behind it, each on a direct link with it.
    pub targets: Vec<String>,
    pub scheduler: Scheduler,
    pub forwarding: Forwarding,
    /// One weight per target (1 each when the file gives none).
    pub weights: Vec<u32>,
}

impl Distributor {
    /// The IPVS service.
    pub fn service(&self) -> Service {
        Service {
            address: self.address,
            port: self.port,
            scheduler: self.scheduler,
        }
    }
}

fn integer(
    src: &Source,
    key: &str,
    v: &Value,
    range: std::ops::RangeInclusive<u32>,
) -> Result<u32> {
    v.get_ref()
        .as_integer()
        .and_then(|i| i.as_str().parse::<u32>().ok())
        .filter(|n| range.contains(n))
        .ok_or_else(|| {
            src.at(
                v.span().start,
                format!(
                    "{key}: use a whole number from {} to {}",
                    range.start(),
                    range.end()
                ),
            )
        })
}

/// Parses one `[[distributor]]` table (checks across entries: [`check`]).
pub(crate) fn parse(src: &Source, v: &Value) -> Result<Distributor> {
    let table = v.get_ref().as_table().expect("checked by table_items");
    let mut out = Distributor {
        host: String::new(),
        address: IpAddr::from([0, 0, 0, 0]),
        port: 0,
        targets: Vec::new(),
        scheduler: Scheduler::Wlc,
        forwarding: Forwarding::Nat,
        weights: Vec::new(),
    };
    let (mut address, mut weights_at) = (false, None);
    for (key, value) in sorted(table) {
        let at = |m: String| src.at(value.span().start, m);
        match key.get_ref().as_ref() {
            "host" => out.host = string(src, "host", value)?,
            "address" => {
                let text = string(src, "address", value)?;
                out.address = text.parse().map_err(|_| {
                    at(format!(
                        "address '{text}': write the virtual address alone, e.g. \"10.80.1.254\""
                    ))
                })?;
                address = true;
            }
            "port" => out.port = integer(src, "port", value, 1..=65_535)? as u16,
            "targets" => {
                let items = value.get_ref().as_array().ok_or_else(|| {
                    at("targets: write a list of hosts, e.g. targets = [\"t1\", \"t2\"]".into())
                })?;
                for item in items.iter() {
                    let name = string(src, "each target", item)?;
                    if name.len() > MAX_HOST_NAME || out.targets.contains(&name) {
                        return Err(src.at(
                            item.span().start,
                            format!("target '{name}' is listed twice: list each host once"),
                        ));
                    }
                    out.targets.push(name);
                }
            }
            "scheduler" => {
                out.scheduler = Scheduler::parse(&string(src, "scheduler", value)?).map_err(at)?
            }
            "forwarding" => {
                out.forwarding =
                    Forwarding::parse(&string(src, "forwarding", value)?).map_err(at)?
            }
            "weights" => {
                let items = value.get_ref().as_array().ok_or_else(|| {
                    at("weights: write one per target, e.g. weights = [1, 2]".into())
                })?;
                for item in items.iter() {
                    out.weights
                        .push(integer(src, "each weight", item, 1..=65_535)?);
                }
                weights_at = Some(value.span().start);
            }
            _ => return Err(unknown(src, key, "[[distributor]]", KEYS)),
        }
    }
    let missing = |what: &str| {
        src.at(
            v.span().start,
            format!("[[distributor]] without {what}: see docs/lab.md, \"Load distribution\""),
        )
    };
    if out.host.is_empty() {
        return Err(missing("a host (host = \"dist\")"));
    }
    if !address {
        return Err(missing("a virtual address (address = one of the host's)"));
    }
    if out.port == 0 {
        return Err(missing("a port (port = 8080)"));
    }
    if out.targets.is_empty() {
        return Err(missing("targets (targets = [\"t1\", \"t2\"])"));
    }
    match weights_at {
        Some(at) if out.weights.len() != out.targets.len() => {
            return Err(src.at(
                at,
                format!(
                    "weights: {} given for {} targets: give one per target",
                    out.weights.len(),
                    out.targets.len()
                ),
            ))
        }
        Some(_) => {}
        None => out.weights = vec![1; out.targets.len()],
    }
    Ok(out)
}

/// Checks each distributor against the lab: its host exists, its targets
/// are other hosts on direct links with it, its address is one of the
/// host's, and its forwarding is one a lab can carry.
pub(crate) fn check(src: &Source, lab: &Lab, spans: &Spans) -> Result<()> {
    if lab.distributors.is_empty() {
        return Ok(());
    }
    let layout = crate::layout::layout(lab);
    for (d, &at) in lab.distributors.iter().zip(&spans.distributors) {
        let err = |m: String| src.at(at, format!("[[distributor]] on {}: {m}", d.host));
        let hosts: Vec<&str> = lab.hosts.iter().map(|h| h.name.as_str()).collect();
        if lab.host(&d.host).is_none() {
            return Err(err(format!(
                "'{}' is not a host of this lab: use one of {}",
                d.host,
                hosts.join(", ")
            )));
        }
        if d.forwarding == Forwarding::Dr {
            return Err(err(format!(
                "forwarding dr: the targets would reply from the virtual address back through {}, which drops packets from its own address; direct routing needs a return path that bypasses the distributor, which lab links do not give: use forwarding = \"nat\"",
                d.host
            )));
        }
        for t in &d.targets {
            if lab.host(t).is_none() || *t == d.host {
                return Err(err(format!(
                    "target '{t}' is not another host of this lab ({} hosts: {}): list only those",
                    hosts.len(),
                    hosts.join(", ")
                )));
            }
            if gateway(&layout, lab, d, t).is_none() {
                return Err(err(format!(
                    "target '{t}' has no direct link with {} in the address family of {}: add a [[link]] with a = \"{}\" and b = \"{t}\"",
                    d.host, d.address, d.host
                )));
            }
        }
        if vip_subnet(&layout, lab, d).is_none() {
            let mine: Vec<String> = host_addresses(&layout, lab, &d.host)
                .iter()
                .map(|n| n.addr.to_string())
                .collect();
            return Err(err(format!(
                "address {} is not one of the host's ({}): use one of them",
                d.address,
                mine.join(", ")
            )));
        }
        let twice = lab
            .distributors
            .iter()
            .filter(|o| o.host == d.host && o.address == d.address && o.port == d.port)
            .count();
        if twice > 1 {
            return Err(err(format!(
                "{} is given twice: one [[distributor]] per address and port",
                std::net::SocketAddr::new(d.address, d.port)
            )));
        }
    }
    Ok(())
}

/// The host's addresses, from the layout's ends in its namespace.
fn host_addresses(layout: &Layout, lab: &Lab, host: &str) -> Vec<IpNet> {
    let ns = lab.namespace(host);
    layout
        .pairs
        .iter()
        .flat_map(|p| p.ends.iter())
        .filter(|e| e.ns == ns)
        .flat_map(|e| e.addresses.iter().copied())
        .collect()
}

/// The subnet the virtual address is in (one of the host's).
fn vip_subnet(layout: &Layout, lab: &Lab, d: &Distributor) -> Option<IpNet> {
    host_addresses(layout, lab, &d.host)
        .into_iter()
        .find(|n| n.addr == d.address)
        .map(|n| n.network())
}

/// Target `target`'s way to the distributor: `(target's address, the
/// distributor's address on their link, target's interface)`, in the
/// virtual address's family; `None` without a direct link.
fn gateway(
    layout: &Layout,
    lab: &Lab,
    d: &Distributor,
    target: &str,
) -> Option<(IpAddr, IpAddr, String)> {
    let (dist_ns, target_ns) = (lab.namespace(&d.host), lab.namespace(target));
    layout.pairs.iter().find_map(|p| {
        let mine = p.ends.iter().find(|e| e.ns == target_ns)?;
        let theirs = p.ends.iter().find(|e| e.ns == dist_ns)?;
        let same = |a: &&IpNet| a.addr.is_ipv4() == d.address.is_ipv4();
        let own = mine.addresses.iter().find(same)?;
        let gw = theirs.addresses.iter().find(same)?;
        Some((own.addr, gw.addr, mine.ifname.clone()))
    })
}

/// The routes each target needs to answer through the router: to the
/// virtual address's subnet, unless its own link already gives it one.
pub(crate) fn routes(lab: &Lab, layout: &Layout) -> Vec<(String, Route)> {
    let mut out = Vec::new();
    for d in &lab.distributors {
        let Some(dest) = vip_subnet(layout, lab, d) else {
            continue;
        };
        for t in &d.targets {
            let Some((_, gw, dev)) = gateway(layout, lab, d, t) else {
                continue;
            };
            let ns = lab.namespace(t);
            let on_it = lab
                .host(t)
                .is_some_and(|h| h.addresses.iter().any(|a| a.network() == dest));
            let has = on_it
                || layout
                    .namespaces
                    .iter()
                    .any(|n| n.name == ns && n.routes.iter().any(|r| r.dest == dest))
                || out
                    .iter()
                    .any(|(n, r): &(String, Route)| *n == ns && r.dest == dest);
            if !has {
                out.push((
                    ns,
                    Route {
                        dest,
                        gateway: gw,
                        dev,
                    },
                ));
            }
        }
    }
    out
}

/// Programs every distributor of `lab` (after the namespaces, links and
/// routes are up): the distributor forwards, and its IPVS service is
/// replaced, so counters start at 0.
/// Nothing to do, and no IPVS needed, without distributors.
pub fn apply(lab: &Lab) -> Result<()> {
    let layout = crate::layout::layout(lab);
    for d in &lab.distributors {
        let service = d.service();
        let mut dests = Vec::new();
        for (t, weight) in d.targets.iter().zip(&d.weights) {
            // The target's own address on its link, in both methods:
            // direct routing reaches it by that address's neighbour and
            // keeps the virtual address in the packet.
            let (own, _, _) = gateway(&layout, lab, d, t).expect("checked when parsed");
            dests.push(Destination {
                address: own,
                port: d.port,
                forwarding: d.forwarding,
                weight: *weight,
            });
        }
        let ns = lab.namespace(&d.host);
        netns::run_in(&ns, || {
            // NAT's replies are rewritten on the forward path.
            let sysctl = if d.address.is_ipv4() {
                "/proc/sys/net/ipv4/ip_forward"
            } else {
                "/proc/sys/net/ipv6/conf/all/forwarding"
            };
            std::fs::write(sysctl, "1")
                .map_err(|e| LabError::os(format!("{ns}: write {sysctl}"), e))?;
            let mut ipvs = open(&ns)?;
            ipvs.delete_service(&service)?;
            ipvs.add_service(&service)?;
            for dest in &dests {
                ipvs.add_destination(&service, dest)?;
            }
            Ok(())
        })?;
    }
    Ok(())
}

/// IPVS in the calling thread's namespace, or the one-line refusal.
fn open(ns: &str) -> Result<Ipvs> {
    Ipvs::open()?.ok_or_else(|| LabError::KernelFeature {
        action: format!("{ns}: load distribution (IPVS)"),
        feature: "IPVS".into(),
        config: "CONFIG_IP_VS".into(),
    })
}

/// Refuses a lab with distributors on a kernel without IPVS (before `up`
/// builds anything).
pub fn probe(lab: &Lab) -> Result<()> {
    if lab.distributors.is_empty() {
        return Ok(());
    }
    ipvs::check()
}

/// Each target's name with IPVS's counters for it.
pub type TargetCounts = Vec<(String, DestinationCounts)>;

/// Each distributor's targets with IPVS's counters, read in the router's
/// namespace; `None` for a distributor whose service is not there.
pub fn read(lab: &Lab) -> Result<Vec<(Distributor, Option<TargetCounts>)>> {
    let layout = crate::layout::layout(lab);
    let mut out = Vec::new();
    for d in &lab.distributors {
        let ns = lab.namespace(&d.host);
        if !netns::exists(&ns) {
            out.push((d.clone(), None));
            continue;
        }
        let counts = netns::run_in(&ns, || match Ipvs::open()? {
            Some(mut ipvs) => ipvs.destinations(&d.service()),
            None => Ok(None),
        })?;
        let named = counts.map(|list| {
            d.targets
                .iter()
                .map(|t| {
                    let own = gateway(&layout, lab, d, t).map(|g| g.0);
                    let c = list
                        .iter()
                        .find(|c| c.address == own)
                        .cloned()
                        .unwrap_or_default();
                    (t.clone(), c)
                })
                .collect()
        });
        out.push((d.clone(), named));
    }
    Ok(out)
}

/// One line per distributor for `lab show`: the service and, per target,
/// the connections IPVS scheduled to it, those it holds now (active, and
/// inactive: closing or in TIME_WAIT, kept 2 minutes), and its packets in.
/// The totals are IPVS's estimator's, summed from per-CPU counters every
/// 2 s, so a read right after the traffic may lag; the held connections
/// are counted as they change.
pub fn show_lines(lab: &Lab) -> Result<String> {
    let mut out = String::new();
    for (d, counts) in read(lab)? {
        let head = format!(
            "distributor on {}: {} {} {}",
            d.host,
            std::net::SocketAddr::new(d.address, d.port),
            d.scheduler.name(),
            d.forwarding.name()
        );
        match counts {
            None => out.push_str(&format!("{head}: no IPVS service\n")),
            Some(list) => {
                let parts: Vec<String> = list
                    .iter()
                    .map(|(t, c)| {
                        format!(
                            "{t} {} connections ({} active, {} inactive), {} packets in",
                            c.connections, c.active, c.inactive, c.packets_in
                        )
                    })
                    .collect();
                out.push_str(&format!("{head}: {}\n", parts.join("; ")));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use crate::parse_lab;

    pub(crate) const LAB: &str = r#"
name = "dist"
[[host]]
name = "client"
address = "10.80.1.1/24"
[[host]]
name = "lb"
address = ["10.80.1.254/24", "10.80.2.254/24", "10.80.3.254/24"]
[[host]]
name = "t1"
address = "10.80.2.1/24"
[[host]]
name = "t2"
address = "10.80.3.1/24"
[[link]]
a = "client"
b = "lb"
[[link]]
a = "lb"
b = "t1"
[[link]]
a = "lb"
b = "t2"
"#;

    fn with(entry: &str) -> Result<crate::Lab, String> {
        parse_lab(&format!("{LAB}[[distributor]]\n{entry}"), "d.toml").map_err(|e| e.to_string())
    }

    const GOOD: &str = "host = \"lb\"\naddress = \"10.80.1.254\"\nport = 8080\ntargets = [\"t1\", \"t2\"]\nscheduler = \"rr\"\n";

    #[test]
    fn a_distributor_parses_and_routes_its_targets_back_through_it() {
        let lab = with(GOOD).unwrap();
        let d = &lab.distributors[0];
        assert_eq!(d.targets, ["t1", "t2"]);
        assert_eq!(d.weights, [1, 1]);
        assert_eq!(d.forwarding, crate::ipvs::Forwarding::Nat);
        let layout = crate::layout::layout(&lab);
        for (t, gw) in [("t1", "10.80.2.254"), ("t2", "10.80.3.254")] {
            let ns = layout.namespaces.iter().find(|n| n.member == t).unwrap();
            assert_eq!(ns.routes.len(), 1, "{t}: {:?}", ns.routes);
            assert_eq!(ns.routes[0].dest.to_string(), "10.80.1.0/24");
            assert_eq!(ns.routes[0].gateway.to_string(), gw);
        }
        let client = layout
            .namespaces
            .iter()
            .find(|n| n.member == "client")
            .unwrap();
        assert!(client.routes.is_empty(), "the VIP is on the client's link");
        // Without the distributor, no target route at all.
        let plain = parse_lab(LAB, "d.toml").unwrap();
        let layout = crate::layout::layout(&plain);
        assert!(layout.namespaces.iter().all(|n| n.routes.is_empty()));
    }

    #[test]
    fn bad_distributors_are_one_line_naming_the_fix() {
        let cases = [
            (
                GOOD.replace("\"rr\"", "\"sh\""),
                "unknown IPVS scheduler 'sh'",
            ),
            (
                GOOD.replace("\"rr\"", "\"rr\"\nforwarding = \"tun\""),
                "use nat or dr",
            ),
            (
                GOOD.replace("\"rr\"", "\"rr\"\nforwarding = \"dr\""),
                "use forwarding = \"nat\"",
            ),
            (
                GOOD.replace("\"t2\"]", "\"t2\", \"t3\"]"),
                "target 't3' is not another host of this lab (4 hosts",
            ),
            (
                GOOD.replace("\"t1\", \"t2\"", "\"t1\", \"lb\""),
                "target 'lb' is not another host",
            ),
            (
                GOOD.replace("\"lb\"", "\"client\"")
                    .replace("10.80.1.254", "10.80.1.1")
                    .replace("\"t1\", \"t2\"", "\"t1\""),
                "target 't1' has no direct link with client",
            ),
            (
                GOOD.replace("host = \"lb\"", "host = \"r9\""),
                "'r9' is not a host",
            ),
            (
                GOOD.replace("10.80.1.254", "10.80.1.9"),
                "is not one of the host's",
            ),
            (
                GOOD.replace("8080", "0"),
                "port: use a whole number from 1 to 65535",
            ),
            (
                format!("{GOOD}weights = [1]\n"),
                "weights: 1 given for 2 targets",
            ),
            (
                format!("{GOOD}ttl = 3\n"),
                "unknown key 'ttl' in [[distributor]]",
            ),
        ];
        for (entry, want) in cases {
            let e = with(&entry).unwrap_err();
            assert!(e.contains(want), "{entry}: want {want}: {e}");
            assert_eq!(e.lines().count(), 1, "{e}");
        }
    }
}
