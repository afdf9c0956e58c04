//! `lab up`: makes the kernel state equal the lab file, whatever was there.
//!
//! Idempotent by reconciling rather than creating: each namespace is made if
//! missing; each veth pair is kept when both ends exist and are each other's
//! peers, and otherwise (a half-built lab, a changed file) replaced; MTU,
//! addresses, qdisc, offloads and routes are then set to the file's values
//! whether or not they already were; IPsec states are kept when they match
//! (see [`crate::ipsec`]). A lab needing netem, fq or ESP is first checked
//! against the kernel in a scratch namespace ([`crate::probe`]), so a kernel
//! without them refuses before anything is built. Namespaces, and lab interfaces inside
//! them, that the file no longer names are removed. A `up` killed half-way
//! therefore leaves only whole objects named with the lab's prefix, which a
//! second `up` completes and `down` removes.

use std::fs;
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use stackbench_model::units::{format_cpu_list, parse_cpu_list};

use crate::error::{LabError, Result};
use crate::layout::{layout, End, Layout, Namespace, VethPair};
use crate::netlink::{Netlink, NlError};
pub use crate::nl::qdisc_error;
use crate::nl::{netlink, nl_error};
use crate::parse::cpus_text;
use crate::spec::{Lab, Link};
use crate::{down, ethtool, htb, ipsec, napi, netem, netns, probe, qdisc, rtnl};

/// Longest wait for a new link's carrier (the kernel's link watch usually
/// takes microseconds for a veth, at most a second when busy).
const CARRIER_WAIT: Duration = Duration::from_secs(5);

/// What `up` did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UpReport {
    /// Namespaces the lab has, and how many of them were created now.
    pub namespaces: usize,
    pub namespaces_created: usize,
    /// Veth pairs the lab has, and how many were created now.
    pub pairs: usize,
    pub pairs_created: usize,
    /// Leftovers removed (namespaces and interfaces the file no longer names).
    pub removed: Vec<String>,
}

/// Brings lab `lab` up (see the module doc).
pub fn up(lab: &Lab) -> Result<UpReport> {
    check_cpus(lab)?;
    probe::features(lab)?; // before anything is built: no half-built lab
    crate::distributor::probe(lab)?;
    let plan = layout(lab);
    let mut report = UpReport {
        namespaces: plan.namespaces.len(),
        pairs: plan.pairs.len(),
        ..UpReport::default()
    };
    report.removed = remove_stale(&plan)?;
    for ns in &plan.namespaces {
        if netns::create(&ns.name)? {
            report.namespaces_created += 1;
        }
        let macvlans = crate::macvlan::names_in(lab, &ns.name);
        prepare_namespace(&plan, ns, &macvlans, &mut report.removed)?;
    }
    for pair in &plan.pairs {
        if ensure_pair(pair, lab.links[pair.link].mtu)? {
            report.pairs_created += 1;
        }
        for end in &pair.ends {
            let host_end = plan
                .namespaces
                .iter()
                .any(|n| n.name == end.ns && !n.router);
            configure_end(end, &lab.links[pair.link], host_end)?;
        }
    }
    for host in &lab.hosts {
        crate::macvlan::ensure(lab, host)?;
    }
    for ns in plan.namespaces.iter().filter(|n| !n.routes.is_empty()) {
        add_routes(ns)?;
    }
    for ns in &plan.namespaces {
        wait_running(&plan, &ns.name)?;
    }
    for i in 0..lab.links.len() {
        ipsec::apply(lab, i)?;
    }
    crate::distributor::apply(lab)?;
    Ok(report)
}

/// Every host's CPUs must be online here.
fn check_cpus(lab: &Lab) -> Result<()> {
    let text = fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    let Ok(online) = parse_cpu_list(text.trim()) else {
        return Ok(()); // cannot tell: let the run that pins threads report it
    };
    for host in &lab.hosts {
        if let Some(cpus) = &host.cpus {
            if cpus.iter().any(|c| !online.contains(c)) {
                return Err(LabError::Cpus {
                    host: host.name.clone(),
                    cpus: cpus_text(&host.cpus),
                    online: format_cpu_list(&online),
                });
            }
        }
    }
    Ok(())
}

