//! Runs across a lab (`run --lab FILE --lab-from A --lab-to B`, study keys
//! `lab`, `lab_from`, `lab_to`, and the link overrides `link_rate`,
//! `link_mtu`, `link_offloads`, `link_delay`, `link_jitter`, `link_loss`,
//! `link_qdisc`, `link_fq_maxrate`, `link_ipsec`, `link_ipsec_mode`,
//! `link_rps_cpus`, `link_rps_flow_cnt`, `link_napi_defer_hard_irqs`,
//! `link_gro_flush_timeout`, `link_txqueuelen`, `router_flowtable` for the routers on the
//! path, and `lab_targets` for load distribution behind host B): the checks `resolve::resolve` makes, the
//! `lab up` before each step, the driver thread that enters A's namespace,
//! and the lab part of the stored environment (see the design note in the
//! lab crate). A run split over agents may list several driver hosts
//! (`--lab-from d1,d2,d3,d4`): agent i runs in host i mod their number,
//! drives a responder on B's address on its own host's link, and reaches the
//! controller, whose listener is bound inside B, at that same address.

use std::net::IpAddr;
use std::os::fd::AsFd;
use std::path::PathBuf;

use stackbench_engine::affinity::format_cpu_list;
use stackbench_lab::distributor::{self, Distributor};
use stackbench_lab::flowtable;
use stackbench_lab::path::{LabPath, LinkOverrides};
use stackbench_lab::policy::Policy;
use stackbench_lab::steering::{self, Steering};
use stackbench_lab::vhost::{self, VirtualHost};
use stackbench_lab::{netns, Lab, Offloads};
use stackbench_metrics::warnings::PathFloor;
use stackbench_metrics::Warning;
use stackbench_model::settings::RunSettings;
use stackbench_record::{
    LabEnvironment, LabFlowtable, LabInterface, LabPolicy, LabRxQueue, LabSteering, LabTarget,
    LabVirtualHost, WarningRecord,
};

use crate::error::{input, RunError};

/// A lab run, resolved: the lab with the run's overrides, the path and the
/// responder's address in host B.
#[derive(Debug, Clone)]
pub struct LabRun {
    /// The lab file as given.
    pub file: String,
    pub lab: Lab,
    /// The first listed driver host's path (the stored environment's).
    pub path: LabPath,
    pub responder_ip: IpAddr,
    /// Every host `lab_from` lists, in order, with its path to host B and
    /// B's address on that path's link (the first is `path` and
    /// `responder_ip`): agent i runs in `drivers[i % len]`.
    pub drivers: Vec<LabDriver>,
    /// The policy host B gets (`host_policy_*`); `None`: B has none.
    pub policy: Option<Policy>,
    /// The inbound steering every path interface gets (`link_rps_*`);
    /// `None`: the run asks for none, and RPS/RFS are turned off.
    pub steering: Option<Steering>,
    /// The routers on the paths get the routing fast path
    /// (`router_flowtable`); false: they have none.
    pub flowtable: bool,
    /// Load distribution (`lab_targets`): host B's distributor with the
    /// targets the run spreads over; the responder listens in each.
    pub distribution: Option<Distributor>,
    /// The virtual hosts (macvlans) `lab_to` named, `HOST.vN[,HOST.vM…]`,
    /// with the address of each: responder i listens on the i-th, modulo
    /// their number. Empty: on host B's own address.
    pub virtual_to: Vec<(VirtualHost, IpAddr)>,
    /// The CPUs the lab file gives host A (the first `lab_from` host; agents
    /// in several hosts are pinned as it says) and host B: the run's
    /// placement unless it gives `client_cpus` or `server_cpus`.
    pub driver_cpus: Option<Vec<usize>>,
    pub responder_cpus: Option<Vec<usize>>,
}

