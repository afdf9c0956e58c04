//! Runs across a lab (`run --lab FILE --lab-from A --lab-to B`, study keys
//! `lab`, `lab_from`, `lab_to`, and the link overrides `link_rate`,
//! `link_mtu`, `link_offloads`, `link_delay`, `link_jitter`, `link_loss`,
//! `link_qdisc`, `link_fq_maxrate`, `link_ipsec`, `link_ipsec_mode`): the checks `session::resolve` makes, the
//! `lab up` before each step, the driver thread that enters A's namespace,
//! and the lab part of the stored environment (see the design note in the
//! lab crate).

use std::net::IpAddr;
use std::os::fd::AsFd;
use std::path::PathBuf;

use stackbench_lab::netlink::Netlink;
use stackbench_lab::path::{LabPath, LinkOverrides};
use stackbench_lab::show::EndState;
use stackbench_lab::{netns, rtnl, IpsecAlgorithm, Lab, LabError, Link, Offloads};
use stackbench_metrics::warnings::PathFloor;
use stackbench_metrics::{
    LabEnvironment, LabInterface, LabIpsec, LabNetem, LabSa, Warning, WarningRecord,
};
use stackbench_model::settings::{CpuList, RunSettings};

use crate::exit::usage;

/// A lab run, resolved: the lab with the run's overrides, the path and the
/// responder's address in host B.
#[derive(Debug, Clone)]
pub struct LabRun {
    /// The lab file as given.
    pub file: String,
    pub lab: Lab,
    pub path: LabPath,
    pub responder_ip: IpAddr,
}

/// Settings that only mean something with `lab`.
const LAB_ONLY: [&str; 12] = [
    "lab_from",
    "lab_to",
    "link_rate",
    "link_mtu",
    "link_offloads",
    "link_delay",
    "link_jitter",
    "link_loss",
    "link_qdisc",
    "link_fq_maxrate",
    "link_ipsec",
    "link_ipsec_mode",
];

/// Checks the lab settings and resolves them; fills the CPU sets from the
/// hosts unless the run gives its own. `None` when the run uses no lab.
pub fn resolve(s: &mut RunSettings) -> anyhow::Result<Option<LabRun>> {
    let Some(file) = s.lab.as_ref().map(|t| t.0.clone()) else {
        let given: Vec<&str> = LAB_ONLY
            .iter()
            .copied()
            .filter(|n| s.text_of(n).as_deref() != Some("default"))
            .collect();
        if !given.is_empty() {
            let verb = if given.len() == 1 { "applies" } else { "apply" };
            return usage(format!(
                "{} {verb} only to a lab run: add --lab FILE (with --lab-from and --lab-to) or drop {}",
                given.join(", "),
                if given.len() == 1 { "it" } else { "them" }
            ));
        }
        return Ok(None);
    };
    if s.target.is_some() {
        return usage("lab and target exclude each other: a lab run starts its responder in host lab_to; drop target");
    }
    if stackbench_engine::transport::row(s.transport).paths() {
        return usage(format!(
            "transport {} does not cross a lab link: use tcp, mptcp or tls with --lab",
            s.transport.name()
        ));
    }
    let (Some(from), Some(to)) = (s.lab_from.clone(), s.lab_to.clone()) else {
        return usage(
            "lab needs lab_from and lab_to: add e.g. --lab-from client --lab-to server (two hosts of the lab file)",
        );
    };
    let lab = stackbench_lab::read_lab(&PathBuf::from(&file)).or_else(|e| usage(e.to_string()))?;
    let path = stackbench_lab::path::path(&lab, &from.0, &to.0).or_else(usage)?;
    let overrides = overrides(s);
    let lab = stackbench_lab::path::with_overrides(&lab, path.link, &overrides).or_else(usage)?;
    let responder_ip = stackbench_lab::path::address(&lab, &to.0, s.ipv6).or_else(usage)?;
    // SAFETY: geteuid(2) cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return usage(format!(
            "--lab {file}: lab runs need root (they build and enter network namespaces): run with sudo"
        ));
    }
    let cpus = |host: &str| lab.host(host).and_then(|h| h.cpus.clone()).map(CpuList);
    s.client_cpus = s.client_cpus.take().or_else(|| cpus(&from.0));
    s.server_cpus = s.server_cpus.take().or_else(|| cpus(&to.0));
    Ok(Some(LabRun {
        file,
        lab,
        path,
        responder_ip,
    }))
}

