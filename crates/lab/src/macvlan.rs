//! Virtual MACs: a lab host's `macvlan = [ADDRESS, …]` puts one macvlan
//! interface per address on the host's link end, each with its own
//! (kernel-chosen) MAC and that address, so several "virtual hosts" share
//! one link as z/OS stacks share an OSA port with VMACs. `macvlan_mode`
//! is `bridge` (they reach each other inside the host) or `private` (each
//! reaches only the link's other end). Made at `up` (kept when already
//! as asked, else replaced), listed by the read-back, removed with the
//! namespace at `down`. Each then answers ARP and sends from its own
//! interface ([`crate::vhost::isolate`]), so a run can use it as a host.

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
        crate::vhost::isolate(&mut nl, &ns, lab, host)
    })
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