/// One read of the lab's state, taken before and after the window.
#[derive(Debug, Clone, Default)]
pub struct LabRead {
    /// The path's interfaces as the kernel reported them.
    pub interfaces: Vec<LabInterface>,
    /// NET_RX softirqs handled so far per CPU (`/proc/softirqs`).
    pub net_rx: Vec<u64>,
    /// Packets each virtual host's macvlan has received and sent so far.
    pub virtual_packets: Vec<Option<(u64, u64)>>,
}

/// One driver host of a lab run.
#[derive(Debug, Clone)]
pub struct LabDriver {
    pub path: LabPath,
    /// Host B's address on this path's link: where this host's agents find
    /// their responders and the controller.
    pub responder_ip: IpAddr,
}

/// Settings that only mean something with `lab`.
const LAB_ONLY: [&str; 23] = [
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
    "link_rps_cpus",
    "link_rps_flow_cnt",
    "link_napi_defer_hard_irqs",
    "link_gro_flush_timeout",
    "link_txqueuelen",
    "host_policy_rules",
    "host_policy_conntrack",
    "host_policy_log",
    "host_policy_reset_port",
    "router_flowtable",
    "lab_targets",
];

/// How many driver hosts `lab_from` lists, for a lab run (`None`: no lab):
/// what the agents are resolved against before the lab is.
pub fn driver_hosts(s: &RunSettings) -> Option<usize> {
    s.lab.as_ref()?;
    Some(s.lab_from.as_ref().map_or(1, |f| f.0.split(',').count()))
}