/// Removes the lab's namespaces the layout does not name, and lab
/// interfaces in the caller's namespace (none are made there; a crash of an
/// older version or a person's experiment may have left some).
fn remove_stale(plan: &Layout) -> Result<Vec<String>> {
    let mut removed = Vec::new();
    for name in netns::list(&crate::spec::namespace_prefix(&plan.lab))? {
        if !plan.namespaces.iter().any(|n| n.name == name) {
            netns::delete(&name)?;
            removed.push(name);
        }
    }
    removed.extend(down::remove_lab_links(&plan.lab, |_| false)?);
    Ok(removed)
}

/// Loopback up, forwarding on for routers, and lab interfaces that the
/// layout no longer puts in this namespace removed.
fn prepare_namespace(
    plan: &Layout,
    ns: &Namespace,
    macvlans: &[String],
    removed: &mut Vec<String>,
) -> Result<()> {
    let wanted: Vec<&str> = plan
        .pairs
        .iter()
        .flat_map(|p| p.ends.iter())
        .filter(|e| e.ns == ns.name)
        .map(|e| e.ifname.as_str())
        .chain(macvlans.iter().map(String::as_str))
        .collect();
    let gone = netns::run_in(&ns.name, || {
        let mut nl = netlink()?;
        let lo =
            rtnl::link(&mut nl, "lo").map_err(|e| nl_error(format!("{}: read lo", ns.name), e))?;
        if let Some(lo) = lo {
            rtnl::set_up(&mut nl, lo.index, None)
                .map_err(|e| nl_error(format!("{}: set lo up", ns.name), e))?;
        }
        if ns.router {
            for sysctl in [
                "/proc/sys/net/ipv4/ip_forward",
                "/proc/sys/net/ipv6/conf/all/forwarding",
            ] {
                match fs::write(sysctl, "1") {
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {} // no IPv6
                    other => other
                        .map_err(|e| LabError::os(format!("{}: write {sysctl}", ns.name), e))?,
                }
            }
        }
        down::remove_lab_links(&plan.lab, |name| wanted.contains(&name))
    })?;
    removed.extend(gone.into_iter().map(|i| format!("{}/{i}", ns.name)));
    Ok(())
}

/// End `end`'s link, if it exists as a veth (anything else of its name is
/// deleted: the lab owns its names).
fn read_end(end: &End) -> Result<Option<rtnl::LinkInfo>> {
    netns::run_in(&end.ns, || {
        let mut nl = netlink()?;
        let found = rtnl::link(&mut nl, &end.ifname)
            .map_err(|e| nl_error(format!("{}: read {}", end.ns, end.ifname), e))?;
        if let Some(other) = found.as_ref().filter(|l| l.kind.as_deref() != Some("veth")) {
            delete(&mut nl, end, other.index)?;
            return Ok(None);
        }
        Ok(found)
    })
}

/// Deletes end `end` (link `index`); gone already (with its peer) is fine.
fn delete(nl: &mut Netlink, end: &End, index: u32) -> Result<()> {
    match rtnl::delete_link(nl, index) {
        Err(e) if e.errno() == Some(libc::ENODEV) => Ok(()),
        other => other.map_err(|e| nl_error(format!("{}: delete {}", end.ns, end.ifname), e)),
    }
}

/// Makes sure the pair exists as a pair; `true` when it was (re)created.
fn ensure_pair(pair: &VethPair, mtu: u32) -> Result<bool> {
    let [e0, e1] = &pair.ends;
    let (l0, l1) = (read_end(e0)?, read_end(e1)?);
    if let (Some(a), Some(b)) = (&l0, &l1) {
        if a.peer_index == Some(b.index) && b.peer_index == Some(a.index) {
            return Ok(false);
        }
    }
    // Half a pair, or two ends that are not each other's peers: start again.
    for (end, found) in [(e0, &l0), (e1, &l1)] {
        if let Some(found) = found {
            netns::run_in(&end.ns, || delete(&mut netlink()?, end, found.index))?;
        }
    }
    let (ns0, ns1) = (netns::open(&e0.ns)?, netns::open(&e1.ns)?);
    let ends = [
        (e0.ifname.as_str(), ns0.as_fd(), e0.ifindex),
        (e1.ifname.as_str(), ns1.as_fd(), e1.ifindex),
    ];
    rtnl::create_veth(&mut netlink()?, ends, mtu).map_err(|e| {
        let action = format!(
            "create veth pair {}/{} <-> {}/{}",
            e0.ns, e0.ifname, e1.ns, e1.ifname
        );
        veth_error(&action, e)
    })?;
    Ok(true)
}

