//! Checks across a lab file's entries, so `up` never builds a lab whose
//! hosts cannot reach each other: names unique, links between known hosts,
//! each host on one link (one NIC per LPAR; more hosts meet through a
//! router) — or, for a host that several hosts reach directly (a server
//! facing its driver hosts), one NIC per link, each link in a subnet of its
//! own — a direct link's ends in one subnet and a routed link's ends in
//! two, a router with room for its own address in each subnet it joins.

use std::collections::HashMap;

use crate::error::Result;
use crate::source::{Source, Spans};
use crate::spec::{Host, IpNet, IpsecAlgorithm, Lab, Link, IPV6_MIN_MTU};

/// Checks the whole lab; errors point at the host or link entry concerned.
pub(crate) fn topology(src: &Source, lab: &Lab, spans: &Spans) -> Result<()> {
    names(src, lab, spans)?;
    // Each host's subnets so far, with the link each is on.
    let mut on_link: HashMap<&str, Vec<(usize, IpNet)>> = HashMap::new();
    let mut router_subnets: Vec<(&str, IpNet)> = Vec::new();
    for (i, link) in lab.links.iter().enumerate() {
        let at = |m: String| {
            src.at(
                spans.links[i],
                format!("link {i} ({} <-> {}): {m}", link.a, link.b),
            )
        };
        let (a, b) = ends(lab, link).map_err(at)?;
        for host in [a, b] {
            several_links(lab, i, host, on_link.entry(&host.name).or_default()).map_err(at)?;
        }
        mtu_fits(link, a, b).map_err(at)?;
        match &link.via {
            None => same_subnets(lab, i, a, b).map_err(at)?,
            Some(router) => {
                for net in routed_subnets(lab, a, b).map_err(at)? {
                    if router_subnets
                        .iter()
                        .any(|(r, n)| r == router && n.same_subnet(&net))
                    {
                        return Err(at(format!(
                            "router '{router}' already has an interface in {}: give this link's hosts other subnets",
                            net.network()
                        )));
                    }
                    router_subnets.push((router, net));
                }
            }
        }
    }
    Ok(())
}

/// Host and router names unique together; addresses unique.
fn names(src: &Source, lab: &Lab, spans: &Spans) -> Result<()> {
    let members = lab
        .hosts
        .iter()
        .map(|h| h.name.as_str())
        .zip(&spans.hosts)
        .chain(lab.routers.iter().map(String::as_str).zip(&spans.routers));
    let mut seen: Vec<&str> = Vec::new();
    for (name, &at) in members {
        if seen.contains(&name) {
            return Err(src.at(
                at,
                format!("duplicate name '{name}': give each host and router its own name"),
            ));
        }
        seen.push(name);
    }
    let mut addresses: Vec<(&str, IpNet)> = Vec::new();
    for (host, &at) in lab.hosts.iter().zip(&spans.hosts) {
        for net in &host.addresses {
            if let Some((other, _)) = addresses.iter().find(|(_, n)| n.addr == net.addr) {
                return Err(src.at(
                    at,
                    format!(
                        "host '{}': address {} is taken by host '{other}': give each host its own",
                        host.name, net.addr
                    ),
                ));
            }
            addresses.push((&host.name, *net));
        }
    }
    // A macvlan is a virtual host: its address is its own too, and in the
    // subnet of its host's address of that family (it shares the link).
    for (host, &at) in lab.hosts.iter().zip(&spans.hosts) {
        for net in &host.macvlans {
            if let Some((other, _)) = addresses.iter().find(|(_, n)| n.addr == net.addr) {
                return Err(src.at(
                    at,
                    format!(
                        "host '{}': macvlan address {} is taken by host '{other}': give each its own",
                        host.name, net.addr
                    ),
                ));
            }
            if !host.addresses.iter().any(|a| a.same_subnet(net)) {
                return Err(src.at(
                    at,
                    format!(
                        "host '{}': macvlan address {net} is outside the host's subnets: use an address of its link's subnet",
                        host.name
                    ),
                ));
            }
            addresses.push((&host.name, *net));
        }
    }
    Ok(())
}