/// Checks the lab settings and resolves them for a run of `processes`
/// driver processes (its agents, or one). `None` when the run uses no lab.
pub fn resolve(s: &RunSettings, processes: u32) -> Result<Option<LabRun>, RunError> {
    let Some(file) = s.lab.as_ref().map(|t| t.0.clone()) else {
        let given: Vec<&str> = LAB_ONLY
            .iter()
            .copied()
            .filter(|n| s.text_of(n) != RunSettings::default().text_of(n))
            .collect();
        if !given.is_empty() {
            let verb = if given.len() == 1 { "applies" } else { "apply" };
            return input(format!(
                "{} {verb} only to a lab run: add --lab FILE (with --lab-from and --lab-to) or drop {}",
                given.join(", "),
                if given.len() == 1 { "it" } else { "them" }
            ));
        }
        return Ok(None);
    };
    if s.target.is_some() {
        return input("lab and target exclude each other: a lab run starts its responder in host lab_to; drop target");
    }
    if stackbench_engine::transport::row(s.transport).paths() {
        return input(format!(
            "transport {} does not cross a lab link: use tcp, mptcp or tls with --lab",
            s.transport.name()
        ));
    }
    let (Some(from), Some(to)) = (s.lab_from.clone(), s.lab_to.clone()) else {
        return input(
            "lab needs lab_from and lab_to: add e.g. --lab-from client --lab-to server (two hosts of the lab file)",
        );
    };
    let lab = stackbench_lab::read_lab(&PathBuf::from(&file)).or_else(|e| input(e.to_string()))?;
    // Several driver hosts (`d1,d2,d3,d4`) for a run split over agents.
    let hosts: Vec<&str> = from.0.split(',').map(str::trim).collect();
    let (to_host, virtual_to) = endpoints(&lab, &hosts, &to.0).or_else(input)?;
    let virtual_to = virtual_to
        .into_iter()
        .map(|v| Ok((vhost::address(&lab, &v, s.ipv6)?, v)))
        .map(|r: Result<_, String>| r.map(|(ip, v)| (v, ip)))
        .collect::<Result<Vec<_>, String>>()
        .or_else(input)?;
    let agents = processes as usize;
    if virtual_to.len() > agents {
        return input(format!(
            "lab_to '{}' lists {} virtual hosts, one responder each, and the run has {agents} agent(s): add --agents {} (agent i drives the i-th) or list fewer",
            to.0,
            virtual_to.len(),
            virtual_to.len()
        ));
    }
    let paths = hosts
        .iter()
        .map(|h| stackbench_lab::path::path(&lab, h, &to_host))
        .collect::<Result<Vec<LabPath>, String>>()
        .or_else(input)?;
    let overrides = overrides(s);
    let mut lab = lab;
    for p in &paths {
        lab = stackbench_lab::path::with_overrides(&lab, p.link, &overrides).or_else(input)?;
    }
    let drivers = paths
        .into_iter()
        .map(|path| {
            let ip = match virtual_to.first() {
                Some((_, ip)) => *ip,
                None => stackbench_lab::path::address(&lab, path.link, &to_host, s.ipv6)?,
            };
            Ok(LabDriver {
                path,
                responder_ip: ip,
            })
        })
        .collect::<Result<Vec<LabDriver>, String>>()
        .or_else(input)?;
    let (path, responder_ip) = (drivers[0].path.clone(), drivers[0].responder_ip);
    if s.router_flowtable {
        if let Some(d) = drivers.iter().find(|d| d.path.hops.is_empty()) {
            return input(format!(
                "router_flowtable: {} and {} are joined by a direct link in {file}, with no router to put a flowtable on: join them through a router (a link with via = ROUTER, as examples/lab-router.toml) or drop router_flowtable",
                d.path.from, d.path.to
            ));
        }
    }
    let distribution = match s.lab_targets {
        Some(n) => Some(distribution(s, &lab, &drivers, processes, &file, n)?),
        None => None,
    };
    if let Some(d) = &distribution {
        let i = lab
            .distributors
            .iter()
            .position(|x| x.host == d.host)
            .expect("found above");
        lab.distributors[i] = d.clone();
    }
    // Every host's CPUs, before the lab is built or anything starts (the
    // lab's own check at `lab up` knows only the CPUs online).
    for host in &lab.hosts {
        let Some(cpus) = &host.cpus else { continue };
        if let Some((outside, allowed)) = crate::cpus::cpus_not_allowed(cpus) {
            return input(format!(
                "--lab {file}: host '{}' cpus {}: {outside} (it may run on {allowed}): change \
                 cpus in the lab file to CPUs from {allowed}",
                host.name,
                format_cpu_list(cpus)
            ));
        }
    }
    // SAFETY: geteuid(2) cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return input(format!(
            "--lab {file}: lab runs need root (they build and enter network namespaces): run with sudo"
        ));
    }
    let cpus = |host: &str| lab.host(host).and_then(|h| h.cpus.clone());
    let (driver_cpus, responder_cpus) = (cpus(hosts[0]), cpus(&to_host));
    let policy = s.host_policy_rules.map(|rules| Policy {
        rules,
        conntrack: s.host_policy_conntrack.unwrap_or(true),
        log: s.host_policy_log,
        reset_port: s.host_policy_reset_port.map(|p| p as u16), // range 1..=65535
    });
    let steering = (s.link_rps_cpus.is_some() || s.link_rps_flow_cnt.is_some()).then(|| Steering {
        cpus: s.link_rps_cpus.clone().map(|c| c.0).unwrap_or_default(),
        flow_cnt: s.link_rps_flow_cnt.unwrap_or(0),
    });
    // Checked here, before `lab up` makes anything, so a refusal leaves
    // nothing behind.
    if let Some(st) = &steering {
        steering::check(st).or_else(input)?;
    }
    Ok(Some(LabRun {
        file,
        lab,
        path,
        responder_ip,
        drivers,
        policy,
        steering,
        flowtable: s.router_flowtable,
        distribution,
        virtual_to,
        driver_cpus,
        responder_cpus,
    }))
}

