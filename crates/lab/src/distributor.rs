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
use crate::ipvs::{self, Destination, DestinationCounts, Ipvs, Service};
pub use crate::lb::Distributor;
use crate::netns;
use crate::spec::Lab;

/// Programs every distributor of `lab` (after the namespaces, links and
/// routes are up): the distributor forwards, and its IPVS service is
/// replaced, so counters start at 0.
/// Nothing to do, and no IPVS needed, without distributors.
pub fn apply(lab: &Lab) -> Result<()> {
    let layout = crate::layout::layout(lab);
    for d in &lab.distributors {
        let service = service(d);
        let mut dests = Vec::new();
        for (t, weight) in d.targets.iter().zip(&d.weights) {
            // The target's own address on its link, in both methods:
            // direct routing reaches it by that address's neighbour and
            // keeps the virtual address in the packet.
            let (own, _, _) =
                crate::layout::gateway(&layout, lab, d, t).expect("checked when parsed");
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

/// The firewall mark of a run's data connections through a distributor.
pub const RUN_MARK: u32 = 0x5b;
/// The port a run's responder takes its control connection on, at the
/// virtual address (netperf's control port); every other TCP port of the
/// virtual address is marked [`RUN_MARK`] and distributed.
pub const RUN_CONTROL_PORT: u16 = 12865;
/// The nftables table that marks a run's data connections.
pub const RUN_TABLE: &str = "stackbench_distribution";

/// The run's firewall-mark service on distributor `d`.
/// The lab file's service of `d`: its address and port.
pub fn service(d: &Distributor) -> Service {
    Service {
        address: d.address,
        port: d.port,
        scheduler: d.scheduler,
        fwmark: None,
    }
}

pub fn run_service(d: &Distributor) -> Service {
    Service {
        fwmark: Some(RUN_MARK),
        ..service(d)
    }
}

/// The nft script that marks connections to `vip` on any port but the
/// run's control port, before IPVS looks them up (priority mangle).
pub fn run_ruleset(vip: IpAddr) -> String {
    let family = if vip.is_ipv4() { "ip" } else { "ip6" };
    format!(
        "table inet {RUN_TABLE}\ndelete table inet {RUN_TABLE}\ntable inet {RUN_TABLE} {{\n  \
         chain distribute {{\n    type filter hook prerouting priority mangle; policy accept;\n    \
         {family} daddr {vip} tcp dport != {RUN_CONTROL_PORT} meta mark set {RUN_MARK:#x}\n  }}\n}}\n"
    )
}

/// Programs a run across distributor `d` (its targets as the run asks):
/// the mark rule and a firewall-mark IPVS service whose real servers keep
/// each connection's port, so one responder's listeners, opened on the
/// same port in every target, answer whichever target IPVS picks. The
/// service is replaced, so its counters start at 0 for the step.
pub fn apply_run(lab: &Lab, d: &Distributor) -> Result<()> {
    let layout = crate::layout::layout(lab);
    let service = run_service(d);
    let dests: Vec<Destination> = d
        .targets
        .iter()
        .zip(&d.weights)
        .map(|(t, w)| Destination {
            address: crate::layout::gateway(&layout, lab, d, t)
                .expect("checked when parsed")
                .0,
            port: 0,
            forwarding: d.forwarding,
            weight: *w,
        })
        .collect();
    let ns = lab.namespace(&d.host);
    netns::run_in(&ns, || {
        crate::policy::nft(
            format!("{ns}: mark the run's connections for IPVS (nft -f)"),
            &run_ruleset(d.address),
        )?;
        let mut ipvs = open(&ns)?;
        ipvs.delete_service(&service)?;
        ipvs.add_service(&service)?;
        for dest in &dests {
            ipvs.add_destination(&service, dest)?;
        }
        Ok(())
    })
}

/// IPVS's counters of the run's service per target of `d`; `None` when
/// the service is not there.
pub fn read_run(lab: &Lab, d: &Distributor) -> Result<Option<TargetCounts>> {
    let layout = crate::layout::layout(lab);
    let ns = lab.namespace(&d.host);
    let counts = netns::run_in(&ns, || match Ipvs::open()? {
        Some(mut ipvs) => ipvs.destinations(&run_service(d)),
        None => Ok(None),
    })?;
    Ok(counts.map(|list| {
        d.targets
            .iter()
            .map(|t| {
                let own = crate::layout::gateway(&layout, lab, d, t).map(|g| g.0);
                let c = list
                    .iter()
                    .find(|c| c.address == own)
                    .cloned()
                    .unwrap_or_default();
                (t.clone(), c)
            })
            .collect()
    }))
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
            Some(mut ipvs) => ipvs.destinations(&service(d)),
            None => Ok(None),
        })?;
        let named = counts.map(|list| {
            d.targets
                .iter()
                .map(|t| {
                    let own = crate::layout::gateway(&layout, lab, d, t).map(|g| g.0);
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
    fn a_runs_connections_are_marked_on_every_port_but_the_control_port() {
        let text = super::run_ruleset("10.81.1.254".parse().unwrap());
        assert!(
            text.contains("ip daddr 10.81.1.254 tcp dport != 12865 meta mark set 0x5b"),
            "{text}"
        );
        assert!(text.contains("hook prerouting priority mangle"), "{text}");
        let v6 = super::run_ruleset("fd81:1::fe".parse().unwrap());
        assert!(
            v6.contains("ip6 daddr fd81:1::fe tcp dport != 12865"),
            "{v6}"
        );
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