impl LabRun {
    /// What the path adds to every transaction by design, for the
    /// delayed-ACK stall check: netem's delay and jitter both ways on every
    /// hop (each host's sending end has the link's netem), the link's rate,
    /// and whether it drops packets.
    pub fn path_floor(&self) -> PathFloor {
        let link = &self.lab.links[self.path.link];
        let one_way = link.netem.delay + link.netem.jitter;
        let hops = 1 + self.path.hops.len() as u32;
        PathFloor {
            rtt_ns: (2 * hops * one_way).as_nanos() as u64,
            rate_bps: link.rate_bps,
            lossy: link.netem.loss_pct > 0.0,
        }
    }
}

fn overrides(s: &RunSettings) -> LinkOverrides {
    let mut offloads = [None; 5];
    if let Some(o) = s.link_offloads {
        for (slot, (name, value)) in offloads.iter_mut().zip(o.values()) {
            debug_assert!(Offloads::NAMES.contains(&name));
            *slot = value;
        }
    }
    LinkOverrides {
        rate_bps: s.link_rate.map(|r| r.0),
        mtu: s.link_mtu,
        offloads,
        delay: s.link_delay.map(|d| d.0),
        jitter: s.link_jitter.map(|d| d.0),
        loss_pct: s.link_loss.map(|p| p.0),
        qdisc: s.link_qdisc,
        fq_maxrate_bps: s.link_fq_maxrate.map(|r| r.0),
        ipsec: s.link_ipsec,
        ipsec_mode: s.link_ipsec_mode,
    }
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

impl LabRun {
    /// Makes the kernel state equal the lab with the run's overrides (in
    /// place: namespaces and pairs stay, so a running responder stays).
    pub fn up(&self) -> anyhow::Result<()> {
        stackbench_lab::up_from(&self.lab, std::path::Path::new(&self.file))
            .map(|_| ())
            .or_else(|e| usage(e.to_string()))
    }

    /// The namespace file of host `host`.
    pub fn netns_file(&self, host: &str) -> PathBuf {
        netns::path(&self.lab.namespace(host))
    }

    /// The address the responder listens on (port 0).
    pub fn listen(&self) -> String {
        std::net::SocketAddr::new(self.responder_ip, 0).to_string()
    }

    /// Runs `f` on a thread inside host A's namespace (threads it spawns,
    /// the driver's workers, inherit it); the caller's namespace is unchanged.
    pub fn in_from<T: Send>(&self, f: impl FnOnce() -> T + Send) -> anyhow::Result<T> {
        let name = self.lab.namespace(&self.path.from);
        let ns = netns::open(&name).or_else(|e| usage(e.to_string()))?;
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    netns::enter(ns.as_fd()).or_else(|e| {
                        usage(format!("cannot enter network namespace {name}: {e}"))
                    })?;
                    Ok(f())
                })
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p))
        })
    }

    /// The path's interfaces as the kernel reports them now (empty when the
    /// lab cannot be read; the run is not failed for it).
    pub fn read(&self) -> Vec<LabInterface> {
        let Ok(back) = stackbench_lab::read(&self.lab) else {
            return Vec::new();
        };
        let link = &self.lab.links[self.path.link];
        let hosts = [
            self.lab.namespace(&self.path.from),
            self.lab.namespace(&self.path.to),
        ];
        self.path
            .interfaces
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

    /// The environment entry from the reads before and after the window,
    /// and the warnings: the link changed in between, or its IPsec SAs
    /// counted no ESP packets.
    pub fn environment(
        &self,
        before: Vec<LabInterface>,
        after: Vec<LabInterface>,
    ) -> (LabEnvironment, Vec<WarningRecord>) {
        let env = LabEnvironment {
            name: self.lab.name.clone(),
            file: self.file.clone(),
            from: self.path.from.clone(),
            to: self.path.to.clone(),
            hops: self.path.hops.clone(),
            responder_address: self.responder_ip.to_string(),
            interfaces: before,
            interfaces_after: after,
        };
        let mut warnings = Vec::new();
        let changes = env.changes();
        if !changes.is_empty() {
            warnings.push(crate::quality::report(
                &Warning::LabChanged { changes },
                None,
            ));
        }
        let interfaces = env.ipsec_idle();
        if !interfaces.is_empty() {
            warnings.push(crate::quality::report(
                &Warning::IpsecIdle { interfaces },
                None,
            ));
        }
        (env, warnings)
    }
}