/// The distributor of host `lab_to` with its first `n` targets, refused in
/// one line where the run cannot cross it: no distributor there, more
/// targets than it has, a transport other than tcp, several driver hosts,
/// or a driver that reaches host B by another address than the virtual one.
fn distribution(
    s: &RunSettings,
    lab: &Lab,
    drivers: &[LabDriver],
    processes: u32,
    file: &str,
    n: u32,
) -> Result<Distributor, RunError> {
    let to = &drivers[0].path.to;
    let Some(d) = lab.distributors.iter().find(|d| &d.host == to) else {
        return input(format!(
            "lab_targets: host '{to}' has no [[distributor]] in {file}: give lab_to the distributor's host, or drop lab_targets"
        ));
    };
    if n as usize > d.targets.len() {
        return input(format!(
            "lab_targets {n}: the distributor on {to} has {} targets ({}): use 1 to {}",
            d.targets.len(),
            d.targets.join(", "),
            d.targets.len()
        ));
    }
    if s.transport != stackbench_model::Transport::Tcp {
        return input(format!(
            "lab_targets: transport {} is not distributed (the responder opens its listeners in each target for tcp only): use tcp",
            s.transport.name()
        ));
    }
    if drivers.len() > 1 || processes > 1 {
        return input("lab_targets: one driver host and one driver process cross a distributor: drop agents and list one lab_from host");
    }
    if drivers[0].responder_ip != d.address {
        return input(format!(
            "lab_targets: {} reaches {to} at {}, not at the virtual address {}: link {} to {to} on the virtual address's subnet",
            drivers[0].path.from, drivers[0].responder_ip, d.address, drivers[0].path.from
        ));
    }
    let mut d = d.clone();
    d.targets.truncate(n as usize);
    d.weights.truncate(n as usize);
    Ok(d)
}

/// Host B and, for `lab_to = "HOST.vN[,…]"`, the virtual hosts it names; a
/// driver end is a host only (its connections leave from the host's own
/// address, which a macvlan's is not).
fn endpoints(lab: &Lab, from: &[&str], to: &str) -> Result<(String, Vec<VirtualHost>), String> {
    for h in from {
        if let (host, Some(_)) = vhost::end(lab, "lab_from", h)? {
            return Err(format!(
                "lab_from '{h}': a driver runs in a host, and its connections leave from the host's own address, not a virtual host's: use lab_from '{host}'"
            ));
        }
    }
    vhost::ends(lab, to)
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
            emulated: false,
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
        napi_defer_hard_irqs: s.link_napi_defer_hard_irqs,
        gro_flush_timeout: s.link_gro_flush_timeout.map(|d| d.0),
        txqueuelen: s.link_txqueuelen,
    }
}

impl LabRun {
    /// Makes the kernel state equal the lab with the run's overrides (in
    /// place: namespaces and pairs stay, so a running responder stays).
    /// Host B's policy is then installed, replaced or removed (a step
    /// without one after a step with one leaves no table behind).
    pub fn up(&self) -> Result<(), RunError> {
        if self.policy.is_some() {
            stackbench_lab::policy::check().or_else(|e| input(e.to_string()))?;
        }
        if self.flowtable {
            flowtable::check().or_else(|e| input(e.to_string()))?;
        }
        if self.distribution.is_some() {
            // The mark rule is nft's; IPVS itself is probed by `lab up`.
            stackbench_lab::policy::check().or_else(|e| input(e.to_string()))?;
        }
        stackbench_lab::up_from(&self.lab, std::path::Path::new(&self.file))
            .map(|_| ())
            .or_else(|e| input(e.to_string()))?;
        let to = self.lab.namespace(&self.path.to);
        stackbench_lab::policy::apply(&to, self.policy.as_ref())
            .or_else(|e| input(e.to_string()))?;
        self.fast_path()?;
        if let Some(d) = &self.distribution {
            distributor::apply_run(&self.lab, d).or_else(|e| input(e.to_string()))?;
        }
        self.steer()
    }

