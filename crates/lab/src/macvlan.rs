//! Virtual MACs: a lab host's `macvlan = [ADDRESS, …]` puts one macvlan
//! interface per address on the host's link end, each with its own
//! (kernel-chosen) MAC and that address, so several "virtual hosts" share
//! one link as z/OS stacks share an OSA port with VMACs. `macvlan_mode`
//! is `bridge` (they reach each other inside the host) or `private` (each
//! reaches only the link's other end). Made at `up` (kept when already
//! as asked, else replaced), listed by the read-back, removed with the
//! namespace at `down`. Each then answers ARP and sends from its own
//! interface ([`isolate`]), so a run can use it as a host
//! ([`crate::vhost`]).
//!
//! A macvlan answers for its address only if its host lets it: with the
//! kernel's defaults the parent end answers ARP for every address of the
//! namespace and the main table sends every reply out of the parent (its
//! prefix route came first), so traffic to a "virtual host" would enter
//! and leave by the parent's MAC. [`isolate`] makes each macvlan behave as
//! a host of its own on the link: ARP is answered only on the interface
//! holding the address (`arp_ignore` 1, `arp_announce` 2, as for the
//! "several IPs on one segment" setups of the kernel's ip-sysctl.rst), and
//! a source rule sends what leaves from its address out of its interface.

use serde::Serialize;

use crate::error::Result;
use crate::layout::layout;
use crate::nl::{netlink, nl_error};
use crate::spec::{Host, IpNet, Lab, MacvlanMode};
use crate::{netns, rtnl};

/// Most macvlans a host may have: names stay within IFNAMSIZ (`…v15`).
pub const MAX: usize = 16;

/// Macvlan `i` on parent `parent`: `<parent>v<i>`.
pub fn name(parent: &str, i: usize) -> String {
    format!("{parent}v{i}")
}

/// The parent interface of host `host`'s macvlans: its one link end.
pub fn parent(lab: &Lab, host: &str) -> Option<String> {
    let ns = lab.namespace(host);
    layout(lab)
        .pairs
        .iter()
        .flat_map(|p| p.ends.iter())
        .find(|e| e.ns == ns)
        .map(|e| e.ifname.clone())
}

/// The macvlan names namespace `ns` should have.
pub fn names_in(lab: &Lab, ns: &str) -> Vec<String> {
    lab.hosts
        .iter()
        .filter(|h| lab.namespace(&h.name) == ns && !h.macvlans.is_empty())
        .flat_map(|h| {
            let p = parent(lab, &h.name).unwrap_or_default();
            (0..h.macvlans.len()).map(move |i| name(&p, i))
        })
        .collect()
}

/// Makes host `host`'s macvlans as the lab says, in its namespace, and
/// removes those it no longer has (the lab's leftover sweep keeps them
/// apart from its veths).
pub fn ensure(lab: &Lab, host: &Host) -> Result<()> {
    let ns = lab.namespace(&host.name);
    let wanted = names_in(lab, &ns);
    netns::run_in(&ns, || {
        let mut nl = netlink()?;
        let links = rtnl::links(&mut nl).map_err(|e| nl_error(format!("{ns}: list links"), e))?;
        for l in links
            .iter()
            .filter(|l| l.kind.as_deref() == Some("macvlan") && !wanted.contains(&l.name))
        {
            rtnl::delete_link(&mut nl, l.index)
                .map_err(|e| nl_error(format!("{ns}: delete macvlan {}", l.name), e))?;
        }
        Ok(())
    })?;
    if host.macvlans.is_empty() {
        return Ok(());
    }
    let Some(parent_name) = parent(lab, &host.name) else {
        return Ok(()); // parse refuses macvlans on a host without a link
    };
    let mtu = lab
        .links
        .iter()
        .find(|l| l.a == host.name || l.b == host.name)
        .map_or(1500, |l| l.mtu);
    netns::run_in(&ns, || {
        let at = |what: String| format!("{ns}/{parent_name}: {what}");
        let mut nl = netlink()?;
        let parent = rtnl::link(&mut nl, &parent_name)
            .map_err(|e| nl_error(at("read link".into()), e))?
            .ok_or_else(|| {
                crate::LabError::os(
                    at("find parent".into()),
                    std::io::Error::from_raw_os_error(libc::ENODEV),
                )
            })?;
        for (i, address) in host.macvlans.iter().enumerate() {
            let ifname = name(&parent_name, i);
            let have = rtnl::link(&mut nl, &ifname)
                .map_err(|e| nl_error(at(format!("read {ifname}")), e))?;
            let as_asked = have.as_ref().is_some_and(|l| {
                l.kind.as_deref() == Some("macvlan")
                    && l.peer_index == Some(parent.index)
                    && l.macvlan_mode == Some(host.macvlan_mode.kernel())
            });
            if let Some(old) = have.filter(|_| !as_asked) {
                rtnl::delete_link(&mut nl, old.index)
                    .map_err(|e| nl_error(at(format!("delete {ifname}")), e))?;
            }
            if !as_asked {
                rtnl::create_macvlan(
                    &mut nl,
                    &ifname,
                    parent.index,
                    host.macvlan_mode.kernel(),
                    mtu,
                )
                .map_err(|e| {
                    let action = at(format!("create macvlan {ifname}"));
                    if e.errno() == Some(libc::EOPNOTSUPP) {
                        return crate::LabError::KernelFeature {
                            action,
                            feature: "macvlan devices".into(),
                            config: "CONFIG_MACVLAN".into(),
                        };
                    }
                    nl_error(action, e)
                })?;
            }
            let info = rtnl::link(&mut nl, &ifname)
                .map_err(|e| nl_error(at(format!("read {ifname}")), e))?
                .ok_or_else(|| {
                    crate::LabError::os(
                        at(format!("find {ifname}")),
                        std::io::Error::from_raw_os_error(libc::ENODEV),
                    )
                })?;
            rtnl::set_up(&mut nl, info.index, Some(mtu))
                .map_err(|e| nl_error(at(format!("set {ifname} up")), e))?;
            let addrs = rtnl::addresses(&mut nl, info.index)
                .map_err(|e| nl_error(at(format!("read {ifname} addresses")), e))?;
            for old in addrs.iter().filter(|a| *a != address) {
                rtnl::delete_address(&mut nl, info.index, old)
                    .map_err(|e| nl_error(at(format!("delete {old} on {ifname}")), e))?;
            }
            if !addrs.contains(address) {
                rtnl::add_address(&mut nl, info.index, address)
                    .map_err(|e| nl_error(at(format!("add {address} on {ifname}")), e))?;
            }
        }
        isolate(&mut nl, &ns, lab, host)
    })
}