/// MTU, up, addresses, rate and offloads of one end, as the link says.
fn configure_end(end: &End, link: &Link, host_end: bool) -> Result<()> {
    netns::run_in(&end.ns, || {
        let at = |what: &str| format!("{}/{}: {what}", end.ns, end.ifname);
        let mut nl = netlink()?;
        let info = rtnl::link(&mut nl, &end.ifname)
            .map_err(|e| nl_error(at("read link"), e))?
            .ok_or_else(|| {
                LabError::os(
                    at("find link"),
                    std::io::Error::from_raw_os_error(libc::ENODEV),
                )
            })?;
        rtnl::set_up(&mut nl, info.index, Some(link.mtu))
            .map_err(|e| nl_error(at(&format!("set mtu {} and up", link.mtu)), e))?;
        // Before the qdiscs: htb's leaves take the device's queue length
        // when they are made. Written even at the default, so a step
        // without it undoes the step before.
        let txqlen = link.txqueuelen.unwrap_or(rtnl::DEFAULT_TXQUEUELEN);
        rtnl::set_txqueuelen(&mut nl, info.index, txqlen)
            .map_err(|e| nl_error(at(&format!("set txqueuelen {txqlen}")), e))?;
        let have =
            rtnl::addresses(&mut nl, info.index).map_err(|e| nl_error(at("read addresses"), e))?;
        for old in have.iter().filter(|a| !end.addresses.contains(a)) {
            rtnl::delete_address(&mut nl, info.index, old)
                .map_err(|e| nl_error(at(&format!("delete address {old}")), e))?;
        }
        for net in &end.addresses {
            rtnl::add_address(&mut nl, info.index, net)
                .map_err(|e| nl_error(at(&format!("add address {net}")), e))?;
        }
        shape(&mut nl, info.index, link, host_end).map_err(|e| match e {
            LabError::KernelFeature {
                feature, config, ..
            } => LabError::KernelFeature {
                action: at("set rate"),
                feature,
                config,
            },
            other => other,
        })?;
        ethtool::set(&end.ifname, &link.offloads)
            .map_err(|(name, e)| LabError::os(at(&format!("set offload {name}")), e))?;
        set_napi(&end.ifname, link, &at)
    })
}

/// The link's NAPI deferral and GRO flush timeout on `ifname`, written in
/// sysfs (on a thread about to end: see [`napi::private_sysfs`]). Written
/// even at the defaults, so a study step without them undoes the step
/// before; a kernel without the files is refused only when asked for them.
fn set_napi(ifname: &str, link: &Link, at: &dyn Fn(&str) -> String) -> Result<()> {
    napi::private_sysfs().map_err(|e| LabError::os(at("mount a private sysfs"), e))?;
    if !napi::supported(ifname) {
        if link.napi == napi::Napi::default() {
            return Ok(());
        }
        return Err(LabError::KernelFeature {
            action: at("set napi_defer_hard_irqs"),
            feature: "per-device NAPI deferral (napi_defer_hard_irqs, gro_flush_timeout)".into(),
            config: "Linux 5.10 or later".into(),
        });
    }
    napi::set(ifname, &link.napi).map_err(|e| {
        LabError::os(
            at(&format!(
                "set napi_defer_hard_irqs {} and gro_flush_timeout {} ns",
                link.napi.defer_hard_irqs, link.napi.gro_flush_timeout_ns
            )),
            e,
        )
    })
}

/// Puts the link's qdiscs on link `index` (see [`netem`]): the tbf, netem
/// and fq chain, or with priority classes the htb; removes the root qdisc
/// when the link needs none.
fn shape(nl: &mut Netlink, index: u32, link: &Link, host_end: bool) -> Result<()> {
    let kinds = link.qdisc_chain(host_end);
    if kinds.is_empty() {
        return qdisc::delete_root(nl, index).map_err(|e| nl_error("remove qdisc", e));
    }
    if kinds == ["htb"] {
        let tbf = link.tbf(0);
        return htb::replace_htb(nl, index, &tbf)
            .map_err(|e| qdisc_error("htb", "set priority classes", e));
    }
    netem::replace_chain(nl, index, link, &kinds).map_err(|(kind, e)| match kind {
        "" => nl_error("read or remove qdisc", e),
        kind => qdisc_error(kind, &format!("set {kind} qdisc"), e),
    })
}