    /// The target hosts' namespace files, where the responder opens every
    /// test's listeners too (empty without load distribution).
    pub fn mirror_netns(&self) -> Vec<PathBuf> {
        self.distribution
            .iter()
            .flat_map(|d| d.targets.iter())
            .map(|t| self.netns_file(t))
            .collect()
    }

    /// IPVS's counters of the run's service per target (empty without load
    /// distribution, or when they cannot be read). IPVS's estimator sums
    /// its per-CPU counters every 2 s, so this waits one period first.
    fn read_distribution(&self) -> Vec<LabTarget> {
        let Some(d) = &self.distribution else {
            return Vec::new();
        };
        std::thread::sleep(std::time::Duration::from_millis(2_100));
        let Ok(Some(counts)) = distributor::read_run(&self.lab, d) else {
            return Vec::new();
        };
        counts
            .into_iter()
            .map(|(host, c)| LabTarget {
                host,
                address: c.address.map(|a| a.to_string()).unwrap_or_default(),
                connections: c.connections,
                packets_in: c.packets_in,
                packets_out: c.packets_out,
                bytes_in: c.bytes_in,
                bytes_out: c.bytes_out,
            })
            .collect()
    }

    /// Each router on the driver hosts' paths with the path interfaces it
    /// has, once each: where the routing fast path goes.
    fn routers(&self) -> Vec<(String, Vec<String>)> {
        let mut out: Vec<(String, Vec<String>)> = Vec::new();
        for d in &self.drivers {
            for hop in &d.path.hops {
                let ns = self.lab.namespace(hop);
                let devices = d.path.interfaces.iter().filter(|(n, _)| *n == ns);
                let slot = match out.iter().position(|(n, _)| *n == ns) {
                    Some(i) => &mut out[i].1,
                    None => {
                        out.push((ns.clone(), Vec::new()));
                        &mut out.last_mut().expect("pushed").1
                    }
                };
                for (_, ifname) in devices {
                    if !slot.contains(ifname) {
                        slot.push(ifname.clone());
                    }
                }
            }
        }
        out
    }

    /// Installs the routing fast path on every router of the paths, or
    /// removes it (a step without it after a step with it starts from the
    /// full path).
    fn fast_path(&self) -> Result<(), RunError> {
        for (ns, devices) in self.routers() {
            flowtable::apply(&ns, self.flowtable.then_some(&devices[..]))
                .or_else(|e| input(e.to_string()))?;
        }
        Ok(())
    }

    /// The fast path of every router on the paths as the kernel holds it
    /// (empty without `router_flowtable`, or when it cannot be read).
    fn read_flowtables(&self) -> Vec<LabFlowtable> {
        if !self.flowtable {
            return Vec::new();
        }
        self.routers()
            .into_iter()
            .filter_map(|(namespace, _)| {
                let f = flowtable::read(&namespace).ok()??;
                Some(LabFlowtable {
                    namespace,
                    devices: f.devices,
                    slow_path_packets: f.slow_path_packets,
                    rx_packets: f.rx_packets,
                })
            })
            .collect()
    }

    /// Every interface on the driver hosts' paths (a router's two ends and
    /// each host's one), once each: where inbound steering applies.
    fn steered_interfaces(&self) -> Vec<(String, String)> {
        let mut all: Vec<(String, String)> = Vec::new();
        for d in &self.drivers {
            for i in &d.path.interfaces {
                if !all.contains(i) {
                    all.push(i.clone());
                }
            }
        }
        all
    }

    /// Writes the run's steering to every path interface. Without one, RPS
    /// and RFS are turned off so a step after a steered step starts from
    /// the kernel's default; failures then are ignored, as a machine whose
    /// sysfs cannot be written cannot have been steered by an earlier step.
    fn steer(&self) -> Result<(), RunError> {
        for (ns, ifname) in self.steered_interfaces() {
            match &self.steering {
                Some(st) => steering::apply(&ns, &ifname, st)
                    .or_else(|e| input(format!("inbound steering on {ifname} in {ns}: {e}")))?,
                None => {
                    let _ = steering::apply(&ns, &ifname, &Steering::default());
                }
            }
        }
        Ok(())
    }