/// The link's two hosts, and its router known.
fn ends<'a>(lab: &'a Lab, link: &Link) -> Result<(&'a Host, &'a Host), String> {
    let known = || {
        lab.hosts
            .iter()
            .map(|h| h.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let find = |name: &str| {
        lab.host(name)
            .ok_or_else(|| format!("unknown host '{name}': use one of {}", known()))
    };
    let (a, b) = (find(&link.a)?, find(&link.b)?);
    if a.name == b.name {
        return Err("a link joins two different hosts".to_string());
    }
    if let Some(router) = &link.via {
        if !lab.routers.contains(router) {
            return Err(format!(
                "unknown router '{router}': declare it with [[router]] name = \"{router}\""
            ));
        }
    }
    Ok((a, b))
}

fn mtu_fits(link: &Link, a: &Host, b: &Host) -> Result<(), String> {
    let v6 = a
        .addresses
        .iter()
        .chain(&b.addresses)
        .any(|n| n.addr.is_ipv6());
    if v6 && link.mtu < IPV6_MIN_MTU {
        return Err(format!(
            "mtu {} is below IPv6's minimum {IPV6_MIN_MTU}: raise it or drop the IPv6 addresses",
            link.mtu
        ));
    }
    Ok(())
}

/// The address pairs (a's, b's) of the families both hosts have; at least one.
fn common<'a>(a: &'a Host, b: &'a Host) -> Result<Vec<(&'a IpNet, &'a IpNet)>, String> {
    let pairs: Vec<_> = a
        .addresses
        .iter()
        .flat_map(|x| b.addresses.iter().map(move |y| (x, y)))
        .filter(|(x, y)| x.addr.is_ipv4() == y.addr.is_ipv4())
        .collect();
    if pairs.is_empty() {
        return Err(format!(
            "hosts '{}' and '{}' share no address family: give both an IPv4 or both an IPv6 address",
            a.name, b.name
        ));
    }
    Ok(pairs)
}

/// A host on link `i` after the links in `seen`: alone, or on several
/// direct links (no IPsec: a link's SAs replace its hosts' others), each in
/// subnets no other of its links has — two interfaces in one subnet would
/// make the replies leave by whichever route comes first.
fn several_links(
    lab: &Lab,
    i: usize,
    host: &Host,
    seen: &mut Vec<(usize, IpNet)>,
) -> Result<(), String> {
    let mine = lab.link_addresses(i, &host.name);
    let link = &lab.links[i];
    let links = lab.links_of(&host.name);
    if links > 1 && (link.via.is_some() || link.ipsec != IpsecAlgorithm::Off) {
        let what = if link.via.is_some() { "via" } else { "ipsec" };
        return Err(format!(
            "host '{}' is on {links} links, and a host on several links reaches each directly \
             without IPsec: drop {what} here, or give each host one link (one NIC per LPAR) \
             and join more hosts through a [[router]] with via",
            host.name
        ));
    }
    for net in &mine {
        if let Some((first, _)) = seen.iter().find(|(_, n)| n.same_subnet(net)) {
            return Err(format!(
                "host '{}' is already on link {first} in {}: give each of its links its own \
                 subnet (one address per family and link), or give each host one link \
                 (one NIC per LPAR) and join more hosts through a [[router]] with via",
                host.name,
                net.network()
            ));
        }
    }
    seen.extend(mine.into_iter().map(|n| (i, n)));
    Ok(())
}

/// A direct link: both ends in one subnet per family (for a host on
/// several links, its addresses facing this one's other end).
fn same_subnets(lab: &Lab, i: usize, a: &Host, b: &Host) -> Result<(), String> {
    let multi = |h: &Host| lab.links_of(&h.name) > 1;
    let on_link = |h: &Host| Host {
        addresses: lab.link_addresses(i, &h.name),
        ..h.clone()
    };
    if let Some((h, peer)) = [(a, b), (b, a)]
        .into_iter()
        .find(|(h, _)| multi(h) && lab.link_addresses(i, &h.name).is_empty())
    {
        return Err(format!(
            "host '{}' is on several links and has no address in a subnet of host '{}': give it one address per link, in the subnet of that link's other end",
            h.name, peer.name
        ));
    }
    let (a, b) = (on_link(a), on_link(b));
    for (x, y) in common(&a, &b)? {
        if !x.same_subnet(y) {
            return Err(format!(
                "{x} and {y} are in different subnets: put both hosts in one subnet, or route the link through a [[router]] with via"
            ));
        }
    }
    Ok(())
}

/// A routed link: each end in its own subnet with room for the router's
/// address; returns the subnets (the router's interfaces) it joins.
fn routed_subnets(lab: &Lab, a: &Host, b: &Host) -> Result<Vec<IpNet>, String> {
    let mut nets = Vec::new();
    for (x, y) in common(a, b)? {
        if x.same_subnet(y) {
            return Err(format!(
                "{x} and {y} are in one subnet, but the link goes through a router: give each host its own subnet, or drop via"
            ));
        }
        for net in [x, y] {
            let router = net.router_address().ok_or_else(|| {
                format!(
                    "{net} has no room for the router's address: use a /30 or wider (IPv6 /126)"
                )
            })?;
            if let Some(h) = lab
                .hosts
                .iter()
                .find(|h| h.addresses.iter().any(|n| n.addr == router.addr))
            {
                return Err(format!(
                    "the router takes {} in {} but host '{}' has it: give the host another address",
                    router.addr,
                    net.network(),
                    h.name
                ));
            }
            nets.push(*net);
        }
    }
    Ok(nets)
}

/// Checks each distributor against the lab: its host exists, its targets
/// are other hosts on direct links with it, its address is one of the
/// host's, and its forwarding is one a lab can carry.
pub(crate) fn distributors(src: &Source, lab: &Lab, spans: &Spans) -> Result<()> {
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
        if d.forwarding == crate::lb::Forwarding::Dr {
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
            if crate::layout::gateway(&layout, lab, d, t).is_none() {
                return Err(err(format!(
                    "target '{t}' has no direct link with {} in the address family of {}: add a [[link]] with a = \"{}\" and b = \"{t}\"",
                    d.host, d.address, d.host
                )));
            }
        }
        if crate::layout::vip_subnet(&layout, lab, d).is_none() {
            let mine: Vec<String> = crate::layout::host_addresses(&layout, lab, &d.host)
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
