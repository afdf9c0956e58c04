//! A checked [`Lab`] → the kernel objects that realise it: namespaces, veth
//! pairs with their interface names and addresses, and routes. Pure, so the
//! naming and addressing rules are tested without root.
//!
//! Names: host `client` of lab `demo` is namespace `sb-demo-client`. Link 3
//! is the pair `demo-3a` (in a's namespace) ↔ `demo-3b` (in b's). A link
//! through router `r` is two pairs, `demo-3a` ↔ `demo-3ra` and `demo-3rb` ↔
//! `demo-3b`, the `r*` ends in the router's namespace, each with the router's
//! address in that side's subnet (the subnet's last-but-one address), and a
//! route on each host to the other's subnet through it.

use std::net::IpAddr;

use serde::Serialize;

use crate::spec::{IpNet, Lab, Link};

/// Everything `up` creates for a lab.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Layout {
    /// The lab's name.
    pub lab: String,
    /// Hosts first, then routers, in file order.
    pub namespaces: Vec<Namespace>,
    /// The veth pairs, by link.
    pub pairs: Vec<VethPair>,
}

/// One network namespace.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Namespace {
    /// `sb-<lab>-<member>`.
    pub name: String,
    /// The host or router it stands for.
    pub member: String,
    /// A router forwards IPv4 and IPv6 between its interfaces.
    pub router: bool,
    /// Routes to other subnets (hosts on routed links).
    pub routes: Vec<Route>,
}

/// A route to a subnet through a gateway on a device.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Route {
    pub dest: IpNet,
    pub gateway: IpAddr,
    pub dev: String,
}

/// A veth pair: the link it belongs to and its two ends.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VethPair {
    /// Index of the link in the lab file.
    pub link: usize,
    pub ends: [End; 2],
}

/// One end of a veth pair.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct End {
    /// Namespace it lives in.
    pub ns: String,
    /// Interface name (at most 15 bytes).
    pub ifname: String,
    /// Interface index asked of the kernel (see [`ifindex`]).
    pub ifindex: u32,
    /// Addresses on it.
    pub addresses: Vec<IpNet>,
}

/// The interface name of link `link`'s end `end` (`a`, `b`, `ra`, `rb`).
pub fn ifname(lab: &str, link: usize, end: &str) -> String {
    format!("{lab}-{link}{end}")
}

/// The interface index of link `link`'s end `end`: 100 + 4 × link + (0 for
/// `a`, 1 `b`, 2 `ra`, 3 `rb`), distinct across the lab. The kernel would
/// give both ends of a veth pair in fresh namespaces index 2; a device whose
/// index equals its peer's gets its carrier through the link watch's batch,
/// up to a second late (`linkwatch_urgent_event`), and sends nothing until
/// then. Distinct indexes make the carrier immediate.
pub fn ifindex(link: usize, end: &str) -> u32 {
    let slot = match end {
        "a" => 0,
        "b" => 1,
        "ra" => 2,
        _ => 3,
    };
    100 + 4 * link as u32 + slot
}