    /// The steering of every path interface as sysfs holds it (empty
    /// without `link_rps_*`, or when it cannot be read).
    fn read_steering(&self) -> Vec<LabSteering> {
        if self.steering.is_none() {
            return Vec::new();
        }
        self.steered_interfaces()
            .into_iter()
            .filter_map(|(ns, ifname)| {
                let queues = steering::read(&ns, &ifname).ok()?;
                Some(LabSteering {
                    queues: queues
                        .into_iter()
                        .map(|q| LabRxQueue {
                            queue: q.queue,
                            rps_cpus_mask: q.mask,
                            rps_cpus: stackbench_model::units::format_cpu_list(&q.cpus),
                            rps_flow_cnt: q.flow_cnt,
                        })
                        .collect(),
                    namespace: ns,
                    name: ifname,
                })
            })
            .collect()
    }

    /// Host B's policy as the kernel holds it (`None`: no table, or it
    /// cannot be read; the run is not failed for it): the rule counts of
    /// the nf_tables dump, so the record holds what was installed.
    pub fn read_policy(&self) -> Option<LabPolicy> {
        let namespace = self.lab.namespace(&self.path.to);
        let state = stackbench_lab::policy::read(&namespace).ok()??;
        let all_netns = std::fs::read_to_string("/proc/sys/net/netfilter/nf_log_all_netns");
        Some(LabPolicy {
            namespace,
            rules: state.rules,
            input_rules: state.input_rules,
            notrack: state.notrack,
            resets: state.resets,
            conntrack_entries: state.conntrack_entries,
            log_written: self.policy.is_some_and(|p| p.log)
                && all_netns.is_ok_and(|t| t.trim() == "1"),
        })
    }

    /// The namespace file of host `host`.
    pub fn netns_file(&self, host: &str) -> PathBuf {
        netns::path(&self.lab.namespace(host))
    }

    /// The address responder `i` (the one agent i drives) listens on, port
    /// 0: host B's address on the link of agent i's host.
    pub fn listen(&self, i: usize) -> String {
        let ip = match self.virtual_to.len() {
            0 => self.drivers[i % self.drivers.len()].responder_ip,
            n => self.virtual_to[i % n].1,
        };
        // Behind a distributor the control port is the one not marked for
        // IPVS (see `distributor::RUN_CONTROL_PORT`).
        let port = match self.distribution {
            Some(_) => distributor::RUN_CONTROL_PORT,
            None => 0,
        };
        std::net::SocketAddr::new(ip, port).to_string()
    }

    /// The controller's agent listener, bound inside host B on every
    /// address (B's namespace has only the lab's), and where each driver
    /// host's agents dial it: B's address on their link. The control
    /// exchange crosses the lab links as it would between real hosts; only
    /// a Stop falls inside the window.
    pub fn agent_listener(
        &self,
        ipv6: bool,
    ) -> Result<(std::net::TcpListener, Vec<crate::agents::launch::AgentHost>), RunError> {
        let any = if ipv6 { "[::]:0" } else { "0.0.0.0:0" };
        let listener = self
            .in_host(&self.path.to, || std::net::TcpListener::bind(any))?
            .map_err(|e| RunError::runtime("agent listener in host lab_to", e))?;
        let port = listener
            .local_addr()
            .map_err(|e| RunError::runtime("agent listener", e))?
            .port();
        let hosts = self
            .drivers
            .iter()
            .map(|d| crate::agents::launch::AgentHost {
                netns: self.netns_file(&d.path.from),
                controller: std::net::SocketAddr::new(d.responder_ip, port).to_string(),
            })
            .collect();
        Ok((listener, hosts))
    }