/// A veth creation's error; an unknown link kind names the kernel option.
pub fn veth_error(action: &str, e: NlError) -> LabError {
    if e.errno() == Some(libc::EOPNOTSUPP) {
        return LabError::KernelFeature {
            action: action.to_string(),
            feature: "veth devices".into(),
            config: "CONFIG_VETH".into(),
        };
    }
    nl_error(action, e)
}

/// Waits, at most [`CARRIER_WAIT`], until every lab interface in namespace
/// `ns` is running and operationally up: the kernel attaches the qdisc and
/// passes packets only once its link watch has seen the carrier (which sets
/// the operational state after IFF_RUNNING), so `up` returns a lab that is
/// usable. (A CI run once saw EHOSTUNREACH across a router right after
/// `up`, with IFF_RUNNING alone checked.)
fn wait_running(plan: &Layout, ns: &str) -> Result<()> {
    let names: Vec<&str> = plan
        .pairs
        .iter()
        .flat_map(|p| p.ends.iter())
        .filter(|e| e.ns == ns)
        .map(|e| e.ifname.as_str())
        .collect();
    netns::run_in(ns, || {
        let mut nl = netlink()?;
        let deadline = Instant::now() + CARRIER_WAIT;
        loop {
            let links =
                rtnl::links(&mut nl).map_err(|e| nl_error(format!("{ns}: list links"), e))?;
            let waiting = names.iter().find(|n| {
                !links
                    .iter()
                    .any(|l| l.name == **n && l.running && l.oper_up)
            });
            let Some(name) = waiting else {
                return Ok(());
            };
            if Instant::now() >= deadline {
                let action = format!("{ns}/{name}: wait {CARRIER_WAIT:?} for the carrier");
                return Err(LabError::os(
                    action,
                    std::io::Error::from_raw_os_error(libc::ETIMEDOUT),
                ));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    })
}

fn add_routes(ns: &Namespace) -> Result<()> {
    netns::run_in(&ns.name, || {
        let mut nl = netlink()?;
        for route in &ns.routes {
            let action = || {
                format!(
                    "{}: route {} via {} dev {}",
                    ns.name, route.dest, route.gateway, route.dev
                )
            };
            let dev = rtnl::link(&mut nl, &route.dev)
                .map_err(|e| nl_error(action(), e))?
                .ok_or_else(|| {
                    LabError::os(action(), std::io::Error::from_raw_os_error(libc::ENODEV))
                })?;
            rtnl::replace_route(&mut nl, &route.dest, &route.gateway, dev.index)
                .map_err(|e| nl_error(action(), e))?;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nl(errno: i32, message: &str) -> NlError {
        NlError {
            source: std::io::Error::from_raw_os_error(errno),
            message: Some(message.to_string()),
        }
    }

    #[test]
    fn missing_kernel_features_name_their_config_option() {
        let e = veth_error(
            "create veth pair",
            nl(libc::EOPNOTSUPP, "Unknown device type"),
        );
        assert_eq!(
            e.to_string(),
            "create veth pair: the kernel has no veth devices: build it with CONFIG_VETH (or load its module), or use a kernel that has it, e.g. a guest (`--kernel linux-image-6.1.0-53-cloud-amd64-unsigned`)"
        );
        let e = qdisc_error(
            "htb",
            "set classes",
            nl(libc::ENOENT, "Specified qdisc kind is unknown"),
        );
        assert!(
            e.to_string()
                .contains("no htb qdisc: build it with CONFIG_NET_SCH_HTB"),
            "{e}"
        );
        let e = qdisc_error("tbf", "set rate", nl(libc::EINVAL, "bad burst"));
        assert!(e.to_string().ends_with("(bad burst)"), "{e}");
        let e = veth_error("create", nl(libc::EPERM, ""));
        assert!(e.to_string().contains("need root"), "{e}");
    }
}
