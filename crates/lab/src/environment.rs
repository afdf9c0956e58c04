//! The lab part of a run's stored environment: the interfaces on a run's
//! path read back from the kernel ([`crate::read`]) and written as the
//! record's types (`stackbench_record::lab`), with their IPsec SAs and byte
//! counters.

use stackbench_record::{LabInterface, LabIpsec, LabMacvlan, LabNetem, LabSa};

use crate::netlink::Netlink;
use crate::path::LabPath;
use crate::show::EndState;
use crate::{netns, rtnl, IpsecAlgorithm, Lab, LabError, Link, Offloads};

/// The interfaces on `path` as the kernel reports them now, as the run's
/// environment stores them (empty when the lab cannot be read; a run is not
/// failed for it).
pub fn path_interfaces(lab: &Lab, path: &LabPath) -> Vec<LabInterface> {
    let Ok(back) = crate::read(lab) else {
        return Vec::new();
    };
    let link = &lab.links[path.link];
    let hosts = [lab.namespace(&path.from), lab.namespace(&path.to)];
    path.interfaces
        .iter()
        .filter_map(|(ns, ifname)| {
            let e = back
                .ends
                .iter()
                .find(|e| e.ns == *ns && e.ifname == *ifname && e.present)?;
            Some(interface(link, hosts.contains(ns), e))
        })
        .collect()
}

/// The macvlan interfaces of the path's two hosts as the kernel lists them
/// now (empty when there are none or the lab cannot be read).
pub fn path_macvlans(lab: &Lab, path: &LabPath) -> Vec<LabMacvlan> {
    let Ok(back) = crate::read(lab) else {
        return Vec::new();
    };
    let hosts = [lab.namespace(&path.from), lab.namespace(&path.to)];
    back.namespaces
        .iter()
        .filter(|n| hosts.contains(&n.name))
        .flat_map(|n| n.macvlans.iter())
        .map(|m| LabMacvlan {
            namespace: m.ns.clone(),
            name: m.name.clone(),
            parent: m.parent.clone(),
            mode: m
                .mode
                .map_or_else(|| "other".to_string(), |m| m.name().to_string()),
            mac: m.mac.clone(),
            addresses: m.addresses.iter().map(ToString::to_string).collect(),
        })
        .collect()
}

/// The IPsec part of an interface's read-back: the link's transform and
/// the SAs of its host, split into out (to the peer) and in.
fn ipsec_of(link: &Link, host_end: bool, e: &EndState) -> Option<LabIpsec> {
    if e.sas.is_empty() && (!host_end || link.ipsec == IpsecAlgorithm::Off) {
        return None;
    }
    let mut out = LabIpsec {
        algorithm: link.ipsec.name().to_string(),
        mode: link.ipsec_mode.name().to_string(),
        ..LabIpsec::default()
    };
    for sa in &e.sas {
        let inbound = e.addresses.iter().any(|a| a.addr == sa.dst);
        if inbound {
            out.esp_packets_in += sa.packets;
            out.esp_bytes_in += sa.bytes;
        } else {
            out.esp_packets_out += sa.packets;
            out.esp_bytes_out += sa.bytes;
        }
        out.sas.push(LabSa {
            spi: sa.spi,
            direction: if inbound { "in" } else { "out" }.to_string(),
            src: sa.src.to_string(),
            dst: sa.dst.to_string(),
            kernel_algorithm: sa.algorithm.clone(),
            mode: sa.mode.clone(),
            packets: sa.packets,
            bytes: sa.bytes,
        });
    }
    Some(out)
}

/// One path interface's read-back as the environment stores it.
fn interface(link: &Link, host_end: bool, e: &EndState) -> LabInterface {
    LabInterface {
        namespace: e.ns.clone(),
        name: e.ifname.clone(),
        mtu_bytes: e.mtu,
        rate_bps: e.rate_bps,
        burst_bytes: e.burst_bytes,
        limit_bytes: e.limit_bytes,
        txqueuelen_packets: e.txqueuelen,
        qdisc: e.qdisc.clone(),
        offloads: e.offloads.map_or_else(Default::default, |o| {
            Offloads::NAMES
                .iter()
                .zip(o.values())
                .map(|(n, on)| (n.to_string(), on))
                .collect()
        }),
        addresses: e.addresses.iter().map(ToString::to_string).collect(),
        qdiscs: if e.qdiscs.len() > 1 {
            e.qdiscs.clone()
        } else {
            Vec::new()
        },
        netem: e.netem.map(|n| LabNetem {
            delay_s: n.delay.as_secs_f64(),
            jitter_s: n.jitter.as_secs_f64(),
            loss_pct: n.loss_pct,
            limit_packets: n.limit_packets,
        }),
        fq_maxrate_bps: e.fq_maxrate_bps,
        ipsec: ipsec_of(link, host_end, e),
        napi_defer_hard_irqs: e.napi.as_ref().map(|n| n.napi.defer_hard_irqs),
        gro_flush_timeout_ns: e.napi.as_ref().map(|n| n.napi.gro_flush_timeout_ns),
        coalesce: e.napi.as_ref().map(|n| n.coalesce.clone()),
        ..counters(&e.ns, &e.ifname)
    }
}

/// The kernel's byte counters of interface `ifname` in namespace `ns`
/// (left out of the lab's read-back, which compares configurations).
fn counters(ns: &str, ifname: &str) -> LabInterface {
    let link = netns::run_in(ns, || {
        let mut nl = Netlink::open().map_err(|e| LabError::os("open netlink socket", e))?;
        Ok(rtnl::link(&mut nl, ifname).ok().flatten())
    });
    let link = link.ok().flatten();
    LabInterface {
        rx_bytes: link.as_ref().and_then(|l| l.rx_bytes),
        tx_bytes: link.as_ref().and_then(|l| l.tx_bytes),
        ..LabInterface::default()
    }
}