    /// Runs `f` on a thread inside host A's namespace (threads it spawns,
    /// the driver's workers, inherit it); the caller's namespace is unchanged.
    pub fn in_from<T: Send>(&self, f: impl FnOnce() -> T + Send) -> Result<T, RunError> {
        self.in_host(&self.path.from, f)
    }

    /// Runs `f` on a thread inside host `host`'s namespace: the sockets it
    /// makes stay there (a listener bound in host B is reached over B's
    /// links) while the caller's namespace is unchanged.
    pub fn in_host<T: Send>(
        &self,
        host: &str,
        f: impl FnOnce() -> T + Send,
    ) -> Result<T, RunError> {
        let name = self.lab.namespace(host);
        let ns = netns::open(&name).or_else(|e| input(e.to_string()))?;
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    netns::enter(ns.as_fd()).or_else(|e| {
                        input(format!("cannot enter network namespace {name}: {e}"))
                    })?;
                    Ok(f())
                })
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p))
        })
    }

    /// The path's interfaces as the kernel reports them now (empty when the
    /// lab cannot be read; the run is not failed for it), and the per-CPU
    /// NET_RX softirq counts, so the window's receive processing per CPU is
    /// the difference of two reads.
    pub fn read(&self) -> LabRead {
        LabRead {
            interfaces: stackbench_lab::environment::path_interfaces(&self.lab, &self.path),
            net_rx: steering::net_rx(),
            virtual_packets: self
                .virtual_to
                .iter()
                .map(|(v, _)| vhost::packets(&self.lab, v))
                .collect(),
        }
    }

    /// The environment entry from the reads before and after the window,
    /// and the warnings: the link changed in between, or its IPsec SAs
    /// counted no ESP packets.
    pub fn environment(
        &self,
        before: LabRead,
        after: LabRead,
    ) -> (LabEnvironment, Vec<WarningRecord>) {
        let env = LabEnvironment {
            name: self.lab.name.clone(),
            file: self.file.clone(),
            from: self.path.from.clone(),
            to: self.path.to.clone(),
            hops: self.path.hops.clone(),
            responder_address: self.responder_ip.to_string(),
            interfaces: before.interfaces,
            interfaces_after: after.interfaces,
            policy: self.read_policy(),
            steering: self.read_steering(),
            net_rx_before: before.net_rx,
            net_rx_after: after.net_rx,
            macvlans: stackbench_lab::environment::path_macvlans(&self.lab, &self.path),
            flowtables: self.read_flowtables(),
            distribution: self.read_distribution(),
            virtual_to: self
                .virtual_to
                .iter()
                .enumerate()
                .map(|(i, (v, ip))| {
                    let at = |r: &[Option<(u64, u64)>]| r.get(i).copied().flatten();
                    let (rx_before, tx_before) = at(&before.virtual_packets).unwrap_or_default();
                    let (rx_after, tx_after) = at(&after.virtual_packets).unwrap_or_default();
                    LabVirtualHost {
                        name: v.name(),
                        namespace: self.lab.namespace(&v.host),
                        interface: v.ifname.clone(),
                        address: ip.to_string(),
                        rx_packets_before: rx_before,
                        rx_packets_after: rx_after,
                        tx_packets_before: tx_before,
                        tx_packets_after: tx_after,
                    }
                })
                .collect(),
            // The classes' figures come later (`session`).
            utilisation: Vec::new(),
        };
        let mut warnings = Vec::new();
        let changes = env.changes();
        if !changes.is_empty() {
            warnings.push(Warning::LabChanged { changes }.to_record(None));
        }
        let interfaces = env.ipsec_idle();
        if !interfaces.is_empty() {
            warnings.push(Warning::IpsecIdle { interfaces }.to_record(None));
        }
        let interfaces = env.virtual_idle();
        if !interfaces.is_empty() {
            warnings.push(Warning::VirtualHostIdle { interfaces }.to_record(None));
        }
        (env, warnings)
    }
}