/// Whether `name` is one of lab `lab`'s interface names (for `down` to find
/// leftovers by name, never touching anyone else's interfaces).
pub fn is_lab_ifname(lab: &str, name: &str) -> bool {
    let Some(rest) = name.strip_prefix(&format!("{lab}-")) else {
        return false;
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0 && ["a", "b", "ra", "rb"].contains(&&rest[digits..])
}

/// Lays a checked lab out (the checks of the `check` module hold).
pub fn layout(lab: &Lab) -> Layout {
    let mut namespaces: Vec<Namespace> = lab
        .hosts
        .iter()
        .map(|h| (h.name.as_str(), false))
        .chain(lab.routers.iter().map(|r| (r.as_str(), true)))
        .map(|(member, router)| Namespace {
            name: lab.namespace(member),
            member: member.to_string(),
            router,
            routes: Vec::new(),
        })
        .collect();
    let mut pairs = Vec::new();
    for (i, link) in lab.links.iter().enumerate() {
        match &link.via {
            None => pairs.push(direct(lab, i, link)),
            Some(router) => pairs.extend(routed(lab, i, link, router, &mut namespaces)),
        }
    }
    let mut out = Layout {
        lab: lab.name.clone(),
        namespaces,
        pairs,
    };
    for (ns, route) in distributor_routes(lab, &out) {
        if let Some(n) = out.namespaces.iter_mut().find(|n| n.name == ns) {
            n.routes.push(route);
        }
    }
    out
}

fn host_end(lab: &Lab, link: usize, host: &str, end: &str) -> End {
    End {
        ns: lab.namespace(host),
        ifname: ifname(&lab.name, link, end),
        ifindex: ifindex(link, end),
        addresses: lab.link_addresses(link, host),
    }
}

fn direct(lab: &Lab, i: usize, link: &Link) -> VethPair {
    VethPair {
        link: i,
        ends: [
            host_end(lab, i, &link.a, "a"),
            host_end(lab, i, &link.b, "b"),
        ],
    }
}

fn routed(lab: &Lab, i: usize, link: &Link, router: &str, nss: &mut [Namespace]) -> [VethPair; 2] {
    let (a, b) = (
        host_end(lab, i, &link.a, "a"),
        host_end(lab, i, &link.b, "b"),
    );
    // The families both hosts have (checked: at least one).
    let families: Vec<(IpNet, IpNet)> = a
        .addresses
        .iter()
        .flat_map(|x| b.addresses.iter().map(move |y| (*x, *y)))
        .filter(|(x, y)| x.addr.is_ipv4() == y.addr.is_ipv4())
        .collect();
    let router_side = |pick: fn(&(IpNet, IpNet)) -> IpNet| -> Vec<IpNet> {
        families
            .iter()
            .filter_map(|f| pick(f).router_address())
            .collect()
    };
    let (ra_addrs, rb_addrs) = (router_side(|f| f.0), router_side(|f| f.1));
    for (x, y) in &families {
        let gw_a = x.router_address().expect("checked").addr;
        let gw_b = y.router_address().expect("checked").addr;
        add_route(nss, &link.a, y.network(), gw_a, &a.ifname);
        add_route(nss, &link.b, x.network(), gw_b, &b.ifname);
    }
    let router_ns = lab.namespace(router);
    let r = |end: &str, addresses| End {
        ns: router_ns.clone(),
        ifname: ifname(&lab.name, i, end),
        ifindex: ifindex(i, end),
        addresses,
    };
    [
        VethPair {
            link: i,
            ends: [a, r("ra", ra_addrs)],
        },
        VethPair {
            link: i,
            ends: [r("rb", rb_addrs), b],
        },
    ]
}

fn add_route(nss: &mut [Namespace], member: &str, dest: IpNet, gateway: IpAddr, dev: &str) {
    if let Some(ns) = nss.iter_mut().find(|n| n.member == member) {
        ns.routes.push(Route {
            dest,
            gateway,
            dev: dev.to_string(),
        });
    }
}

/// The host's addresses, from the layout's ends in its namespace.
pub(crate) fn host_addresses(layout: &Layout, lab: &Lab, host: &str) -> Vec<IpNet> {
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
pub(crate) fn vip_subnet(layout: &Layout, lab: &Lab, d: &crate::lb::Distributor) -> Option<IpNet> {
    host_addresses(layout, lab, &d.host)
        .into_iter()
        .find(|n| n.addr == d.address)
        .map(|n| n.network())
}

/// Target `target`'s way to the distributor: `(target's address, the
/// distributor's address on their link, target's interface)`, in the
/// virtual address's family; `None` without a direct link.
pub(crate) fn gateway(
    layout: &Layout,
    lab: &Lab,
    d: &crate::lb::Distributor,
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
fn distributor_routes(lab: &Lab, layout: &Layout) -> Vec<(String, Route)> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_lab;

    const ROUTED: &str = r#"
name = "mh"
[[host]]
name = "client"
address = ["10.77.1.1/24", "fd77:1::1/64"]
[[host]]
name = "server"
address = ["10.77.2.1/24", "fd77:2::1/64"]
[[router]]
name = "r1"
[[link]]
a = "client"
b = "server"
via = "r1"
"#;

    #[test]
    fn routed_link_is_two_pairs_with_routes_through_the_router() {
        let lab = parse_lab(ROUTED, "t.toml").unwrap();
        let l = layout(&lab);
        let names: Vec<_> = l.namespaces.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["sb-mh-client", "sb-mh-server", "sb-mh-r1"]);
        assert!(l.namespaces[2].router);
        assert_eq!(l.pairs.len(), 2);
        let ends: Vec<_> = l
            .pairs
            .iter()
            .flat_map(|p| p.ends.iter().map(|e| (e.ns.as_str(), e.ifname.as_str())))
            .collect();
        assert_eq!(
            ends,
            [
                ("sb-mh-client", "mh-0a"),
                ("sb-mh-r1", "mh-0ra"),
                ("sb-mh-r1", "mh-0rb"),
                ("sb-mh-server", "mh-0b")
            ]
        );
        let indexes: Vec<u32> = l
            .pairs
            .iter()
            .flat_map(|p| p.ends.iter().map(|e| e.ifindex))
            .collect();
        assert_eq!(
            indexes,
            [100, 102, 103, 101],
            "distinct, so carriers are immediate"
        );
        let ra: Vec<String> = l.pairs[0].ends[1]
            .addresses
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(ra, ["10.77.1.254/24", "fd77:1::ffff:ffff:ffff:fffe/64"]);
        let routes: Vec<String> = l.namespaces[0]
            .routes
            .iter()
            .map(|r| format!("{} via {} dev {}", r.dest, r.gateway, r.dev))
            .collect();
        assert_eq!(
            routes,
            [
                "10.77.2.0/24 via 10.77.1.254 dev mh-0a",
                "fd77:2::/64 via fd77:1::ffff:ffff:ffff:fffe dev mh-0a"
            ]
        );
    }

    #[test]
    fn lab_interface_names_are_recognised_exactly() {
        for yes in ["mh-0a", "mh-12b", "mh-3ra", "mh-99rb"] {
            assert!(is_lab_ifname("mh", yes), "{yes}");
        }
        for no in ["mh-a", "mh-0c", "mh-0ab", "mhx-0a", "eth0", "mh-0a1"] {
            assert!(!is_lab_ifname("mh", no), "{no}");
        }
        assert!(ifname("demoabcd", 99, "ra").len() <= 15);
    }
}