/// Policy rule priorities and tables of the source rules: macvlan `i`'s
/// are `RULE_BASE + i` (below the main table's 32766; tables are per
/// namespace, so one host's numbers meet no other's).
const RULE_BASE: u32 = 1000;

/// Makes host `host`'s macvlans answer and send as hosts of their own (see
/// the module note), in the calling thread's namespace `ns`: the ARP
/// sysctls, and per macvlan its subnet route in a table of its own with a
/// rule taking traffic from its address there. Kept when already so.
pub fn isolate(nl: &mut crate::netlink::Netlink, ns: &str, lab: &Lab, host: &Host) -> Result<()> {
    for (file, value) in [("arp_ignore", "1"), ("arp_announce", "2")] {
        let path = format!("/proc/sys/net/ipv4/conf/all/{file}");
        std::fs::write(&path, value)
            .map_err(|e| crate::LabError::os(format!("{ns}: write {path}"), e))?;
    }
    let parent = parent(lab, &host.name).unwrap_or_default();
    for (i, address) in host.macvlans.iter().enumerate() {
        let ifname = name(&parent, i);
        let at = |what: &str| format!("{ns}/{ifname}: {what}");
        let link = rtnl::link(nl, &ifname)
            .map_err(|e| nl_error(at("read link"), e))?
            .ok_or_else(|| {
                crate::LabError::os(
                    at("find link"),
                    std::io::Error::from_raw_os_error(libc::ENODEV),
                )
            })?;
        let table = RULE_BASE + i as u32;
        rtnl::replace_link_route(nl, &address.network(), link.index, table).map_err(|e| {
            nl_error(
                at(&format!("route {} in table {table}", address.network())),
                e,
            )
        })?;
        rtnl::add_source_rule(nl, &address.addr, table, table).map_err(|e| {
            nl_error(
                at(&format!("rule from {} to table {table}", address.addr)),
                e,
            )
        })?;
    }
    Ok(())
}

/// A macvlan as the kernel reports it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MacvlanState {
    pub ns: String,
    pub name: String,
    /// The parent interface's name.
    pub parent: String,
    pub mode: Option<MacvlanMode>,
    pub mac: String,
    pub up: bool,
    pub addresses: Vec<IpNet>,
}

/// Every macvlan in the calling thread's namespace `ns`, by name.
pub fn read(nl: &mut crate::netlink::Netlink, ns: &str) -> Result<Vec<MacvlanState>> {
    let links = rtnl::links(nl).map_err(|e| nl_error(format!("{ns}: list links"), e))?;
    let mut out = Vec::new();
    for l in links
        .iter()
        .filter(|l| l.kind.as_deref() == Some("macvlan"))
    {
        let parent = links
            .iter()
            .find(|p| Some(p.index) == l.peer_index)
            .map_or_else(|| "?".to_string(), |p| p.name.clone());
        out.push(MacvlanState {
            ns: ns.to_string(),
            name: l.name.clone(),
            parent,
            mode: l.macvlan_mode.and_then(MacvlanMode::from_kernel),
            mac: l.mac.clone().unwrap_or_default(),
            up: l.up,
            addresses: rtnl::addresses(nl, l.index)
                .map_err(|e| nl_error(format!("{ns}/{}: read addresses", l.name), e))?,
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}
